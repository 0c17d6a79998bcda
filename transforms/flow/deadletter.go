package flow

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// DeadLetter is a message that could not become a row, as the parse and write stages pass it to
// the dead-letter stage. Fields are exported for Beam's schema coder.
type DeadLetter struct {
	// Payload is the original message bytes, unchanged (raw_message in the dead-letter table).
	Payload []byte
	// ErrorMessage says why, naming the field, the value and the rule (error_message).
	ErrorMessage string
	// StackTrace is the error chain, one cause per line, with the stage and the column where it
	// failed (stack_trace). Go has no Java stack; this is what locates the fault.
	StackTrace string
	// FailedAtMillis is the processing time of the failure, Unix milliseconds UTC (failed_at).
	FailedAtMillis int64
	// MessageID is the Pub/Sub message id, for tracing.
	MessageID string
	// Attributes are the original message's attributes, passed on to the dead-letter topic,
	// for messages that failed to parse and for rows the server rejected alike.
	Attributes map[string]string
	// OrderingKey is the original message's ordering key ("" when it has none), which the
	// dead-letter topic's message carries as its own.
	OrderingKey string
	// AckID acknowledges the message once the record is written (local source only).
	AckID string
}

// FailedAt returns FailedAtMillis as a time in UTC.
func (r DeadLetter) FailedAt() time.Time { return time.UnixMilli(r.FailedAtMillis).UTC() }

// Bytes is the size of r's row in the dead-letter table, near enough: its payload, error
// message, stack trace, message id, ordering key and attributes. The dead-letter batches are
// bounded by it (batchByteSize), and so are the INSERTs into the dead-letter table.
func (r *DeadLetter) Bytes() int64 {
	n := len(r.Payload) + len(r.ErrorMessage) + len(r.StackTrace) + len(r.MessageID) + len(r.OrderingKey)
	for k, v := range r.Attributes {
		n += len(k) + len(v)
	}
	return int64(n)
}

// DeadLetters is one batch of dead letters, as the dead-letter stage writes it. Fields are
// exported for Beam's schema coder.
type DeadLetters struct {
	Letters []DeadLetter
}

// StackTrace renders err for the stack_trace column: "stage: <stage>", "column: <name>" when one
// is known, then the error and each cause in its chain, one per line (a control character in an
// error's text, such as a raw newline of the payload it quotes, escaped by OneLine). A joined
// error (several columns failed) lists each part.
//
// It is at most MaxErrorBytes (BoundError): the chain is not written further once it is longer.
func StackTrace(stage, column string, err error) string {
	var b strings.Builder
	fmt.Fprintf(&b, "stage: %s\n", stage)
	if column != "" {
		fmt.Fprintf(&b, "column: %s\n", column)
	}
	writeChain(&b, err, "")
	return BoundError(strings.TrimRight(b.String(), "\n"))
}

// MaxErrorBytes bounds a dead letter's error message and its stack trace, each (BoundError). An
// error's text grows with what it lists: a message with thousands of new fields that
// addNewColumns refuses names each of them, twice over with the stack trace (about 170 bytes a
// field, where the field took 9 bytes of the payload), so that 300 such messages of 23 KB made
// 212 MB of dead letters and took the local run to a peak of 4.5 GB. A dead letter's size is then
// its payload and at most twice this.
const MaxErrorBytes = 16 << 10

// BoundError returns s when it is at most MaxErrorBytes, else its start, cut on a character
// boundary and ended with an ellipsis (…) and a note of how many bytes were left out, in
// MaxErrorBytes in all.
func BoundError(s string) string { return boundTo(s, MaxErrorBytes) }

// boundTo is BoundError with limit in place of MaxErrorBytes.
func boundTo(s string, limit int) string {
	if len(s) <= limit {
		return s
	}
	// The note's length with the most digits the count can have: what is kept depends on it.
	note := func(n int) string { return fmt.Sprintf(" (%d bytes more were cut)", n) }
	n := limit - len(ellipsis) - len(note(len(s)))
	for n > 0 && !utf8.RuneStart(s[n]) { // on a character's first byte
		n--
	}
	return s[:n] + ellipsis + note(len(s)-n)
}

// MaxShownOutput is how many bytes of the JavaScript UDF's output a dead letter's stack trace
// shows (WithUDFOutput).
const MaxShownOutput = 1000

