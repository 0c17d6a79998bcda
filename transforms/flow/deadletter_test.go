package flow

import (
	"errors"
	"fmt"
	"slices"
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
		{"bad \xff\xfe, cut \xe6\x97 then \n", `bad \xff\xfe, cut \xe6\x97 then \n`},
		{"\xc0", `\xc0`},
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

// TestCompareDeadLetters: a batch of dead letters sorts into one order whatever order it comes
// in, by message id and then by what else each holds, so that the dead-letter table's INSERTs
// (cut by size, each with a token of its ids and payloads) are the same at every attempt.
func TestCompareDeadLetters(t *testing.T) {
	want := []DeadLetter{
		{Payload: []byte("a")},
		{Payload: []byte("b"), ErrorMessage: "e1"},
		{Payload: []byte("b"), ErrorMessage: "e2"},
		{Payload: []byte("b"), ErrorMessage: "e2", StackTrace: "s"},
		{Payload: []byte("b"), ErrorMessage: "e2", StackTrace: "s", FailedAtMillis: 5},
		{Payload: []byte("b"), ErrorMessage: "e2", StackTrace: "s", FailedAtMillis: 5, OrderingKey: "k"},
		{Payload: []byte("b"), ErrorMessage: "e2", StackTrace: "s", FailedAtMillis: 5, OrderingKey: "k", Attributes: map[string]string{"a": "1"}},
		{Payload: []byte("b"), ErrorMessage: "e2", StackTrace: "s", FailedAtMillis: 5, OrderingKey: "k", Attributes: map[string]string{"a": "1", "b": ""}},
		{Payload: []byte("b"), ErrorMessage: "e2", StackTrace: "s", FailedAtMillis: 5, OrderingKey: "k", Attributes: map[string]string{"a": "2"}},
		{Payload: []byte("b"), ErrorMessage: "e2", StackTrace: "s", FailedAtMillis: 5, OrderingKey: "k", Attributes: map[string]string{"b": "0"}},
		{MessageID: "1", Payload: []byte("z")},
		{MessageID: "2", Payload: []byte("a")},
	}
	for round := range 30 {
		recs := make([]*DeadLetter, len(want))
		for i := range want {
			recs[(i*5+round*7)%len(want)] = &want[i]
		}
		if round%2 == 1 {
			slices.Reverse(recs)
		}
		slices.SortFunc(recs, CompareDeadLetters)
		for i, r := range recs {
			if r != &want[i] {
				t.Fatalf("round %d: place %d holds %+v, want %+v", round, i, *r, want[i])
			}
		}
	}
}
