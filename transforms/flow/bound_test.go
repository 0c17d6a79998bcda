package flow

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/ch-beam/pubsub-to-clickhouse/transforms/text"
)

// TestBoundError: a text of at most MaxErrorBytes is kept whole; a longer one is cut to exactly
// MaxErrorBytes or a few bytes less (the note's digits, a character not split), on a character
// boundary, and says how many bytes were cut.
func TestBoundError(t *testing.T) {
	short := strings.Repeat("a", MaxErrorBytes)
	if got := BoundError(short); got != short {
		t.Errorf("BoundError of %d bytes changed it", len(short))
	}
	for _, long := range []string{strings.Repeat("b", MaxErrorBytes+1), strings.Repeat("日本", 100_000), strings.Repeat("x", 50<<20)} {
		got := BoundError(long)
		if len(got) > MaxErrorBytes || len(got) < MaxErrorBytes-16 || !utf8.ValidString(got) {
			t.Errorf("BoundError of %d bytes: %d bytes (valid UTF-8 %v), want %d or a few less", len(long), len(got), utf8.ValidString(got), MaxErrorBytes)
		}
		kept, _, _ := strings.Cut(got, text.Ellipsis)
		if want := fmt.Sprintf("%s (%d bytes more were cut)", text.Ellipsis, len(long)-len(kept)); !strings.HasSuffix(got, want) || !strings.HasPrefix(long, kept) {
			t.Errorf("BoundError of %d bytes ends %q, want %q after a prefix of it", len(long), got[len(kept):], want)
		}
	}
}

// TestDeadLetterErrorsBounded: a dead letter's error message and stack trace stay within
// MaxErrorBytes each, whatever the error lists. An error joining thousands of causes (the
// refusals of a message with thousands of new fields, under addNewColumns) made both hundreds of
// kilobytes for a message of 23 KB, thirty times its payload.
func TestDeadLetterErrorsBounded(t *testing.T) {
	var causes []error
	for i := range 20_000 {
		causes = append(causes, fmt.Errorf("addNewColumnsMax: field \"f%d\" (value %d) is beyond the limit", i, i))
	}
	err := errors.Join(causes...)
	trace := StackTrace("parse", "", err)
	if len(trace) > MaxErrorBytes || !strings.HasPrefix(trace, "stage: parse\n  error: addNewColumnsMax: field \"f0\"") {
		t.Errorf("StackTrace: %d bytes (at most %d), starting %q", len(trace), MaxErrorBytes, text.Cut(trace, 80))
	}
	r := Row{MessageID: "1", Payload: []byte(`{"f0":0}`)}.DeadLetter(err.Error(), trace, time.Now())
	if len(r.ErrorMessage) > MaxErrorBytes || len(r.StackTrace) > MaxErrorBytes || string(r.Payload) != `{"f0":0}` {
		t.Errorf("Row.DeadLetter: error message %d bytes, stack trace %d, payload %q; want at most %d bytes each", len(r.ErrorMessage), len(r.StackTrace), r.Payload, MaxErrorBytes)
	}
	small := Row{MessageID: "1"}.DeadLetter("column \"n\": is not a number", "stage: parse", time.Now())
	if small.ErrorMessage != "column \"n\": is not a number" || small.StackTrace != "stage: parse" {
		t.Errorf("a short error changed: %q, %q", small.ErrorMessage, small.StackTrace)
	}
}

// TestWithUDFOutput: the UDF's output ends the stack trace, cut to MaxShownOutput bytes on a
// character boundary, and stays there when the trace is as long as a trace may be (the bound cut
// it off when it was added after the trace was bounded).
func TestWithUDFOutput(t *testing.T) {
	if got, want := WithUDFOutput("stage: write\nerror: x", []byte(`{"n":300}`)), "stage: write\nerror: x\nudf output: {\"n\":300}"; got != want {
		t.Errorf("WithUDFOutput = %q, want %q", got, want)
	}
	output := []byte(strings.Repeat("é", MaxShownOutput)) // 2 bytes each: the cut falls within one
	for _, trace := range []string{"stage: parse", StackTrace("parse", "", errors.New(strings.Repeat("e", 3*MaxErrorBytes)))} {
		got := WithUDFOutput(trace, output)
		_, line, _ := strings.Cut(got, "\nudf output: ")
		if want := strings.Repeat("é", MaxShownOutput/2) + text.Ellipsis; line != want || len(got) > MaxErrorBytes || !utf8.ValidString(got) {
			t.Errorf("a trace of %d bytes: %d bytes (valid UTF-8 %v), its output line %s; want at most %d and the line %s",
				len(trace), len(got), utf8.ValidString(got), text.Cut(line, 40), MaxErrorBytes, text.Cut(want, 40))
		}
		if BoundError(got) != got {
			t.Errorf("a trace of %d bytes: bounded again, it changes", len(trace))
		}
	}
}
