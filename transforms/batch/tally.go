package batch

import (
	"strconv"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/state"
)

// tally is what the stateful batchers (of rows, buffer; of dead letters, letterBuffer) keep of
// one shard's batch beside its buffered elements, and the bounds it is held to: how many rows
// (or records) are buffered, their size with a byte bound, and when the batch's first one came
// with a time bound. Every batcher counts, sizes and times its batches by these methods, so the
// rules of the count and combined modes are written once.
type tally struct {
	rows         int64 // rows per batch, positive
	maxBytes     int64 // bytes per batch; 0: no bound
	windowMillis int64 // the combined mode's time bound; 0 in the count mode
	count        state.Value[int64]
	bytes        state.Value[int64] // kept only with maxBytes
	started      state.Value[int64] // Unix ms of the batch's first row; kept only with windowMillis
}

func (t tally) readCount(sp state.Provider) int64 {
	count, _, err := t.count.Read(sp)
	if err != nil {
		panic(err)
	}
	return count
}

// readBytes returns the size of what is buffered; 0 without a byte bound.
func (t tally) readBytes(sp state.Provider) int64 {
	if t.maxBytes <= 0 {
		return 0
	}
	size, _, err := t.bytes.Read(sp)
	if err != nil {
		panic(err)
	}
	return size
}

// set records that count rows of size bytes are buffered; started is the Unix ms at which the
// batch they begin started (its time runs from then), 0 when they continue the buffered one.
func (t tally) set(sp state.Provider, started, count, size int64) {
	if started > 0 && t.windowMillis > 0 {
		if err := t.started.Write(sp, started); err != nil {
			panic(err)
		}
	}
	if err := t.count.Write(sp, count); err != nil {
		panic(err)
	}
	if t.maxBytes > 0 {
		if err := t.bytes.Write(sp, size); err != nil {
			panic(err)
		}
	}
}

// due reports whether the time bound has passed since the batch's first row.
func (t tally) due(sp state.Provider) bool {
	if t.windowMillis <= 0 {
		return false
	}
	started, ok, err := t.started.Read(sp)
	if err != nil {
		panic(err)
	}
	return ok && started > 0 && time.Now().UnixMilli()-started >= t.windowMillis
}

// early reports whether a batch is buffered that is not due yet, and when it will be: a
// time-bound timer that fires before then is set again for it (countTimeFn, lettersTimeFn).
func (t tally) early(sp state.Provider) (due time.Time, early bool) {
	if t.windowMillis <= 0 {
		return time.Time{}, false
	}
	started, ok, err := t.started.Read(sp)
	if err != nil {
		panic(err)
	}
	return time.UnixMilli(started + t.windowMillis), ok && started > 0 && time.Now().UnixMilli()-started < t.windowMillis
}

// clear forgets the batch's count, size and start.
func (t tally) clear(sp state.Provider) {
	if err := t.count.Clear(sp); err != nil {
		panic(err)
	}
	if t.maxBytes > 0 {
		if err := t.bytes.Clear(sp); err != nil {
			panic(err)
		}
	}
	if t.windowMillis > 0 {
		if err := t.started.Clear(sp); err != nil {
			panic(err)
		}
	}
}

// put buffers elem in bag, after which count rows (or records) of size bytes are buffered;
// started is as set's.
func put[T any](sp state.Provider, bag state.Bag[T], t tally, elem T, started, count, size int64) {
	if err := bag.Add(sp, elem); err != nil {
		panic(err)
	}
	t.set(sp, started, count, size)
}

// empty forgets a batch: its bag and its tally.
func empty[T any](sp state.Provider, bag state.Bag[T], t tally) {
	if err := bag.Clear(sp); err != nil {
		panic(err)
	}
	t.clear(sp)
}

// shardOf is the shard number of a batcher's key (a string: a key with a standard coder;
// Beam's Go int coder is a custom one).
func shardOf(key string) int {
	n, _ := strconv.Atoi(key)
	return n
}
