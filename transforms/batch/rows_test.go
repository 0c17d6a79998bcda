package batch

import (
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/passert"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/transforms/stats"

	"github.com/ch-beam/pubsub-to-clickhouse/internal/flowtest"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/flow"
)

// TestMain runs the pipelines of these tests on prism, with its bundle splits off
// (flowtest.Main).
func TestMain(m *testing.M) { os.Exit(flowtest.Main(m)) }

func init() {
	register.Function2x1(batchText)
}

// batchText renders a batch as its message ids in order.
func batchText(_ int, b flow.Rows) string {
	ids := make([]string, len(b.Rows))
	for i, r := range b.Rows {
		ids[i] = r.MessageID
	}
	return fmt.Sprint(ids)
}

func groups(sizes ...int) []flow.Rows {
	var out []flow.Rows
	n := 0
	for _, size := range sizes {
		var g flow.Rows
		for range size {
			g.Rows = append(g.Rows, flow.Row{MessageID: fmt.Sprintf("m%02d", n), Payload: []byte("{}")})
			n++
		}
		out = append(out, g)
	}
	return out
}

// TestRowsCountMode: a batch holds exactly Rows rows, whatever the groups carry; the rest is
// emitted when the input ends.
func TestRowsCountMode(t *testing.T) {
	p, s := beam.NewPipelineWithRoot()
	in := beam.CreateList(s, groups(2, 5, 1, 3))
	out := beam.ParDo(s, batchText, Rows(s, Config{Mode: Mode{Rows: 3}, Shards: 1}, in))
	passert.Equals(s, out, "[m00 m01 m02]", "[m03 m04 m05]", "[m06 m07 m08]", "[m09 m10]")
	if err := ptest.Run(p); err != nil {
		t.Fatal(err)
	}
	checkReleased(t)
}

// checkReleased fails t when the batch stage kept buffers of the groups it decoded (a pool that
// gets none back spares nothing: every group decodes into a new buffer).
func checkReleased(t *testing.T) {
	t.Helper()
	if n := flow.Unreleased(); n != 0 {
		t.Errorf("%d buffers of decoded groups not given back after the pipeline ran", n)
	}
}

func init() {
	register.Function2x0(batchIDs)
	register.Emitter1[string]()
}

// batchIDs emits the message ids of a batch.
func batchIDs(b flow.Rows, emit func(string)) {
	for _, r := range b.Rows {
		emit(r.MessageID)
	}
}

// TestRowsCombinedModeEmitsEveryRowOnce: with a time bound that is due at almost every arrival
// and groups larger than a batch, every row is emitted exactly once.
func TestRowsCombinedModeEmitsEveryRowOnce(t *testing.T) {
	sizes := make([]int, 300)
	total := 0
	for i := range sizes {
		sizes[i] = (i*7919)%23 + 1
		total += sizes[i]
	}
	p, s := beam.NewPipelineWithRoot()
	in := beam.CreateList(s, groups(sizes...))
	batches := Rows(s, Config{Mode: Mode{Rows: 10, Window: time.Millisecond}, Shards: 2}, in)
	ids := beam.ParDo(s, batchIDs, beam.DropKey(s, batches))
	counted := stats.Count(s, ids)
	passert.Count(s, counted, "distinct ids", total)
	passert.Count(s, ids, "ids", total)
	if err := ptest.Run(p); err != nil {
		t.Fatal(err)
	}
	checkReleased(t)
}

func init() {
	register.Function2x0(slowBatchIDs)
}

// slowBatchIDs is batchIDs after a pause, as an INSERT would make: a bundle of the batching
// stage then shows no progress for longer than prism's progress ticks.
func slowBatchIDs(b flow.Rows, emit func(string)) {
	time.Sleep(300 * time.Millisecond)
	batchIDs(b, emit)
}

// TestRowsSlowBatchesEmitEveryRowOnce: when what follows the batcher is slow (an INSERT), every
// row is still emitted exactly once. With prism's bundle splits on (see localrunner), prism split
// such bundles of the stateful stage and ran two bundles of one key at once, one overwriting the
// other's state.
func TestRowsSlowBatchesEmitEveryRowOnce(t *testing.T) {
	const n = 400
	sizes := make([]int, n)
	for i := range sizes {
		sizes[i] = 1
	}
	p, s := beam.NewPipelineWithRoot()
	in := beam.CreateList(s, groups(sizes...))
	batches := Rows(s, Config{Mode: Mode{Rows: 40}, Shards: 1}, in)
	ids := beam.ParDo(s, slowBatchIDs, beam.DropKey(s, batches))
	passert.Count(s, stats.Count(s, ids), "distinct ids", n)
	passert.Count(s, ids, "ids", n)
	if err := ptest.Run(p); err != nil {
		t.Fatal(err)
	}
}
