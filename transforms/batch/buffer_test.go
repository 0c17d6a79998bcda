package batch

// The buffer of the count and combined modes driven directly, with a fake state.Provider,
// against a reference model: greedy batches by rows and bytes, and the buffered rows emitted
// before an element whenever the test makes the batch due.

import (
	"context"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/window"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/state"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/timers"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/util/reflectx"

	"github.com/ch-beam/pubsub-to-clickhouse/transforms/flow"
)

// fakeState is a state.Provider of one key: writes apply at once. It fails the test when a bag
// is read after it was written or cleared in the same call (the SDK's quirk), and stores bag
// values encoded and decoded again, as a runner does.
type fakeState struct {
	t       *testing.T
	values  map[string]any
	bags    map[string][]any
	touched map[string]bool // bags written or cleared in this call
}

func newFakeState(t *testing.T) *fakeState {
	return &fakeState{t: t, values: map[string]any{}, bags: map[string][]any{}, touched: map[string]bool{}}
}

func (f *fakeState) newCall() { f.touched = map[string]bool{} }

func (f *fakeState) ReadValueState(id string) (any, []state.Transaction, error) {
	return f.values[id], nil, nil
}
func (f *fakeState) WriteValueState(v state.Transaction) error { f.values[v.Key] = v.Val; return nil }
func (f *fakeState) ClearValueState(v state.Transaction) error { delete(f.values, v.Key); return nil }
func (f *fakeState) ReadBagState(id string) ([]any, []state.Transaction, error) {
	if f.touched[id] {
		f.t.Fatalf("bag %s read after a write or clear in the same call", id)
	}
	return append([]any(nil), f.bags[id]...), nil, nil
}
func (f *fakeState) WriteBagState(v state.Transaction) error {
	f.touched[v.Key] = true
	p, ok := v.Val.(flow.Packed)
	if !ok { // a dead letter, kept as it is
		f.bags[v.Key] = append(f.bags[v.Key], v.Val)
		return nil
	}
	q, err := flow.DecodePacked(append([]byte(nil), flow.EncodePacked(p)...))
	if err != nil {
		f.t.Fatal(err)
	}
	f.bags[v.Key] = append(f.bags[v.Key], q)
	return nil
}

// testTally is the tally of a buffer under test, its state named as Rows and DeadLetters name it.
func testTally(rows, maxBytes, windowMillis int64) tally {
	return tally{rows: rows, maxBytes: maxBytes, windowMillis: windowMillis, count: state.MakeValueState[int64]("count"),
		bytes: state.MakeValueState[int64]("bytes"), started: state.MakeValueState[int64]("started")}
}
func (f *fakeState) ClearBagState(v state.Transaction) error {
	f.touched[v.Key] = true
	delete(f.bags, v.Key)
	return nil
}
func (f *fakeState) CreateAccumulatorFn(string) reflectx.Func { panic("no") }
func (f *fakeState) AddInputFn(string) reflectx.Func          { panic("no") }
func (f *fakeState) MergeAccumulatorsFn(string) reflectx.Func { panic("no") }
func (f *fakeState) ExtractOutputFn(string) reflectx.Func     { panic("no") }
func (f *fakeState) ReadMapStateValue(string, any) (any, []state.Transaction, error) {
	panic("no")
}
func (f *fakeState) ReadMapStateKeys(string) ([]any, []state.Transaction, error) { panic("no") }
func (f *fakeState) WriteMapState(state.Transaction) error                       { panic("no") }
func (f *fakeState) ClearMapStateKey(state.Transaction) error                    { panic("no") }
func (f *fakeState) ClearMapState(state.Transaction) error                       { panic("no") }
func (f *fakeState) ReadOrderedListState(string) ([]any, []state.Transaction, error) {
	panic("no")
}
func (f *fakeState) WriteOrderedListState(state.Transaction) error { panic("no") }
func (f *fakeState) ClearOrderedListState(state.Transaction) error { panic("no") }

type propRow struct {
	id   string
	size int64
}

