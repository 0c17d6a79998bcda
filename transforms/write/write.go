// Package write is the write stage: each batch of rows (a pane of package batch) is inserted into
// the ClickHouse table through clickhouse-go/v2's batch API, one columnar Append per column, in
// INSERTs of at most maxInsertBlockSize rows that each name their columns, with the template's
// insert settings, a deterministic insert_deduplication_token per INSERT, and bounded retries with
// exponential backoff. On the local runner (Config.AckSubscription) the messages of each INSERT's
// rows are acknowledged as soon as it commits, so that a batch cut into several INSERTs, of which
// a later one fails or is cut short by a stop, gives back only the messages not yet inserted.
//
// Metrics, in the Beam namespace PubSubToClickHouse: counters rows-inserted, insert-batches (one
// per INSERT that succeeded), insert-retries (one per retried attempt), insert-failures (one per
// INSERT whose retries were spent), and the distributions insert-batch-rows (rows per INSERT) and
// insert-latency-ms (milliseconds per successful INSERT, retries included).
package write

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/state"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"

	"github.com/ch-beam/pubsub-to-clickhouse/transforms/chclient"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/convert"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/flow"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/psclient"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/schema"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/text"
)

var (
	rowsInserted    = beam.NewCounter(flow.Namespace, "rows-inserted")
	insertBatches   = beam.NewCounter(flow.Namespace, "insert-batches")
	insertRetries   = beam.NewCounter(flow.Namespace, "insert-retries")
	insertFailures  = beam.NewCounter(flow.Namespace, "insert-failures")
	insertBatchRows = beam.NewDistribution(flow.Namespace, "insert-batch-rows")
	insertLatencyMS = beam.NewDistribution(flow.Namespace, "insert-latency-ms")
	insertSplits    = beam.NewCounter(flow.Namespace, "insert-splits")
	rowsRejected    = beam.NewCounter(flow.Namespace, "rows-rejected-by-clickhouse")
)

func init() {
	register.DoFn5x1[context.Context, int, flow.Rows, func(flow.DeadLetter), func([]string), error](&insertFn{})
	register.DoFn6x1[context.Context, state.Provider, int, flow.Rows, func(flow.DeadLetter), func([]string), error](&shardInsertFn{})
	register.Emitter1[flow.DeadLetter]()
	register.Emitter1[[]string]()
}

// Config is what the write stage needs besides the rows.
type Config struct {
	ClickHouse chclient.Config
	Table      string
	Settings   chclient.Settings
	Retry      chclient.Retry
	// MaxRows caps the rows of one INSERT below Settings.MaxInsertBlockSize: batchRowCount when
	// given (a runner may fire a pane larger than the count trigger), else 0.
	MaxRows int
	// MaxBytes caps the bytes of one INSERT's rows (their RowBinaryWithDefaults; a row larger is
	// an INSERT alone): batchByteSize, which bounds the batches of the count and combined modes
	// by a slightly larger measure (flow.RowBytes), and here also the INSERTs of the fixed-window
	// mode's batches, a window each. 0: no bound.
	MaxBytes int64
	// FromMessage are the columns filled from the message (metadataColumns,
	// unknownFieldsColumn), as the parse stage has them: each row carries its metadata.
	FromMessage convert.Options
	// Routed counts this table's metrics also under names of its own (flow.TableMetrics):
	// rows-inserted:<table>, insert-batches:<table>, rows-rejected-by-clickhouse:<table>, and
	// the distributions insert-batch-rows:<table> and insert-latency-ms:<table>.
	Routed bool
	// AddNewColumns is the template parameter addNewColumns: the parse stage made a column of
	// each field no column took. A row converted again against a schema that has lost such a
	// column (dropped, renamed) is then a dead letter (gone), not a row without the field's value.
	AddNewColumns bool
	// OneBundlePerShard makes the stage a stateful one (shardInsertFn), which a runner runs one
	// bundle of a shard at a time. For the local runner's fixed-window mode: prism runs the
	// stage after a GroupByKey with as many bundles at once as windows arrive, and at most 8
	// bundles in all (runners/prism/internal/execute.go, errgroup.SetLimit(8)), so the windows of
	// a table that is down, each retrying its INSERT, took every bundle in turn and held up the
	// other tables, the dead letters and the read. Dataflow runs a key's work one item at a time
	// anyway, and its graph keeps the plain stage.
	OneBundlePerShard bool
	// AckSubscription is the input subscription on the local runner (empty on Dataflow, whose
	// service acknowledges): the stage acknowledges each INSERT's messages on it (through the
	// process's psclient.Manager) as soon as the INSERT commits, rather than emitting their ack
	// ids for the acknowledging stage, which would take them only once the whole batch, every
	// INSERT of it, had succeeded: a failure or a stop between two INSERTs gave back the rows
	// already committed, which the next run inserted again.
	AckSubscription string
}

