package text

import (
	"errors"
	"fmt"
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

func TestValidUTF8(t *testing.T) {
	for in, want := range map[string]string{
		"":                    "",
		"é\\x":                "é\\x",
		"parsed just '0\xc3'": `parsed just '0\xc3'`, // half of é
		"\xff\xfeab\xe2\x82":  `\xff\xfeab\xe2\x82`,
	} {
		if got := ValidUTF8(in); got != want {
			t.Errorf("ValidUTF8(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestValidUTF8Error(t *testing.T) {
	if ValidUTF8Error(nil) != nil {
		t.Error("ValidUTF8Error(nil) is not nil")
	}
	cause := errors.New("parsed just '0\xc3'")
	err := ValidUTF8Error(fmt.Errorf("insert: %w", cause))
	if got, want := err.Error(), `insert: parsed just '0\xc3'`; got != want || !errors.Is(err, cause) {
		t.Errorf("ValidUTF8Error: %q (errors.Is %v), want %q wrapping the cause", got, errors.Is(err, cause), want)
	}
}