// modelBatches is the reference: rows in order, a forced break before index i when due[i] and
// something is buffered, greedy batches of at most rows rows; with maxBytes, a batch ends before
// the row that would take it above maxBytes, or at the row that reaches it; the rest at the end.
func modelBatches(elems [][]propRow, due []bool, rows, maxBytes int64) [][]string {
	var out [][]string
	var cur []string
	var size int64
	emit := func() {
		if len(cur) > 0 {
			out = append(out, cur)
		}
		cur, size = nil, 0
	}
	for i, e := range elems {
		if due[i] {
			emit()
		}
		for _, r := range e {
			if maxBytes > 0 && len(cur) > 0 && size+r.size > maxBytes {
				emit()
			}
			cur = append(cur, r.id)
			size += r.size
			if int64(len(cur)) == rows || (maxBytes > 0 && size >= maxBytes) {
				emit()
			}
		}
	}
	emit()
	return out
}

// TestBufferMatchesModel: random groups (heartbeats, rows of 0 to 5,000 bytes, compressible or
// not, with attributes, UDF input and publish time, compressed with MinLZ, S2 or zstd), bounds and due
// times, and the buffer's own compression at random; the batches are the
// model's, and between calls the state holds fewer rows and bytes than a batch, its count and
// size those of the bag, its start time exactly when rows are buffered.
func TestBufferMatchesModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
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
		// The buffer's compression, and each group's, at random: a job updated from one
		// shuffleCompression to another finds groups of each in its state.
		b := buffer{tally: testTally(rows, maxBytes, windowMillis), bag: state.MakeBagState[flow.Packed]("buffer"), compression: flow.Compression(rng.IntN(len(flow.CompressionNames())))}
		fs := newFakeState(t)
		var elems [][]propRow
		var due []bool
		var got [][]string
		emit := func(shard int, rs flow.Rows) {
			ids := make([]string, len(rs.Rows))
			for i := range rs.Rows {
				ids[i] = rs.Rows[i].MessageID
			}
			got = append(got, ids)
		}
		n := 0
		nElems := 1 + rng.IntN(40)
		for range nElems {
			var g flow.Rows
			k := rng.IntN(8) // 0: a heartbeat
			if rng.IntN(10) == 0 {
				k = 20 + rng.IntN(30)
			}
			var pr []propRow
			for range k {
				r := flow.Row{MessageID: fmt.Sprintf("m%05d", n), AckID: "a" + strings.Repeat("c", rng.IntN(40))}
				plen := rng.IntN(400)
				if rng.IntN(8) == 0 {
					plen = rng.IntN(5000)
				}
				if rng.IntN(3) == 0 { // compressible
					r.Payload = []byte(strings.Repeat("{\"k\":1}", plen/7+1))
				} else {
					r.Payload = make([]byte, plen)
					for i := range r.Payload {
						r.Payload[i] = byte(rng.IntN(256))
					}
				}
				if rng.IntN(4) == 0 {
					r.Attributes = map[string]string{"a": strings.Repeat("v", rng.IntN(50))}
				}
				if rng.IntN(4) == 0 {
					r.Transformed, r.Original = true, []byte(strings.Repeat("o", rng.IntN(300)))
				}
				if rng.IntN(3) == 0 {
					r.PublishTimeMillis = rng.Int64N(1 << 42)
				}
				g.Rows = append(g.Rows, r)
				pr = append(pr, propRow{r.MessageID, int64(flow.RowBytes(&r))})
				n++
			}
			// The element as it crosses the shuffle: encoded and decoded.
			var p flow.Packed
			g.Compression = flow.Compression(rng.IntN(len(flow.CompressionNames())))
			if k > 0 {
				var err error
				p, err = flow.DecodePacked(append([]byte(nil), flow.EncodePacked(flow.Pack(g))...))
				if err != nil {
					t.Fatal(err)
				}
			}
			// Make the batch due, or not, by the time of its first row.
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
			b.add(fs, "0", p, emit)
			// Invariants of the state between calls.
			c, _ := fs.values["count"].(int64)
			sz, _ := fs.values["bytes"].(int64)
			if c >= rows || (maxBytes > 0 && sz >= maxBytes) {
				t.Fatalf("iter %d: buffered %d rows of %d bytes: a full batch (rows %d, bytes %d)", iter, c, sz, rows, maxBytes)
			}
			var bagRows, bagBytes int64
			for _, v := range fs.bags["buffer"] {
				q := v.(flow.Packed)
				bagRows += int64(q.Rows)
				bagBytes += int64(q.RowBytes())
			}
			if bagRows != c || (maxBytes > 0 && bagBytes != sz) {
				t.Fatalf("iter %d: state says %d rows %d bytes, the bag holds %d rows %d bytes", iter, c, sz, bagRows, bagBytes)
			}
			if _, ok := fs.values["started"]; windowMillis > 0 && ok != (c > 0) {
				t.Fatalf("iter %d: started set %v with %d rows buffered", iter, ok, c)
			}
		}
		fs.newCall()
		b.flush(fs, "0", emit)
		if len(fs.bags["buffer"]) != 0 {
			t.Fatalf("iter %d: rows left after flush", iter)
		}
		want := modelBatches(elems, due, rows, maxBytes)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("iter %d (rows %d, bytes %d, window %d):\n got %v\nwant %v", iter, rows, maxBytes, windowMillis, got, want)
		}
		if flow.Unreleased() != 0 {
			t.Fatalf("iter %d: %d buffers not released", iter, flow.Unreleased())
		}
	}
}