// Write inserts the batches of batches (a PCollection<KV<int, flow.Rows>> from batch.Rows) into
// cfg.Table, converting each row's payload with the stage's own view of the table's schema. It
// returns the dead-letter records of the rows the server rejected (PCollection<flow.DeadLetter>)
// and the ack ids of the inserted rows, one []string per batch (PCollection<[]string>), which is
// empty both on Dataflow, whose service acknowledges, and with cfg.AckSubscription, when the stage
// acknowledges each INSERT's rows itself. It panics at construction when cfg is incomplete.
func Write(s beam.Scope, cfg Config, batches beam.PCollection) (rejected, stored beam.PCollection) {
	s = s.Scope("Write")
	if cfg.Table == "" || cfg.ClickHouse.URL == "" || cfg.Settings.MaxInsertBlockSize <= 0 {
		panic(fmt.Sprintf("write.Write: incomplete configuration %v", cfg.ClickHouse))
	}
	if cfg.OneBundlePerShard {
		return beam.ParDo2(s, &shardInsertFn{insertFn: insertFn{Config: cfg}, Shard: state.MakeValueState[bool]("shard")}, batches)
	}
	return beam.ParDo2(s, &insertFn{Config: cfg}, batches)
}

// shardInsertFn is insertFn as a stateful DoFn (Config.OneBundlePerShard): its state, never read
// or written, makes the runner hand it one bundle of a shard at a time (Beam's model: a key's
// state is used by one bundle at once), so a shard's batches wait in the runner, not in bundles
// of their own.
type shardInsertFn struct {
	insertFn
	Shard state.Value[bool]
}

// ProcessElement is insertFn's.
func (f *shardInsertFn) ProcessElement(ctx context.Context, _ state.Provider, shard int, batch flow.Rows, emitDeadLetter func(flow.DeadLetter), emitStored func([]string)) error {
	return f.insertFn.ProcessElement(ctx, shard, batch, emitDeadLetter, emitStored)
}

// insertFn inserts one batch per call.
type insertFn struct {
	Config

	ch        *chclient.Resolved // ClickHouse with its secrets read in Setup, and again after a refusal (renew)
	opened    chclient.Values    // the values f.conn was opened with (renew)
	conn      driver.Conn
	tracker   *convert.Tracker   // the table's schema and converter
	seen      map[uint64]bool    // the schema hashes tracker has had
	columns   []schema.Column    // tracker's writable columns
	conv      *convert.Converter // tracker's converter
	settings  clickhouse.Settings
	withToken bool
	// presumedData holds the Unknown error codes that persisted in the batch being written,
	// which are then handled as data errors without further retries.
	presumedData map[int32]bool
	meta         convert.Meta // the metadata of the row being converted
	byTable      *flow.TableMetrics
	acks         psclient.Manager // of Config.AckSubscription; nil without one
	// arena is the rows' RowBinary buffer of the last batch, kept for the next one when it
	// holds at most maxKeptArena bytes (a fixed window's batch can be far larger): a new
	// buffer of a batch's size each time cost the first writes to fresh memory. nil while a
	// batch uses it, so that a batch converted again after a schema refresh (insertRows
	// within insertRows) takes a buffer of its own.
	arena []byte
}

