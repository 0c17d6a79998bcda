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

	"github.com/ch-beam/pubsub-to-clickhouse/transforms/text"
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
func StackTrace(stage, column string, err error) string {
	var b strings.Builder
	fmt.Fprintf(&b, "stage: %s\n", stage)
	if column != "" {
		fmt.Fprintf(&b, "column: %s\n", column)
	}
	writeChain(&b, err, "")
	return strings.TrimRight(b.String(), "\n")
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

// OneLine returns s with its control characters escaped, so that it is one line of text that
// moves no cursor (text.OneLine): for the lines of a stack trace, and of the commands' output,
// which quote payloads' raw bytes (a newline between a payload's tokens, say); error_message
// keeps them.
func OneLine(s string) string { return text.OneLine(s) }

func writeChain(b *strings.Builder, err error, indent string) {
	prefix := "error: "
	for err != nil {
		if joined, ok := err.(interface{ Unwrap() []error }); ok {
			for _, e := range joined.Unwrap() {
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
