package batch

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/window"
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
	runReleased(t, p)
}

// runReleased runs p on the direct test runner (ptest.Run), then fails t when the batch stage kept
// buffers of the groups it decoded (a pool that gets none back spares nothing: every group
// decodes into a new buffer).
func runReleased(t *testing.T, p *beam.Pipeline) {
	t.Helper()
	if err := ptest.Run(p); err != nil {
		t.Fatal(err)
	}
	if n := flow.Unreleased(); n != 0 {
		t.Errorf("%d buffers of decoded groups not given back after the pipeline ran", n)
	}
}

func init() {
	register.Function2x0(batchIDs)
	register.Emitter1[string]()
}

// assertEachIDOnce asserts that ids (message ids, in the global window) holds total ids, each
// once.
func assertEachIDOnce(s beam.Scope, ids beam.PCollection, total int) {
	passert.Count(s, stats.Count(s, ids), "distinct ids", total)
	passert.Count(s, ids, "ids", total)
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
	assertEachIDOnce(s, beam.ParDo(s, batchIDs, beam.DropKey(s, batches)), total)
	runReleased(t, p)
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
	assertEachIDOnce(s, beam.ParDo(s, slowBatchIDs, beam.DropKey(s, batches)), n)
	if err := ptest.Run(p); err != nil {
		t.Fatal(err)
	}
}

// sizedGroups returns groups of rows with ids m00, m01, ... in order; sizes[i] lists the size of
// each row of group i in bytes as flow.RowBytes counts them, or one byte more where no row is
// that size (the length of a payload of 128 bytes or more takes two bytes).
func sizedGroups(t *testing.T, sizes ...[]int) []flow.Rows {
	t.Helper()
	var out []flow.Rows
	n := 0
	for _, group := range sizes {
		var g flow.Rows
		for _, size := range group {
			r := flow.Row{MessageID: fmt.Sprintf("m%02d", n)}
			payload := size - flow.RowBytes(&r) // less one when the length takes two bytes
			r.Payload = []byte(strings.Repeat("x", payload))
			if flow.RowBytes(&r) > size && flow.RowBytes(&flow.Row{MessageID: r.MessageID, Payload: r.Payload[1:]}) == size {
				r.Payload = r.Payload[1:]
			}
			if got := flow.RowBytes(&r); got != size && got != size+1 {
				t.Fatalf("row %d: a row of %d bytes of payload is %d bytes, want %d", n, len(r.Payload), got, size)
			}
			g.Rows = append(g.Rows, r)
			n++
		}
		out = append(out, g)
	}
	return out
}

func rowsOfSize(n, size int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = size
	}
	return out
}

// TestRowsByteBound: with Mode.Bytes a batch ends before the row that would take it above the
// bound, or at the row that reaches it exactly; a row larger than the bound is a batch alone; the
// row count still bounds a batch of small rows; every row is emitted once, in order.
func TestRowsByteBound(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mode   Mode
		groups [][]int
		want   []string
	}{{
		name:   "two rows of 100 fit under 250",
		mode:   Mode{Rows: 10, Bytes: 250},
		groups: [][]int{rowsOfSize(2, 100), rowsOfSize(5, 100), rowsOfSize(1, 100), rowsOfSize(3, 100)},
		want:   []string{"[m00 m01]", "[m02 m03]", "[m04 m05]", "[m06 m07]", "[m08 m09]", "[m10]"},
	}, {
		name:   "a batch that reaches the bound exactly ends there",
		mode:   Mode{Rows: 10, Bytes: 200},
		groups: [][]int{{100}, {100}, {100, 50}, {50}, {100}},
		want:   []string{"[m00 m01]", "[m02 m03 m04]", "[m05]"},
	}, {
		name:   "a row above the bound is a batch alone",
		mode:   Mode{Rows: 10, Bytes: 250},
		groups: [][]int{{100}, {100, 600}, {100}, {300, 100}},
		want:   []string{"[m00 m01]", "[m02]", "[m03]", "[m04]", "[m05]"},
	}, {
		name:   "the count ends batches of small rows",
		mode:   Mode{Rows: 3, Bytes: 1000},
		groups: [][]int{rowsOfSize(2, 100), rowsOfSize(5, 100)},
		want:   []string{"[m00 m01 m02]", "[m03 m04 m05]", "[m06]"},
	}, {
		name:   "the combined mode",
		mode:   Mode{Rows: 10, Bytes: 250, Window: time.Hour},
		groups: [][]int{rowsOfSize(3, 100), {400}},
		want:   []string{"[m00 m01]", "[m02]", "[m03]"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			p, s := beam.NewPipelineWithRoot()
			in := beam.CreateList(s, sizedGroups(t, tc.groups...))
			out := beam.ParDo(s, batchText, Rows(s, Config{Mode: tc.mode, Shards: 1}, in))
			var want []any
			for _, w := range tc.want {
				want = append(want, w)
			}
			passert.Equals(s, out, want...)
			runReleased(t, p)
		})
	}
}