// Setup reads the secrets the configuration names (chclient.Config.Resolve), opens the
// connection pool, reads the table's schema and which insert settings the server knows. A server
// briefly unreachable is waited for (chclient.SetupRetry).
func (f *insertFn) Setup(ctx context.Context) error {
	f.byTable = flow.NewTableMetrics(f.Routed, f.Table, []string{"rows-inserted", "insert-batches", "rows-rejected-by-clickhouse"},
		[]string{"insert-batch-rows", "insert-latency-ms"})
	if f.AckSubscription != "" {
		var err error
		if f.acks, err = psclient.ForSubscription(ctx, f.AckSubscription); err != nil {
			return err
		}
	}
	_, err := chclient.SetupRetry.Do(ctx, func() error { return f.setup(ctx) }, func(n int, err error) {
		slog.Warn("write: connecting to ClickHouse failed; retrying", "table", f.Table, "attempt", n, "error", err)
	})
	return err
}

func (f *insertFn) setup(ctx context.Context) error {
	if f.conn != nil {
		f.conn.Close()
	}
	var err error
	if f.ch == nil {
		if f.ch, err = f.ClickHouse.Resolve(ctx); err != nil {
			return err
		}
	}
	if f.conn, err = f.ch.Open(ctx); err != nil {
		return err
	}
	f.opened = f.ch.Current()
	if err := f.refreshSchema(ctx); err != nil {
		return err
	}
	var leftOut []string
	if f.settings, f.withToken, leftOut, err = chclient.ResolveSettings(ctx, f.conn, f.Settings); err != nil {
		return err
	}
	chclient.LogLeftOut(leftOut)
	return nil
}

// refreshSchema reads the table's schema and builds its converter, used for rows converted
// against another schema. A column type without a converter stops the stage with an error
// naming the column.
func (f *insertFn) refreshSchema(ctx context.Context) error {
	if f.tracker == nil {
		f.tracker = &convert.Tracker{Stage: "write", Database: f.ClickHouse.Database, Table: f.Table, Options: f.FromMessage}
	}
	if err := f.tracker.Refresh(ctx, f.conn); err != nil {
		return err
	}
	f.columns, f.conv = f.tracker.Schema().Writable(), f.tracker.Converter()
	if f.seen == nil {
		f.seen = map[uint64]bool{}
	}
	f.seen[f.conv.SchemaHash()] = true
	return nil
}

// refreshRetrying is refreshSchema for a batch under way, whose rows need the table as it is
// now. A table that cannot be read (detached, dropped and not created again yet, the server
// unreachable), or can no longer be converted to (convert.ChangedError: a column of
// metadataColumns or unknownFieldsColumn dropped, a column of a type without converter added),
// is read again with the INSERT's retries (Config.Retry), as an INSERT into such a table is
// (chclient.Refused, Transient), and only then fails the bundle, with nothing dead-lettered or
// acknowledged. Until 2026-12-07 the first failed read failed the bundle: a table detached after
// a change of its columns (ALTER TABLE ... ADD COLUMN) that the parse stage had read and this
// stage had not ended a local run at once, every routed table's with it, where an INSERT into the
// same detached table is retried maxRetries times; and so did, within milliseconds, a table that
// lost its column of unknownFieldsColumn, cancelling the INSERTs under way into the other tables,
// where the user could have added the column again while the retries ran.
func (f *insertFn) refreshRetrying(ctx context.Context) error {
	attempts, err := f.Retry.Do(ctx, func() error { return f.refreshSchema(ctx) }, func(n int, err error) {
		insertRetries.Inc(ctx, 1)
		slog.Warn("write: reading the table's schema again failed; retrying", "table", f.Table, "attempt", n, "error", err)
	})
	if err == nil {
		return nil
	}
	insertFailures.Inc(ctx, 1)
	return fmt.Errorf("reading the schema of %s.%s again, for rows converted against other columns, failed after %d attempts: %w; "+
		"nothing was dead-lettered and the messages stay unacknowledged", f.ClickHouse.Database, f.Table, attempts, err)
}

