package text

import (
	"strings"
	"testing"
)

func TestCut(t *testing.T) {
	for _, tc := range []struct {
		in   string
		n    int
		want string
	}{
		{"", 3, ""},
		{"abc", 3, "abc"},
		{"abcd", 3, "abc…"},
		{"aé", 2, "a…"},          // not half of é
		{"éé", 3, "é…"},          // é is 2 bytes: 3 bytes hold one and a half
		{"éé", 1, "…"},           // nothing fits
		{"a\xffbc", 2, "a\xff…"}, // a byte that is not UTF-8 counts as a character of its own
		{"abc", 0, "…"},
		{"abc", -1, "…"},
	} {
		if got := Cut(tc.in, tc.n); got != tc.want {
			t.Errorf("Cut(%q, %d) = %q, want %q", tc.in, tc.n, got, tc.want)
		}
		if got := Cut([]byte(tc.in), tc.n); got != tc.want {
			t.Errorf("Cut([]byte(%q), %d) = %q, want %q", tc.in, tc.n, got, tc.want)
		}
		if got, want := Prefix(tc.in, tc.n), strings.TrimSuffix(tc.want, Ellipsis); got != want {
			t.Errorf("Prefix(%q, %d) = %q, want %q", tc.in, tc.n, got, want)
		}
	}
}

func TestCutWithin(t *testing.T) {
	for _, tc := range []struct {
		in   string
		n    int
		want string
	}{
		{"abcd", 4, "abcd"},
		{"abcde", 4, "a…"}, // the ellipsis is 3 of the 4 bytes
		{"éééé", 6, "é…"},
		{"abcdefgh", 7, "abcd…"},
	} {
		got := CutWithin(tc.in, tc.n)
		if got != tc.want || len(got) > tc.n {
			t.Errorf("CutWithin(%q, %d) = %q (%d bytes), want %q", tc.in, tc.n, got, len(got), tc.want)
		}
	}
}

func TestCutMiddle(t *testing.T) {
	long := "Cannot parse string '" + strings.Repeat("a", 10000) + "' as UInt8: syntax error at begin of string"
	for _, tc := range []struct {
		in   string
		n    int
		want string
	}{
		{"abcdef", 6, "abcdef"},
		{"abcdefghijklmnopqrstuvwxyz0123456789", 30, "abcd … (30 bytes cut) … 89"}, // the note takes 24 of the 30 bytes
		{"éééééééééééééééééééééééééééé", 30, "éé … (50 bytes cut) … é"},            // 56 bytes, never half of é
		{"abcdefghijklmnopqrstuvwxyz", 10, "abcdefg…"},                             // no room for the note
		{long, 160, "Cannot parse string '" + strings.Repeat("a", 67) + " … (9931 bytes cut) … aa' as UInt8: syntax error at begin of string"},
	} {
		got := CutMiddle(tc.in, tc.n)
		if got != tc.want || len(got) > tc.n {
			t.Errorf("CutMiddle(%.40q, %d) = %q (%d bytes), want %q", tc.in, tc.n, got, len(got), tc.want)
		}
	}
}
