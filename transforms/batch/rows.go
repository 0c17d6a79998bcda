package batch

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/window"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/window/trigger"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/state"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/timers"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"

	"github.com/ch-beam/pubsub-to-clickhouse/transforms/flow"
)

func init() {
	register.DoFn3x0[int, func(*flow.Rows) bool, func(int, flow.Rows)](&concatFn{})
	register.Iter1[flow.Rows]()
	register.DoFn6x0[beam.Window, state.Provider, timers.Provider, string, flow.Packed, func(int, flow.Rows)](&countFn{})
	register.DoFn6x0[beam.Window, state.Provider, timers.Provider, string, flow.Packed, func(int, flow.Rows)](&countTimeFn{})
	register.DoFn3x0[context.Context, flow.Rows, func(string, flow.Packed)](&shardKeyFn{})
	register.Emitter2[string, flow.Packed]()
	register.DoFn2x0[flow.Rows, func(flow.Rows)](&dropHeartbeatsFn{})
	register.Emitter1[flow.Rows]()
	register.Emitter2[int, flow.Rows]()
}

// Rows batches rows (a PCollection<flow.Rows>, groups of rows of any size) by cfg.Mode and
// returns a PCollection<KV<int, flow.Rows>> in which each element is one batch of one shard.
// Rows are counted, not elements: in the count and combined modes a batch that the count fires
// holds exactly Mode.Rows rows, splitting a group across batches when it must, and the time of
// the combined mode runs from the first row of each batch. With Mode.Bytes a batch also ends
// before the row that would take it above that many bytes (flow.RowBytes), or with a row larger
// than that alone. In the fixed-window mode a batch is every row of one window of one shard.
//
// The count and combined modes batch with a stateful DoFn (countFn) in the global window instead
// of a trigger, since a trigger counts elements. Groups reach it and wait in its state packed
// (flow.Packed): encoded once when they are keyed, decoded once when their batch is emitted. It
// panics at construction when cfg.Shards is not
// positive or the mode is empty.
func Rows(s beam.Scope, cfg Config, rows beam.PCollection) beam.PCollection {
	s = s.Scope("Batch")
	mode := cfg.Mode
	if cfg.Shards < 1 {
		panic(fmt.Sprintf("batch.Rows: Config.Shards %d must be positive", cfg.Shards))
	}
	if mode.Rows == 0 {
		if mode.Window <= 0 {
			panic(fmt.Sprintf("batch.Rows: mode %+v has neither a window nor a row count", mode))
		}
		keyed := beam.ParDo(s, &shardFn{NumShards: cfg.Shards, Compression: cfg.Compression}, beam.ParDo(s, &dropHeartbeatsFn{}, rows))
		windowed := beam.WindowInto(s, window.NewFixedWindows(mode.Window), keyed,
			beam.Trigger(trigger.AfterEndOfWindow()), beam.PanesDiscard(), beam.AllowedLateness(0))
		return beam.ParDo(s, &concatFn{}, beam.GroupByKey(s, windowed))
	}
	keyed := beam.ParDo(s, &shardKeyFn{NumShards: cfg.Shards, Compression: cfg.Compression}, rows)
	buffer, count, started := state.MakeBagState[flow.Packed]("buffer"), state.MakeValueState[int64]("count"), state.MakeValueState[int64]("started")
	size := state.MakeValueState[int64]("bytes")
	if mode.Window > 0 && cfg.ProcessingTimeTimers {
		return beam.ParDo(s, &countTimeFn{Rows: int64(mode.Rows), MaxBytes: mode.Bytes, WindowMillis: mode.Window.Milliseconds(),
			Compression: cfg.Compression, Buffer: buffer, Count: count, Bytes: size, Started: started, EndOfWindow: timers.InEventTime("endOfWindow"),
			PaneTimeout: timers.InProcessingTime("paneTimeout")}, keyed)
	}
	return beam.ParDo(s, &countFn{Rows: int64(mode.Rows), MaxBytes: mode.Bytes, WindowMillis: mode.Window.Milliseconds(),
		Compression: cfg.Compression, Buffer: buffer, Count: count, Bytes: size, Started: started, EndOfWindow: timers.InEventTime("endOfWindow")}, keyed)
}

// concatFn joins the groups of one pane into one batch.
type concatFn struct{}

func (concatFn) ProcessElement(shard int, groups func(*flow.Rows) bool, emit func(int, flow.Rows)) {
	var out, g flow.Rows
	for groups(&g) {
		out.Rows = append(out.Rows, g.Rows...)
	}
	emit(shard, out)
}