// renew opens a new connection pool when err, an INSERT's failure, is the server refusing what
// the stage read in Setup (a password of Secret Manager, the certificates: chclient.Resolved.Renew)
// and what the stage reads again has changed since: a password rotated while the job runs (a new
// secret version, then the user's new password) reaches the next attempt, where the pool opened in
// Setup would have kept the old password for every connection it opens, and failed the bundle
// after its retries. A failed read or open keeps the pool; the next attempt tells.
func (f *insertFn) renew(ctx context.Context, err error) {
	if f.ch != nil {
		f.conn, f.opened = f.ch.Reopen(ctx, err, f.conn, f.opened, "write", f.Table)
	}
}

// Teardown closes the connection pool.
func (f *insertFn) Teardown() error {
	if f.conn != nil {
		return f.conn.Close()
	}
	return nil
}

// ProcessElement inserts one batch, dead-letters the rows the server rejects, then acknowledges
// the messages of the inserted rows.
func (f *insertFn) ProcessElement(ctx context.Context, shard int, batch flow.Rows, emitDeadLetter func(flow.DeadLetter), emitStored func([]string)) error {
	if len(batch.Rows) == 0 {
		return nil
	}
	rows := inOrder(batch.Rows)
	defer f.release()
	f.presumedData = map[int32]bool{}
	rejected := map[*Row]bool{}
	reject := func(r *Row, stage string, err error) {
		rejected[r] = true
		rowsRejected.Inc(ctx, 1)
		f.byTable.Inc(ctx, "rows-rejected-by-clickhouse", 1)
		trace := flow.StackTrace(stage, convert.Columns(err), err)
		if f.Routed {
			trace = flow.WithTable(trace, f.Table)
		}
		if r.Transformed && !convert.OnlyMetadata(err) {
			// The row is the JavaScript UDF's output, which the error is about and the dead
			// letter, holding the message as published, does not show: as the parse stage's.
			trace = flow.WithUDFOutput(trace, r.Payload)
		}
		emitDeadLetter(r.Row.DeadLetter(err.Error(), trace, time.Now()))
	}
	if err := f.insertRows(ctx, rows, reject, 0); err != nil {
		return err
	}
	if f.acks != nil {
		return nil // acknowledged INSERT by INSERT (acknowledge)
	}
	// The ack ids of the inserted rows (the rejected rows are acknowledged once their dead
	// letters are written); none on Dataflow, where the service acknowledges.
	ids := make([]string, 0, len(rows))
	for _, r := range rows {
		if r.AckID != "" && !rejected[r] {
			ids = append(ids, r.AckID)
		}
	}
	if len(ids) > 0 {
		emitStored(ids)
	}
	return nil
}

// inOrder returns the rows of a batch in the order of their message ids, and where the ids are
// the same (rows without one) in the order of what the rows convert from: payload, publish time,
// ordering key, attributes, the UDF's input. The same pane retried by the runner, whatever order
// its rows come in, then yields the same INSERTs, hence the same deduplication tokens (rows that
// are the same in all of these convert to the same bytes, whichever goes first). The rows are
// sorted as keys beside their places, which reads no row while the ids differ.
func inOrder(batch []flow.Row) []*Row {
	order := make([]rowKey, len(batch))
	for i := range batch {
		order[i] = rowKey{id: batch[i].MessageID, at: i}
	}
	slices.SortFunc(order, func(a, b rowKey) int {
		if c := strings.Compare(a.id, b.id); c != 0 {
			return c
		}
		return compareRows(&batch[a.at], &batch[b.at])
	})
	rows, backing := make([]*Row, len(batch)), make([]Row, len(batch))
	for i, k := range order {
		backing[i].Row = &batch[k.at]
		rows[i] = &backing[i]
	}
	return rows
}

