package convert

import "testing"

// numberNearMiss names the detail of JSON's number syntax that a string's number misses, and
// nothing for a string that is a number as JSON writes it or that holds no number.
func TestNumberNearMiss(t *testing.T) {
	for _, tt := range []struct{ raw, want string }{
		{`"007"`, "a JSON number has no leading zero"},
		{`"-00.5"`, "a JSON number has no leading zero"},
		{`"00"`, "a JSON number has no leading zero"},
		{`"+5"`, "a JSON number has no plus sign"},
		{`"+.5"`, "a JSON number has no plus sign"},
		{`".5"`, "a JSON number has a digit before its decimal point"},
		{`"-.5e3"`, "a JSON number has a digit before its decimal point"},
		{`"5."`, "a JSON number has a digit after its decimal point"},
		{`"1e"`, "a JSON number has digits after its exponent's e"},
		{`"1E+"`, "a JSON number has digits after its exponent's e"},
		{`" 5"`, "it has spaces around it"},
		{`"5\t"`, ""}, // an escape: not read
		{`"-1.5e-3 "`, "it has spaces around it"},
		// Numbers as JSON writes them, and what holds no number or more than a near miss.
		{`"5"`, ""}, {`"0"`, ""}, {`"-0.5e+3"`, ""},
		{`"."`, ""}, {`"+"`, ""}, {`"e5"`, ""}, {`"0x10"`, ""}, {`"1,5"`, ""}, {`"NaN"`, ""},
		{`"1e+-5"`, ""}, {`"++5"`, ""}, {`"5 5"`, ""}, {`" "`, ""}, {`""`, ""}, {`"1.2.3"`, ""},
		{`"1ee5"`, ""}, {`"-"`, ""}, {`"+-5"`, ""}, {`5`, ""},
	} {
		if got := numberNearMiss([]byte(tt.raw)); got != tt.want {
			t.Errorf("numberNearMiss(%s) = %q, want %q", tt.raw, got, tt.want)
		}
	}
}