// countFn is the batcher of the count and combined modes, per shard (the key): it buffers rows
// in state and emits a batch of exactly Rows rows whenever that many are buffered; in the
// combined mode also the buffered rows once WindowMillis have passed since the first row of the
// batch, checked whenever an element arrives (the local source's heartbeats arrive every
// 200 ms); and whatever is buffered when the input ends (an event-time timer at the end of the
// global window, which fires once the watermark passes it: on a drain, or when a local run's
// source stops). The timer holds the output watermark at its own time (Beam's default output
// timestamp) until it fires, so that what the batch becomes downstream (the write stage's dead
// letters, on their way to their GroupByKey or batcher) is not late data there; with no output
// timestamp the runner dropped it as late, and the messages of the rows the server rejected in
// that last batch were given back unacknowledged (TestServerRejectsRowsOfTheLastBatch).
//
// It has no processing-time timer, because prism (Beam 2.77.0) does not fire those of a stateful
// DoFn, and never finishes a bounded input while a DoFn declares one that is not set; on
// Dataflow, whose source sends no heartbeats, countTimeFn adds one.
type countFn struct {
	Rows         int64            // rows per batch, positive
	MaxBytes     int64            // bytes per batch (flow.RowBytes); 0: no bound
	Compression  flow.Compression // of the rows it buffers (Config.Compression)
	WindowMillis int64            // the combined mode's time bound; 0 in the count mode

	Buffer      state.Bag[flow.Packed]
	Count       state.Value[int64]
	Bytes       state.Value[int64] // flow.RowBytes of the buffered rows; kept only with MaxBytes
	Started     state.Value[int64] // Unix ms of the batch's first row
	EndOfWindow timers.EventTime
}

func (fn *countFn) ProcessElement(w beam.Window, sp state.Provider, tp timers.Provider, key string, rows flow.Packed, emit func(int, flow.Rows)) {
	if fn.buffer().add(sp, key, rows, emit) > 0 {
		fn.EndOfWindow.Set(tp, w.MaxTimestamp().ToTime())
	}
}

// OnTimer emits the buffered rows as one batch (fewer than Rows: a full batch is emitted at once).
func (fn *countFn) OnTimer(ctx context.Context, ts beam.EventTime, sp state.Provider, tp timers.Provider, key string, timer timers.Context, emit func(int, flow.Rows)) {
	fn.buffer().flush(sp, key, emit)
}

func (fn *countFn) buffer() buffer {
	return buffer{tally: tally{rows: fn.Rows, maxBytes: fn.MaxBytes, windowMillis: fn.WindowMillis, count: fn.Count, bytes: fn.Bytes, started: fn.Started}, bag: fn.Buffer, compression: fn.Compression}
}

// countTimeFn is countFn with a processing-time timer for the combined mode's time bound, for
// runners that fire them (Dataflow), where the source sends no heartbeats. It never clears a
// timer (prism hangs when a DoFn clears a processing-time timer in OnTimer, which is why the
// SDK's GroupIntoBatches is not used): setting the timer again when a batch starts replaces the
// earlier setting, and a timer that fires before its batch is due sets itself again for when it
// is due. That happens after an update (--update) that raised windowSeconds, the timers of the
// batches under way set by the job before it: when such a timer did nothing, their rows waited
// for the next element of their shard, and on a shard that no longer gets any (numShards
// lowered) for the drain.
type countTimeFn struct {
	Rows         int64            // rows per batch, positive
	MaxBytes     int64            // bytes per batch (flow.RowBytes); 0: no bound
	Compression  flow.Compression // of the rows it buffers (Config.Compression)
	WindowMillis int64            // the time bound, positive

	Buffer      state.Bag[flow.Packed]
	Count       state.Value[int64]
	Bytes       state.Value[int64]
	Started     state.Value[int64]
	EndOfWindow timers.EventTime
	PaneTimeout timers.ProcessingTime
}

func (fn *countTimeFn) ProcessElement(w beam.Window, sp state.Provider, tp timers.Provider, key string, rows flow.Packed, emit func(int, flow.Rows)) {
	if started := fn.buffer().add(sp, key, rows, emit); started > 0 {
		fn.EndOfWindow.Set(tp, w.MaxTimestamp().ToTime())
		fn.PaneTimeout.Set(tp, time.UnixMilli(started+fn.WindowMillis))
	}
}

// OnTimer emits the buffered rows as one batch: at the end of the window, or when the batch is due.
func (fn *countTimeFn) OnTimer(ctx context.Context, ts beam.EventTime, sp state.Provider, tp timers.Provider, key string, timer timers.Context, emit func(int, flow.Rows)) {
	if timer.Family == fn.PaneTimeout.Family {
		if due, early := fn.buffer().early(sp); early {
			fn.PaneTimeout.Set(tp, due)
			return
		}
		fn.buffer().flushIfDue(sp, key, emit)
		return
	}
	fn.buffer().flush(sp, key, emit)
}