// compareRows orders two rows of the same message id by what they convert from.
func compareRows(a, b *flow.Row) int {
	if c := cmp.Or(bytes.Compare(a.Payload, b.Payload), cmp.Compare(a.PublishTimeMillis, b.PublishTimeMillis),
		strings.Compare(a.OrderingKey, b.OrderingKey), flow.CompareAttributes(a.Attributes, b.Attributes)); c != 0 {
		return c
	}
	if a.Transformed != b.Transformed {
		if a.Transformed {
			return 1
		}
		return -1
	}
	return bytes.Compare(a.Original, b.Original)
}

// rowKey is a row of a batch, by its place, and its message id.
type rowKey struct {
	id string
	at int
}

// maxKeptArena is the largest RowBinary buffer the write stage keeps between batches: the
// default batchByteSize.
const maxKeptArena = 16 << 20

// maxSchemaRefreshes bounds how often one batch refreshes the schema and starts again.
const maxSchemaRefreshes = 2

// gone returns the error of a payload, converted again against conv's schema, with a field (not
// null) that no column of the table takes: with addNewColumns the parse stage took every such
// field into a column (or dead-lettered the message), so that column has gone since (dropped or
// renamed), and a row without the field's value would change the message silently. Replaying the
// dead letter makes the parse stage add the column again. nil when there is no such field. Of a
// row the parse stage passed on unchecked (it could not read the table), the field is new: no
// stage could add its column then.
func gone(conv *convert.Converter, payload []byte, unchecked bool) error {
	var fields []string
	_ = conv.NewFields(payload, func(name string, value []byte) error {
		if string(value) != "null" {
			fields = append(fields, fmt.Sprintf("field %s (value %s)", strconv.Quote(name), text.Cut(value, 100)))
		}
		return nil
	})
	if len(fields) == 0 {
		return nil
	}
	if unchecked {
		return fmt.Errorf("%s names no column: the parse stage could not read the table when the message came, so addNewColumns could not "+
			"give it one; the message is a dead letter rather than a row without the value (replaying it adds the column)", strings.Join(fields, ", "))
	}
	return fmt.Errorf("%s names no column any more: with addNewColumns the parse stage gave it one, so the column is gone since "+
		"(dropped or renamed) or not yet visible on the server this worker writes to; the message is a dead letter rather than a row "+
		"without the value (replaying it adds the column again)", strings.Join(fields, ", "))
}

// release drops what the stage still references of the batch's last row once the batch is
// done: the converter's values of its payload (convert.Converter.Release), which share the
// buffer the batch was decoded into, and its metadata.
func (f *insertFn) release() {
	if f.conv != nil {
		f.conv.Release()
	}
	f.meta = convert.Meta{}
}

// acknowledge acknowledges the messages of rows, which an INSERT has just committed, when the
// stage acknowledges (Config.AckSubscription). A failed acknowledgement is logged: the rows are
// stored, and the messages are delivered again.
func (f *insertFn) acknowledge(ctx context.Context, rows []*Row) {
	if f.acks == nil {
		return
	}
	ids := make([]string, 0, len(rows))
	for _, r := range rows {
		if r.AckID != "" {
			ids = append(ids, r.AckID)
		}
	}
	psclient.AckStored(ctx, f.acks, f.AckSubscription, psclient.Inserted, ids)
}

