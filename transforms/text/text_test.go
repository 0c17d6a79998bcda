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
