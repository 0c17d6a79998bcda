package route

import (
	"context"
	"errors"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"

	"github.com/ch-beam/pubsub-to-clickhouse/transforms/flow"
)

var (
	messagesReceived    = beam.NewCounter(flow.Namespace, "messages-received")
	deadLettersUnrouted = beam.NewCounter(flow.Namespace, "dead-letters-unrouted")
)

func init() {
	register.DoFn5x0[context.Context, beam.EventTime, flow.Messages, func(beam.EventTime, int, flow.Messages), func(flow.DeadLetter)](&routeFn{})
	register.Emitter3[beam.EventTime, int, flow.Messages]()
	register.Emitter1[flow.DeadLetter]()
	register.Function2x1(tableOf)
	register.Function2x1(groupOf)
	register.Function2x1(inGroupOf)
}

// Route splits msgs (a PCollection<flow.Messages>) by table: it returns one PCollection of
// flow.Messages per table of spec.Tables, in that order, and the dead letters
// (PCollection<flow.DeadLetter>, one per message) of the messages that name no table (an
// *Error, counted in dead-letters-unrouted). It counts every message in messages-received, which
// the parse stages of routed tables then leave out. An element of msgs becomes at most one element per
// table, with its timestamp; an element without messages (a heartbeat of the source) becomes one
// for every table, so that each table's batches see it. The transforms are named Route, and the
// outputs keep msgs' windowing.
func Route(s beam.Scope, spec Spec, msgs beam.PCollection) (tables []beam.PCollection, deadLetters beam.PCollection) {
	s = s.Scope("Route")
	keyed, deadLetters := beam.ParDo2(s, &routeFn{Spec: spec}, msgs)
	// A Partition of maxPartition outputs, whatever the number of tables (the outputs past the
	// last table stay empty): beam.Partition names its step after its number of outputs
	// (Partition(2)), so that one of the tables' number renamed it when a table was added, and a
	// running job's update (--update) found a step of the old job missing.
	var parts []beam.PCollection
	if n := len(spec.Tables); n <= maxPartition {
		parts = beam.Partition(s, maxPartition, tableOf, keyed)[:n]
	} else {
		// Groups of maxPartition tables, each partitioned again.
		for g, group := range beam.Partition(s, maxPartition, groupOf, keyed)[:(n+maxPartition-1)/maxPartition] {
			parts = append(parts, beam.Partition(s, maxPartition, inGroupOf, group)[:min(maxPartition, n-g*maxPartition)]...)
		}
	}
	for _, p := range parts {
		tables = append(tables, beam.DropKey(s, p))
	}
	return tables, deadLetters
}

// maxPartition is the number of outputs of Route's beam.Partition of its KV<int, flow.Messages>,
// the most it takes: its function's type has an argument per output and four more, and
// reflect.FuncOf takes at most 128 (a routing to 125 tables or more panicked at launch, until
// 2026-12-07). Beyond maxPartition tables the messages are partitioned by groups of
// maxPartition tables, then within each group: up to maxPartition² tables.
const maxPartition = 124

// tableOf is the partition function of Route: the table index the routing stage keyed by.
func tableOf(table int, _ flow.Messages) int { return table }

// groupOf and inGroupOf are Route's partition functions beyond maxPartition tables: the group of
// maxPartition tables of the table index, and the index within its group.
func groupOf(table int, _ flow.Messages) int   { return table / maxPartition }
func inGroupOf(table int, _ flow.Messages) int { return table % maxPartition }

// routeFn keys each message by its table's index. Exported fields are its configuration.
type routeFn struct {
	Spec Spec

	index map[string]int
	split [][]flow.Message
}

func (f *routeFn) Setup() {
	f.index = f.Spec.lookup()
	f.split = make([][]flow.Message, len(f.Spec.Tables))
}

// ProcessElement emits the messages of ms per table, and a dead letter for each that names no
// table.
func (f *routeFn) ProcessElement(ctx context.Context, et beam.EventTime, ms flow.Messages, emit func(beam.EventTime, int, flow.Messages), emitDeadLetter func(flow.DeadLetter)) {
	if len(ms.Messages) == 0 {
		for i := range f.split {
			emit(et, i, flow.Messages{})
		}
		return
	}
	messagesReceived.Inc(ctx, int64(len(ms.Messages)))
	for _, m := range ms.Messages {
		i, err := f.Spec.of(m, f.index)
		if err != nil {
			deadLettersUnrouted.Inc(ctx, 1)
			emitDeadLetter(NewDeadLetter(m, err))
			continue
		}
		f.split[i] = append(f.split[i], m)
	}
	for i, part := range f.split {
		if len(part) > 0 {
			emit(et, i, flow.Messages{Messages: part})
			f.split[i] = nil // the element keeps the slice
		}
	}
}

// NewDeadLetter builds the dead-letter record of a message that names no table: its payload as
// published, its attributes and ordering key, and err's text, which says that the JavaScript
// UDF's output is what was routed when the message is its output and the routing read a field of
// it (an attribute is the message's own, which the UDF does not change).
func NewDeadLetter(m flow.Message, err error) flow.DeadLetter {
	message, trace := err.Error(), flow.StackTrace("route", "", err)
	var re *Error
	if m.Transformed && !(errors.As(err, &re) && re.By.Attribute) {
		message = "routing the output of the javascript UDF: " + message
		trace = flow.WithUDFOutput(trace, m.Data) // the output read, as the parse and write stages show it
	}
	return flow.DeadLetter{
		Payload:        m.Published(),
		ErrorMessage:   message,
		StackTrace:     trace,
		FailedAtMillis: time.Now().UnixMilli(),
		MessageID:      m.ID,
		Attributes:     m.Attributes,
		OrderingKey:    m.OrderingKey,
		AckID:          m.AckID,
	}.BoundErrors()
}
