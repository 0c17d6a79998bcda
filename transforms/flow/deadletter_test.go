package flow

import (
	"errors"
	"fmt"
	"testing"
)

// TestOneLine: control characters and line separators are escaped, nothing else changes.
func TestOneLine(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`column "n" (UInt8): 300 is out of range`, `column "n" (UInt8): 300 is out of range`},
		{"column \"n\" (UInt8): [1,\n 2] is an array", `column "n" (UInt8): [1,\n 2] is an array`},
		{"a\r\nb\tc", `a\r\nb\tc`},
		{"nul \x00 esc \x1b[2J del \x7f", `nul \u0000 esc \u001b[2J del \u007f`},
		{"nel \u0085 ls \u2028 ps \u2029", `nel \u0085 ls \u2028 ps \u2029`},
		{`a JSON escape "\n" stays`, `a JSON escape "\n" stays`},
		{"é ü 日本 🙂", "é ü 日本 🙂"},
		{"", ""},
	} {
		if got := OneLine(tc.in); got != tc.want {
			t.Errorf("OneLine(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestStackTraceOneLineAnError: an error whose text holds a raw newline (quoting a payload) is
// still one line of the stack trace, its causes and the parts of a joined error too.
func TestStackTraceOneLineAnError(t *testing.T) {
	inner := errors.New("cause\r\nwith a break")
	err := errors.Join(fmt.Errorf("column \"n\" (UInt8): [1,\n2] is an array: %w", inner), errors.New("second\npart"))
	want := "stage: parse\ncolumn: n\n" +
		`  error: column "n" (UInt8): [1,\n2] is an array: cause\r\nwith a break (*fmt.wrapError)` + "\n" +
		`  caused by: cause\r\nwith a break (*errors.errorString)` + "\n" +
		`  error: second\npart (*errors.errorString)`
	if got := StackTrace("parse", "n", err); got != want {
		t.Errorf("StackTrace:\n%s\nwant\n%s", got, want)
	}
}