// TestCorruptPackedFails: a group whose RowBytes is -1 fails the call (panics) rather than
// being buffered.
func TestCorruptPackedFails(t *testing.T) {
	for _, p := range []flow.Packed{{Rows: 1, Data: []byte{9, 1}}, {Rows: 1, Data: []byte{1, 0xff}}, {Rows: 0, Data: []byte{7}}} {
		b := buffer{tally: testTally(10, 1000, 0), bag: state.MakeBagState[flow.Packed]("buffer")}
		fs := newFakeState(t)
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("corrupt %v: no panic; bag %v", p.Data, fs.bags)
				}
			}()
			b.add(fs, "0", p, func(int, flow.Rows) {})
		}()
	}
}

// TestCorruptPackedAfterDueBatch: a corrupt element fails the call before the due batch is
// emitted: emitted first, the batch would be inserted (the write stage is fused) and then again
// by every retry of the failed bundle.
func TestCorruptPackedAfterDueBatch(t *testing.T) {
	b := buffer{tally: testTally(10, 1000, 1000), bag: state.MakeBagState[flow.Packed]("buffer")}
	fs := newFakeState(t)
	emitted := 0
	emit := func(_ int, rs flow.Rows) { emitted += len(rs.Rows) }
	b.add(fs, "0", flow.Pack(flow.Rows{Rows: []flow.Row{{MessageID: "a", Payload: []byte("{}")}}}), emit)
	fs.values["started"] = int64(1) // due
	fs.newCall()
	func() {
		defer func() {
			if recover() == nil {
				t.Error("no panic")
			}
		}()
		b.add(fs, "0", flow.Packed{Rows: 1, Data: []byte{9, 1}}, emit)
	}()
	if emitted != 0 {
		t.Errorf("%d rows emitted by the call that then failed; want 0 (a retry emits them again)", emitted)
	}
}

// TestRowSlicesClearedOnRelease: a slice that held.rows handed out holds no row once released
// (its rows point into the decoded groups' buffers, which the pool would otherwise keep alive),
// and the next call can have it back with room for as many rows.
func TestRowSlicesClearedOnRelease(t *testing.T) {
	var h held
	s := h.rows(3)
	if len(s) != 0 || cap(s) < 3 {
		t.Fatalf("rows(3) = len %d cap %d, want an empty slice with room for 3", len(s), cap(s))
	}
	s = append(s, flow.Row{MessageID: "m1", Payload: []byte("{}")}, flow.Row{MessageID: "m2"})
	h.release()
	for i, r := range s[:cap(s)] {
		if r.MessageID != "" || r.Payload != nil {
			t.Fatalf("row %d of a released slice still holds %q", i, r.MessageID)
		}
	}
	if len(h) != 0 {
		t.Fatalf("held keeps %d buffers after release", len(h))
	}
}

