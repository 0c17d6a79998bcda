package udf

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/ch-beam/pubsub-to-clickhouse/internal/gcptest"
)

// writeUDF writes src to a file udf.js of a temporary directory and returns its path.
func writeUDF(t testing.TB, src string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "udf.js")
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// load starts the function name of src in its process, as a worker does, with the given
// timeout; the process ends with the test.
func load(t testing.TB, src, name string, timeout time.Duration) *sandbox {
	t.Helper()
	l := loader{Config: Config{Path: writeUDF(t, src), Function: name, Timeout: timeout}}
	fn, _, err := l.load(context.Background())
	if err != nil {
		t.Fatalf("loading %s: %v", name, err)
	}
	t.Cleanup(fn.close)
	return fn
}

func TestApply(t *testing.T) {
	const src = `
function rename(payload) {
  var e = JSON.parse(payload);
  return JSON.stringify({id: e.event_id, city: e.geo.city});
}
function drop(payload) { return JSON.parse(payload).keep ? payload : null; }
function nothing(payload) { }
function empty(payload) { return ""; }
function withMessage(payload, message) {
  return JSON.stringify({id: message.messageId, src: message.attributes.source, at: message.publishTime, n: Object.keys(message.attributes).length});
}
function unicode(payload) { return payload + "→✓"; }
function pairs(payload) { return payload + String.fromCharCode(0xD83D, 0xDE00) + "\uFFFD"; }
function roundTrip(payload) { return JSON.stringify(JSON.parse(payload)); }
function withoutId(payload) { var e = JSON.parse(payload); return JSON.stringify({n: e.n}); }
function keepRef(payload) { var e = JSON.parse(payload); return JSON.stringify({id: 1, ref: e.ref}); }
`
	publish := time.Date(2026, 12, 1, 8, 30, 0, 123_000_000, time.UTC)
	msg := messageInfo{ID: "m-1", Attributes: map[string]string{"source": "web"}, PublishTime: publish}
	tests := []struct {
		fn, payload string
		msg         messageInfo
		want        string
		drop        bool
	}{
		{"rename", `{"event_id":"e1","geo":{"city":"Oslo"}}`, msg, `{"id":"e1","city":"Oslo"}`, false},
		{"drop", `{"keep":false}`, msg, "", true},
		{"drop", `{"keep":true}`, msg, `{"keep":true}`, false},
		{"nothing", `{}`, msg, "", true},
		{"empty", `{}`, msg, "", true},
		{"withMessage", `{}`, msg, `{"id":"m-1","src":"web","at":"2026-12-01T08:30:00.123Z","n":1}`, false},
		{"withMessage", `{}`, messageInfo{ID: "m-2"}, `{"id":"m-2","at":"","n":0}`, false},
		{"unicode", `é`, msg, `é→✓`, false},
		{"unicode", "\xffa", msg, "\uFFFDa→✓", false}, // bytes that are not UTF-8 become U+FFFD
		// A surrogate pair, and a U+FFFD the function wrote itself, are no lone surrogate.
		{"pairs", "x", msg, "x😀\uFFFD", false},
		// Integers JavaScript holds and prints exactly (2^53, 2^54), digits in a string, a
		// fraction's or an exponent's digits: nothing rounded that the output carries.
		{"roundTrip", `{"a":9007199254740992,"b":-18014398509481984,"s":"12345678901234567890","f":0.5000000000000000001,"e":1e-1234567890123456,"t":1000000000000000000000000}`, msg,
			`{"a":9007199254740992,"b":-18014398509481984,"s":"12345678901234567890","f":0.5,"e":0,"t":1e+24}`, false},
		// A rounded integer the output does not carry.
		{"withoutId", `{"id":9007199254740993,"n":1}`, msg, `{"n":1}`, false},
		// The rounded digits are the payload's own, in a string passed on.
		{"keepRef", `{"id":9007199254740993,"ref":"9007199254740992"}`, msg, `{"id":1,"ref":"9007199254740992"}`, false},
		// One name in two objects; a name given twice in a string's text, which JSON.parse did
		// not read as JSON; one in a payload the function did not parse.
		{"roundTrip", `{"a":{"x":1},"b":{"x":2}}`, msg, `{"a":{"x":1},"b":{"x":2}}`, false},
		{"roundTrip", `{"s":"{\"a\":1,\"a\":2}"}`, msg, `{"s":"{\"a\":1,\"a\":2}"}`, false},
		{"unicode", `{"a":1,"a":2}`, msg, `{"a":1,"a":2}→✓`, false},
		// A number of more than 800 digits that JSON.parse misreads, in a payload passed on as it
		// is (the converter reads it right), or misread in a field the output leaves out.
		{"unicode", `{"x":1` + strings.Repeat("0", 800) + `e-800}`, msg, `{"x":1` + strings.Repeat("0", 800) + `e-800}→✓`, false},
		{"withoutId", `{"id":1` + strings.Repeat("0", 800) + `e-800,"n":2}`, msg, `{"n":2}`, false},
	}
	for _, tt := range tests {
		fn := load(t, src, tt.fn, time.Second)
		got, drop, err := fn.Apply(tt.payload, tt.msg)
		if err != nil {
			t.Errorf("%s(%s): %v", tt.fn, tt.payload, err)
			continue
		}
		if got != tt.want || drop != tt.drop {
			t.Errorf("%s(%s) = %q, drop %v; want %q, drop %v", tt.fn, tt.payload, got, drop, tt.want, tt.drop)
		}
	}
}

