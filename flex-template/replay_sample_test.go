package main

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"cloud.google.com/go/pubsub/v2"
)

// TestPrintSampleOneLinePerPart: a dry run's sample keeps to its three lines whatever line breaks
// the payload, an attribute or the ordering key hold; they are shown as \n and \r.
func TestPrintSampleOneLinePerPart(t *testing.T) {
	var out bytes.Buffer
	printSample(newCmdIO(nil, &out, &bytes.Buffer{}), 0, &pubsub.Message{
		Data:        []byte("{\"a\":\n1}"),
		Attributes:  map[string]string{"ü": "ß\n2", "k": "v\r"},
		OrderingKey: "key\n1",
	})
	want := "  1. {\"a\":\\n1}\n     attributes: k=v\\r ü=ß\\n2\n     ordering key: key\\n1\n"
	if got := out.String(); got != want {
		t.Errorf("printSample printed\n%q\nwant\n%q", got, want)
	}
	if n := strings.Count(out.String(), "\n"); n != 3 {
		t.Errorf("%d lines, want 3", n)
	}
}

// TestWithoutGrown: the replayed rows of a hash that the table now holds more of than were
// replayed (a copy written while the replay ran) are all kept out of the DELETE, copies and all;
// the others go, in their order.
func TestWithoutGrown(t *testing.T) {
	hashes := []uint64{1, 2, 2, 3, 4, 2}
	if got := withoutGrown(hashes, nil); !slices.Equal(got, hashes) {
		t.Errorf("withoutGrown with nothing grown = %v, want %v", got, hashes)
	}
	if got, want := withoutGrown(hashes, map[uint64]int{2: 1, 4: 3}), []uint64{1, 3}; !slices.Equal(got, want) {
		t.Errorf("withoutGrown = %v, want %v", got, want)
	}
	if got := withoutGrown([]uint64{5}, map[uint64]int{5: 1}); len(got) != 0 {
		t.Errorf("withoutGrown of a grown hash alone = %v, want none", got)
	}
}