func init() {
	register.DoFn2x0[flow.Rows, func(string)](&oversizedFn{})
}

// oversizedFn emits a line for each batch of more than one row above Limit bytes
// (flow.RowBytes).
type oversizedFn struct{ Limit int }

func (fn *oversizedFn) ProcessElement(b flow.Rows, emit func(string)) {
	size := 0
	for i := range b.Rows {
		size += flow.RowBytes(&b.Rows[i])
	}
	if size > fn.Limit && len(b.Rows) > 1 {
		emit(fmt.Sprintf("%d rows of %d bytes", len(b.Rows), size))
	}
}

// TestRowsByteBoundEmitsEveryRowOnce: groups of rows of many sizes, with a time bound due at
// almost every arrival, a count and a byte bound: every row is emitted exactly once, and no batch
// of more than one row is above the byte bound.
func TestRowsByteBoundEmitsEveryRowOnce(t *testing.T) {
	const limit = 700
	var sizes [][]int
	total, n := 0, 0
	for i := range 300 {
		g := make([]int, (i*7919)%23+1)
		for j := range g {
			g[j] = 20 + (n*104729)%400 // 20 to 419 bytes
			n++
		}
		sizes = append(sizes, g)
		total += len(g)
	}
	p, s := beam.NewPipelineWithRoot()
	in := beam.CreateList(s, sizedGroups(t, sizes...))
	batches := beam.DropKey(s, Rows(s, Config{Mode: Mode{Rows: 10, Bytes: limit, Window: time.Millisecond}, Shards: 2}, in))
	assertEachIDOnce(s, beam.ParDo(s, batchIDs, batches), total)
	passert.Empty(s, beam.ParDo(s, &oversizedFn{Limit: limit}, batches))
	runReleased(t, p)
}

// TestRowsZstdEveryMode: with the rows compressed with zstd through the GroupByKey and the
// batcher's state (shuffleCompression=zstd), every mode emits every row exactly once, with its
// payload as it came.
func TestRowsZstdEveryMode(t *testing.T) {
	for _, mode := range []Mode{{Rows: 7}, {Rows: 7, Window: time.Millisecond, Bytes: 2000}, {Window: time.Hour}} {
		t.Run(mode.String(), func(t *testing.T) {
			sizes := make([]int, 40)
			total := 0
			for i := range sizes {
				sizes[i] = i%9 + 1
				total += sizes[i]
			}
			in := groups(sizes...)
			for _, g := range in {
				for i := range g.Rows {
					// compressible, and above the size worth compressing
					g.Rows[i].Payload = []byte(strings.Repeat(`{"id":"`+g.Rows[i].MessageID+`"}`, 20))
				}
			}
			p, s := beam.NewPipelineWithRoot()
			batches := Rows(s, Config{Mode: mode, Shards: 2, Compression: flow.Zstd}, beam.CreateList(s, in))
			assertEachIDOnce(s, beam.WindowInto(s, window.NewGlobalWindows(), beam.ParDo(s, payloadIDs, beam.DropKey(s, batches))), total)
			runReleased(t, p)
		})
	}
}

func init() {
	register.Function2x0(payloadIDs)
}

// payloadIDs emits the message id of each row of a batch whose payload is the one
// TestRowsZstdEveryMode gave it, and "wrong payload" for any other.
func payloadIDs(b flow.Rows, emit func(string)) {
	for _, r := range b.Rows {
		if string(r.Payload) != strings.Repeat(`{"id":"`+r.MessageID+`"}`, 20) {
			emit("wrong payload")
			continue
		}
		emit(r.MessageID)
	}
}