// TestRejectedRowsOutliveTheirBatch: the dead letters of rows the write stage rejects, built from
// a batch that add emitted out of pooled buffers, are gathered with the bundle's other dead
// letters (gatherLettersFn, fused after the write stage on Dataflow) and emitted at the end of the
// bundle, after add gave the buffers back (overwritten there: flowtest.Main); they still hold the
// payloads as published. With the payload not copied (flow.Row.DeadLetter), every one read as
// the released buffer's filler.
func TestRejectedRowsOutliveTheirBatch(t *testing.T) {
	b := buffer{tally: testTally(3, 0, 0), bag: state.MakeBagState[flow.Packed]("buffer")}
	fs := newFakeState(t)
	want := map[string]string{}
	var group flow.Rows
	for i := range 5 {
		r := flow.Row{MessageID: fmt.Sprintf("m%d", i), Payload: []byte(fmt.Sprintf(`{"n":%d,"s":"%s"}`, i, strings.Repeat("x", 300)))}
		if i == 2 { // a row the UDF transformed: its dead letter keeps the payload as published
			r.Transformed, r.Original = true, []byte(fmt.Sprintf(`{"published":%d}`, i))
		}
		want[r.MessageID] = string(r.Published())
		group.Rows = append(group.Rows, r)
	}
	p, err := flow.DecodePacked(flow.EncodePacked(flow.Pack(group)))
	if err != nil {
		t.Fatal(err)
	}
	gather := &gatherLettersFn{NumShards: 1}
	var got []flow.DeadLetter
	emitLetters := func(_ beam.EventTime, _ string, ls flow.DeadLetters) { got = append(got, ls.Letters...) }
	reject := func(_ int, batch flow.Rows) { // the write stage, rejecting every row
		for _, r := range batch.Rows {
			gather.ProcessElement(0, r.DeadLetter("rejected", "write", time.Now()), emitLetters)
		}
	}
	fs.newCall()
	b.add(fs, "0", p, reject) // emits a batch of 3 rows and buffers 2
	fs.newCall()
	b.flush(fs, "0", reject)
	if flow.Unreleased() != 0 {
		t.Fatalf("%d buffers not released", flow.Unreleased())
	}
	gather.FinishBundle(emitLetters)
	if len(got) != len(want) {
		t.Fatalf("%d dead letters, want %d", len(got), len(want))
	}
	for _, l := range got {
		if string(l.Payload) != want[l.MessageID] {
			t.Errorf("dead letter of %s holds %q, want %q", l.MessageID, l.Payload, want[l.MessageID])
		}
	}
}

