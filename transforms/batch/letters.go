package batch

import (
	"context"
	"fmt"
	"strconv"
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
	register.DoFn6x0[beam.Window, state.Provider, timers.Provider, string, flow.DeadLetters, func(int, flow.DeadLetters)](&lettersFn{})
	register.DoFn6x0[beam.Window, state.Provider, timers.Provider, string, flow.DeadLetters, func(int, flow.DeadLetters)](&lettersTimeFn{})
	register.DoFn3x0[beam.EventTime, flow.DeadLetter, func(beam.EventTime, string, flow.DeadLetters)](&gatherLettersFn{})
	register.Emitter3[beam.EventTime, string, flow.DeadLetters]()
	register.Emitter2[int, flow.DeadLetters]()
	register.DoFn3x0[int, func(*flow.DeadLetter) bool, func(int, flow.DeadLetters)](&concatLettersFn{})
	register.Iter1[flow.DeadLetter]()
}

// DeadLetters batches dead letters (a PCollection<flow.DeadLetter>) by cfg.Mode and returns a
// PCollection<KV<int, flow.DeadLetters>> in which each element is one batch of one shard.
//
// With cfg.ProcessingTimeTimers (Dataflow), in the count and combined modes a stateful batcher per
// shard (lettersFn, lettersTimeFn) batches them as Rows batches rows: a batch holds at most
// Mode.Rows records and, with Mode.Bytes, ends before the record that would take it above that
// many bytes (flow.DeadLetter.Bytes), or with a record larger than that alone. So a burst of large
// dead letters is held a batch of batchByteSize at a time: a GroupByKey with a count trigger would
// hold batchRowCount of them at once (1,000 messages of 10 MB that fail to parse: one group of
// 10 GB). The records of a bundle reach it gathered (gatherLettersFn), as the rows do: one per
// element, each cost a state access.
//
// On the local runner they are grouped by a GroupByKey whose trigger fires at Mode.Rows records
// or Mode.Window after the first (the count mode: at Mode.Rows), which costs prism far less than
// a second stateful stage (on the demo, the binary's process 5% and prism's 20% more CPU, the
// whole run 15%). In the combined mode a pane cannot grow past what the local source holds
// unacknowledged (source.Config.MaxOutstandingBytes; every dead letter's message is
// unacknowledged until the dead letter is written), and the time trigger releases a pane the cap
// keeps from filling; in the count mode the pipeline sets no such cap, since nothing would. A
// pane's records leave the GroupByKey in batches that end at Mode.Bytes as the stateful
// batcher's do (concatLettersFn), and the dead-letter stage cuts its INSERTs at Mode.Bytes.
//
// In the fixed-window mode a batch is every record of one shard that arrives within Mode.Window
// after its first, by processing time, not the rows' event-time windows: the watermark of the
// dead letters of several routed tables is the lowest of theirs, and one table whose INSERTs are
// retrying would hold the others' dead letters. It panics at construction when cfg.Shards is not
// positive or the mode is empty.
func DeadLetters(s beam.Scope, cfg Config, letters beam.PCollection) beam.PCollection {
	s = s.Scope("Batch")
	mode := cfg.Mode
	if cfg.Shards < 1 {
		panic(fmt.Sprintf("batch.DeadLetters: Config.Shards %d must be positive", cfg.Shards))
	}
	if mode.Rows == 0 && mode.Window <= 0 {
		panic(fmt.Sprintf("batch.DeadLetters: mode %+v has neither a window nor a row count", mode))
	}
	if mode.Rows > 0 && cfg.ProcessingTimeTimers {
		return statefulLetters(s, cfg, letters)
	}
	keyed := beam.ParDo(s, &shardFn{NumShards: cfg.Shards}, letters)
	var windowed beam.PCollection
	switch {
	case mode.Rows == 0:
		// Not the rows' fixed windows: a window's pane fires when the watermark passes its end,
		// and the dead letters of every table come through one Flatten whose watermark is the
		// lowest of its inputs, so one routed table whose INSERTs are retrying (its write stage
		// holds its rejections' watermark) would hold every other table's dead letters.
		windowed = beam.WindowInto(s, window.NewGlobalWindows(), keyed,
			beam.Trigger(trigger.Repeat(trigger.AfterProcessingTime().PlusDelay(mode.Window))), beam.PanesDiscard(), beam.AllowedLateness(0))
	case mode.Window == 0:
		// Count triggers are wrapped in trigger.Repeat: prism fires a bare one only once.
		windowed = beam.WindowInto(s, window.NewGlobalWindows(), keyed,
			beam.Trigger(trigger.Repeat(trigger.AfterCount(int32(mode.Rows)))), beam.PanesDiscard(), beam.AllowedLateness(0))
	default:
		windowed = beam.WindowInto(s, window.NewGlobalWindows(), keyed,
			beam.Trigger(trigger.Repeat(trigger.AfterAny([]trigger.Trigger{
				trigger.AfterCount(int32(mode.Rows)),
				trigger.AfterProcessingTime().PlusDelay(mode.Window),
			}))), beam.PanesDiscard(), beam.AllowedLateness(0))
	}
	concat := &concatLettersFn{}
	if mode.Rows > 0 {
		concat.MaxBytes = mode.Bytes
	}
	return beam.ParDo(s, concat, beam.GroupByKey(s, windowed))
}

