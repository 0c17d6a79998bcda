package parse

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/metrics"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/passert"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"

	"github.com/ch-beam/pubsub-to-clickhouse/internal/chtest"
	"github.com/ch-beam/pubsub-to-clickhouse/internal/events"
	"github.com/ch-beam/pubsub-to-clickhouse/internal/flowtest"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/convert"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/flow"
)

func init() {
	register.Function2x0(elementSize)
	register.Function2x0(rowIDs)
	register.Function1x1(withinGatherBound)
	register.Function1x1(one)
	register.Function2x1(sum)
	register.Function1x1(fewerThanMessages)
}

func withinGatherBound(size int) bool { return size >= 1 && size <= MaxGatherRows }
func one(int) int                     { return 1 }
func sum(a, b int) int                { return a + b }

// fewerThanMessages says the 2500 messages of TestGatherOnRunner came in fewer elements.
func fewerThanMessages(elements int) bool { return elements < 2500 }

// elementSize emits how many rows an element holds.
func elementSize(rs flow.Rows, emit func(int)) { emit(len(rs.Rows)) }

// rowIDs emits the message id of every row.
func rowIDs(rs flow.Rows, emit func(string)) {
	for _, r := range rs.Rows {
		emit(r.MessageID)
	}
}

// gathered is what the parse DoFn emitted: each element of rows with its timestamp, and the
// dead letters, in order.
type gathered struct {
	elements []string // "t=<timestamp> ids=<id,id,...>" or "t=<timestamp> heartbeat"
	dead     []string
}

func (g *gathered) emitRows(et beam.EventTime, rs flow.Rows) {
	if len(rs.Rows) == 0 {
		g.elements = append(g.elements, fmt.Sprintf("t=%d heartbeat", et))
		return
	}
	ids := make([]string, len(rs.Rows))
	for i, r := range rs.Rows {
		ids[i] = r.MessageID
	}
	g.elements = append(g.elements, fmt.Sprintf("t=%d ids=%s", et, strings.Join(ids, ",")))
}

func (g *gathered) emitDeadLetter(d flow.DeadLetter) { g.dead = append(g.dead, d.MessageID) }

// TestGatherWithinBundle calls the DoFn as a runner does, with one message an element (as on
// Dataflow): the rows of a bundle come out as one element stamped with the latest timestamp,
// dead letters at once, a heartbeat after the rows before it, a full element as soon as it is
// full, and what is left at the end of the bundle.
func TestGatherWithinBundle(t *testing.T) {
	tracker := &convert.Tracker{Stage: "parse"}
	if err := tracker.Set(events.Table()); err != nil {
		t.Fatal(err)
	}
	gen := events.NewGenerator(1, time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC))
	msg := func(id string) flow.Messages {
		_, data := gen.Next()
		return flow.Messages{Messages: []flow.Message{{ID: id, Data: data}}}
	}
	ctx := metrics.SetBundleID(metrics.SetPTransformID(context.Background(), "parse"), "bundle")
	f := &parseFn{tracker: tracker}
	var g gathered
	process := func(et beam.EventTime, ms flow.Messages) {
		t.Helper()
		if err := f.ProcessElement(ctx, et, ms, g.emitRows, g.emitDeadLetter); err != nil {
			t.Fatal(err)
		}
	}

	// A bundle: three rows (the second element's timestamp is the latest), a bad message, a
	// heartbeat, two rows more.
	process(100, msg("a"))
	process(300, msg("b"))
	process(200, msg("c"))
	process(250, flow.Messages{Messages: []flow.Message{{ID: "bad", Data: []byte(`{"user_id":`)}}})
	process(400, flow.Messages{})
	process(500, msg("d"))
	process(450, msg("e"))
	if got, want := strings.Join(g.elements, "; "), "t=300 ids=a,b,c; t=400 heartbeat"; got != want {
		t.Errorf("before the end of the bundle, emitted %q, want %q", got, want)
	}
	if got := strings.Join(g.dead, ","); got != "bad" {
		t.Errorf("dead letters %q, want bad (emitted at once)", got)
	}
	f.FinishBundle(g.emitRows, g.emitDeadLetter)
	if got, want := strings.Join(g.elements, "; "), "t=300 ids=a,b,c; t=400 heartbeat; t=500 ids=d,e"; got != want {
		t.Errorf("after the bundle, emitted %q, want %q", got, want)
	}

	// The next bundle: an element of MaxGatherRows rows is emitted as soon as it is full.
	g = gathered{}
	for i := range MaxGatherRows + 1 {
		process(beam.EventTime(1000+i), msg(fmt.Sprint(i)))
	}
	if len(g.elements) != 1 || !strings.HasPrefix(g.elements[0], fmt.Sprintf("t=%d ids=0,1,", 1000+MaxGatherRows-1)) ||
		strings.Count(g.elements[0], ",") != MaxGatherRows-1 {
		t.Fatalf("after %d rows, emitted %d elements (%.80q...), want one of %d rows stamped %d", MaxGatherRows+1, len(g.elements), g.elements, MaxGatherRows, 1000+MaxGatherRows-1)
	}
	f.FinishBundle(g.emitRows, g.emitDeadLetter)
	if want := fmt.Sprintf("t=%d ids=%d", 1000+MaxGatherRows, MaxGatherRows); len(g.elements) != 2 || g.elements[1] != want {
		t.Errorf("at the end of the bundle, emitted %q, want %q", g.elements[1:], want)
	}
	f.FinishBundle(g.emitRows, g.emitDeadLetter)
	if len(g.elements) != 2 {
		t.Errorf("an empty bundle emitted %q", g.elements[2:])
	}
}