func TestApplyFailures(t *testing.T) {
	const src = `function throws(payload) {
  var e = JSON.parse(payload);
  if (!e.id) {
    throw new Error("no id in " + payload);
  }
  return payload;
}
function typo(payload) {
  return JSON.stringify(undefinedVariable);
}
function number(payload) { return 42; }
function object(payload) { return JSON.parse(payload); }
function array(payload) { return [payload]; }
function stringObject(payload) { return new String(payload); }
function throwsString(payload) { throw "plain text"; }
function loops(payload) {
  while (true) {}
}
function recurses(payload) { return recurses(payload); }
function lone(payload) { return '{"s":"a' + String.fromCharCode(0xD800) + 'b"}'; }
function loneLow(payload) { return "\uFFFD" + String.fromCharCode(0xD83D, 0xDE00, 0xDC01); }
function roundTrip(payload) { return JSON.stringify(JSON.parse(payload)); }
function idAsString(payload) { return JSON.stringify({id: String(JSON.parse(payload).id)}); }
function prefixed(payload) { var id = JSON.parse(payload).id; return JSON.stringify({a: "type" + id, b: "v1." + id}); }
function withoutN(payload) { return JSON.stringify({id: JSON.parse(payload).id}); }
function dropTest(payload) { return JSON.parse(payload).test ? null : payload; }
function revived(payload) { return JSON.stringify(JSON.parse(payload, function (k, v) { return v; })); }
function caught(payload) { try { return JSON.stringify(JSON.parse(payload)); } catch (e) { return "{}"; } }
function pretty(payload) { return JSON.stringify(JSON.parse(payload), null, 2); }
function inner(payload) { return JSON.stringify({id: JSON.parse(JSON.parse(payload).inner).id}); }
function reviverLoops(payload) {
  return JSON.stringify(JSON.parse(payload, function (k, v) { while (true) {} }));
}
`
	tests := []struct {
		fn, payload string
		want        Error
	}{
		{"throws", `{}`, Error{Function: "throws", Reason: "threw Error: no id in {}", Line: 4, Column: 11}},
		{"throws", `not json`, Error{Function: "throws", Line: 2}},
		{"typo", `{}`, Error{Function: "typo", Reason: "threw ReferenceError: undefinedVariable is not defined", Line: 9}},
		{"number", `{}`, Error{Function: "number", Reason: "returned a number, not a string: return the JSON text to convert (JSON.stringify(...)), or null or undefined to drop the message"}},
		{"object", `{}`, Error{Function: "object", Reason: "returned an object, not a string: return the JSON text to convert (JSON.stringify(...)), or null or undefined to drop the message"}},
		{"array", `{}`, Error{Function: "array", Reason: "returned an array, not a string: return the JSON text to convert (JSON.stringify(...)), or null or undefined to drop the message"}},
		{"stringObject", `{}`, Error{Function: "stringObject", Reason: "returned a String object, not a string: return the JSON text to convert (JSON.stringify(...)), or null or undefined to drop the message"}},
		{"throwsString", `{}`, Error{Function: "throwsString", Reason: "threw a string: plain text", Line: 15}},
		// goja reports an interrupted loop at the line of its function.
		{"loops", `{}`, Error{Function: "loops", Reason: "ran longer than 50ms on this message and was stopped", Line: 16}},
		{"recurses", `{}`, Error{Function: "recurses", Reason: "RangeError: the call stack exceeded 10000 frames (a recursion without end?)", Line: 19}},
		// JavaScript's string would reach Go with U+FFFD in place of the surrogate.
		{"lone", `{}`, Error{Function: "lone", Reason: `returned a string holding a lone UTF-16 surrogate (\uD800 at index 7), which has no UTF-8 form: it would be stored as U+FFFD, so the message is dead-lettered instead`}},
		{"loneLow", `{}`, Error{Function: "loneLow", Reason: `returned a string holding a lone UTF-16 surrogate (\uDC01 at index 3), which has no UTF-8 form: it would be stored as U+FFFD, so the message is dead-lettered instead`}},
		// JSON.parse rounds an integer beyond 2^53 to the nearest double: the output would carry a
		// value the message never held.
		{"roundTrip", `{"id":9007199254740993}`, Error{Function: "roundTrip", Reason: rounded("9007199254740992", "9007199254740993")}},
		// A number of more than 800 digits before its exponent: goja's JSON.parse (strconv)
		// misplaces its decimal point, 10^800 × 10^-800 read as 0.1, 10^1000 × 10^-995 as 10^-196.
		{"roundTrip", `{"x":1` + strings.Repeat("0", 800) + `e-800}`, Error{Function: "roundTrip", Reason: misread("0.1", "10000000000000000000…0000000e-800 (a number of 806 characters)")}},
		{"roundTrip", `{"x":"keep","y":1` + strings.Repeat("0", 1000) + `e-995}`, Error{Function: "roundTrip", Reason: misread("1e-196", "10000000000000000000…0000000e-995 (a number of 1006 characters)")}},
		{"roundTrip", `{"s":"a\"b","ids":[1,-18446744073709551615]}`, Error{Function: "roundTrip", Reason: rounded("-18446744073709552000", "-18446744073709551615")}},
		{"idAsString", `{"id":12345678901234567891}`, Error{Function: "idAsString", Reason: rounded("12345678901234567000", "12345678901234567891")}},
		// The payload holds the rounded digits too, once: the output's second copy is the other's.
		{"roundTrip", `{"a":9007199254740992,"b":9007199254740993}`, Error{Function: "roundTrip", Reason: rounded("9007199254740992", "9007199254740993")}},
		{"roundTrip", `{"x":0.9007199254740992,"b":9007199254740993}`, Error{Function: "roundTrip", Reason: rounded("9007199254740992", "9007199254740993")}},
		{"roundTrip", `{"e":9.007199254740993e15}`, Error{Function: "roundTrip", Reason: rounded("9007199254740992", "9.007199254740993e15")}},
		{"roundTrip", `{"big":123456789012345678901234}`, Error{Function: "roundTrip", Reason: rounded("1.2345678901234569e+23", "123456789012345678901234")}},
		{"roundTrip", `{"id":-9007199254740995}`, Error{Function: "roundTrip", Reason: rounded("-9007199254740996", "-9007199254740995")}},
		// A fraction rounded to an integer, whose digits before the point spell that integer: the
		// payload holds no 1 of its own (a whole-number or Decimal column refuses the fraction).
		{"roundTrip", `{"id":7,"n":1.0000000000000001}`, Error{Function: "roundTrip", Reason: roundedFraction("1", "1.0000000000000001")}},
		{"roundTrip", `{"id":9,"n":200.00000000000001}`, Error{Function: "roundTrip", Reason: roundedFraction("200", "200.00000000000001")}},
		{"roundTrip", `{"a":1.00000000000000001,"b":1}`, Error{Function: "roundTrip", Reason: roundedFraction("1", "1.00000000000000001")}},
		// What goja's JSON.parse refuses, said as JavaScript would, not in Go's words ("invalid
		// character 'ï' looking for beginning of value", "json: cannot unmarshal number 1e400 into
		// Go value of type float64").
		{"roundTrip", "\ufeff" + `{"id":1}`, Error{Function: "roundTrip", Reason: `threw SyntaxError: JSON.parse: the text starts with a byte order mark (U+FEFF), ` +
			`which JSON text may not (RFC 8259, section 8.1): remove it first (text.replace(/^\uFEFF/, "")), or, when the text is the payload, have the publisher leave it out`, Line: 22}},
		{"roundTrip", `{"x":1e400}`, Error{Function: "roundTrip", Reason: "threw SyntaxError: JSON.parse: the number 1e400 is beyond a JavaScript number's range " +
			"(about 1.8e308); this engine's JSON.parse refuses it (others read it as Infinity, which JSON.stringify writes as null)", Line: 22}},
		// In a string made of the number, after letters that are a number's too; in JSON held in
		// a string.
		{"prefixed", `{"id":9007199254740993}`, Error{Function: "prefixed", Reason: rounded("9007199254740992", "9007199254740993")}},
		{"inner", `{"inner":"{\"id\":9007199254740993}"}`, Error{Function: "inner", Reason: rounded("9007199254740992", "9007199254740993")}},
		// JSON.parse keeps the last of a name's two values, where a message without a function
		// is a dead letter: the output would carry one of them without a word.
		// Whatever the function makes of it: a row without the field, a renamed one, a drop; in
		// JSON a string of the payload holds, read with a reviver, or under a try.
		{"roundTrip", `{"id":20,"s":"a","s":"b"}`, Error{Function: "roundTrip", Reason: twice("", "s")}},
		{"roundTrip", `{"id":21,"s":"a","\u0073":"b"}`, Error{Function: "roundTrip", Reason: twice("", "s")}},
		{"roundTrip", `{"u":{"tags":[{"k":1},{"k":1,"k":2}]}}`, Error{Function: "roundTrip", Reason: twice(" at .u.tags[1]", "k")}},
		{"pretty", `{"n":5, "n":6}`, Error{Function: "pretty", Reason: twice("", "n")}},
		{"idAsString", `{"id":1,"id":2}`, Error{Function: "idAsString", Reason: twice("", "id")}},
		{"withoutN", `{"id":1,"n":1,"n":2}`, Error{Function: "withoutN", Reason: twice("", "n")}},
		{"dropTest", `{"test":true,"test":false}`, Error{Function: "dropTest", Reason: twice("", "test")}},
		{"inner", `{"inner":"{\"id\":1,\"id\":2}"}`, Error{Function: "inner", Reason: twice("", "id")}},
		{"revived", `{"a":{"b":1,"b":2}}`, Error{Function: "revived", Reason: twice(" at .a", "b")}},
		{"caught", `{"a":1,"a":2}`, Error{Function: "caught", Reason: twice("", "a")}},
		// Deeper than the converter reads, and escapes of lone surrogates, which JSON.parse reads
		// as one name (U+FFFD).
		{"withoutN", `{"id":1,"n":1,"n":2,"pad":` + strings.Repeat("[", 1001) + strings.Repeat("]", 1001) + `}`, Error{Function: "withoutN", Reason: twice("", "n")}},
		{"roundTrip", `{"\ud800":1,"\udbff":2}`, Error{Function: "roundTrip", Reason: twice("", "\ufffd")}},
		// A timeout in a reviver ends the call, through the JSON.parse that watches for names.
		{"reviverLoops", `{"a":1}`, Error{Function: "reviverLoops", Reason: "ran longer than 50ms on this message and was stopped", Line: 32}},
	}
	for _, tt := range tests {
		timeout := 50 * time.Millisecond
		if tt.fn == "recurses" {
			timeout = time.Minute // 10,000 calls deep, which takes long under the race detector
		}
		fn := load(t, src, tt.fn, timeout)
		out, drop, err := fn.Apply(tt.payload, messageInfo{})
		var e *Error
		if !errors.As(err, &e) {
			t.Errorf("%s(%s) = %q, drop %v, error %v; want a *Error", tt.fn, tt.payload, out, drop, err)
			continue
		}
		got := *e
		if tt.want.Column == 0 {
			got.Column = 0
		}
		if tt.want.Reason == "" {
			got.Reason = ""
		}
		if got.Line > 0 && got.Stack == "" {
			t.Errorf("%s: a line but no stack", tt.fn)
		}
		got.Stack = ""
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("%s(%s): error mismatch (-want +got):\n%s\n%v", tt.fn, tt.payload, diff, err)
		}
		if !strings.HasPrefix(err.Error(), "javascript UDF "+tt.fn+" failed: ") {
			t.Errorf("%s: error %q does not start with the function", tt.fn, err)
		}
		// The runtime is usable after a failure, a timeout included.
		fn2 := load(t, src+"\nfunction ok(p) { return p; }", "ok", 50*time.Millisecond)
		if out, _, err := fn2.Apply("x", messageInfo{}); err != nil || out != "x" {
			t.Errorf("after %s: ok(x) = %q, %v", tt.fn, out, err)
		}
		if _, _, err := fn.Apply(`{"id":1}`, messageInfo{}); tt.fn == "throws" && err != nil {
			t.Errorf("throws, again, on a good payload after a failure: %v", err)
		}
	}
}