// insertRows converts rows with the current schema, splits them into blocks and inserts each.
func (f *insertFn) insertRows(ctx context.Context, rows []*Row, reject func(*Row, string, error), refreshes int) error {
	current := f.conv.SchemaHash()
	stale, unseen := false, false
	for _, r := range rows {
		if r.Schema != current {
			stale, unseen = true, unseen || r.Schema != flow.Unchecked && !f.seen[r.Schema]
		}
	}
	if stale && (unseen || f.tracker.Age() > time.Second) {
		// Rows of another schema: the table may have changed since this worker read it. Rows
		// of a schema this stage never had (the parse stage read the table later: a column was
		// added, by addNewColumns or by hand) read it again however recently it was read, so
		// that the INSERT fills the new column. Unchecked rows (flow.Unchecked) say nothing of
		// the table: they read it again as rows of an older schema do, once the schema read is
		// more than a second old, not for each batch (a system.columns query per batch while
		// the parse stage cannot read the table).
		if err := f.refreshRetrying(ctx); err != nil {
			return err
		}
		current = f.conv.SchemaHash()
	}
	// The rows' RowBinary shares one buffer: a slice keeps the array it was cut from, so growing
	// the buffer leaves the earlier rows' bytes in place.
	size := 0
	for _, r := range rows {
		size += len(r.Payload) // a row's RowBinary is most often smaller than its JSON
	}
	ok, arena := make([]*Row, 0, len(rows)), f.arena[:0]
	f.arena = nil
	if cap(arena) < size {
		arena = make([]byte, 0, size)
	}
	// A block's String columns point into its rows' Data until the driver has copied them, inside
	// the block's INSERT (chclient.Insert); its other columns copy the values; nothing reads a
	// row's Data once its blocks are inserted, so the arena is kept for the next batch.
	defer func() {
		if cap(arena) <= maxKeptArena {
			f.arena = arena[:0]
		}
	}()
	// Every row's payload passed the parse stage's conversion, and with it the check that it is
	// valid UTF-8, which no change of the table can change: ConvertChecked leaves it out. A row
	// the parse stage passed on unchecked (flow.Unchecked: a routed table it could not read) is
	// converted with every check, this its first conversion.
	for _, r := range rows {
		unchecked := r.Schema == flow.Unchecked
		start := len(arena)
		var meta *convert.Meta // the metadata columns' values, when the template has such columns
		if len(f.FromMessage.Metadata) > 0 {
			f.meta = convert.Meta{ID: r.MessageID, PublishTimeMillis: r.PublishTimeMillis, OrderingKey: r.OrderingKey, Attributes: r.Attributes}
			meta = &f.meta
		}
		if err := noPublishTime(f.FromMessage.Metadata, r.PublishTimeMillis); err != nil {
			reject(r, "write (the row has no publish time)", err)
			continue
		}
		var err error
		if unchecked {
			arena, err = f.conv.ConvertMessage(arena, r.Payload, meta)
		} else {
			arena, err = f.conv.ConvertChecked(arena, r.Payload, meta)
		}
		if err == nil && r.Schema != current && f.AddNewColumns && f.FromMessage.UnknownFields == "" && f.conv.Untaken() > 0 {
			err = gone(f.conv, r.Payload, unchecked)
		}
		if err != nil {
			arena = arena[:start]
			// The payload converted in the parse stage: the table changed since. The payload of
			// a transformed row is the function's output, which the error's fields are of.
			if r.Transformed && !convert.OnlyMetadata(err) {
				err = fmt.Errorf("converting the output of the javascript UDF: %w", err)
			}
			stage := "write (converting again after the table changed)"
			if unchecked {
				stage = "write (the parse stage could not read the table, so this is the first conversion)"
			}
			reject(r, stage, err)
			continue
		}
		r.Data = arena[start:len(arena):len(arena)]
		ok = append(ok, r)
	}
	maxRows := f.Settings.MaxInsertBlockSize
	if f.MaxRows > 0 && f.MaxRows < maxRows {
		maxRows = f.MaxRows
	}
	blocks, err := Blocks(f.columns, ok, maxRows, f.MaxBytes)
	if err != nil {
		return fmt.Errorf("table %s.%s: %w", f.ClickHouse.Database, f.Table, err)
	}
	for _, b := range blocks {
		if err := f.insertBlock(ctx, b, reject, refreshes); err != nil {
			return err
		}
	}
	return nil
}

// noPublishTime returns the error of a row without its message's publish time (publishTimeMillis
// 0) when metadata has a publish_time pair, else nil. The parse stage keeps a row's publish time
// only when the template has metadata columns, so a row that a Dataflow job without them held in
// its batch stage, and that is written after an update (--update) added such a pair, has none:
// converted, its column would hold 1970-01-01 00:00:00 (Unix time 0).
func noPublishTime(metadata []convert.MetadataColumn, publishTimeMillis int64) error {
	if publishTimeMillis != 0 {
		return nil
	}
	for _, m := range metadata {
		if m.Key == convert.KeyPublishTime {
			return &convert.OptionError{Option: convert.OptionMetadata, Pair: m.String(),
				Rule: "the row has no publish time: its message was read before an update of the job (--update) added this pair, and waited in the batch stage, which keeps the publish time only when the job has metadata columns; replay this dead letter to store the message (with the publish time of the replay)"}
		}
	}
	return nil
}

