// Package batch groups a stream into batches, one INSERT stream per shard, as the template's
// windowSeconds, batchRowCount and batchByteSize parameters say (see Mode): the rows (Rows) and
// the dead letters (DeadLetters). Elements are first keyed by a shard number in [0, numShards).
// In the fixed-window mode each window of a shard is one batch, grouped by a GroupByKey that
// fires at the end of the window (fired panes discarded, allowed lateness 0). In the count and
// combined modes a stateful DoFn per shard counts rows (or records) and bytes, since a trigger
// counts elements and cannot bound bytes; the rules it keeps are tally's. (The dead letters of
// the local runner are the exception: a GroupByKey whose trigger counts them, see DeadLetters.)
//
// The SDK's transforms/batch.GroupIntoBatches is not used: v2.77.0 hangs on prism when a
// buffering duration is set.
package batch

import (
	"fmt"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"

	"github.com/ch-beam/pubsub-to-clickhouse/transforms/flow"
)

// Defaults of the combined mode when neither windowSeconds nor batchRowCount is given.
const (
	DefaultWindow = 30 * time.Second
	DefaultRows   = 1000
)

// Mode is one of the template's four batching modes:
//
//	windowSeconds  batchRowCount  behaviour
//	set            unset          fixed windows of windowSeconds; a window's rows are inserted when it closes
//	unset          set            global window, a batch every batchRowCount rows
//	set            set            global window, a batch at batchRowCount rows or windowSeconds after
//	                              the first row of the pane, whichever comes first
//	unset          unset          the combined mode with 30 seconds and 1000 rows
//
// In the count and combined modes a batch also ends at Bytes (batchByteSize): a batch holds the
// rows up to the one that would take it above Bytes, and a row larger than Bytes is a batch of
// its own. In the fixed-window mode a window's rows are one batch whatever their size (the write
// stage splits its INSERTs by size).
type Mode struct {
	// Window is the fixed window length, or the longest a pane waits in the combined mode; 0 when
	// windowSeconds is unset in count mode.
	Window time.Duration
	// Rows is the count trigger, in rows; 0 in fixed-window mode.
	Rows int
	// Bytes bounds a batch of the count and combined modes, in bytes of its rows as
	// flow.RowBytes counts them (the payload, its ids and attributes); 0: no bound.
	Bytes int64
}

// ModeFor returns the mode of the given parameters; 0 means unset for windowSeconds and
// batchRowCount, and no bound for batchByteSize.
func ModeFor(windowSeconds, batchRowCount int, batchByteSize int64) Mode {
	if windowSeconds == 0 && batchRowCount == 0 {
		return Mode{Window: DefaultWindow, Rows: DefaultRows, Bytes: batchByteSize}
	}
	return Mode{Window: time.Duration(windowSeconds) * time.Second, Rows: batchRowCount, Bytes: batchByteSize}
}

// String describes the mode for the start-up log.
func (m Mode) String() string {
	switch {
	case m.Rows == 0:
		return fmt.Sprintf("fixed windows of %v: each window's rows are inserted when it closes", m.Window)
	case m.Window == 0:
		return fmt.Sprintf("global window, count trigger: a batch every %d rows%s", m.Rows, m.bytesText())
	default:
		return fmt.Sprintf("global window, combined trigger: a batch at %d rows%s or %v after the first row of the pane, whichever comes first", m.Rows, m.bytesText(), m.Window)
	}
}

func (m Mode) bytesText() string {
	if m.Bytes <= 0 {
		return ""
	}
	return fmt.Sprintf(" (fewer when they reach %d bytes)", m.Bytes)
}

func init() {
	register.DoFn1x2[beam.T, int, beam.T](&shardFn{})
}

// Config is what the batch stage needs: the batching mode and the number of shards.
type Config struct {
	Mode   Mode
	Shards int // INSERT streams: elements are keyed by a shard number in [0, Shards); positive
	// ProcessingTimeTimers says the runner fires the processing-time timers of stateful DoFns
	// (Dataflow), which Rows then uses for the combined mode's time bound; prism does not, and
	// the local source's heartbeats drive it there.
	ProcessingTimeTimers bool
	// Compression is how the rows are compressed through the GroupByKey and the batcher's
	// state (shuffleCompression): the coder of the groups it keys, and of those it buffers, uses
	// it. The zero value is MinLZ, the default.
	Compression flow.Compression
}

// shardFn keys elements by shard, round robin per worker; a group of rows (flow.Rows) it marks
// with Compression, which the GroupByKey's coder after it then uses.
type shardFn struct {
	NumShards   int
	Compression flow.Compression
	next        int
}

func (f *shardFn) ProcessElement(elem beam.T) (int, beam.T) {
	shard := f.next
	f.next = (f.next + 1) % f.NumShards
	if rows, ok := elem.(flow.Rows); ok {
		rows.Compression = f.Compression
		elem = rows
	}
	return shard, elem
}
