package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestReadLines: each line is a message of its bytes exactly, without its "\n" or "\r\n"; blank
// lines (JSON's whitespace only) are skipped, and a last line needs no "\n"; a line of other
// space (form feed, vertical tab, U+00A0, U+2028) is a message.
func TestReadLines(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []inputMessage
	}{
		{"a\r\r\nb\r\n\n \r\nc\n", []inputMessage{{Where: "f:1", Data: []byte("a\r")}, {Where: "f:2", Data: []byte("b")}, {Where: "f:5", Data: []byte("c")}}},
		{"x\ry\nlast\r", []inputMessage{{Where: "f:1", Data: []byte("x\ry")}, {Where: "f:2", Data: []byte("last\r")}}},
		{"", nil},
		{" \t\r\n\f\n\v\n\u00a0\n\u2028\n", []inputMessage{{Where: "f:2", Data: []byte("\f")}, {Where: "f:3", Data: []byte("\v")}, {Where: "f:4", Data: []byte("\u00a0")}, {Where: "f:5", Data: []byte("\u2028")}}},
	} {
		got, err := readLines("f", strings.NewReader(tc.in))
		if err != nil {
			t.Fatalf("readLines(%q): %v", tc.in, err)
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("readLines(%q) (-want +got):\n%s", tc.in, diff)
		}
	}
}

// TestReadLinesTooLong: a line longer than maxLineBytes is refused with its number.
func TestReadLinesTooLong(t *testing.T) {
	in := "{}\n\n" + strings.Repeat("x", maxLineBytes+1) + "\n{}\n"
	_, err := readLines("big.jsonl", bytes.NewReader([]byte(in)))
	if want := "big.jsonl:3: the line is longer than 33554432 bytes"; err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("readLines of a line of %d bytes: %v, want an error starting %q", maxLineBytes+1, err, want)
	}
}
