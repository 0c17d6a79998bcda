package batch

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/window"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/state"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/passert"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/transforms/stats"

	"github.com/ch-beam/pubsub-to-clickhouse/transforms/flow"
)

// letter is a dead letter of the given id whose Bytes is size (at least the id's length and the
// error message's).
func letter(id string, size int) flow.DeadLetter {
	r := flow.DeadLetter{MessageID: id, ErrorMessage: "e", StackTrace: "s"}
	r.Payload = []byte(strings.Repeat("x", max(size-int(r.Bytes()), 0)))
	return r
}

// TestLettersMatchModel drives the dead letters' buffer directly, with the fake state of
// buffer_test.go: random groups of records (0 to 5,000 bytes each; some groups empty), bounds
// and due times. The batches are the rows' model's (each record a row), and
// between calls the state holds less than a batch, its count and size those of the bag, its start
// time exactly when records are buffered.
func TestLettersMatchModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 5))
	for iter := range 3000 {
		rows := int64(1 + rng.IntN(12))
		var maxBytes int64
		if rng.IntN(5) > 0 {
			maxBytes = int64(30 + rng.IntN(3000))
		}
		windowMillis := int64(0)
		if rng.IntN(2) == 0 {
			windowMillis = 1000
		}
		b := letterBuffer{tally: testTally(rows, maxBytes, windowMillis), bag: state.MakeBagState[flow.DeadLetter]("buffer")}
		fs := newFakeState(t)
		var elems [][]propRow
		var due []bool
		var got [][]string
		emit := func(_ int, batch flow.DeadLetters) {
			ids := make([]string, len(batch.Letters))
			for i, r := range batch.Letters {
				ids[i] = r.MessageID
			}
			got = append(got, ids)
		}
		id := 0
		for range 1 + rng.IntN(60) {
			var group flow.DeadLetters
			var pr []propRow
			k := rng.IntN(4)
			if rng.IntN(10) == 0 {
				k = 10 + rng.IntN(20)
			}
			for range k {
				size := 10 + rng.IntN(400)
				if rng.IntN(8) == 0 {
					size = rng.IntN(5000)
				}
				r := letter(fmt.Sprintf("m%05d", id), size)
				id++
				group.Letters = append(group.Letters, r)
				pr = append(pr, propRow{r.MessageID, r.Bytes()})
			}
			d := false
			if windowMillis > 0 {
				if _, ok := fs.values["started"]; ok {
					if rng.IntN(4) == 0 {
						fs.values["started"] = int64(1)
						d = true
					} else {
						fs.values["started"] = time.Now().UnixMilli()
					}
				}
			}
			elems, due = append(elems, pr), append(due, d)
			fs.newCall()
			b.add(fs, "0", group, emit)
			c, _ := fs.values["count"].(int64)
			sz, _ := fs.values["bytes"].(int64)
			if c >= rows || (maxBytes > 0 && sz >= maxBytes) {
				t.Fatalf("iter %d: buffered %d records of %d bytes: a full batch (rows %d, bytes %d)", iter, c, sz, rows, maxBytes)
			}
			var bagBytes int64
			for _, v := range fs.bags["buffer"] {
				r := v.(flow.DeadLetter)
				bagBytes += r.Bytes()
			}
			if int64(len(fs.bags["buffer"])) != c || (maxBytes > 0 && bagBytes != sz) {
				t.Fatalf("iter %d: state says %d records %d bytes, the bag holds %d records %d bytes", iter, c, sz, len(fs.bags["buffer"]), bagBytes)
			}
			if _, ok := fs.values["started"]; windowMillis > 0 && ok != (c > 0) {
				t.Fatalf("iter %d: started set %v with %d records buffered", iter, ok, c)
			}
		}
		fs.newCall()
		b.flush(fs, "0", emit)
		if len(fs.bags["buffer"]) != 0 {
			t.Fatalf("iter %d: records left after flush", iter)
		}
		if want := modelBatches(elems, due, rows, maxBytes); !reflect.DeepEqual(got, want) {
			t.Fatalf("iter %d (rows %d, bytes %d, window %d):\n got %v\nwant %v", iter, rows, maxBytes, windowMillis, got, want)
		}
	}
}

func init() {
	register.Function2x1(lettersText)
	register.Function2x1(sortedLettersText)
	register.Function2x0(letterIDs)
	register.DoFn2x0[flow.DeadLetters, func(string)](&oversizedLettersFn{})
}

// lettersText renders a batch of dead letters as its message ids in order.
func lettersText(_ int, b flow.DeadLetters) string {
	ids := make([]string, len(b.Letters))
	for i, r := range b.Letters {
		ids[i] = r.MessageID
	}
	return fmt.Sprint(ids)
}

// sortedLettersText is lettersText with the ids sorted.
func sortedLettersText(_ int, b flow.DeadLetters) string {
	ids := make([]string, len(b.Letters))
	for i, r := range b.Letters {
		ids[i] = r.MessageID
	}
	slices.Sort(ids)
	return fmt.Sprint(ids)
}

// letterIDs emits the message ids of a batch of dead letters.
func letterIDs(b flow.DeadLetters, emit func(string)) {
	for _, r := range b.Letters {
		emit(r.MessageID)
	}
}

// oversizedLettersFn emits a line for each batch of more than one record above Limit bytes.
type oversizedLettersFn struct{ Limit int64 }

