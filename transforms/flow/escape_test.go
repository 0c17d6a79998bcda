package flow

import (
	"errors"
	"fmt"
	"testing"
)

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