// TestGatherOnRunner runs the stage on prism with one message an element, as Dataflow's source
// gives them: every row comes out once, in fewer elements than messages.
func TestGatherOnRunner(t *testing.T) {
	srv := chtest.New(t)
	srv.CreateTable(t, `CREATE TABLE {table} (id UInt32, name String) ENGINE = MergeTree ORDER BY id`, "events")
	const n = 2500
	in := make([]flow.Message, n)
	want := make([]any, n)
	for i := range in {
		in[i] = flow.Message{ID: fmt.Sprintf("m%04d", i), Data: []byte(fmt.Sprintf(`{"id":%d,"name":"n%d"}`, i, i))}
		want[i] = in[i].ID
	}
	p, s := beam.NewPipelineWithRoot()
	rows, deadLetters := Parse(s, Config{ClickHouse: srv.Config(), Table: "events"}, beam.CreateList(s, flowtest.OneEach(in)))
	passert.Equals(s, beam.ParDo(s, rowIDs, rows), want...)
	passert.Empty(s, deadLetters)
	sizes := beam.ParDo(s, elementSize, rows)
	// Fewer elements than rows, none above the bound.
	passert.True(s, sizes, withinGatherBound)
	elements := beam.Combine(s, sum, beam.ParDo(s, one, sizes))
	passert.True(s, elements, fewerThanMessages)
	if _, err := ptest.RunWithMetrics(p); err != nil {
		t.Fatal(err)
	}
}

// TestLargeMessageNotKept checks that the parse stage does not keep the buffer a large message
// was converted in (the converted row is thrown away): it held one more copy of the largest
// message seen for the rest of the run. Small rows still reuse theirs.
func TestLargeMessageNotKept(t *testing.T) {
	tb := tableOf(t, [][2]string{{"id", "UInt32"}, {"s", "String"}})
	tracker := &convert.Tracker{Stage: "parse"}
	if err := tracker.Set(tb); err != nil {
		t.Fatal(err)
	}
	ctx := metrics.SetBundleID(metrics.SetPTransformID(context.Background(), "parse"), "bundle")
	f := &parseFn{tracker: tracker}
	var g gathered
	process := func(id, s string) {
		t.Helper()
		ms := flow.Messages{Messages: []flow.Message{{ID: id, Data: []byte(`{"id":1,"s":"` + s + `"}`)}}}
		if err := f.ProcessElement(ctx, 1, ms, g.emitRows, g.emitDeadLetter); err != nil {
			t.Fatal(err)
		}
	}
	process("small", "x")
	if cap(f.buf) == 0 {
		t.Fatal("a small row's buffer was not kept")
	}
	kept := &f.buf[:1][0]
	process("small2", "y")
	if &f.buf[:1][0] != kept {
		t.Error("a small row's buffer was not reused for the next small row")
	}
	process("large", strings.Repeat("a", 2*maxKeptBuf))
	if cap(f.buf) > maxKeptBuf {
		t.Errorf("after a message of %d bytes, the stage keeps a buffer of %d bytes, want at most %d", 2*maxKeptBuf, cap(f.buf), maxKeptBuf)
	}
	process("small3", "z")
	f.FinishBundle(g.emitRows, g.emitDeadLetter)
	if len(g.dead) != 0 || len(g.elements) != 1 || g.elements[0] != "t=1 ids=small,small2,large,small3" {
		t.Errorf("emitted %q, dead letters %q, want one element of the four rows", g.elements, g.dead)
	}
}
