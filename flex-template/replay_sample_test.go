package main

import (
	"bytes"
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