func (fn *countTimeFn) buffer() buffer {
	return buffer{tally: tally{rows: fn.Rows, maxBytes: fn.MaxBytes, windowMillis: fn.WindowMillis, count: fn.Count, bytes: fn.Bytes, started: fn.Started}, bag: fn.Buffer, compression: fn.Compression}
}

// buffer is the state of one shard's batch being filled: the groups of rows, packed, their
// count and, with a byte bound, their size (flow.RowBytes). The buffered rows never make a full
// batch: a batch is emitted as soon as it is full.
//
// Each method reads the bag at most once and writes it after it is done reading: the Go SDK
// (2.77.0, exec.stateProvider) answers a bag read that follows a Clear within the same call with
// the contents from before the Clear, which emitted rows twice.
type buffer struct {
	tally
	bag         state.Bag[flow.Packed]
	compression flow.Compression // of the rows it packs again
}

// add adds the rows of one element (none for a heartbeat): first it emits the buffered rows as
// one batch if the time bound has passed since their first row, then every full batch of the
// buffered rows and the element's, in arrival order (see full), and buffers the rest. It
// returns the Unix ms at which a new batch started (its first rows are buffered now), for the
// caller to set its timers, or 0 when none did: the time the element arrived, not the time the
// batches it emitted were inserted (the write stage is fused after this one), which the time
// bound of the rows it keeps would otherwise wait for besides. An element that fills no batch is buffered as it came, without being decoded: its
// row count and size (flow.Packed.RowBytes) say so.
//
// The groups it decodes share pooled buffers (flow.Packed.UnpackPooled), given back when it
// returns: a batch it emits is valid only during emit, which the write stage, fused after this
// one, consumes before it returns (it inserts the rows, and its dead letters are encoded as they
// are emitted).
func (b buffer) add(sp state.Provider, key string, rows flow.Packed, emit func(int, flow.Rows)) (started int64) {
	arrived := time.Now().UnixMilli()
	count, size := b.readCount(sp), b.readBytes(sp)
	due := b.due(sp)
	grown := size
	if b.maxBytes > 0 {
		n := int64(rows.RowBytes())
		if n < 0 { // not made by Pack: decoding it below fails the bundle
			n = b.maxBytes
		}
		grown += n
	}
	if !due && count+int64(rows.Rows) < b.rows && (b.maxBytes <= 0 || grown < b.maxBytes) {
		if rows.Rows == 0 {
			return 0
		}
		if count > 0 {
			arrived = 0 // the rows join the buffered batch
		}
		put(sp, b.bag, b.tally, rows, arrived, count+int64(rows.Rows), grown)
		return arrived
	}
	var held held
	defer held.release()
	shard := shardOf(key)
	// Room for the buffered rows and the element's, as the count says: appending them one
	// group at a time to a slice that grows would copy them again at each doubling.
	pending := b.read(sp, &held, held.rows(int(count)+rows.Rows))
	// The element is decoded before anything is emitted: a corrupt one fails the call, and
	// with it the bundle, before a batch is inserted (the write stage is fused after this one),
	// which every retry of the bundle would insert again.
	incoming := held.unpack(rows).Rows
	if due && len(pending) > 0 {
		emit(shard, flow.Rows{Rows: pending})
		pending = nil
	}
	pending = append(pending, incoming...)
	var rest int64 // the size of the rows left, which full reports when they make no batch
	for {
		n, size := b.full(pending)
		if n == 0 {
			rest = size
			break
		}
		emit(shard, flow.Rows{Rows: pending[:n:n]})
		pending = pending[n:]
	}
	empty(sp, b.bag, b.tally)
	if len(pending) == 0 {
		return 0
	}
	put(sp, b.bag, b.tally, flow.Pack(flow.Rows{Rows: pending, Compression: b.compression}), arrived, int64(len(pending)), rest)
	return arrived
}

// full returns how many rows from the start of pending make a full batch: b.rows rows, or with
// a byte bound the rows before the one that would take the batch above b.maxBytes, or the rows
// up to the one that reaches it exactly (at least one row: a row larger than b.maxBytes is a
// batch alone). It returns 0 when pending holds no full batch, and then size is pending's size
// (flow.RowBytes, counted only with a byte bound), less than b.maxBytes.
func (b buffer) full(pending []flow.Row) (n int, size int64) {
	for i := range pending {
		if int64(i) == b.rows {
			return i, 0
		}
		if b.maxBytes <= 0 {
			continue
		}
		row := int64(flow.RowBytes(&pending[i]))
		if i > 0 && size+row > b.maxBytes {
			return i, 0
		}
		if size += row; size >= b.maxBytes {
			return i + 1, 0
		}
	}
	if int64(len(pending)) == b.rows {
		return len(pending), 0
	}
	return 0, size
}