// roundedFraction is the reason of a UDF whose output carries a fraction of the payload as
// JSON.parse rounded it to an integer.
func roundedFraction(got, literal string) string {
	return "returned " + got + " where the payload holds " + literal + ": a JavaScript number holds 15 to 17 significant digits, " +
		"so JSON.parse rounded it to an integer; the message is dead-lettered rather than stored changed " +
		"(have the producer send such a value as a string, or take it from the payload's text, not from JSON.parse)"
}

// rounded is the reason of a UDF whose output carries the integer literal of the payload as
// JSON.parse rounded it.
func rounded(got, literal string) string {
	return "returned " + got + " where the payload holds " + literal + ": a JavaScript number is exact only up to 2^53 " +
		"(9007199254740992), so JSON.parse rounded it; the message is dead-lettered rather than stored changed " +
		"(have the producer send such a value as a string, or take it from the payload's text, not from JSON.parse)"
}

// misread is the reason of a UDF whose output carries the number of more than 800 digits before
// its decimal point of the payload as JSON.parse misreads it.
func misread(got, literal string) string {
	return "returned " + got + " where the payload holds " + literal + ": the JavaScript engine reads a number of more than 800 " +
		"digits before its decimal point as another value (its parser keeps 800 of them, and puts the decimal point after them); " +
		"the message is dead-lettered rather than stored changed (write the number with fewer digits (1e10, not 1 with 800 zeros and e-790))"
}

