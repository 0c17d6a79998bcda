package parse

import (
	"fmt"
	"strings"
	"testing"

	"github.com/ch-beam/pubsub-to-clickhouse/transforms/evolve"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/flow"
)

// TestDeadLetterOfManyNewFields: the dead letter of a message whose thousands of new fields
// addNewColumns refuses keeps at most 16 KiB of error message and of stack trace. Before, each
// named every field, about 170 bytes a field each, where the field took 9 bytes of the payload:
// 300 such messages of 23 KB (2,000 fields) made 212 MB of dead letters, and the local run peaked
// at 4.5 GB.
func TestDeadLetterOfManyNewFields(t *testing.T) {
	const bound = 16 << 10 // flow.MaxErrorBytes
	c, err := evolve.NewChecker(evolve.Limits{Max: 50})
	if err != nil {
		t.Fatal(err)
	}
	var payload strings.Builder
	var refused evolve.Refusals
	payload.WriteString(`{"id":1`)
	for i := range 2000 {
		fmt.Fprintf(&payload, `,"f%d":%d`, i, i)
		refused = append(refused, c.Beyond(fmt.Sprintf("f%d", i), []byte(fmt.Sprint(i)), 0, 2000))
	}
	payload.WriteString("}")
	m := flow.Message{ID: "1", Data: []byte(payload.String()), AckID: "a"}
	r := NewDeadLetter(m, refused)
	if len(r.ErrorMessage) > bound || len(r.StackTrace) > bound {
		t.Errorf("a dead letter of a %d-byte message: error message %d bytes, stack trace %d; want at most %d each",
			len(m.Data), len(r.ErrorMessage), len(r.StackTrace), bound)
	}
	if first := `addNewColumnsMax: field "f0" (value 0) is beyond the limit`; !strings.HasPrefix(r.ErrorMessage, first) ||
		!strings.Contains(r.ErrorMessage, "more fields refused; the message is a dead letter") {
		t.Errorf("error message %q...%q: want it to start with the first refusal and say how many more there were",
			r.ErrorMessage[:min(100, len(r.ErrorMessage))], r.ErrorMessage[max(0, len(r.ErrorMessage)-100):])
	}
	if string(r.Payload) != payload.String() || r.AckID != "a" {
		t.Errorf("the dead letter's payload or ack id changed")
	}
}