// statefulLetters is DeadLetters' stateful batcher of the count and combined modes: lettersTimeFn
// with processing-time timers (cfg.ProcessingTimeTimers, and a time bound), else lettersFn, which
// emits a batch when it is full, or when a group arrives after its time bound, and what is left at
// the end of the input. Tests run lettersFn on prism, which fires no processing-time timers of a
// stateful DoFn.
func statefulLetters(s beam.Scope, cfg Config, letters beam.PCollection) beam.PCollection {
	mode := cfg.Mode
	keyed := beam.ParDo(s, &gatherLettersFn{NumShards: cfg.Shards}, letters)
	buffer, count, started := state.MakeBagState[flow.DeadLetter]("buffer"), state.MakeValueState[int64]("count"), state.MakeValueState[int64]("started")
	size := state.MakeValueState[int64]("bytes")
	if mode.Window > 0 && cfg.ProcessingTimeTimers {
		return beam.ParDo(s, &lettersTimeFn{Rows: int64(mode.Rows), MaxBytes: mode.Bytes, WindowMillis: mode.Window.Milliseconds(),
			Buffer: buffer, Count: count, Bytes: size, Started: started, EndOfWindow: timers.InEventTime("endOfWindow"),
			PaneTimeout: timers.InProcessingTime("paneTimeout")}, keyed)
	}
	return beam.ParDo(s, &lettersFn{Rows: int64(mode.Rows), MaxBytes: mode.Bytes, WindowMillis: mode.Window.Milliseconds(),
		Buffer: buffer, Count: count, Bytes: size, Started: started, EndOfWindow: timers.InEventTime("endOfWindow")}, keyed)
}

// lettersFn is the dead letters' stateful batcher of the count mode on Dataflow (and of tests on
// prism), per shard (the key), as countFn is the rows': a batch is emitted when it is full, with
// a time bound also when a group arrives WindowMillis after its first record, and what is buffered
// when the input ends (an event-time timer at the end of the global window, which holds the
// output watermark until it fires, as countFn's does). lettersTimeFn adds a processing-time timer
// for the time bound.
type lettersFn struct {
	Rows         int64 // records per batch, positive
	MaxBytes     int64 // bytes per batch (flow.DeadLetter.Bytes); 0: no bound
	WindowMillis int64 // the combined mode's time bound; 0 in the count mode

	Buffer      state.Bag[flow.DeadLetter]
	Count       state.Value[int64]
	Bytes       state.Value[int64]
	Started     state.Value[int64]
	EndOfWindow timers.EventTime
}

func (fn *lettersFn) ProcessElement(w beam.Window, sp state.Provider, tp timers.Provider, key string, group flow.DeadLetters, emit func(int, flow.DeadLetters)) {
	if fn.buffer().add(sp, key, group, emit) > 0 {
		fn.EndOfWindow.Set(tp, w.MaxTimestamp().ToTime())
	}
}

// OnTimer emits the buffered records as one batch.
func (fn *lettersFn) OnTimer(ctx context.Context, ts beam.EventTime, sp state.Provider, tp timers.Provider, key string, timer timers.Context, emit func(int, flow.DeadLetters)) {
	fn.buffer().flush(sp, key, emit)
}

func (fn *lettersFn) buffer() letterBuffer {
	return letterBuffer{tally: tally{rows: fn.Rows, maxBytes: fn.MaxBytes, windowMillis: fn.WindowMillis, count: fn.Count, bytes: fn.Bytes, started: fn.Started}, bag: fn.Buffer}
}