// twice is the reason of a UDF that parsed an object (at where) holding a name twice.
func twice(where, name string) string {
	return fmt.Sprintf("JSON.parse read an object%s that holds the field %q twice, and keeps only the last value, so which one is "+
		"meant is ambiguous; the message is dead-lettered rather than stored with one of them, as it is without a function "+
		"(have the producer send each field once)", where, name)
}

// TestRounding: the numbers of a text that JSON.parse rounds to another integer, in its strings
// too, by the text JavaScript prints; and those written otherwise that print so exactly.
func TestRounding(t *testing.T) {
	type rounded = map[string]roundedLiteral
	for _, tc := range []struct {
		payload string
		rounded rounded
		exact   map[string]int
	}{
		{`{"a":1,"b":9007199254740992,"c":0.30000000000000004,"s":"type9007199254740993"}`, nil, nil},
		{`{"a":9007199254740993}`, rounded{"9007199254740992": {literal: "9007199254740993", printed: "9007199254740992"}}, map[string]int{}},
		{`[-9007199254740995,18446744073709551615,18446744073709551614]`,
			rounded{"9007199254740996": {literal: "-9007199254740995", printed: "-9007199254740996"}, "18446744073709552000": {literal: "18446744073709551615", printed: "18446744073709552000"}}, map[string]int{}},
		// JSON in a string, its quotes escaped, is read as the function that parses it reads it.
		{`{"inner":"{\"id\":9007199254740993}","u":"\u0039007199254740993"}`, rounded{"9007199254740992": {literal: "9007199254740993", printed: "9007199254740992"}}, map[string]int{}},
		// Another form of the same integer; a fraction or an exponent out of range is no integer.
		{`[9007199254740993.0,9.007199254740993e15,1.9007199254740993,1e9007199254740993,9.007199254740992e15]`,
			rounded{"9007199254740992": {literal: "9007199254740993.0", printed: "9007199254740992"}}, map[string]int{"9007199254740992": 1}},
		// 2^60 is a double exactly but prints as another integer; 10^21 and beyond print with an
		// exponent, the same value for 10^24, another for 123456789012345678901234.
		{`[18014398509481984,1152921504606846976,1000000000000000000000000,123456789012345678901234]`,
			rounded{"1152921504606847000": {literal: "1152921504606846976", printed: "1152921504606847000"}, "1.2345678901234569e+23": {literal: "123456789012345678901234", printed: "1.2345678901234569e+23"}},
			map[string]int{"1e+24": 1}},
	} {
		r := roundingOf(tc.payload)
		var got rounded
		var exact map[string]int
		if r != nil {
			got, exact = r.rounded, r.exactElsewhere
		}
		if diff := cmp.Diff(tc.rounded, got, cmp.AllowUnexported(roundedLiteral{})); diff != "" {
			t.Errorf("roundingOf(%s).rounded (-want +got):\n%s", tc.payload, diff)
		}
		if diff := cmp.Diff(tc.exact, exact); diff != "" {
			t.Errorf("roundingOf(%s).exactElsewhere (-want +got):\n%s", tc.payload, diff)
		}
	}
	// The same integer written as it does not print (1.0, 1e0), beside a fraction rounded to it:
	// JSON.stringify writes it as 1, which the output may hold once for each such number.
	for _, tc := range []struct {
		payload, output string
		ok              bool
	}{
		{`{"price":1.00,"ratio":1.0000000000000001}`, `{"price":1}`, true},
		{`{"v":"1.0000000000000001","n":1.0}`, `{"v":"1.0000000000000001","n":1}`, true},
		{`{"x":100.0,"y":99.999999999999999}`, `{"x":100}`, true},
		{`{"x":100.0,"y":99.999999999999999}`, `{"x":100,"y":100}`, false},
		{`{"a":1e0,"b":1.0000000000000001}`, `{"a":1,"b":1}`, false},
	} {
		err := roundingOf(tc.payload).check(tc.output, tc.payload)
		if (err == nil) != tc.ok {
			t.Errorf("payload %s, output %s: %v; want an error: %t", tc.payload, tc.output, err, !tc.ok)
		}
	}
	// A large payload: passed on as it is (its own digits), and as JSON.stringify(JSON.parse(...))
	// gives it back. Each text is read once, whatever the count of rounded numbers.
	var in, out strings.Builder
	for i := range 30_000 {
		n := uint64(9007199254740993 + 2*i)
		fmt.Fprintf(&in, ",%d", n)
		fmt.Fprintf(&out, ",%s", jsText(float64(n)))
	}
	payload, parsed := "[1"+in.String()+"]", "[1"+out.String()+"]"
	r := roundingOf(payload)
	if err := r.check(payload, payload); err != nil {
		t.Errorf("30,000 numbers passed on as written: %v", err)
	}
	if err := r.check(parsed, payload); err == nil || !strings.HasPrefix(err.Error(), "returned ") {
		t.Errorf("30,000 numbers as JSON.parse rounds them: %v", err)
	}
}

