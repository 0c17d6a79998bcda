// Package text cuts text for messages: error messages, dead letters' attributes, logs and the
// terminal.
package text

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// MillisUTC is the layout of an instant in RFC 3339, in UTC, with milliseconds
// (2026-01-15T10:30:00.123Z), as a message's publish_time and a dead letter's failedAt are given
// in text: Pub/Sub's publish times have milliseconds.
const MillisUTC = "2006-01-02T15:04:05.000Z"

// Ellipsis ends a text that Cut cut.
const Ellipsis = "…"

// Cut returns s as a string, cut to at most n bytes at a character boundary and then ended with
// [Ellipsis] when it was longer than n bytes (so a cut text is at most n+len(Ellipsis) bytes).
// Bytes that are not UTF-8 are kept as they are; a cut never splits a character.
func Cut[T ~string | ~[]byte](s T, n int) string {
	if len(s) <= n {
		return string(s)
	}
	return Prefix(s, n) + Ellipsis
}

// Prefix returns what [Cut] keeps of s: s as a string when it is at most n bytes, else its
// first n bytes, or fewer so as not to split a character; for a text that marks the cut its
// own way, such as a quoted snippet followed by "...".
func Prefix[T ~string | ~[]byte](s T, n int) string {
	if len(s) <= n {
		return string(s)
	}
	n = max(n, 0)
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return string(s[:n])
}

// CutWithin returns s cut as [Cut] does, but to at most n bytes with the ellipsis: for a limit
// that the result must keep, such as the size of a Pub/Sub attribute.
func CutWithin(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return Cut(s, n-len(Ellipsis))
}

// ValidUTF8 returns s with each byte that is not part of valid UTF-8 written as \xXX, as OneLine
// writes it: for a text that must be UTF-8, such as a Pub/Sub attribute. s itself when it is
// valid.
func ValidUTF8(s string) string { return escape(s, false) }

// OneLine returns s with its control characters escaped, so that it is one line of text that
// moves no cursor: \n, \r and \t, and \u00XX or \uXXXX for the other C0 and C1 controls, DEL
// and the line and paragraph separators U+2028 and U+2029; a byte that is not part of valid
// UTF-8 is \xXX. Nothing else changes (a backslash stays one).
func OneLine(s string) string { return escape(s, true) }

// escape writes each byte of s that is not part of valid UTF-8 as \xXX and, with lines, each
// control character as OneLine says; s itself when there is none.
func escape(s string, lines bool) string {
	if utf8.ValidString(s) && (!lines || !strings.ContainsFunc(s, breaksLine)) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case !lines || !breaksLine(r):
			b.WriteString(s[i : i+size])
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		default:
			fmt.Fprintf(&b, `\u%04x`, r)
		}
		i += size
	}
	return b.String()
}

// breaksLine reports whether r is a control character or a line or paragraph separator.
func breaksLine(r rune) bool {
	return r < 0x20 || r >= 0x7f && r <= 0x9f || r == '\u2028' || r == '\u2029'
}

// ValidUTF8Error returns err with its text made valid UTF-8 by [ValidUTF8] (errors.Is and
// errors.As still see err), nil for nil: for an error that ends a bundle, which the SDK harness
// sends to the runner as protobuf text, which must be UTF-8.
func ValidUTF8Error(err error) error {
	if err == nil {
		return nil
	}
	return validUTF8Error{err}
}

type validUTF8Error struct{ err error }

func (e validUTF8Error) Error() string { return ValidUTF8(e.err.Error()) }
func (e validUTF8Error) Unwrap() error { return e.err }
