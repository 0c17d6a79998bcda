package convert

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestRepeatedKey: the first name an object holds twice, at any depth, escapes resolved, with
// its object's path; nothing for text that is not one JSON value, or repeats no name.
func TestRepeatedKey(t *testing.T) {
	many := func(n int, last string) string {
		var b strings.Builder
		b.WriteString("{")
		for i := range n {
			fmt.Fprintf(&b, `"k%d":%d,`, i, i)
		}
		b.WriteString(`"` + last + `":0}`)
		return b.String()
	}
	for _, tc := range []struct {
		payload    string
		name, path string
		ok         bool
	}{
		{`{"id":20,"s":"a","s":"b"}`, "s", "", true},
		{`{"id":21,"s":"a","\u0073":"b"}`, "s", "", true},
		{`{"a":{"b":[1,{"x":1,"y":{"z":1,"z":2}}]}}`, "z", ".a.b[1].y", true},
		// A name that is no identifier is quoted, so that its '.' or '[' reads as no step.
		{`{"a.b":{"c[0]":{"":{"_x9":{"9":{"é":{"z":1,"z":2}}}}}}}`, "z", `["a.b"]["c[0]"][""]._x9["9"]["é"]`, true},
		{`[{"a":1},{"a":1,"b":2,"a":3}]`, "a", "[1]", true},
		{`{"a":{"x":1},"b":{"x":1}}`, "", "", false}, // one name in two objects
		{`{"a":"\"a\":1,\"a\":2"}`, "", "", false},   // names in a string are text
		{`{"s":1,"s":2`, "", "", false},              // not JSON: JSON.parse throws
		{`{"s":1,"s":2} x`, "", "", false},
		{"{\"s\":1,\"s\":\xff}", "", "", false},
		{`a,b,a`, "", "", false},
		{``, "", "", false},
		{many(40, "k3"), "k3", "", true}, // past the names compared one by one
		{many(40, "k40"), "", "", false},
		{many(3, "k1"), "k1", "", true},
		// Empty objects and arrays, white space everywhere, literals.
		{` { "e" : { } , "l" : [ ] , "t" : true , "n" : null , "a" : [ {} , [ ] , { "x" : 1 , "x" : 2 } ] } `, "x", ".a[2]", true},
		{`{"e":{},"l":[],"o":{"p":{}},"e2":[[],{}]}`, "", "", false},
		{`{"a":[1,2,{"b":{"c":[{"d":1},{"d":2,"d":3}]}}]}`, "d", ".a[2].b.c[1]", true},
		// A lone surrogate's escape reads as U+FFFD, as goja reads it.
		{`{"\ud800":1,"\udbff":2}`, "\ufffd", "", true},
		{`{"\ud800":1,"\ufffd":2}`, "\ufffd", "", true},
		// Deeper than the converter's 1000 levels, and a repeated name before it.
		{`{"a":"x","a":"y","pad":` + strings.Repeat("[", 1001) + strings.Repeat("]", 1001) + `}`, "a", "", true},
		{`{"pad":` + strings.Repeat(`{"k":`, 5000) + `1` + strings.Repeat("}", 5000) + `,"pad":2}`, "pad", "", true},
		// Not well formed: nothing said.
		{`{"a":1,"a":2,}`, "", "", false},
		{`{"a":1,"a":2]`, "", "", false},
		{`{"a" 1,"a":2}`, "", "", false},
		{`[1,2`, "", "", false},
		{`{"a":1,"a":2}}`, "", "", false},
		{`{`, "", "", false},
		{`{"a":`, "", "", false},
	} {
		name, path, ok := RepeatedKey([]byte(tc.payload))
		if name != tc.name || path != tc.path || ok != tc.ok {
			t.Errorf("RepeatedKey(%.60q) = %q, %q, %v; want %q, %q, %v", tc.payload, name, path, ok, tc.name, tc.path, tc.ok)
		}
	}
}

// TestRepeatedKeyLinear: a large string nested deep costs one reading, not one per level: 9 MB
// under 998 arrays is read in well under the UDF's timeout (it took 3 s and more when each
// level read its contents again).
func TestRepeatedKeyLinear(t *testing.T) {
	const depth = 998
	payload := []byte(`{"a":"x","n":1,"pad":` + strings.Repeat("[", depth) + `"` + strings.Repeat("x", 9_000_000) + `"` + strings.Repeat("]", depth) + `}`)
	start := time.Now()
	_, _, ok := RepeatedKey(payload)
	if ok {
		t.Errorf("RepeatedKey found a repeated name in a payload without one")
	}
	t.Logf("read %d MB under %d arrays in %v", len(payload)>>20, depth, time.Since(start))
}

// BenchmarkRepeatedKey reads a demo-like event of a few nested objects.
func BenchmarkRepeatedKey(b *testing.B) {
	payload := []byte(`{"event_id":"0b6f1b3e-8c53-4d5e-9d1a-3c1e2f4a5b6c","ts":"2024-03-10T12:00:00.123Z","user":{"id":123456,"country":"DE","tags":["a","b","c"]},"page":{"url":"https://example.com/a/b?c=d","referrer":null},"props":{"k1":"v1","k2":2,"k3":true},"value":12.5}`)
	b.SetBytes(int64(len(payload)))
	for b.Loop() {
		if _, _, ok := RepeatedKey(payload); ok {
			b.Fatal("repeated")
		}
	}
}