// TestOrder: the power of ten of a number's first significant digit, read from its text, by
// which the rounding check leaves out a number below 0.1 without parsing it.
func TestOrder(t *testing.T) {
	for tok, want := range map[string]int{"123": 2, "-0.05": -2, "5e-3": -3, "1.5E+2": 2, "0.99": -1, "000.001": -3,
		"9.9e-2": -2, "4.9406564584124654e-324": -324, "0.00000000000000000012345678901234567e19": 0} {
		if o, ok := order(tok); !ok || o != want {
			t.Errorf("order(%q) = %d, %t; want %d", tok, o, ok, want)
		}
	}
	for _, tok := range []string{"0.0", "0", "1.", "1e", "1e+", "-", "1.2.3", "1e1234567890", "1-2", "e5"} {
		if o, ok := order(tok); ok {
			t.Errorf("order(%q) = %d; want not ok", tok, o)
		}
	}
	// Near 1 and beyond, the number is read, and a fraction JSON.parse makes an integer of counts.
	if r := roundingOf(`[0.099999999999999999,0.99999999999999999]`); r == nil || r.rounded["1"].literal != "0.99999999999999999" || len(r.rounded) != 1 {
		t.Errorf("roundingOf 0.0999..., 0.999...: %+v; want 0.99999999999999999 rounded to 1", r)
	}
}