// insertBlock sends one block, retrying what a retry can change (see chclient.Class): transient
// failures and refusals with backoff, a failure with an unknown code a bounded number of times.
// A data error (a known data code, or an unknown code that persists) splits the block in halves
// until the rejected rows are alone, and dead-letters each with the server's code and text; a
// memory error splits it without dead-lettering; a schema error refreshes the schema and starts
// again. It returns an error (the bundle fails, nothing is acknowledged) when the retries of a
// transient failure or a refusal are spent.
func (f *insertFn) insertBlock(ctx context.Context, b *Block, reject func(*Row, string, error), refreshes int) error {
	start := time.Now()
	unknownAttempts := 0
	attempts, err := f.Retry.DoIf(ctx, func() error {
		// A Buffer table takes the INSERT whatever its destination, and discards at the flush
		// what the destination cannot take: the destination is checked before each attempt.
		if err := schema.CheckBuffer(ctx, f.conn, f.tracker.Schema()); err != nil {
			var be *schema.BufferError
			if errors.As(err, &be) {
				return &chclient.RefusedError{Err: err}
			}
			return err
		}
		return b.insert(ctx, f.conn, f.ClickHouse.Database, f.Table, f.settings, f.withToken)
	}, func(err error) bool {
		switch chclient.Classify(err) {
		case chclient.Transient, chclient.Refused:
			return true
		case chclient.Memory:
			return len(b.Rows) == 1 // nothing left to split
		case chclient.Unknown:
			code, _ := chclient.Code(err)
			unknownAttempts++
			return !f.presumedData[code] && unknownAttempts < chclient.PresumedDataAttempts
		}
		return false
	}, func(n int, err error) {
		insertRetries.Inc(ctx, 1)
		slog.Warn("INSERT failed; retrying", "table", f.Table, "rows", len(b.Rows), "attempt", n, "error", err)
		f.renew(ctx, err)
	})
	if err == nil {
		rowsInserted.Inc(ctx, int64(len(b.Rows)))
		insertBatches.Inc(ctx, 1)
		f.byTable.Inc(ctx, "rows-inserted", int64(len(b.Rows)))
		f.byTable.Inc(ctx, "insert-batches", 1)
		insertBatchRows.Update(ctx, int64(len(b.Rows)))
		f.byTable.Update(ctx, "insert-batch-rows", int64(len(b.Rows)))
		latency := time.Since(start).Milliseconds()
		insertLatencyMS.Update(ctx, latency)
		f.byTable.Update(ctx, "insert-latency-ms", latency)
		f.acknowledge(ctx, b.Rows)
		return nil
	}
	class := chclient.Classify(err)
	if class == chclient.Unknown {
		// The same failure again: taken to be about the rows, for the rest of this batch.
		code, _ := chclient.Code(err)
		if !f.presumedData[code] {
			slog.Warn("INSERT failed again with an error code not known to be transient; taking it to be about the rows and isolating them",
				"table", f.Table, "rows", len(b.Rows), "code", code, "error", err)
		}
		f.presumedData[code] = true
		class = chclient.Data
	}
	if class == chclient.Schema && refreshes >= maxSchemaRefreshes && chclient.ValuesRefused(err) {
		// The table read again and the rows converted again for it, and clickhouse-go still
		// refuses values: some row's, which the split finds.
		class = chclient.Data
	}
	switch {
	case (class == chclient.Data || class == chclient.Memory) && len(b.Rows) == 1:
		// A single row the server still cannot take after the retries: it is about the row.
		var rowsErr *chclient.RowsError
		if chclient.ValuesRefused(err) {
			slog.Warn("clickhouse-go refuses a row's values; sending it to the dead letter", "table", f.Table, "message", b.Rows[0].MessageID, "error", err)
			reject(b.Rows[0], "write (clickhouse-go cannot take the row's values)", fmt.Errorf("the row cannot be inserted: "+
				"clickhouse-go refuses its values, though the table was read again and the row converted again for it: %w", err))
			return nil
		}
		slog.Warn("the server rejected a row; sending it to the dead letter", "table", f.Table, "message", b.Rows[0].MessageID, "class", class.String(), "error", err)
		if errors.As(err, &rowsErr) {
			reject(b.Rows[0], "write (the row cannot be inserted)", fmt.Errorf("the row cannot be inserted: %w", err))
		} else {
			reject(b.Rows[0], "write (the server rejected the row)", fmt.Errorf("ClickHouse rejected the row: %w", chclient.ServerError(err)))
		}
		return nil
	case class == chclient.Data || class == chclient.Memory && len(b.Rows) > 1:
		insertSplits.Inc(ctx, 1)
		slog.Info("INSERT failed; splitting it in halves", "table", f.Table, "rows", len(b.Rows), "class", class.String(), "error", err)
		first, second := b.Split()
		if err := f.insertBlock(ctx, first, reject, refreshes); err != nil {
			return err
		}
		return f.insertBlock(ctx, second, reject, refreshes)
	case class == chclient.Schema && refreshes < maxSchemaRefreshes:
		slog.Warn("INSERT failed because the table changed; reading its schema again", "table", f.Table, "error", err)
		if err := f.refreshRetrying(ctx); err != nil {
			return err
		}
		return f.insertRows(ctx, b.Rows, reject, refreshes+1)
	case class == chclient.Refused:
		insertFailures.Inc(ctx, 1)
		code, _ := chclient.Code(err)
		check := fmt.Sprintf("check that the table exists and that %s %q may insert into it", chclient.FieldUsername, f.ClickHouse.Username)
		if chclient.SettingRefused(code) {
			check = fmt.Sprintf("a constraint of %s %q's settings profile refuses a setting that every INSERT carries (the error names it): "+
				"those of the parameters insertDeduplicate, insertDistributedSync, maxInsertBlockSize and insertQuorum, and the options in the %s; "+
				"give the parameter a value the constraint allows, or have the constraint relaxed",
				chclient.FieldUsername, f.ClickHouse.Username, chclient.FieldURL)
		}
		if chclient.LoginRefused(code) {
			check = fmt.Sprintf("the server no longer lets %s %q log in (the user dropped, its password changed, or its allowed addresses narrowed): "+
				"check %s and %s (a password in Secret Manager is read again after each refusal)",
				chclient.FieldUsername, f.ClickHouse.Username, chclient.FieldUsername, chclient.FieldPassword)
		}
		var own *chclient.RefusedError
		if errors.As(err, &own) {
			return fmt.Errorf("no INSERT into %s.%s can store rows now, whatever the rows, after %d attempts: %w; "+
				"nothing was dead-lettered and the messages stay unacknowledged", f.ClickHouse.Database, f.Table, attempts, err)
		}
		return fmt.Errorf("ClickHouse refuses every INSERT into %s.%s, whatever the rows (code %d %s), after %d attempts: %w; "+
			"no split can fix this, so nothing was dead-lettered and the messages stay unacknowledged: %s",
			f.ClickHouse.Database, f.Table, code, chclient.CodeName(code), attempts, err, check)
	}
	insertFailures.Inc(ctx, 1)
	if f.ch != nil {
		// A connection's failure says little of its cause (the driver's "x509: certificate signed
		// by unknown authority", "handshake: ... EOF"): a new connection says which parameter to
		// check, as at start-up.
		if why := f.ch.Explain(ctx, err); why != nil {
			err = fmt.Errorf("%w; a new connection fails too: %v", err, why)
		}
	}
	return fmt.Errorf("INSERT of %d rows into %s.%s failed after %d attempts (%s error): %w", len(b.Rows), f.ClickHouse.Database, f.Table, attempts, class, err)
}