// lettersTimeFn is lettersFn with a processing-time timer for the combined mode's time bound, for
// runners that fire them (Dataflow), as countTimeFn is countFn's.
type lettersTimeFn struct {
	Rows         int64
	MaxBytes     int64
	WindowMillis int64

	Buffer      state.Bag[flow.DeadLetter]
	Count       state.Value[int64]
	Bytes       state.Value[int64]
	Started     state.Value[int64]
	EndOfWindow timers.EventTime
	PaneTimeout timers.ProcessingTime
}

func (fn *lettersTimeFn) ProcessElement(w beam.Window, sp state.Provider, tp timers.Provider, key string, group flow.DeadLetters, emit func(int, flow.DeadLetters)) {
	if started := fn.buffer().add(sp, key, group, emit); started > 0 {
		fn.EndOfWindow.Set(tp, w.MaxTimestamp().ToTime())
		fn.PaneTimeout.Set(tp, time.UnixMilli(started+fn.WindowMillis))
	}
}

// OnTimer emits the buffered records as one batch: at the end of the window, or when the batch is due.
func (fn *lettersTimeFn) OnTimer(ctx context.Context, ts beam.EventTime, sp state.Provider, tp timers.Provider, key string, timer timers.Context, emit func(int, flow.DeadLetters)) {
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

func (fn *lettersTimeFn) buffer() letterBuffer {
	return letterBuffer{tally: tally{rows: fn.Rows, maxBytes: fn.MaxBytes, windowMillis: fn.WindowMillis, count: fn.Count, bytes: fn.Bytes, started: fn.Started}, bag: fn.Buffer}
}

// letterBuffer is the state of one shard's batch of dead letters being filled: the records and
// their tally. As buffer, it never holds a full batch, and each method reads the bag at most once
// and writes it after it is done reading.
type letterBuffer struct {
	tally
	bag state.Bag[flow.DeadLetter]
}

// add takes a group of records, in order: it emits the buffered records
// first when the time bound has passed since the first of them; then, record by record, the
// batch so far before a record that would take it above the byte bound, and the batch with a
// record that fills it (Rows records, or the byte bound reached); it buffers the rest. It
// returns the Unix ms at which a new batch started (its first records are buffered now: when
// the group arrived, as buffer.add's), for the caller to set its timers, or 0 when none did. A
// group that completes no batch is added to the bag without reading it.
func (b letterBuffer) add(sp state.Provider, key string, group flow.DeadLetters, emit func(int, flow.DeadLetters)) (started int64) {
	arrived := time.Now().UnixMilli()
	count, size := b.readCount(sp), b.readBytes(sp)
	due := count > 0 && b.due(sp)
	if !due && b.fits(count, size, group.Letters) {
		if len(group.Letters) == 0 {
			return 0
		}
		for _, r := range group.Letters {
			size += b.bytesOf(&r)
			if err := b.bag.Add(sp, r); err != nil {
				panic(err)
			}
		}
		if count > 0 {
			arrived = 0 // the records join the buffered batch
		}
		b.set(sp, arrived, count+int64(len(group.Letters)), size)
		return arrived
	}
	pending := b.read(sp)
	shard := shardOf(key)
	if due {
		emit(shard, flow.DeadLetters{Letters: pending})
		pending, size = nil, 0
	}
	for _, r := range group.Letters {
		n := b.bytesOf(&r)
		if b.maxBytes > 0 && len(pending) > 0 && size+n > b.maxBytes {
			emit(shard, flow.DeadLetters{Letters: pending})
			pending, size = nil, 0
		}
		pending, size = append(pending, r), size+n
		if int64(len(pending)) >= b.rows || (b.maxBytes > 0 && size >= b.maxBytes) {
			emit(shard, flow.DeadLetters{Letters: pending})
			pending, size = nil, 0
		}
	}
	empty(sp, b.bag, b.tally)
	if len(pending) == 0 {
		return 0
	}
	// What is left came after the last batch emitted (this call emitted one: see fits), so it
	// starts a new batch.
	for _, r := range pending {
		if err := b.bag.Add(sp, r); err != nil {
			panic(err)
		}
	}
	b.set(sp, arrived, int64(len(pending)), size)
	return arrived
}

// fits reports whether letters, added to count buffered records of size bytes, complete no batch:
// neither the count nor the byte bound is reached (a record that would take a batch above the
// byte bound reaches it too).
func (b letterBuffer) fits(count, size int64, letters []flow.DeadLetter) bool {
	for i := range letters {
		count, size = count+1, size+b.bytesOf(&letters[i])
		if count >= b.rows || (b.maxBytes > 0 && size >= b.maxBytes) {
			return false
		}
	}
	return true
}

// bytesOf is a record's size as the byte bound counts it (flow.DeadLetter.Bytes); 0 without one.
func (b letterBuffer) bytesOf(r *flow.DeadLetter) int64 {
	if b.maxBytes <= 0 {
		return 0
	}
	return r.Bytes()
}

func (b letterBuffer) read(sp state.Provider) []flow.DeadLetter {
	letters, _, err := b.bag.Read(sp)
	if err != nil {
		panic(err)
	}
	return letters
}

// flushIfDue flushes the buffered records when the time bound has passed since the first of them.
func (b letterBuffer) flushIfDue(sp state.Provider, key string, emit func(int, flow.DeadLetters)) {
	if b.due(sp) {
		b.flush(sp, key, emit)
	}
}

// flush emits the buffered records, if any, as one batch and empties the buffer.
func (b letterBuffer) flush(sp state.Provider, key string, emit func(int, flow.DeadLetters)) {
	letters := b.read(sp)
	if len(letters) == 0 {
		return
	}
	emit(shardOf(key), flow.DeadLetters{Letters: letters})
	empty(sp, b.bag, b.tally)
}

// gatherLettersFn gathers the records of a bundle into groups keyed by shard, round robin per
// worker: a group is emitted when it holds maxGatherLetters records or maxGatherLetterBytes
// bytes, and at the end of the bundle, stamped with the latest timestamp of what it holds. Records
// one per element cost the stateful batcher a state access each; the rows come to theirs gathered
// by the parse stage for the same reason.
type gatherLettersFn struct {
	NumShards int

	next     int
	gathered flow.DeadLetters
	bytes    int
	latest   beam.EventTime
}

// Bounds of a group of dead letters gathered within a bundle.
const (
	maxGatherLetters     = 1000
	maxGatherLetterBytes = 4 << 20
)

func (f *gatherLettersFn) ProcessElement(et beam.EventTime, r flow.DeadLetter, emit func(beam.EventTime, string, flow.DeadLetters)) {
	if len(f.gathered.Letters) == 0 || et > f.latest {
		f.latest = et
	}
	f.gathered.Letters = append(f.gathered.Letters, r)
	f.bytes += int(r.Bytes())
	if len(f.gathered.Letters) >= maxGatherLetters || f.bytes >= maxGatherLetterBytes {
		f.flush(emit)
	}
}

// FinishBundle emits the records the bundle left gathered.
func (f *gatherLettersFn) FinishBundle(emit func(beam.EventTime, string, flow.DeadLetters)) {
	f.flush(emit)
}

func (f *gatherLettersFn) flush(emit func(beam.EventTime, string, flow.DeadLetters)) {
	if len(f.gathered.Letters) == 0 {
		return
	}
	shard := f.next
	f.next = (f.next + 1) % f.NumShards
	emit(f.latest, strconv.Itoa(shard), f.gathered)
	f.gathered, f.bytes = flow.DeadLetters{}, 0
}

// concatLettersFn makes the records of one pane of one shard batches: with MaxBytes (the count
// and combined modes), a batch ends before the record that would take it above MaxBytes bytes
// (flow.DeadLetter.Bytes), a larger record a batch alone, as the stateful batcher's do; without
// (the fixed-window mode), the pane is one batch. Each
// batch crosses to the dead-letter stage as one element, which the SDK encodes whole in a buffer
// of its own: a pane of hundreds of megabytes as one batch took several times its size at once.
type concatLettersFn struct {
	MaxBytes int64 // bytes per batch; 0: no bound
}

func (f *concatLettersFn) ProcessElement(shard int, letters func(*flow.DeadLetter) bool, emit func(int, flow.DeadLetters)) {
	var out flow.DeadLetters
	var size int64
	var r flow.DeadLetter
	for letters(&r) {
		n := r.Bytes()
		if f.MaxBytes > 0 && len(out.Letters) > 0 && size+n > f.MaxBytes {
			emit(shard, out)
			out, size = flow.DeadLetters{}, 0
		}
		out.Letters, size = append(out.Letters, r), size+n
		r = flow.DeadLetter{}
	}
	if len(out.Letters) > 0 {
		emit(shard, out)
	}
}