// TestRoundingOfMessage: an attribute's value or the message id that the function turns into
// a number (Number, parseInt, JSON.parse) is rounded as a payload's number is, and the output
// that carries it is refused the same way, naming where the number came from; a value passed on
// as text, or holding the rounded digits itself, passes.
func TestRoundingOfMessage(t *testing.T) {
	const src = `
function fromAttribute(payload, message) { var e = JSON.parse(payload); e.uid = Number(message.attributes.uid); return JSON.stringify(e); }
function fromId(payload, message) { return JSON.stringify({id: parseInt(message.messageId, 10)}); }
function fromString(payload) { var e = JSON.parse(payload); return JSON.stringify({uid: Number(e.uid)}); }
function asText(payload, message) { return JSON.stringify({uid: message.attributes.uid, id: message.messageId}); }
`
	tests := []struct {
		fn, payload string
		msg         messageInfo
		wantErr     string // "" for none
	}{
		{"fromAttribute", `{"a":1}`, messageInfo{ID: "1", Attributes: map[string]string{"uid": "9007199254740993"}},
			`javascript UDF fromAttribute failed: returned 9007199254740992 where the attribute "uid" holds 9007199254740993: a JavaScript number is exact only up to 2^53 (9007199254740992), so it was rounded when the function made a number of it; ` +
				`the message is dead-lettered rather than stored changed (pass the value on as a string, not as a number)`},
		{"fromId", `{}`, messageInfo{ID: "12345678901234567891"},
			`javascript UDF fromId failed: returned 12345678901234567000 where the message id holds 12345678901234567891: a JavaScript number is exact only up to 2^53 (9007199254740992), so it was rounded when the function made a number of it; ` +
				`the message is dead-lettered rather than stored changed (pass the value on as a string, not as a number)`},
		// A plus sign, which Number and parseInt read and JSON has not: the number was not read,
		// and 9007199254740992 was stored for the attribute's +9007199254740993.
		{"fromAttribute", `{"a":1}`, messageInfo{ID: "1", Attributes: map[string]string{"uid": "+9007199254740993"}},
			`javascript UDF fromAttribute failed: returned 9007199254740992 where the attribute "uid" holds 9007199254740993: a JavaScript number is exact only up to 2^53 (9007199254740992), so it was rounded when the function made a number of it; ` +
				`the message is dead-lettered rather than stored changed (pass the value on as a string, not as a number)`},
		{"fromString", `{"uid":"+9007199254740993"}`, messageInfo{ID: "1"},
			`javascript UDF fromString failed: returned 9007199254740992 where a string of the payload holds 9007199254740993: a JavaScript number is exact only up to 2^53 (9007199254740992), so it was rounded when the function made a number of it; ` +
				`the message is dead-lettered rather than stored changed (pass the value on as a string, not as a number)`},
		{"fromString", `{"uid":"+9007199254740992"}`, messageInfo{ID: "1"}, ""},
		{"fromString", `{"uid":" 9007199254740993 "}`, messageInfo{ID: "1"},
			`javascript UDF fromString failed: returned 9007199254740992 where a string of the payload holds 9007199254740993: a JavaScript number is exact only up to 2^53 (9007199254740992), so it was rounded when the function made a number of it; ` +
				`the message is dead-lettered rather than stored changed (pass the value on as a string, not as a number)`},
		// Integers of base 16, 8 and 2, which Number reads in a string (and JSON has not): 2^53+1
		// was stored as 2^53.
		{"fromString", `{"uid":"0x20000000000001"}`, messageInfo{ID: "1"},
			`javascript UDF fromString failed: returned 9007199254740992 where a string of the payload holds 0x20000000000001: a JavaScript number is exact only up to 2^53 (9007199254740992), so it was rounded when the function made a number of it; ` +
				`the message is dead-lettered rather than stored changed (pass the value on as a string, not as a number)`},
		{"fromString", `{"uid":"0x20000000000000"}`, messageInfo{ID: "1"}, ""},
		{"fromString", `{"uid":"0x20000000000002"}`, messageInfo{ID: "1"}, ""},
		{"fromAttribute", `{"a":1}`, messageInfo{ID: "1", Attributes: map[string]string{"uid": "0o400000000000000001"}},
			`javascript UDF fromAttribute failed: returned 9007199254740992 where the attribute "uid" holds 0o400000000000000001: a JavaScript number is exact only up to 2^53 (9007199254740992), so it was rounded when the function made a number of it; ` +
				`the message is dead-lettered rather than stored changed (pass the value on as a string, not as a number)`},
		{"fromAttribute", `{"a":1}`, messageInfo{ID: "1", Attributes: map[string]string{"uid": "0b1" + strings.Repeat("0", 52) + "1"}},
			`javascript UDF fromAttribute failed: returned 9007199254740992 where the attribute "uid" holds 0b1` + strings.Repeat("0", 52) + `1: a JavaScript number is exact only up to 2^53 (9007199254740992), so it was rounded when the function made a number of it; ` +
				`the message is dead-lettered rather than stored changed (pass the value on as a string, not as a number)`},
		// An address of 160 bits passed on as text is not a number the function made.
		{"asText", `{}`, messageInfo{ID: "1", Attributes: map[string]string{"uid": "0x742d35Cc6634C0532925a3b844Bc454e4438f44e"}}, ""},
		{"asText", `{}`, messageInfo{ID: "12345678901234567891", Attributes: map[string]string{"uid": "9007199254740993"}}, ""},
		{"fromAttribute", `{"a":1}`, messageInfo{ID: "1", Attributes: map[string]string{"uid": "9007199254740992"}}, ""},
	}
	for _, tt := range tests {
		fn := load(t, src, tt.fn, time.Second)
		out, _, err := fn.Apply(tt.payload, tt.msg)
		switch {
		case tt.wantErr == "" && err != nil:
			t.Errorf("%s(%s, %+v): %v", tt.fn, tt.payload, tt.msg, err)
		case tt.wantErr != "" && (err == nil || err.Error() != tt.wantErr):
			t.Errorf("%s(%s, %+v) = %q, %v; want the error %q", tt.fn, tt.payload, tt.msg, out, err, tt.wantErr)
		}
	}
}

