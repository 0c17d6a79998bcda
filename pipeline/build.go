package pipeline

import (
	"flag"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/window"

	"github.com/ch-beam/pubsub-to-clickhouse/pipeline/localrunner"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/ack"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/batch"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/chclient"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/convert"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/deadletter"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/evolve"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/flow"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/parse"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/psclient"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/route"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/source"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/udf"
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
	return chclient.Config{
		URL:               o.ClickHouseURL,
		Database:          o.ClickHouseDatabase,
		Username:          o.ClickHouseUsername,
		Password:          o.ClickHousePassword,
		CACertificate:     o.ClickHouseCaCertificate,
		ClientCertificate: o.ClickHouseClientCertificate,
		ClientKey:         o.ClickHouseClientKey,
		Compression:       o.ClickHouseCompression,
	}
}

// UDF returns the JavaScript UDF stage's configuration of o, and whether o has a UDF
// (javascriptTextTransformGcsPath and javascriptTextTransformFunctionName set).
func (o Options) UDF() (udf.Config, bool) {
	return udf.Config{
		Path:     o.JavascriptTextTransformGcsPath,
		Function: o.JavascriptTextTransformFunctionName,
		Reload:   time.Duration(o.JavascriptTextTransformReloadIntervalMinutes) * time.Minute,
	}, o.JavascriptTextTransformGcsPath != "" && o.JavascriptTextTransformFunctionName != ""
}

// FromMessage returns the columns of o filled from the message instead of the payload
// (metadataColumns, unknownFieldsColumn); o must be valid (Options.Validate).
func (o Options) FromMessage() convert.Options {
	m, err := convert.ParseMetadataColumns(o.MetadataColumns)
	if err != nil {
		panic(fmt.Sprintf("pipeline: metadataColumns: %v", err)) // Validate refuses it
	}
	return convert.Options{Metadata: m, UnknownFields: o.UnknownFieldsColumn}
}

// NewColumns returns the limits of schema evolution of o (addNewColumnsMax,
// addNewColumnsPattern, addNewColumnsExcluded, addNewColumnsOnCluster) and whether o adds
// columns at all (addNewColumns); o must be valid (Options.Validate).
func (o Options) NewColumns() (evolve.Limits, bool) {
	excluded, err := excludedFields(o.AddNewColumnsExcluded)
	if err != nil {
		panic(fmt.Sprintf("pipeline: addNewColumnsExcluded: %v", err)) // Validate refuses it
	}
	return evolve.Limits{Max: o.AddNewColumnsMax, Pattern: o.AddNewColumnsPattern, Excluded: excluded, OnCluster: o.AddNewColumnsOnCluster}, o.AddNewColumns
}

// Routing returns the routing of o (routeBy, routeTables and routeUnlisted; clickHouseTable
// takes the unlisted values unless routeUnlisted is deadLetter) and whether o routes at all; o
// must be valid (Options.Validate).
func (o Options) Routing() (route.Spec, bool) {
	if o.RouteBy == "" {
		return route.Spec{}, false
	}
	by, err := route.ParseBy(o.RouteBy)
	entries, err2 := route.ParseTables(o.RouteTables, func(string) string { return "" })
	if err != nil || err2 != nil {
		panic(fmt.Sprintf("pipeline: routeBy/routeTables: %v %v", err, err2)) // Validate refuses them
	}
	unlisted := o.ClickHouseTable
	if o.RouteUnlisted == "deadLetter" {
		unlisted = ""
	}
	return route.New(by, entries, unlisted), true
}

// Tables returns the tables o writes rows into: with routing, each table of Routing's Spec;
// else clickHouseTable.
func (o Options) Tables() []string {
	if spec, ok := o.Routing(); ok {
		return spec.Tables
	}
	return []string{o.ClickHouseTable}
}

// TableParam returns what names table in o, to label an error about it: "clickHouseTable", or
// with routing the pairs of routeTables that name it (`routeTables "click=clicks"`), and
// "clickHouseTable" for the table of unlisted values that no pair names.
func (o Options) TableParam(table string) string {
	spec, ok := o.Routing()
	if !ok {
		return "clickHouseTable"
	}
	var pairs []string
	for _, e := range spec.Entries {
		if e.Table == table {
			pairs = append(pairs, strconv.Quote(e.String()))
		}
	}
	if len(pairs) == 0 {
		return "clickHouseTable"
	}
	return "routeTables " + strings.Join(pairs, ", ")
}