// TestBufferPacksWithItsCompression: the rows the buffer keeps for the next batch are packed
// again with its compression (shuffleCompression), whatever the compression of the group they
// came in; the groups shardKeyFn keys are packed with its own, and shardFn marks a group of rows
// with its own for the fixed-window mode's GroupByKey (a dead letter passes as it came).
func TestBufferPacksWithItsCompression(t *testing.T) {
	payload := []byte(strings.Repeat(`{"event":"click","user":"u-1"}`, 10)) // compressible
	group := func(n int, c flow.Compression) flow.Rows {
		g := flow.Rows{Compression: c}
		for i := range n {
			g.Rows = append(g.Rows, flow.Row{MessageID: fmt.Sprint(i), Payload: payload})
		}
		return g
	}
	for _, tc := range []struct {
		buffer, incoming flow.Compression
		format           byte
	}{
		{flow.S2, flow.Zstd, 1},
		{flow.Zstd, flow.S2, 2},
		{flow.Zstd, flow.Zstd, 2},
		{flow.MinLZ, flow.S2, 3},
		{flow.S2, flow.MinLZ, 1},
		{flow.MinLZ, flow.MinLZ, 3},
	} {
		b := buffer{tally: testTally(5, 0, 0), bag: state.MakeBagState[flow.Packed]("buffer"), compression: tc.buffer}
		fs := newFakeState(t)
		emitted := 0
		b.add(fs, "0", flow.Pack(group(7, tc.incoming)), func(_ int, rs flow.Rows) { emitted += len(rs.Rows) })
		bag := fs.bags["buffer"]
		if emitted != 5 || len(bag) != 1 || bag[0].(flow.Packed).Rows != 2 {
			t.Fatalf("buffer %v: emitted %d rows, kept %v; want 5, and one group of the 2 left", tc.buffer, emitted, bag)
		}
		if got := bag[0].(flow.Packed).Data[0]; got != tc.format {
			t.Errorf("buffer %v, group %v: the rows left are kept in format %d, want %d", tc.buffer, tc.incoming, got, tc.format)
		}
	}
	for c, format := range map[flow.Compression]byte{flow.MinLZ: 3, flow.S2: 1, flow.Zstd: 2} {
		var keyed []flow.Packed
		(&shardKeyFn{NumShards: 2, Compression: c}).ProcessElement(context.Background(), group(3, flow.S2), func(_ string, p flow.Packed) { keyed = append(keyed, p) })
		if len(keyed) != 1 || keyed[0].Data[0] != format {
			t.Errorf("shardKeyFn with %v: %d groups, want one in format %d", c, len(keyed), format)
		}
		_, out := (&shardFn{NumShards: 2, Compression: c}).ProcessElement(group(3, flow.S2))
		if rs, ok := out.(flow.Rows); !ok || rs.Compression != c || len(rs.Rows) != 3 {
			t.Errorf("shardFn with %v: %+v, want the 3 rows marked %v", c, out, c)
		}
		letters := flow.DeadLetters{Letters: []flow.DeadLetter{{MessageID: "m"}}}
		if _, out := (&shardFn{NumShards: 2, Compression: c}).ProcessElement(letters); !reflect.DeepEqual(out, letters) {
			t.Errorf("shardFn with %v changed a dead letter: %+v", c, out)
		}
	}
}

// fakeTimers is a timers.Provider that keeps the timers set, by family.
type fakeTimers map[string]timers.TimerMap

func (f fakeTimers) Set(t timers.TimerMap) { f[t.Family] = t }