// TestTimeoutDoesNotLeak checks that the interrupt of a call that timed out does not stop the
// next call, and that calls shorter than the bound are never stopped.
func TestTimeoutDoesNotLeak(t *testing.T) {
	fn := load(t, `function f(p) { if (p === "loop") { while (true) {} } return p; }`, "f", 20*time.Millisecond)
	for i := range 20 {
		if _, _, err := fn.Apply("loop", messageInfo{}); err == nil {
			t.Fatalf("call %d: the endless loop was not stopped", i)
		}
		for j := range 100 {
			if out, _, err := fn.Apply("ok", messageInfo{}); err != nil || out != "ok" {
				t.Fatalf("call %d.%d after a timeout: %q, %v", i, j, out, err)
			}
		}
	}
}

func TestErrorMessage(t *testing.T) {
	for _, tt := range []struct {
		e    Error
		want string
	}{
		{Error{Function: "f", Reason: "threw Error: x", Line: 3, Column: 9}, "javascript UDF f failed: threw Error: x at line 3, column 9"},
		{Error{Function: "f", Reason: "returned a number, not a string"}, "javascript UDF f failed: returned a number, not a string"},
	} {
		if got := tt.e.Error(); got != tt.want {
			t.Errorf("Error() = %q, want %q", got, tt.want)
		}
	}
}

