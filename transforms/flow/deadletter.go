package flow

import (
	"errors"
	"fmt"
	"strings"
	"time"
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

// StackTrace renders err for the stack_trace column: "stage: <stage>", "column: <name>" when one
// is known, then the error and each cause in its chain, one per line. A joined error (several
// columns failed) lists each part.
func StackTrace(stage, column string, err error) string {
	var b strings.Builder
	fmt.Fprintf(&b, "stage: %s\n", stage)
	if column != "" {
		fmt.Fprintf(&b, "column: %s\n", column)
	}
	writeChain(&b, err, "")
	return strings.TrimRight(b.String(), "\n")
}

func writeChain(b *strings.Builder, err error, indent string) {
	prefix := "error: "
	for err != nil {
		if joined, ok := err.(interface{ Unwrap() []error }); ok {
			for _, e := range joined.Unwrap() {
				writeChain(b, e, indent+"  ")
			}
			return
		}
		fmt.Fprintf(b, "%s%s%s (%T)\n", indent, prefix, err.Error(), err)
		prefix = "caused by: "
		err = errors.Unwrap(err)
	}
}