// TestTimerBeforeDueSetAgain: the time-bound timer of countTimeFn and lettersTimeFn that fires
// before its batch is due, as the timers of the batches under way do after an update that raised
// windowSeconds (set by the job before it, 10 s after their first row, now 60 s), sets itself
// again for when the batch is due, and the batch is emitted when it fires then. Before, such a
// timer did nothing, and the batch waited for the next element of its shard.
func TestTimerBeforeDueSetAgain(t *testing.T) {
	const windowMillis = 60_000
	count, size, started := state.MakeValueState[int64]("count"), state.MakeValueState[int64]("bytes"), state.MakeValueState[int64]("started")
	end, pane := timers.InEventTime("endOfWindow"), timers.InProcessingTime("paneTimeout")
	rows := &countTimeFn{Rows: 100, WindowMillis: windowMillis, Buffer: state.MakeBagState[flow.Packed]("buffer"),
		Count: count, Bytes: size, Started: started, EndOfWindow: end, PaneTimeout: pane}
	letters := &lettersTimeFn{Rows: 100, WindowMillis: windowMillis, Buffer: state.MakeBagState[flow.DeadLetter]("buffer"),
		Count: count, Bytes: size, Started: started, EndOfWindow: end, PaneTimeout: pane}
	for _, fn := range []struct {
		name       string
		add, timer func(sp state.Provider, tp timers.Provider, emitted *int)
	}{
		{"countTimeFn", func(sp state.Provider, tp timers.Provider, emitted *int) {
			rows.ProcessElement(window.GlobalWindow{}, sp, tp, "0", flow.Pack(flow.Rows{Rows: []flow.Row{{MessageID: "a", Payload: []byte("{}")}}}),
				func(_ int, b flow.Rows) { *emitted += len(b.Rows) })
		}, func(sp state.Provider, tp timers.Provider, emitted *int) {
			rows.OnTimer(context.Background(), 0, sp, tp, "0", timers.Context{Family: pane.Family}, func(_ int, b flow.Rows) { *emitted += len(b.Rows) })
		}},
		{"lettersTimeFn", func(sp state.Provider, tp timers.Provider, emitted *int) {
			letters.ProcessElement(window.GlobalWindow{}, sp, tp, "0", flow.DeadLetters{Letters: []flow.DeadLetter{letter("a", 10)}},
				func(_ int, b flow.DeadLetters) { *emitted += len(b.Letters) })
		}, func(sp state.Provider, tp timers.Provider, emitted *int) {
			letters.OnTimer(context.Background(), 0, sp, tp, "0", timers.Context{Family: pane.Family}, func(_ int, b flow.DeadLetters) { *emitted += len(b.Letters) })
		}},
	} {
		fs, tp, emitted := newFakeState(t), fakeTimers{}, 0
		fn.add(fs, tp, &emitted)
		first := time.Now().Add(-20 * time.Second).UnixMilli() // the batch began 20 s ago; its timer fires now
		fs.values["started"] = first
		delete(tp, pane.Family)
		fs.newCall()
		fn.timer(fs, tp, &emitted)
		if emitted != 0 {
			t.Errorf("%s: %d emitted by a timer 40 s before the batch is due", fn.name, emitted)
		}
		if got, want := tp[pane.Family].FireTimestamp.Milliseconds(), first+windowMillis; got != want {
			t.Errorf("%s: after a timer fired 40 s early, the time-bound timer is set for %d, want %d (when the batch is due)", fn.name, got, want)
		}
		fs.values["started"] = time.Now().Add(-windowMillis * time.Millisecond).UnixMilli() // due: the timer set again fires
		fs.newCall()
		fn.timer(fs, tp, &emitted)
		if emitted != 1 {
			t.Errorf("%s: %d emitted by the timer set again, when the batch is due; want 1", fn.name, emitted)
		}
	}
}

// TestBatchTimeFromArrival: the rows (or records) an element leaves after the batches it fills
// start a batch whose time runs from the element's arrival, not from when those batches were
// inserted (the write stage is fused after the batcher, so emit returns once they are): a slow
// INSERT made the rows after it wait windowSeconds more besides.
func TestBatchTimeFromArrival(t *testing.T) {
	const insert = 300 * time.Millisecond // what emit takes, as a slow INSERT
	for _, tc := range []struct {
		name string
		add  func(fs *fakeState)
	}{{
		name: "rows",
		add: func(fs *fakeState) {
			b := buffer{tally: testTally(2, 0, 60_000), bag: state.MakeBagState[flow.Packed]("buffer")}
			b.add(fs, "0", flow.Pack(flow.Rows{Rows: []flow.Row{{MessageID: "a"}, {MessageID: "b"}, {MessageID: "c"}}}),
				func(int, flow.Rows) { time.Sleep(insert) })
		},
	}, {
		name: "dead letters",
		add: func(fs *fakeState) {
			b := letterBuffer{tally: testTally(2, 0, 60_000), bag: state.MakeBagState[flow.DeadLetter]("buffer")}
			b.add(fs, "0", flow.DeadLetters{Letters: lettersOfSize(10, 10, 10)}, func(int, flow.DeadLetters) { time.Sleep(insert) })
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			fs := newFakeState(t)
			arrived := time.Now().UnixMilli()
			tc.add(fs)
			started, _ := fs.values["started"].(int64)
			if late := started - arrived; late < 0 || late >= insert.Milliseconds() {
				t.Errorf("the batch of the rows left started %d ms after the element arrived, want about 0 (the batch before took %v to insert)", late, insert)
			}
		})
	}
}
