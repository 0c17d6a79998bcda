package convert_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/ch-beam/pubsub-to-clickhouse/transforms/convert"
)

// TestTopLevelFields: the fields in the payload's order, names with escapes resolved, values as
// written; a name given twice is passed twice; the payloads Convert refuses are refused alike,
// before any field is passed.
func TestTopLevelFields(t *testing.T) {
	var got []string
	err := convert.TopLevelFields([]byte(` {"b": 1.50, "a\u00e9\"": {"x" : [1, 2]}, "n":null,"b":"s"} `), func(name string, value []byte) error {
		got = append(got, name+"="+string(value))
		return nil
	})
	want := []string{"b=1.50", `aé"={"x" : [1, 2]}`, "n=null", `b="s"`}
	if err != nil || !cmp.Equal(want, got) {
		t.Errorf("fields %v, %v; want %v", got, err, want)
	}
	if err := convert.TopLevelFields([]byte(`{}`), func(string, []byte) error { t.Error("a field of {}"); return nil }); err != nil {
		t.Errorf("{}: %v", err)
	}
	stop := errors.New("stop")
	n := 0
	if err := convert.TopLevelFields([]byte(`{"a":1,"b":2}`), func(string, []byte) error { n++; return stop }); err != stop || n != 1 {
		t.Errorf("fn's error: %v after %d fields, want stop after 1", err, n)
	}
	for _, tc := range []struct{ payload, want string }{
		{``, "empty, expected one JSON object"},
		{" \n", "only white space, expected one JSON object"},
		{`[1]`, "is not a JSON object"},
		{`"name": "a", "ts": 1}`, `the payload is "name" followed by : "a", "ts": 1} at byte 6, not a JSON object`},
		{"\xef\xbb\xbf{\"a\": 1}", "the payload starts with a UTF-8 byte order mark (EF BB BF)"},
		{`{"a": 1`, "invalid JSON"},
		{`{"a": 1} x`, "unexpected text after the JSON object"},
		{"{\"a\": \"\xff\"}", "UTF-8"},
		{`{"\ud800": 1}`, "lone UTF-16 surrogate"},
	} {
		called := false
		err := convert.TopLevelFields([]byte(tc.payload), func(string, []byte) error { called = true; return nil })
		var pe *convert.PayloadError
		if !errors.As(err, &pe) || !strings.Contains(err.Error(), tc.want) || called {
			t.Errorf("%q: %v (fields passed: %v), want a payload error containing %q", tc.payload, err, called, tc.want)
		}
	}
}