// Mode returns the batching mode of windowSeconds, batchRowCount and batchByteSize.
func (o Options) Mode() batch.Mode {
	return batch.ModeFor(o.WindowSeconds.Value, o.BatchRowCount.Value, int64(o.BatchByteSize))
}

// Compression returns shuffleCompression as the batch stage takes it (flow.ParseCompression):
// MinLZ when unset. Options that Check refused may give MinLZ for a value it does not know.
func (o Options) Compression() flow.Compression {
	c, _ := flow.ParseCompression(o.ShuffleCompression)
	return c
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

// Shards returns the number of INSERT streams for src: numShards when given (positive), else
// (numShards 0, the default) 1 on the local runner, where one process does every INSERT anyway,
// and on Dataflow maxNumWorkers (the runner's max_num_workers; 0 when not given) clamped to
// [4, 16]. On Dataflow each shard is a key of the GroupByKey, and one key's batches are inserted
// by one worker at a time: with a single shard one worker would do every INSERT of the job,
// however far the job scales out. More shards make more, smaller INSERTs: the count trigger
// (batchRowCount) counts each shard's rows, and the time trigger fires per shard.
func (o Options) Shards(src Source, maxNumWorkers int) int {
	switch {
	case o.NumShards > 0:
		return o.NumShards
	case src != DataflowSource:
		return 1
	default:
		return min(max(maxNumWorkers, 4), 16)
	}
}

// minOutstandingBytes is the local source's smallest cap on the bytes it holds unacknowledged.
const minOutstandingBytes = 256 << 20

// maxOutstandingBytes is the local source's cap on the bytes of the messages it holds
// unacknowledged (source.Config.MaxOutstandingBytes), in the combined mode (the default): twice
// what every rows' batcher holds when its batch is one message short of full by bytes
// (batchByteSize, and a message of Pub/Sub's largest, 10 MB), at least 256 MiB. No cap (0) in the
// other modes: in the count mode the local runner's dead letters wait in a GroupByKey for
// batchRowCount of them, which the cap could keep from ever coming (their messages stay
// unacknowledged until they are written), and then nothing would end the wait; the combined
// mode's time trigger releases them. Nor without a byte bound (batchByteSize 0), nor in the
// fixed-window mode, whose batches do not wait to fill.
func (o Options) maxOutstandingBytes(src Source) int64 {
	mode := o.Mode()
	if mode.Bytes <= 0 || mode.Rows == 0 || mode.Window == 0 {
		return 0
	}
	return max(minOutstandingBytes, 2*int64(o.batchers(src))*(mode.Bytes+10_000_000))
}

// minOutstanding is the local source's smallest cap on the messages it holds unacknowledged.
const minOutstanding = 10_000

// maxOutstanding is the local source's cap on the messages it holds unacknowledged
// (source.Config.MaxOutstanding): a full batch (batchRowCount) for every batcher, at least
// 10,000, so that some batch can always fill by count: when every batcher holds one row short of
// full, the source may still read. Each routed table has a batcher per shard, and so do the dead
// letters (the local runner's count trigger): with room for one table's batchers and the dead
// letters', three routed tables each a few rows short of batchRowCount held the cap, and in the
// count mode nothing was inserted or acknowledged again. With one table the cap is what it was.
func (o Options) maxOutstanding(src Source) int {
	return max(minOutstanding, o.batchers(src)*o.Mode().Rows)
}

// batchers is how many batchers of rows and of dead letters the pipeline has: one per shard of
// each table it writes (the routed tables, or clickHouseTable) and of the dead letters.
func (o Options) batchers(src Source) int {
	tables := 1
	if spec, routed := o.Routing(); routed {
		tables = len(spec.Tables)
	}
	return (tables + 1) * o.Shards(src, 0)
}

// maxNumWorkers returns the Dataflow runner's --max_num_workers, 0 when it is not given or
// the runner is not linked in.
func maxNumWorkers() int {
	f := flag.Lookup("max_num_workers")
	if f == nil {
		return 0
	}
	n, _ := strconv.Atoi(f.Value.String())
	return n
}

// Checked is template parameters that [Options.Validate] accepted: what Build and BuildFrom
// take, so that a launch validates its parameters once. Its zero value is not checked: Build
// panics on it.
type Checked struct {
	o  Options
	ok bool
}

// Check validates o ([Options.Validate]): the Checked o, or the problems Validate found.
func (o Options) Check() (Checked, error) {
	if err := o.Validate(); err != nil {
		return Checked{}, err
	}
	return Checked{o: o, ok: true}, nil
}

// MustCheck is [Options.Check] for options known to be valid (tests, examples): it panics on
// invalid options, at construction, as Beam's transforms do.
func MustCheck(o Options) Checked {
	c, err := o.Check()
	if err != nil {
		panic(fmt.Sprintf("pipeline: invalid options: %v", err))
	}
	return c
}

// Options returns the checked options.
func (c Checked) Options() Options { return c.o }

// options returns the checked options; it panics when c is not checked (the zero Checked).
func (c Checked) options(caller string) Options {
	if !c.ok {
		panic("pipeline." + caller + ": the options are not checked: give Options.Check's result")
	}
	return c.o
}

// Build wires the pipeline on s, in data-flow order: source, the JavaScript UDF when the options
// have one, parse, window and batch, write, and the dead letters (messages the UDF failed on,
// messages parse could not convert, rows the server rejected) to their destinations, batched the
// same way. It does no I/O. It panics on a Checked that Options.Check did not return.
func Build(s beam.Scope, c Checked, src Source) {
	o := c.options("Build")
	mode := o.Mode()
	if src == DataflowSource {
		BuildFrom(s, c, src, source.ReadDataflow(s, source.Config{Subscription: o.InputSubscription}))
		return
	}
	BuildFrom(s, c, src, source.Read(s, source.Config{
		Subscription:  o.InputSubscription,
		StopAfterIdle: time.Duration(o.StopAfterIdle.Value) * time.Second,
		// In count mode a last partial batch is inserted only when the input ends, so the
		// reader must stop while those messages are still outstanding.
		StopWithOutstanding: mode.Window == 0,
		// Room for every batcher to fill a batch, so that a batch can always fill by count.
		MaxOutstanding: o.maxOutstanding(src),
		// In the combined mode, room for every rows' batcher to fill a batch by bytes, twice over;
		// a burst of large messages is then held this much at a time, not MaxOutstanding of them
		// (with messages of 10 MB, 100 GB).
		MaxOutstandingBytes: o.maxOutstandingBytes(src),
	}))
}

// BuildFrom wires every stage after the source on msgs, a PCollection<flow.Messages> read by
// src's reader: the JavaScript UDF when o has one, parse, window and batch, write, dead letters,
// and with LocalSource the acknowledgements on o.InputSubscription: the write stage acknowledges
// each INSERT's messages as it commits, and the acknowledging stage each message whose dead
// letter is stored or that the UDF dropped; with DataflowSource nothing is acknowledged (the
// service does). Build calls it; tests call it on a
// source of their own. It panics on a Checked that Options.Check did not return.
//
// With LocalSource it also adds prism's experiment that turns off its splits of running bundles
// (localrunner.Configure), without which the batcher's state is lost on prism: rows parsed but
// never inserted, and a run that still ends without an error. A program that builds the pipeline
// itself cannot forget it.
func BuildFrom(s beam.Scope, c Checked, src Source, msgs beam.PCollection) {
	o := c.options("BuildFrom")
	if src != DataflowSource {
		localrunner.Configure()
	}
	mode := o.Mode()
	shards := o.Shards(src, maxNumWorkers())

	// The dead letters of the UDF and parse stages, and what the UDF dropped.
	var failed, dropped []beam.PCollection
	if cfg, ok := o.UDF(); ok {
		var udfFailed, udfDropped beam.PCollection
		msgs, udfFailed, udfDropped = udf.Transform(s, cfg, msgs)
		failed, dropped = append(failed, udfFailed), append(dropped, udfDropped)
	}
	batches := batch.Config{Mode: mode, Shards: shards, ProcessingTimeTimers: src == DataflowSource, Compression: o.Compression()}

	// One branch per table: parse, window and batch, write. Without routing it is clickHouseTable
	// alone, under the scopes it always had; with routing each table's branch is in a scope named
	// after it (Tables/<table>/...), so that its batches and retries are its own.
	tables, perTable := []string{o.ClickHouseTable}, []beam.PCollection{msgs}
	spec, routed := o.Routing()
	if routed {
		var unrouted beam.PCollection
		perTable, unrouted = route.Route(s, spec, msgs)
		tables, failed = spec.Tables, append(failed, unrouted)
	}
	limits, addColumns := o.NewColumns()
	// On the local runner the write stage acknowledges each INSERT's messages itself, once it
	// commits (write.Config.AckSubscription); its ack ids output stays empty.
	ackSubscription := ""
	if src != DataflowSource {
		ackSubscription = o.InputSubscription
	}
	var tablesScope beam.Scope // one scope for every table's, so that their names stay Tables/<table>
	if routed {
		tablesScope = s.Scope("Tables")
	}
	for i, table := range tables {
		ts := s
		if routed {
			ts = tablesScope.Scope(table)
		}
		rows, deadLetters := parse.Parse(ts, parse.Config{
			ClickHouse:    o.ClickHouse(),
			Table:         table,
			SchemaRefresh: time.Duration(o.SchemaRefreshSeconds) * time.Second,
			FromMessage:   o.FromMessage(),
			Routed:        routed,
			AddNewColumns: addColumns,
			Limits:        limits,
		}, perTable[i])
		r, _ := write.Write(ts, write.Config{
			ClickHouse:    o.ClickHouse(),
			Table:         table,
			Settings:      o.InsertSettings(),
			Retry:         o.Retry(),
			MaxRows:       mode.Rows,
			MaxBytes:      mode.Bytes,
			FromMessage:   o.FromMessage(),
			Routed:        routed,
			AddNewColumns: o.AddNewColumns,
			// The fixed-window mode on the local runner (write.Config.OneBundlePerShard).
			OneBundlePerShard: src != DataflowSource && mode.Rows == 0,
			AckSubscription:   ackSubscription,
		}, batch.Rows(ts, batches, rows))
		failed = append(failed, deadLetters,
			// The rejected rows come out of the write stage in its windows; Flatten needs one windowing.
			beam.WindowInto(ts.Scope("Rejected"), window.NewGlobalWindows(), r))
	}

	deadLettered := deadletter.Write(s, deadletter.Config{
		ClickHouse:    o.ClickHouse(),
		Table:         o.ClickHouseDeadLetterTable,
		Topic:         o.DeadLetterTopic,
		Retry:         o.Retry(),
		Settings:      o.InsertSettings(),
		SchemaRefresh: time.Duration(o.SchemaRefreshSeconds) * time.Second,
		MaxBytes:      mode.Bytes,
		MaxRows:       mode.Rows,
		// On the local runner, in every mode (deadletter.Config.OneBundlePerShard).
		OneBundlePerShard: src != DataflowSource,
	}, batch.DeadLetters(s.Scope("DeadLetters"), batches, beam.Flatten(s, failed...)))

	// The edge back to the source: the dead letters written and the messages the UDF dropped are
	// acknowledged (local runner only; on Dataflow the service acknowledges). The write stage
	// acknowledges the inserted rows itself, INSERT by INSERT.
	if src != DataflowSource {
		// The dead-letter stage has no other output: acknowledging inside it would leave it
		// without outputs, and prism spins a core for the whole bundle of such a stage (see
		// package ack); after a Reshuffle the acknowledgement is a small stage of its own.
		var stored []ack.Stored
		stored = append(stored, ack.Stored{IDs: beam.Reshuffle(s, deadLettered), Outcome: psclient.DeadLettered})
		for _, d := range dropped {
			stored = append(stored, ack.Stored{IDs: d, Outcome: psclient.Dropped})
		}
		ack.Acknowledge(s, ack.Config{Subscription: o.InputSubscription}, stored...)
	}
}