// WithUDFOutput returns trace, a StackTrace, ended with the line "udf output: <output>": the
// JavaScript UDF's output, which the dead letter's error is about and its payload, the message as
// published, does not show. The output is cut to MaxShownOutput bytes on a character boundary
// and ended with an ellipsis (…), and trace is bounded (BoundError) so that the line stays within
// MaxErrorBytes.
func WithUDFOutput(trace string, output []byte) string {
	n := min(len(output), MaxShownOutput)
	for n < len(output) && n > 0 && !utf8.RuneStart(output[n]) {
		n--
	}
	line := "\nudf output: " + string(output[:n])
	if n < len(output) {
		line += ellipsis
	}
	return boundTo(trace, MaxErrorBytes-len(line)) + line
}

// ellipsis ends a text BoundError cut (text.Ellipsis; the values layer imports no plumbing).
const ellipsis = "…"

// BoundErrors returns r with its error message and stack trace bounded (BoundError): what
// every stage that makes a dead letter returns.
func (r DeadLetter) BoundErrors() DeadLetter {
	r.ErrorMessage, r.StackTrace = BoundError(r.ErrorMessage), BoundError(r.StackTrace)
	return r
}

// WithTable returns a StackTrace with the line "table: <table>" after its stage's: the table a
// routed message's dead letter was bound for (routeBy), which error_message does not name.
func WithTable(trace, table string) string {
	stage, rest, _ := strings.Cut(trace, "\n")
	if rest == "" {
		return stage + "\ntable: " + OneLine(table)
	}
	return stage + "\ntable: " + OneLine(table) + "\n" + rest
}

// TableOf returns the table WithTable named in trace, "" when it names none.
func TableOf(trace string) string {
	_, rest, _ := strings.Cut(trace, "\n")
	line, _, _ := strings.Cut(rest, "\n")
	table, ok := strings.CutPrefix(line, "table: ")
	if !ok {
		return ""
	}
	return table
}

func writeChain(b *strings.Builder, err error, indent string) {
	prefix := "error: "
	for err != nil && b.Len() <= MaxErrorBytes {
		if joined, ok := err.(interface{ Unwrap() []error }); ok {
			for _, e := range joined.Unwrap() {
				if b.Len() > MaxErrorBytes {
					break
				}
				writeChain(b, e, indent+"  ")
			}
			return
		}
		fmt.Fprintf(b, "%s%s%s (%T)\n", indent, prefix, OneLine(err.Error()), err)
		prefix = "caused by: "
		err = errors.Unwrap(err)
	}
}

// CompareAttributes orders two attribute maps by their pairs in key order (then the one with
// fewer pairs first): a total order, for sorting rows and dead letters that nothing else tells
// apart, whatever order a map's iteration gives.
func CompareAttributes(a, b map[string]string) int {
	ka, kb := slices.Sorted(maps.Keys(a)), slices.Sorted(maps.Keys(b))
	for i := 0; i < len(ka) && i < len(kb); i++ {
		if c := strings.Compare(ka[i], kb[i]); c != 0 {
			return c
		}
		if c := strings.Compare(a[ka[i]], b[kb[i]]); c != 0 {
			return c
		}
	}
	return cmp.Compare(len(ka), len(kb))
}

// CompareDeadLetters orders two dead letters by message id, then by everything their row and
// topic message hold (payload, error message, stack trace, time of failure, ordering key,
// attributes), so that a batch of them sorts the same way whatever order it came in.
func CompareDeadLetters(a, b *DeadLetter) int {
	if c := strings.Compare(a.MessageID, b.MessageID); c != 0 {
		return c
	}
	if c := cmp.Or(bytes.Compare(a.Payload, b.Payload), strings.Compare(a.ErrorMessage, b.ErrorMessage),
		strings.Compare(a.StackTrace, b.StackTrace), cmp.Compare(a.FailedAtMillis, b.FailedAtMillis),
		strings.Compare(a.OrderingKey, b.OrderingKey)); c != 0 {
		return c
	}
	return CompareAttributes(a.Attributes, b.Attributes)
}

// ValidUTF8 returns s with each byte that is not part of valid UTF-8 written as \xXX, as OneLine
// writes it: for a text that must be UTF-8, such as a Pub/Sub attribute. s itself when it is
// valid.
func ValidUTF8(s string) string { return escape(s, false) }

// OneLine returns s with its control characters escaped, so that it is one line of text that
// moves no cursor: \n, \r and \t, and \u00XX or \uXXXX for the other C0 and C1 controls, DEL
// and the line and paragraph separators U+2028 and U+2029; a byte that is not part of valid
// UTF-8 is \xXX. Nothing else changes (a backslash stays one). For the lines of a stack trace,
// and of the commands' output, which quote payloads' raw bytes (a newline between a payload's
// tokens, say); error_message keeps them.
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