func TestLoadErrors(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name, src, function string
		path                string // instead of a file of src
		want                []string
	}{
		{name: "syntax error", src: "function f(p) {\n  return p +;\n}", function: "f",
			want: []string{"javascriptTextTransformGcsPath ", "is not valid JavaScript: SyntaxError: ", "Line 2:13 Unexpected token ;"}},
		{name: "no such function", src: "function a(p) { return p; }\nfunction b(p) { return p; }\nvar n = 1;", function: "transform",
			want: []string{`javascriptTextTransformFunctionName "transform": `, "defines no function transform (transform is undefined; the file's global functions: a, b)"}},
		{name: "not a function", src: "var transform = 1;", function: "transform",
			want: []string{`javascriptTextTransformFunctionName "transform"`, "transform is a number"}},
		// A built-in, or a name the global object inherits, is not the file's function.
		{name: "a built-in", src: "function f(p) { return p; }", function: "String",
			want: []string{`javascriptTextTransformFunctionName "String"`, "defines no function String (String is JavaScript's own, not a function of the file; the file's global functions: f)"}},
		{name: "eval", src: "function f(p) { return p; }", function: "eval", want: []string{"eval is JavaScript's own"}},
		{name: "inherited", src: "function f(p) { return p; }", function: "constructor", want: []string{"constructor is JavaScript's own"}},
		{name: "top-level code throws", src: "function f(p) { return p; }\nnotDefined();", function: "f",
			want: []string{"javascriptTextTransformGcsPath ", "running the file's top-level code failed: threw ReferenceError: notDefined is not defined at line 2"}},
		{name: "no file", path: filepath.Join(dir, "missing.js"), function: "f",
			want: []string{"javascriptTextTransformGcsPath ", "missing.js: reading the file", "no such file"}},
	}
	for _, tt := range tests {
		path := tt.path
		if path == "" {
			path = writeUDF(t, tt.src)
		}
		l := loader{Config: Config{Path: path, Function: tt.function}}
		_, _, err := l.load(context.Background())
		if err == nil {
			t.Errorf("%s: no error", tt.name)
			continue
		}
		for _, w := range tt.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q does not contain %q", tt.name, err, w)
			}
		}
	}
}

// TestLexicalFunction checks that a function declared with const or let at the top level is
// found, as a global function is.
func TestLexicalFunction(t *testing.T) {
	fn := load(t, "const transform = (p) => p.toUpperCase();", "transform", time.Second)
	if out, _, err := fn.Apply("abc", messageInfo{}); err != nil || out != "ABC" {
		t.Errorf("transform(abc) = %q, %v", out, err)
	}
}

func TestCheck(t *testing.T) {
	path := writeUDF(t, "function f(p, m) { return JSON.parse(p).a; }\nfunction g(p) { return p || null; }\nfunction h(p) { return '{}'; }")
	for _, tt := range []struct {
		function string
		want     Report
	}{
		{"f", Report{Functions: []string{"f", "g", "h"},
			EmptyPayload: "javascript UDF f failed: threw SyntaxError: Unexpected end of JSON input (EOF) at line 1, column 37"}},
		{"g", Report{Functions: []string{"f", "g", "h"}, EmptyPayload: "dropped it"}},
		{"h", Report{Functions: []string{"f", "g", "h"}, EmptyPayload: `returned "{}"`}},
	} {
		r, err := Check(context.Background(), Config{Path: path, Function: tt.function})
		if err != nil {
			t.Errorf("Check(%s): %v", tt.function, err)
			continue
		}
		if diff := cmp.Diff(tt.want, r); diff != "" {
			t.Errorf("Check(%s) mismatch (-want +got):\n%s", tt.function, diff)
		}
	}
	if _, err := Check(context.Background(), Config{Path: path, Function: "missing"}); err == nil ||
		!strings.HasPrefix(err.Error(), `javascriptTextTransformFunctionName "missing": `) {
		t.Errorf("Check(missing) = %v, want an error naming javascriptTextTransformFunctionName", err)
	}
}

// TestCloudStorage reads the file from gs:// through the Cloud Storage stand-in, and refuses an
// object that does not exist, naming the parameter.
func TestCloudStorage(t *testing.T) {
	gcs := gcptest.StartGCS(t, "udfs")
	t.Setenv("STORAGE_EMULATOR_HOST", gcs.Host())
	gcs.Write("udfs", "team/transform.js", []byte("function transform(p) { return p + '!'; }"))
	ctx := context.Background()
	l := loader{Config: Config{Path: "gs://udfs/team/transform.js", Function: "transform"}}
	if err := l.open(ctx); err != nil {
		t.Fatal(err)
	}
	defer l.close()
	fn, _, err := l.load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if out, _, err := fn.Apply("hi", messageInfo{}); err != nil || out != "hi!" {
		t.Errorf("transform(hi) = %q, %v", out, err)
	}
	_, err = Check(ctx, Config{Path: "gs://udfs/team/missing.js", Function: "transform"})
	if err == nil || !strings.HasPrefix(err.Error(), "javascriptTextTransformGcsPath gs://udfs/team/missing.js: reading the file: ") {
		t.Errorf("Check of a missing object = %v, want an error naming javascriptTextTransformGcsPath", err)
	}
}
