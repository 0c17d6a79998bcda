package pipeline

import (
	"fmt"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/window"

	"github.com/ch-beam/pubsub-to-clickhouse/transforms/batch"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/chclient"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/deadletter"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/parse"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/source"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/write"
)

// Source selects how messages are read.
type Source int

const (
	// LocalSource pulls with the Pub/Sub client library (prism and other non-Dataflow runners)
	// and acknowledges each message after its row or dead letter is written.
	LocalSource Source = iota
	// DataflowSource is pubsubio.Read, which only the Dataflow service executes; the service
	// acknowledges at its own checkpoints.
	DataflowSource
)

func (s Source) String() string {
	if s == DataflowSource {
		return "pubsubio.Read (Dataflow)"
	}
	return "Pub/Sub pull with the client library, acknowledging after each write (local runner)"
}

// ClickHouse returns the connection parameters of o.
func (o Options) ClickHouse() chclient.Config {
	return chclient.Config{URL: o.ClickHouseURL, Database: o.ClickHouseDatabase, Username: o.ClickHouseUsername, Password: o.ClickHousePassword}
}

// Mode returns the batching mode of windowSeconds and batchRowCount.
func (o Options) Mode() batch.Mode {
	return batch.ModeFor(o.WindowSeconds.Value, o.BatchRowCount.Value)
}

// InsertSettings returns the ClickHouse insert settings of o.
func (o Options) InsertSettings() chclient.Settings {
	return chclient.Settings{
		Deduplicate:        o.InsertDeduplicate,
		Quorum:             o.InsertQuorum.Value,
		QuorumSet:          o.InsertQuorum.Given,
		DistributedSync:    o.InsertDistributedSync,
		MaxInsertBlockSize: o.MaxInsertBlockSize,
	}
}

// Retry returns the INSERT retry policy of o.
func (o Options) Retry() chclient.Retry {
	return chclient.Retry{
		MaxRetries:     o.MaxRetries,
		InitialBackoff: time.Duration(o.RetryInitialBackoffMillis) * time.Millisecond,
		MaxBackoff:     time.Duration(o.RetryMaxBackoffMillis) * time.Millisecond,
	}
}

// Build wires the pipeline on s, in data-flow order: source, parse, window and batch, write, and
// the dead letters (messages parse could not convert, rows the server rejected) to their
// destinations, batched the same way. It does no I/O; o must
// be valid (Options.Validate), else Build panics.
func Build(s beam.Scope, o Options, src Source) {
	if err := o.Validate(); err != nil {
		panic(fmt.Sprintf("pipeline.Build: invalid options: %v", err))
	}
	mode := o.Mode()
	var msgs beam.PCollection
	ackSubscription := ""
	if src == DataflowSource {
		msgs = source.ReadDataflow(s, o.InputSubscription)
	} else {
		msgs = source.Read(s, o.InputSubscription, source.ReadOptions{
			StopAfterIdle: time.Duration(o.StopAfterIdle.Value) * time.Second,
			// In count mode a last partial batch is inserted only when the input ends, so the
			// reader must stop while those messages are still outstanding.
			StopWithOutstanding: mode.Window == 0,
			// Room for every shard to fill a batch, so that a count trigger can always fire.
			MaxOutstanding: max(10_000, 2*o.NumShards*mode.Rows),
		})
		ackSubscription = o.InputSubscription
	}

	rows, deadLetters := parse.Parse(s, o.ClickHouse(), o.ClickHouseTable, time.Duration(o.SchemaRefreshSeconds)*time.Second, msgs)

	rejected := write.Write(s, write.Config{
		ClickHouse:   o.ClickHouse(),
		Table:        o.ClickHouseTable,
		Settings:     o.InsertSettings(),
		Retry:        o.Retry(),
		MaxRows:      mode.Rows,
		Subscription: ackSubscription,
	}, batch.Batches(s, mode, o.NumShards, rows))

	deadletter.Write(s, deadletter.Config{
		ClickHouse:   o.ClickHouse(),
		Table:        o.ClickHouseDeadLetterTable,
		Topic:        o.DeadLetterTopic,
		Retry:        o.Retry(),
		Settings:     o.InsertSettings(),
		Subscription: ackSubscription,
	}, batch.Batches(s.Scope("DeadLetters"), mode, o.NumShards, beam.Flatten(s, deadLetters,
		// The rejected rows come out of the write stage in its windows; Flatten needs one windowing.
		beam.WindowInto(s.Scope("Rejected"), window.NewGlobalWindows(), rejected))))
}