func (fn *oversizedLettersFn) ProcessElement(b flow.DeadLetters, emit func(string)) {
	var size int64
	for i := range b.Letters {
		size += b.Letters[i].Bytes()
	}
	if size > fn.Limit && len(b.Letters) > 1 {
		emit(fmt.Sprintf("%d records of %d bytes", len(b.Letters), size))
	}
}

// lettersOfSize returns records m00, m01, ... of the given sizes.
func lettersOfSize(sizes ...int) []flow.DeadLetter {
	var out []flow.DeadLetter
	for i, size := range sizes {
		out = append(out, letter(fmt.Sprintf("m%02d", i), size))
	}
	return out
}

// TestDeadLettersBatches runs the dead letters' batchers on prism: the stateful one of Dataflow's
// count and combined modes (statefulLetters) ends a batch at the count, before the record that
// would take it above the byte bound, or with a record above it alone; in the fixed-window mode a
// window's records are one batch. (The local runner's GroupByKey with a count trigger fires a
// bounded input's pane whole on prism; the end-to-end tests run it.)
func TestDeadLettersBatches(t *testing.T) {
	for _, tc := range []struct {
		name     string
		stateful bool
		mode     Mode
		sizes    []int
		want     []string
	}{{
		name:     "the count, stateful",
		stateful: true,
		mode:     Mode{Rows: 3},
		sizes:    []int{100, 100, 100, 100, 100, 100, 100},
		want:     []string{"[m00 m01 m02]", "[m03 m04 m05]", "[m06]"},
	}, {
		name:     "the byte bound, stateful",
		stateful: true,
		mode:     Mode{Rows: 10, Bytes: 250},
		sizes:    []int{100, 100, 100, 600, 100, 150, 100},
		want:     []string{"[m00 m01]", "[m02]", "[m03]", "[m04 m05]", "[m06]"},
	}, {
		name:     "the combined mode, stateful",
		stateful: true,
		mode:     Mode{Rows: 2, Bytes: 250, Window: time.Hour},
		sizes:    []int{100, 100, 100, 300},
		want:     []string{"[m00 m01]", "[m02]", "[m03]"},
	}, {
		name:  "fixed windows",
		mode:  Mode{Window: time.Hour},
		sizes: []int{100, 100, 100, 3000},
		want:  []string{"[m00 m01 m02 m03]"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			p, s := beam.NewPipelineWithRoot()
			in := beam.CreateList(s, lettersOfSize(tc.sizes...))
			cfg := Config{Mode: tc.mode, Shards: 1}
			var batches beam.PCollection
			if tc.stateful {
				batches = statefulLetters(s, cfg, in)
			} else {
				batches = DeadLetters(s, cfg, in)
			}
			// The batches' order within a pane is the runner's: sort each one's ids.
			out := beam.ParDo(s, sortedLettersText, batches)
			out = beam.WindowInto(s, window.NewGlobalWindows(), out) // for passert, in every mode
			var want []any
			for _, w := range tc.want {
				want = append(want, w)
			}
			passert.Equals(s, out, want...)
			if err := ptest.Run(p); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestDeadLettersLocalByteBound runs the local runner's batcher of dead letters (a GroupByKey,
// then concatLettersFn) in the combined mode: the pane of 600 records (about 130 KB: a bounded
// input's pane fires whole on prism, as a pane the source's cap keeps from filling fires at its
// time bound) leaves it in batches of at most the byte bound, a larger record alone, each record
// once. It was one batch of the whole pane, which the SDK encodes at once: a pane of 300 MB of dead
// letters took gigabytes.
func TestDeadLettersLocalByteBound(t *testing.T) {
	const n, limit = 600, 700
	sizes := make([]int, n)
	for i := range sizes {
		sizes[i] = 20 + (i*104729)%400
	}
	sizes[7] = 2 * limit
	p, s := beam.NewPipelineWithRoot()
	in := beam.CreateList(s, lettersOfSize(sizes...))
	batches := beam.DropKey(s, DeadLetters(s, Config{Mode: Mode{Rows: 1000, Bytes: limit, Window: time.Hour}, Shards: 1}, in))
	ids := beam.ParDo(s, letterIDs, batches)
	passert.Count(s, stats.Count(s, ids), "distinct ids", n)
	passert.Count(s, ids, "ids", n)
	passert.Empty(s, beam.ParDo(s, &oversizedLettersFn{Limit: limit}, batches))
	if err := ptest.Run(p); err != nil {
		t.Fatal(err)
	}
}

// TestDeadLettersEmitEveryRecordOnce: 600 records of many sizes, two shards, a time bound due at
// almost every arrival, a count and a byte bound: the stateful batcher emits every record exactly
// once, and no batch of more than one record above the byte bound.
func TestDeadLettersEmitEveryRecordOnce(t *testing.T) {
	const n, limit = 600, 700
	sizes := make([]int, n)
	for i := range sizes {
		sizes[i] = 20 + (i*104729)%400
	}
	p, s := beam.NewPipelineWithRoot()
	in := beam.CreateList(s, lettersOfSize(sizes...))
	batches := beam.DropKey(s, statefulLetters(s, Config{Mode: Mode{Rows: 10, Bytes: limit, Window: time.Millisecond}, Shards: 2}, in))
	ids := beam.ParDo(s, letterIDs, batches)
	passert.Count(s, stats.Count(s, ids), "distinct ids", n)
	passert.Count(s, ids, "ids", n)
	passert.Empty(s, beam.ParDo(s, &oversizedLettersFn{Limit: limit}, batches))
	if err := ptest.Run(p); err != nil {
		t.Fatal(err)
	}
}
