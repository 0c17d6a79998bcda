// Package text cuts text for messages: error messages, dead letters' attributes, logs and the
// terminal.
package text

import (
	"strconv"
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

// CutMiddle returns s when it is at most n bytes, else its start and its end with
// " … (N bytes cut) … " between them, N the bytes left out, in at most n bytes: two thirds of
// what remains for the start, the rest for the end, neither split inside a character. For a text
// whose end matters as much as its start, such as a server's error message that quotes a long
// value before the rule it broke ("Cannot parse string '…' as UInt8: syntax error"). When n is
// too small for the note, s is cut as [CutWithin] does.
func CutMiddle(s string, n int) string {
	if len(s) <= n {
		return s
	}
	note := func(cut int) string {
		return " " + Ellipsis + " (" + strconv.Itoa(cut) + " bytes cut) " + Ellipsis + " "
	}
	room := n - len(note(len(s))) // the note with the most digits the count can have
	if room < 2 {
		return CutWithin(s, n)
	}
	head := Prefix(s, room*2/3)
	tail := room - len(head)
	start := len(s) - tail
	for start < len(s) && !utf8.RuneStart(s[start]) {
		start++
	}
	return head + note(start-len(head)) + s[start:]
}