// read appends the buffered rows to dst, decoded into buffers that h holds.
func (b buffer) read(sp state.Provider, h *held, dst []flow.Row) []flow.Row {
	groups, _, err := b.bag.Read(sp)
	if err != nil {
		panic(err)
	}
	for _, g := range groups {
		dst = append(dst, h.unpack(g).Rows...)
	}
	return dst
}

// held are the pooled buffers of the groups a call decoded, given back by release.
type held []func()

// unpack decodes a group into a pooled buffer that h holds; a group that does not decode was
// not written by this stage's coder (corrupt state or input), and fails the bundle.
func (h *held) unpack(p flow.Packed) flow.Rows {
	rs, release, err := p.UnpackPooled()
	*h = append(*h, release)
	if err != nil {
		panic(err)
	}
	return rs
}

// rowSlices pools the slices that add and flush gather a batch's rows in (*[]flow.Row): one
// of batchRowCount rows is a large allocation (about 150 bytes a row), which each batch then
// paid for in fresh memory to clear and for the garbage collector to scan.
var rowSlices sync.Pool

// rows returns an empty slice with room for n rows, which h gives back, cleared, on release;
// with n 0 and none pooled, nil (and nothing to give back).
func (h *held) rows(n int) []flow.Row {
	var s []flow.Row
	if p, ok := rowSlices.Get().(*[]flow.Row); ok && cap(*p) >= n {
		s = *p
	} else if n > 0 {
		s = make([]flow.Row, 0, n)
	} else {
		return nil
	}
	*h = append(*h, func() {
		clear(s[:cap(s)]) // the rows point into decoded groups' buffers
		s = s[:0]
		rowSlices.Put(&s)
	})
	return s
}

// release gives back every buffer h holds. Its receiver is a pointer so that `defer h.release()`,
// written before the groups are decoded, gives back the buffers decoded after it: with a value
// receiver the deferred call would copy h while it is still empty, and give back none.
func (h *held) release() {
	for _, r := range *h {
		r()
	}
	*h = nil
}

// flushIfDue flushes the buffered rows when the time bound has passed since the batch's first row.
func (b buffer) flushIfDue(sp state.Provider, key string, emit func(int, flow.Rows)) {
	if b.due(sp) {
		b.flush(sp, key, emit)
	}
}

// flush emits the buffered rows, if any, as one batch (valid only during emit, as in add) and
// empties the buffer.
func (b buffer) flush(sp state.Provider, key string, emit func(int, flow.Rows)) {
	var held held
	defer held.release()
	rows := flow.Rows{Rows: b.read(sp, &held, held.rows(0))}
	if len(rows.Rows) == 0 {
		return
	}
	emit(shardOf(key), rows)
	empty(sp, b.bag, b.tally)
}

// shardKeyFn keys groups by shard, round robin per worker, as a string (a key with a standard
// coder; Beam's Go int coder is a custom one).
type shardKeyFn struct {
	NumShards   int
	Compression flow.Compression // of the groups it packs (Config.Compression)
	next        int
}

// shuffleBytes is the metric shuffle-bytes: the encoded bytes of the groups shardKeyFn packs,
// what the GroupByKey before the batcher carries (docs/operations.md, "Metrics").
var shuffleBytes = beam.NewCounter(flow.Namespace, "shuffle-bytes")

// ProcessElement keys a group, packed with Compression, by the next shard, and a heartbeat (no
// rows) by every shard; it counts the packed group's bytes in shuffle-bytes.
func (f *shardKeyFn) ProcessElement(ctx context.Context, rows flow.Rows, emit func(string, flow.Packed)) {
	if len(rows.Rows) == 0 {
		for shard := range f.NumShards {
			emit(strconv.Itoa(shard), flow.Packed{})
		}
		return
	}
	shard := f.next
	f.next = (f.next + 1) % f.NumShards
	rows.Compression = f.Compression
	p := flow.Pack(rows)
	shuffleBytes.Inc(ctx, int64(len(flow.EncodePacked(p))))
	emit(strconv.Itoa(shard), p)
}

// dropHeartbeatsFn drops the source's heartbeats (groups without rows): fixed windows need none.
type dropHeartbeatsFn struct{}

func (dropHeartbeatsFn) ProcessElement(rows flow.Rows, emit func(flow.Rows)) {
	if len(rows.Rows) > 0 {
		emit(rows)
	}
}
