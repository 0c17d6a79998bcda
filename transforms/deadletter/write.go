package deadletter

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"cloud.google.com/go/pubsub/v2"
	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/state"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/ch-beam/pubsub-to-clickhouse/transforms/chclient"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/flow"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/psclient"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/schema"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/text"
)

var (
	rowsToTable = beam.NewCounter(flow.Namespace, "dead-letter-rows-clickhouse")
	rowsToTopic = beam.NewCounter(flow.Namespace, "dead-letter-rows-pubsub")
)

// Pub/Sub limits (https://cloud.google.com/pubsub/quotas#resource_limits).
const (
	maxAttributeValueBytes = psclient.MaxAttributeValueBytes
	// FailedAtLayout is the failedAt attribute: RFC 3339, UTC, milliseconds.
	FailedAtLayout = text.MillisUTC
)

// Columns of the dead-letter table, in order, with their types: every dead-letter table has them.
var tableColumns = []struct{ name, typ string }{
	{"raw_message", "String"},
	{"error_message", "String"},
	{"stack_trace", "String"},
	{"failed_at", "DateTime"},
}

// columnNames are the names of tableColumns, the columns the INSERT names into a table without
// the optional columns.
var columnNames = func() []string {
	names := make([]string, len(tableColumns))
	for i, c := range tableColumns {
		names[i] = c.name
	}
	return names
}()

// optionalColumns are the columns a dead-letter table may also have, all String: the stage fills
// those the table has, and replay (from the table) gives a message its attributes and ordering
// key back from them. A table without them keeps only the payload.
var optionalColumns = []string{
	"message_id",   // the Pub/Sub message id
	"attributes",   // the message's attributes as one JSON object, keys sorted ({} for none): see AttributesJSON
	"ordering_key", // the message's ordering key, "" for none
}

// CreateTable returns the CREATE TABLE statement of a dead-letter table with the optional
// columns, the names quoted by chclient.QuoteIdent.
func CreateTable(database, table string) string {
	return fmt.Sprintf("CREATE TABLE %s.%s (raw_message String, error_message String, stack_trace String, failed_at DateTime, "+
		"message_id String DEFAULT '', attributes String DEFAULT '{}', ordering_key String DEFAULT '') "+
		"ENGINE = MergeTree PARTITION BY toYYYYMM(failed_at) ORDER BY failed_at",
		chclient.QuoteIdent(database), chclient.QuoteIdent(table))
}

// CheckTable verifies that the dead-letter table exists with the four columns (raw_message
// String, error_message String, stack_trace String, failed_at DateTime, a time zone allowed), and
// that each optional column it has (message_id, attributes, ordering_key) is a String; the error
// shows the CREATE TABLE statement to run, and names the table, not the template parameter that
// gave it (pipeline.Labelled adds that).
func CheckTable(ctx context.Context, conn driver.Conn, database, table string) error {
	_, err := Columns(ctx, conn, database, table)
	return err
}

// Columns checks the dead-letter table as CheckTable does and returns the columns the stage
// fills: the four, then the optional columns the table has, in the order of optionalColumns.
func Columns(ctx context.Context, conn driver.Conn, database, table string) ([]string, error) {
	columns, _, err := columnsOf(ctx, conn, database, table, nil, schema.Fetch)
	return columns, err
}

// ColumnsToRead is Columns of a dead-letter table that is only read (replay's --fromTable): a
// View of one, or a Merge table over several, passes as a table of the same columns does.
func ColumnsToRead(ctx context.Context, conn driver.Conn, database, table string) ([]string, error) {
	columns, _, err := columnsOf(ctx, conn, database, table, nil, schema.FetchToRead)
	return columns, err
}

// columnTypes is Columns that also returns each column's type as the server spells it
// (schema.Column.TypeName, e.g. "DateTime('UTC')"), for the INSERT to check that the table has
// not changed it since (chclient.Typed). A non-nil leftOut says the stage reads the table again
// while the job runs: an optional column that is not a String is then left out and given to
// leftOut (with its type, for a warning) instead of failing the check (the rows still land,
// without that column), since the table was right when the job started.
func columnTypes(ctx context.Context, conn driver.Conn, database, table string, leftOut func(column, typ string)) (columns, types []string, err error) {
	return columnsOf(ctx, conn, database, table, leftOut, schema.Fetch)
}

// columnsOf is columnTypes of the schema that fetch reads.
func columnsOf(ctx context.Context, conn driver.Conn, database, table string, leftOut func(column, typ string),
	fetch func(ctx context.Context, conn driver.Conn, database, table string) (*schema.Table, error)) (columns, types []string, err error) {
	columns, types, _, err = tableOf(ctx, conn, database, table, leftOut, fetch)
	return columns, types, err
}

// tableOf is columnsOf that also returns the schema read, for its Buffer destination
// (schema.CheckBuffer before each INSERT); nil with an error.
func tableOf(ctx context.Context, conn driver.Conn, database, table string, leftOut func(column, typ string),
	fetch func(ctx context.Context, conn driver.Conn, database, table string) (*schema.Table, error)) (columns, types []string, _ *schema.Table, err error) {
	running := leftOut != nil
	t, err := fetch(ctx, conn, database, table)
	switch {
	case errors.Is(err, schema.ErrNotFound):
		return nil, nil, nil, &tableError{err: err, hint: "create it with: " + CreateTable(database, table)}
	case errors.Is(err, schema.ErrNoWritableColumn):
		return nil, nil, nil, &tableError{err: err, hint: "a dead-letter table has the columns of: " + CreateTable(database, table)}
	}
	if err != nil { // reading the table failed: nothing says it is missing or wrong
		return nil, nil, nil, err
	}
	have := map[string]schema.Column{}
	for _, c := range t.Writable() {
		if c.DefaultKind != "EPHEMERAL" { // stored nowhere: a dead letter's bytes would be lost
			have[c.Name] = c
		}
	}
	base := func(c schema.Column) string {
		b, _ := c.Type.Unwrap()
		return b.Name
	}
	var problems []string
	for _, c := range tableColumns {
		switch got, ok := have[c.name]; {
		case !ok:
			problems = append(problems, fmt.Sprintf("no writable column %s %s", c.name, c.typ))
		case base(got) != c.typ:
			problems = append(problems, fmt.Sprintf("column %s is %s, not %s", c.name, got.TypeName, c.typ))
		}
		columns = append(columns, c.name)
		types = append(types, have[c.name].TypeName)
	}
	for _, c := range optionalColumns {
		switch got, ok := have[c]; {
		case ok && base(got) != "String" && running:
			leftOut(c, got.TypeName)
		case ok && base(got) != "String":
			problems = append(problems, fmt.Sprintf("column %s is %s, not String (an optional column: make it String, or drop it)", c, got.TypeName))
		case ok:
			columns = append(columns, c)
			types = append(types, got.TypeName)
		}
	}
	if slices.IndexFunc(tableColumns, func(c struct{ name, typ string }) bool { _, ok := have[c.name]; return ok }) < 0 {
		// None of them: another table given for the dead-letter table (the target, say).
		names := make([]string, len(tableColumns))
		for i, c := range tableColumns {
			names[i] = c.name
		}
		problems = []string{fmt.Sprintf("has none of the columns of a dead-letter table (%s): is it one?", strings.Join(names, ", "))}
	}
	if len(problems) > 0 {
		return nil, nil, nil, &tableError{err: fmt.Errorf("table %s.%s: %s", database, table, strings.Join(problems, "; ")),
			hint: "a dead-letter table has the columns of: " + CreateTable(database, table)}
	}
	return columns, types, t, nil
}

// tableError is a dead-letter table that is missing or does not have the columns the stage
// fills: err says what is wrong, hint the CREATE TABLE statement that makes a table that fits.
// Its Error is both ("...; create it with: CREATE TABLE ..."); while the job runs, the stage
// logs the hint once and each retry the short err.
type tableError struct {
	err  error
	hint string
}

func (e *tableError) Error() string { return e.err.Error() + "; " + e.hint }
func (e *tableError) Unwrap() error { return e.err }

// AttributesJSON returns attrs as the attributes column holds them: one JSON object, keys sorted,
// {} for none.
func AttributesJSON(attrs map[string]string) string {
	if len(attrs) == 0 {
		return "{}"
	}
	b, err := json.Marshal(attrs) // sorts the keys
	if err != nil {
		panic(err) // a map of strings always marshals
	}
	return string(b)
}

// Config says where dead letters go.
type Config struct {
	ClickHouse chclient.Config
	// Table is the dead-letter table in ClickHouse.Database; "" for none.
	Table string
	// Topic is the dead-letter topic, projects/<project>/topics/<name>; "" for none.
	Topic string
	// Retry is the retry policy of the table's INSERTs.
	Retry chclient.Retry
	// Settings are the insert settings (insert_deduplicate and the others).
	Settings chclient.Settings
	// SchemaRefresh is how often the stage reads the table's columns again before an INSERT
	// (schemaRefreshSeconds), so that an optional column added while the job runs is filled
	// without a restart; 0 never (a changed column is still noticed by the INSERT it fails).
	SchemaRefresh time.Duration
	// MaxBytes caps the bytes of one INSERT into the table (batchByteSize), as flow.DeadLetter.Bytes counts
	// them: a batch of records above it goes in several INSERTs, cut in message id order, a
	// record larger than it alone. 0: no bound.
	MaxBytes int64
	// MaxRows caps the records of one INSERT into the table below Settings.MaxInsertBlockSize,
	// as the rows' INSERTs are (write.Config.MaxRows): batchRowCount when given, else 0. A batch
	// of more goes in several INSERTs, as one of more bytes does.
	MaxRows int
	// OneBundlePerShard makes the stage a stateful one (shardWriteFn), which a runner runs one
	// bundle of a shard at a time. For the local runner, in every batching mode: prism runs the
	// stage after a GroupByKey with a bundle for each pane that fires (every windowSeconds, or
	// every batchRowCount dead letters), and at most 8 bundles in all
	// (runners/prism/internal/execute.go, errgroup.SetLimit(8)), so while the dead-letter table
	// was away (detached, dropped) each pane's bundle retried its INSERT, or its new instance's
	// Setup read of the table, until they took every bundle and no table's rows were inserted.
	// Dataflow runs a key's work one item at a time anyway, and its graph keeps the plain stage.
	OneBundlePerShard bool
}

func init() {
	register.DoFn4x1[context.Context, int, flow.DeadLetters, func([]string), error](&writeFn{})
	register.DoFn5x1[context.Context, state.Provider, int, flow.DeadLetters, func([]string), error](&shardWriteFn{})
	register.Emitter1[[]string]()
}

// Write writes each batch of batches (a PCollection<KV<int, flow.DeadLetters>> from batch.DeadLetters)
// to the dead-letter table, to the dead-letter topic, or to both. It returns the ack ids of the
// written records' messages, one []string per batch (PCollection<[]string>, for the
// acknowledging stage; empty on Dataflow). It panics at construction when neither destination
// is set.
func Write(s beam.Scope, cfg Config, batches beam.PCollection) (stored beam.PCollection) {
	s = s.Scope("DeadLetter")
	if cfg.Table == "" && cfg.Topic == "" {
		panic("deadletter.Write: neither a dead-letter table nor a dead-letter topic is set")
	}
	if cfg.OneBundlePerShard {
		return beam.ParDo(s, &shardWriteFn{writeFn: writeFn{Config: cfg}, Shard: state.MakeValueState[bool]("shard")}, batches)
	}
	return beam.ParDo(s, &writeFn{Config: cfg}, batches)
}

// shardWriteFn is writeFn as a stateful DoFn (Config.OneBundlePerShard): its state, never read or
// written, makes the runner hand it one bundle of a shard at a time (Beam's model: a key's state
// is used by one bundle at once), so a shard's batches of dead letters wait in the runner, not in
// bundles of their own.
type shardWriteFn struct {
	writeFn
	Shard state.Value[bool]
}

// ProcessElement is writeFn's.
func (f *shardWriteFn) ProcessElement(ctx context.Context, _ state.Provider, shard int, batch flow.DeadLetters, emitStored func([]string)) error {
	return f.writeFn.ProcessElement(ctx, shard, batch, emitStored)
}

type writeFn struct {
	Config

	ch        *chclient.Resolved // ClickHouse with its secrets read in Setup, and again after a refusal (renew)
	opened    chclient.Values    // the values f.conn was opened with (renew)
	conn      driver.Conn
	settings  clickhouse.Settings
	withToken bool
	client    *pubsub.Client
	publisher *pubsub.Publisher
	columns   []string      // the table's columns the INSERT names (Columns)
	types     []string      // their types, as the server spelled them when the stage read the table
	table     *schema.Table // the table as the stage read it, for its Buffer destination (schema.CheckBuffer)
	hinted    bool          // the CREATE TABLE of a table read again that did not fit has been logged
	readAt    time.Time
	leftOut   map[string]string // the optional columns left out (leaveOut), by name: the type warned of
	// unasked: Pub/Sub denied the question whether the topic has a subscription
	// (checkTopicKeeps), which is then not asked again; unread: the topic was found without
	// one and, beside the table, warned of (once until it has one again).
	unasked, unread bool
	// keptUntil: the topic was found to keep what is published to it, and is not asked again
	// until then (topicRecheck later).
	keptUntil time.Time
	// discarding: the table was found to store nothing (schema.Discards) and, beside the topic,
	// warned of (once until it stores again).
	discarding bool
}

// leaveOut warns that an optional column read again is no longer a String and the INSERTs leave
// it out: once for each column and type, not at each reading of the table.
func (f *writeFn) leaveOut(column, typ string) {
	if f.leftOut[column] == typ {
		return
	}
	if f.leftOut == nil {
		f.leftOut = map[string]string{}
	}
	f.leftOut[column] = typ
	slog.Warn("dead letter: an optional column of the dead-letter table is no longer a String; the INSERTs leave it out",
		"table", f.ClickHouse.Database+"."+f.Table, "column", column, "type", typ)
}

// Setup opens the destinations: for the table, it reads the secrets the configuration names
// (chclient.Config.Resolve), connects and checks the table; for the topic, it checks the topic.
func (f *writeFn) Setup(ctx context.Context) error {
	_, err := chclient.SetupRetry.Do(ctx, func() error { return f.setup(ctx) }, func(n int, err error) {
		slog.Warn("dead letter: opening the destinations failed; retrying", "attempt", n, "error", err)
	})
	return err
}

func (f *writeFn) setup(ctx context.Context) error {
	f.Teardown()
	f.conn, f.client, f.publisher = nil, nil, nil
	var err error
	if f.Table != "" {
		if f.ch == nil {
			if f.ch, err = f.ClickHouse.Resolve(ctx); err != nil {
				return err
			}
		}
		if f.conn, err = f.ch.Open(ctx); err != nil {
			return err
		}
		f.opened = f.ch.Current()
		if f.columns, f.types, f.table, err = tableOf(ctx, f.conn, f.ClickHouse.Database, f.Table, nil, schema.Fetch); err != nil {
			return fmt.Errorf("dead letter: %w", err)
		}
		f.readAt = time.Now()
		if f.settings, f.withToken, _, err = chclient.ResolveSettings(ctx, f.conn, f.Settings); err != nil {
			return err
		}
	}
	if f.Topic != "" {
		if f.client, f.publisher, err = OpenTopic(ctx, f.Topic); err != nil {
			return fmt.Errorf("dead letter: topic %w", err)
		}
	}
	return nil
}

// OpenTopic connects to the dead-letter topic (projects/<project>/topics/<name>) and checks that
// it exists. The client honours PUBSUB_EMULATOR_HOST. A failed check is a *psclient.CheckError.
func OpenTopic(ctx context.Context, topic string) (*pubsub.Client, *pubsub.Publisher, error) {
	name, err := psclient.ParseTopic(topic)
	if err != nil {
		return nil, nil, fmt.Errorf("dead letter: topic %q %w", topic, err)
	}
	client, err := psclient.NewClient(ctx, name.Project)
	if err != nil {
		return nil, nil, &psclient.CheckError{Name: name, Err: fmt.Errorf("%s: creating the Pub/Sub client: %w", topic, err)}
	}
	if err := psclient.CheckTopic(ctx, client, name); err != nil {
		client.Close()
		return nil, nil, err
	}
	p := client.Publisher(topic)
	// A dead letter keeps its message's ordering key, which the client publishes only with
	// ordering on; messages without a key are not held back by it.
	p.EnableMessageOrdering = true
	return client, p, nil
}

// renew opens a new connection pool when err, an INSERT's failure, is the server refusing what
// the stage read in Setup (a password of Secret Manager, the certificates: chclient.Resolved.Renew)
// and what the stage reads again has changed since, as the write stage does. A failed read or
// open keeps the pool; the next attempt tells.
func (f *writeFn) renew(ctx context.Context, err error) {
	if f.ch != nil {
		f.conn, f.opened = f.ch.Reopen(ctx, err, f.conn, f.opened, "dead letter", f.Table)
	}
}

func (f *writeFn) Teardown() error {
	if f.publisher != nil {
		f.publisher.Stop()
	}
	if f.client != nil {
		f.client.Close()
	}
	if f.conn != nil {
		return f.conn.Close()
	}
	return nil
}

func (f *writeFn) ProcessElement(ctx context.Context, _ int, batch flow.DeadLetters, emitStored func([]string)) error {
	if len(batch.Letters) == 0 {
		return nil
	}
	recs := make([]*flow.DeadLetter, len(batch.Letters))
	for i := range batch.Letters {
		recs[i] = &batch.Letters[i]
	}
	slices.SortFunc(recs, flow.CompareDeadLetters)
	if f.conn != nil {
		// The same batch of records is cut the same way at every attempt of the bundle, so each
		// INSERT gets the same deduplication token again.
		maxRows := f.Settings.MaxInsertBlockSize
		if f.MaxRows > 0 && (maxRows <= 0 || f.MaxRows < maxRows) {
			maxRows = f.MaxRows
		}
		for _, part := range cut(recs, maxRows, f.MaxBytes) {
			if err := f.insertSplitting(ctx, part); err != nil {
				return err
			}
			rowsToTable.Inc(ctx, int64(len(part)))
		}
	}
	if f.publisher != nil {
		if err := f.publish(ctx, recs); err != nil {
			return err
		}
		rowsToTopic.Inc(ctx, int64(len(recs)))
	}
	ids := make([]string, 0, len(recs))
	for _, r := range recs {
		if r.AckID != "" {
			ids = append(ids, r.AckID)
		}
	}
	if len(ids) > 0 {
		emitStored(ids)
	}
	return nil
}

// cut returns recs in consecutive parts of at most maxRows records and maxBytes bytes
// (flow.DeadLetter.Bytes), a record larger than maxBytes a part alone; a bound of 0 or less is
// none, and recs is one part when it is within both.
func cut(recs []*flow.DeadLetter, maxRows int, maxBytes int64) [][]*flow.DeadLetter {
	var (
		parts [][]*flow.DeadLetter
		start int
		size  int64
	)
	for i, r := range recs {
		n := int64(0)
		if maxBytes > 0 {
			n = r.Bytes()
		}
		if i > start && (maxBytes > 0 && size+n > maxBytes || maxRows > 0 && i-start >= maxRows) {
			parts, start, size = append(parts, recs[start:i]), i, 0
		}
		size += n
	}
	return append(parts, recs[start:])
}

// insertSplitting inserts recs (insert) and, when the server refuses an INSERT of several records
// for its size (chclient.Memory: code 241, or too many partitions in one block), inserts each half
// the same way, as the write stage does with the rows' INSERTs: a batch of dead letters too large
// for the server's memory gets in as smaller INSERTs. Before, such a batch was retried whole and
// failed its bundle at every attempt: on the local runner each run failed on it, and none of its
// dead letters was ever stored. A single record still refused fails the bundle, after its retries
// (insert). The halves are the same at every attempt of the bundle, so each INSERT keeps its
// deduplication token.
func (f *writeFn) insertSplitting(ctx context.Context, recs []*flow.DeadLetter) error {
	err := f.insert(ctx, recs)
	if err == nil || len(recs) < 2 || chclient.Classify(err) != chclient.Memory {
		return err
	}
	slog.Info("dead-letter INSERT too large for the server; splitting it in halves", "table", f.Table, "rows", len(recs), "error", err)
	half := len(recs) / 2
	if err := f.insertSplitting(ctx, recs[:half]); err != nil {
		return err
	}
	return f.insertSplitting(ctx, recs[half:])
}

// insert writes recs to the dead-letter table in one INSERT (chclient.Insert), with retries.
// Every failure is retried, up to Retry.MaxRetries times, whatever its class (chclient.Classify
// only labels the final error), but for a memory error of several records, which is returned at
// once for insertSplitting to split: the dead-letter table is the last place a record can go, so
// there is nothing to split off or dead-letter, and when the retries are spent the error fails
// the bundle: the records stay unacknowledged (the runner retries the bundle; the direct runner
// fails the pipeline) and none is dropped. The deduplication token (on servers that take one)
// is derived from the records' message ids and payloads, so the same batch of records sent
// again is stored once.
//
// Each column goes with the type the stage read (chclient.Typed), so a column whose type has
// changed since (failed_at made a Date, which would keep only the day) fails the INSERT before
// anything is sent. A failure that is not transient (a type changed, a column dropped or made
// MATERIALIZED, code 44 on 18.16) has the table read and checked again (columnTypes) before the
// next attempt: a change the stage can still fill (String to LowCardinality(String), a time zone
// on failed_at, an optional column dropped, or no longer a String and so left out) is taken up;
// one it cannot is the error of that attempt, naming the column and its type.
func (f *writeFn) insert(ctx context.Context, recs []*flow.DeadLetter) error {
	id := chclient.Identity{IDs: make([]string, len(recs)), Data: make([][]byte, len(recs))}
	for i, r := range recs {
		id.IDs[i], id.Data[i] = r.MessageID, r.Payload
	}
	f.refresh(ctx)
	hint := "" // the last attempt's table did not fit: the CREATE TABLE that would
	attempts, err := f.Retry.DoIf(ctx, func() error {
		hint = ""
		columns := f.columns
		if columns == nil { // a writeFn set up by hand, as in the tests: the four columns
			columns = columnNames
		}
		// A Buffer table takes the INSERT whatever its destination, and discards at the flush
		// what the destination cannot take: the destination is checked before each attempt.
		err := schema.CheckBuffer(ctx, f.conn, f.table)
		if be := (*schema.BufferError)(nil); errors.As(err, &be) {
			err = &chclient.RefusedError{Err: err}
		}
		if err == nil {
			err = f.checkStores(ctx)
		}
		if err == nil {
			err = chclient.Insert(ctx, f.conn, f.ClickHouse.Database, f.Table, columns, f.values(columns, recs), f.settings, f.withToken, id)
		}
		if err != nil && f.types != nil && chclient.Classify(err) != chclient.Transient {
			var checkErr error
			if hint, checkErr = f.reread(ctx); checkErr != nil {
				return fmt.Errorf("%w; the table, read again: %w", err, checkErr)
			}
		}
		return err
	}, func(err error) bool {
		return len(recs) == 1 || chclient.Classify(err) != chclient.Memory
	}, func(n int, err error) {
		slog.Warn("dead-letter INSERT failed; retrying", "table", f.Table, "rows", len(recs), "attempt", n, "error", err)
		f.renew(ctx, err)
	})
	if err != nil && len(recs) > 1 && chclient.Classify(err) == chclient.Memory {
		return err // the server's error, for insertSplitting to split on and log: the bundle goes on
	}
	if err != nil {
		if hint != "" {
			hint = "; " + hint
		}
		if f.ch != nil {
			// As the write stage: a new connection says which parameter to check.
			if why := f.ch.Explain(ctx, err); why != nil {
				err = fmt.Errorf("%w; a new connection fails too: %v", err, why)
			}
		}
		// The server's error can quote a value cut inside a character, which the bundle's error
		// (protobuf text to the runner) cannot carry.
		return flow.ValidUTF8Error(fmt.Errorf("INSERT of %d dead letters into %s.%s failed after %d attempts (class %s): %w; the bundle fails and its records stay unacknowledged%s",
			len(recs), f.ClickHouse.Database, f.Table, attempts, chclient.Classify(err), err, hint))
	}
	return nil
}

// checkStores checks, before an INSERT, that the dead-letter table stores what it takes
// (schema.Discards: not a Null table that no materialized view reads, which ClickHouse takes every
// INSERT into and throws away). The launch refuses such a table as the only destination; this
// covers the table dropped and created again as one, or its views dropped, while the job runs. As
// the only destination it is a refusal (retried, then the bundle fails, nothing acknowledged);
// beside the topic, which keeps the dead letters, a warning, once until the table stores again.
// A writeFn not set up by Setup (f.table nil, as in some tests) is not checked.
func (f *writeFn) checkStores(ctx context.Context) error {
	if f.table == nil {
		return nil
	}
	why := schema.Discards(ctx, f.conn, f.ClickHouse.Database, f.Table)
	switch {
	case why == "":
		f.discarding = false
		return nil
	case f.Topic == "":
		return &chclient.RefusedError{Err: fmt.Errorf("the dead-letter table %s.%s stores nothing: %s; the dead letters would be lost (no "+
			"dead-letter topic is set): give the table a materialized view that stores them, or make it a table that stores rows (a MergeTree)",
			f.ClickHouse.Database, f.Table, why)}
	case !f.discarding:
		f.discarding = true
		slog.Warn("dead letter: the dead-letter table stores nothing ("+why+"): the dead letters are kept on the dead-letter topic alone; "+
			"give the table a materialized view that stores them, or make it a table that does", "table", f.ClickHouse.Database+"."+f.Table, "topic", f.Topic)
	}
	return nil
}

// refresh reads the table's columns again (reread) when SchemaRefresh has passed since they were
// read: an optional column added since is then filled. A table that does not fit, or cannot be
// read, keeps the columns as they were read before: the INSERT that follows fails if they no
// longer fit, and reads the table again itself.
func (f *writeFn) refresh(ctx context.Context) {
	if f.types == nil || f.SchemaRefresh <= 0 || time.Since(f.readAt) < f.SchemaRefresh {
		return
	}
	if _, err := f.reread(ctx); err != nil {
		slog.Warn("dead letter: reading the dead-letter table again failed; keeping its columns as read before",
			"table", f.ClickHouse.Database+"."+f.Table, "error", err)
	}
}

// reread reads the table's columns again (columnTypes, while running) and takes them up when
// they fit. For a table that is missing or does not fit it returns the CREATE TABLE hint and the
// short error, and logs the hint once until the table fits again (the statement is long: not
// with each retry); for a table it cannot read, the error.
func (f *writeFn) reread(ctx context.Context) (hint string, err error) {
	f.readAt = time.Now()
	columns, types, table, err := tableOf(ctx, f.conn, f.ClickHouse.Database, f.Table, f.leaveOut, schema.Fetch)
	if te := (*tableError)(nil); errors.As(err, &te) {
		if !f.hinted {
			slog.Warn("dead letter: the dead-letter table, read again, is missing or does not fit; "+te.hint, "table", f.ClickHouse.Database+"."+f.Table, "problem", te.err)
			f.hinted = true
		}
		return te.hint, te.err
	}
	if err != nil {
		return "", err
	}
	f.columns, f.types, f.table, f.hinted = columns, types, table, false
	return "", nil
}

// values returns the INSERT's columns of recs: []time.Time for failed_at, []string for the
// others, each a chclient.Typed with the column's type when the stage read the table.
func (f *writeFn) values(columns []string, recs []*flow.DeadLetter) []any {
	values := make([]any, len(columns))
	for j, c := range columns {
		if c == "failed_at" {
			at := make([]time.Time, len(recs))
			for i, r := range recs {
				at[i] = r.FailedAt()
			}
			values[j] = at
		} else {
			col := make([]string, len(recs))
			for i, r := range recs {
				col[i] = columnValue(c, r)
			}
			values[j] = col
		}
		if f.types != nil {
			values[j] = chclient.Typed{Values: values[j], Type: f.types[j]}
		}
	}
	return values
}

// columnValue returns r's value of the String column c of the dead-letter table.
func columnValue(c string, r *flow.DeadLetter) string {
	switch c {
	case "raw_message":
		// The payload's bytes as they are, not a copy: clickhouse-go copies the value into its
		// column, and nothing changes a decoded record's payload. A copy at each attempt cost
		// as much memory again as the batch's payloads (messages of megabytes add up).
		return unsafe.String(unsafe.SliceData(r.Payload), len(r.Payload))
	case "error_message":
		return r.ErrorMessage
	case "stack_trace":
		return r.StackTrace
	case "message_id":
		return r.MessageID
	case "attributes":
		return AttributesJSON(r.Attributes)
	case "ordering_key":
		return r.OrderingKey
	}
	panic("deadletter: no column " + c)
}

// publish sends recs to the dead-letter topic and waits for every publish; any failure fails the
// bundle, so the runner retries it.
//
// A dead letter with an ordering key is published in order within its key: the client pauses a
// key whose publish fails, and fails every later publish of it (pubsub.ErrPublishingPaused) until
// ResumePublish. So publish resumes each key it publishes before publishing it: a key that failed
// in an earlier bundle is tried again when the runner retries that bundle, instead of failing for
// good. Within one call the failure of a key fails the later dead letters of that key, and the
// bundle with them.
func (f *writeFn) publish(ctx context.Context, recs []*flow.DeadLetter) error {
	if err := f.checkTopicKeeps(ctx, len(recs)); err != nil {
		return err
	}
	resumed := map[string]bool{}
	results := make([]*pubsub.PublishResult, len(recs))
	for i, r := range recs {
		if k := r.OrderingKey; k != "" && !resumed[k] {
			f.publisher.ResumePublish(k)
			resumed[k] = true
		}
		results[i] = f.publisher.Publish(ctx, TopicMessage(*r))
	}
	var first error
	for i, res := range results { // every one, so that none is in flight when the bundle is retried
		if _, err := res.Get(ctx); err != nil && first == nil {
			first = fmt.Errorf("publishing dead letter of message %q to %s: %w", recs[i].MessageID, f.Topic, err)
			if status.Code(err) == codes.NotFound {
				first = fmt.Errorf("publishing dead letter of message %q to %s: the topic does not exist any more (it was there when the run started: deleted since?); "+
					"re-create it: the messages stay unacknowledged and come again: %w", recs[i].MessageID, f.Topic, err)
			}
		}
	}
	return first
}

// topicRecheck is how long checkTopicKeeps trusts a topic found to keep what is published to it.
var topicRecheck = 10 * time.Second

// checkTopicKeeps asks Pub/Sub, before n dead letters are published, whether the topic still
// keeps what is published to it (psclient.TopicKeepsWith: a subscription, or message retention
// of its own). Pub/Sub delivers a message only to the subscriptions that exist when it is
// published (https://cloud.google.com/pubsub/docs/subscriber), and a topic deleted and created
// again has none of the old one's subscriptions (they are detached): a publish there succeeds
// and reaches no one. The launch checks the topic once; this check covers a subscription
// deleted, or the topic created again, while the job runs. As the only destination such a topic
// is an error (the bundle fails, its records unacknowledged, as for a topic deleted); beside the
// dead-letter table, which keeps the dead letters, a warning, once until the topic has a
// subscription again, as at launch. When Pub/Sub does not say (the question denied, as to
// roles/pubsub.publisher, after which it is not asked again; or the call failed) the publish goes on.
// A topic found to keep them is not asked again for topicRecheck: at most one admin call
// (ListTopicSubscriptions, against Pub/Sub's quota of administrator operations) per stage
// instance that often, however many batches it publishes; the dead letters published in that
// time after the last subscription goes reach no one.
func (f *writeFn) checkTopicKeeps(ctx context.Context, n int) error {
	if f.unasked || f.client == nil || time.Now().Before(f.keptUntil) {
		return nil
	}
	name, err := psclient.ParseTopic(f.Topic)
	if err != nil {
		return nil // OpenTopic has taken it
	}
	subscribed, retained, err := psclient.TopicKeepsWith(ctx, f.client, name)
	switch {
	case status.Code(err) == codes.PermissionDenied:
		f.unasked = true
		slog.Info("dead letter: Pub/Sub does not let the job ask whether the dead-letter topic has a subscription (the listing of its subscriptions denied, "+
			"as to roles/pubsub.publisher); its dead letters are published without asking", "topic", f.Topic, "error", err)
		return nil
	case err != nil: // a topic deleted: the publish says so
		return nil
	case subscribed || retained:
		f.unread = false
		f.keptUntil = time.Now().Add(topicRecheck)
		return nil
	}
	if f.Table != "" {
		if !f.unread {
			f.unread = true
			slog.Warn("dead letter: the dead-letter topic has no subscription any more (deleted, or the topic deleted and created again, "+
				"which leaves the old subscriptions detached), and Pub/Sub delivers a message only to the subscriptions that exist when it "+
				"is published: the dead letters published there reach no one, and are kept in the dead-letter table alone; create a "+
				"subscription on it to read them", "topic", f.Topic, "table", f.ClickHouse.Database+"."+f.Table)
		}
		return nil
	}
	what := fmt.Sprintf("%d dead letters", n)
	if n == 1 {
		what = "1 dead letter"
	}
	return fmt.Errorf("publishing %s to %s: the topic has no subscription any more (deleted since the launch, or the topic deleted and "+
		"created again, which detaches the old subscriptions) and keeps no messages of its own, and Pub/Sub delivers a message only to the "+
		"subscriptions that exist when it is published: they would reach no one and be lost; create a subscription on it (%s): the bundle "+
		"fails, its messages stay unacknowledged and come again", what, f.Topic, psclient.SubscribeCommand(name))
}

// MaxTopicMessageBytes is the largest dead-letter topic message, payload, attributes and
// ordering key as Pub/Sub counts them (the PubsubMessage's encoded size): Pub/Sub's 10 MB
// publish request limit (pubsub.MaxPublishRequestBytes,
// https://cloud.google.com/pubsub/quotas#resource_limits) less room for the request's topic name
// and framing.
const MaxTopicMessageBytes = int(pubsub.MaxPublishRequestBytes) - 2048

// The attributes TopicMessage sets on every dead letter.
const (
	AttrErrorMessage = "errorMessage" // the error message, cut to 1024 bytes
	AttrFailedAt     = "failedAt"     // the time of the failure, FailedAtLayout
)

// The attributes of a dead letter whose payload was cut to fit the topic.
const (
	AttrPayloadTruncated = "payloadTruncated" // "true"
	AttrPayloadBytes     = "payloadBytes"     // the original payload's length, in bytes
	AttrPayloadSHA256    = "payloadSha256"    // hex SHA-256 of the original payload
)

// AttrAttributesOmitted is the attribute of a dead letter that left out some of the original
// message's attributes, to stay within MaxTopicAttributes or because they are named as one of
// AddedAttributes: how many it left out, in decimal.
const AttrAttributesOmitted = "attributesOmitted"

// AddedAttributes are the names of every attribute TopicMessage may add to the original ones: a
// message's original attributes are a dead letter's less these.
var AddedAttributes = []string{AttrErrorMessage, AttrFailedAt, AttrPayloadTruncated, AttrPayloadBytes, AttrPayloadSHA256, AttrAttributesOmitted}

// MaxTopicAttributes is the most attributes a Pub/Sub message may have
// (https://cloud.google.com/pubsub/quotas#resource_limits).
const MaxTopicAttributes = psclient.MaxAttributes

// TopicMessage is the dead-letter topic's message for r: the original payload bytes, ordering key
// and attributes, with the attributes errorMessage (a byte that is not part of valid UTF-8 shown
// as \xXX, cut to Pub/Sub's 1024-byte limit on a UTF-8 boundary; with routeBy, "table <t>: "
// before it, the table flow.WithTable named in the stack trace) and failedAt (RFC 3339, UTC, milliseconds, e.g. 2026-01-15T10:30:00.123Z) set.
//
// An original attribute named as one of AddedAttributes is left out and counted in
// attributesOmitted: kept, it would be read as this stage's own (a message that says
// payloadTruncated=true of itself), or be replaced. The dead-letter table's attributes column
// keeps it.
//
// A message Pub/Sub could not take would fail every publish and hold up the dead letters behind
// it, so two limits are kept, each marked where it changes the message:
//   - Over MaxTopicMessageBytes once the attributes are added (an input message near the 10 MB
//     limit), the payload is cut to fit, and the attributes payloadTruncated=true, payloadBytes
//     (the original length) and payloadSha256 (of the original bytes) say so.
//   - Over MaxTopicAttributes (an input message with 99 or 100 attributes, 96 or more when the
//     payload is cut), original attributes are left out, the last in key order first, until the
//     message fits (at most 6 of them, beside those named as an added one), and attributesOmitted
//     says how many in all. They are left out before the payload is cut, and the size is checked
//     with attributesOmitted in it.
//
// The dead-letter table, when configured, keeps the payload whole, and the attributes in its
// optional attributes column.
func TopicMessage(r flow.DeadLetter) *pubsub.Message {
	var keys []string
	named := 0 // original attributes named as an added one, left out
	for _, k := range slices.Sorted(maps.Keys(r.Attributes)) {
		if slices.Contains(AddedAttributes, k) {
			named++
			continue
		}
		keys = append(keys, k)
	}
	kept, truncated := len(keys), false
	var sum string // of the payload, once it is cut
	// The stack trace, which names a routed message's table, is not published: errorMessage
	// names it instead.
	errorMessage := r.ErrorMessage
	if table := flow.TableOf(r.StackTrace); table != "" {
		errorMessage = "table " + table + ": " + errorMessage
	}
	build := func() map[string]string {
		attrs := make(map[string]string, kept+6)
		for _, k := range keys[:kept] {
			attrs[k] = r.Attributes[k]
		}
		// Pub/Sub takes UTF-8 attributes alone, and the server's error in a rejected row's may
		// quote a value cut inside a character (18.16: "parsed just '2024-01-01 00:00:0\xc3'").
		attrs[AttrErrorMessage] = text.CutWithin(flow.ValidUTF8(errorMessage), maxAttributeValueBytes)
		attrs[AttrFailedAt] = r.FailedAt().Format(FailedAtLayout)
		if omitted := len(keys) - kept + named; omitted > 0 {
			attrs[AttrAttributesOmitted] = strconv.Itoa(omitted)
		}
		if truncated {
			if sum == "" {
				b := sha256.Sum256(r.Payload)
				sum = hex.EncodeToString(b[:])
			}
			attrs[AttrPayloadTruncated] = "true"
			attrs[AttrPayloadBytes] = strconv.Itoa(len(r.Payload))
			attrs[AttrPayloadSHA256] = sum
		}
		return attrs
	}
	size := func(attrs map[string]string) int {
		return proto.Size(&pubsubpb.PubsubMessage{Data: r.Payload, Attributes: attrs, OrderingKey: r.OrderingKey})
	}
	// Attributes are left out, and the payload is cut, only ever more: kept goes down and
	// truncated from false to true, so the loop ends. Within the count, a message that is not
	// cut is within the size; a cut one is cut to fit below.
	attrs := build()
	for {
		if over := len(attrs) - MaxTopicAttributes; over > 0 && kept > 0 {
			kept = max(0, kept-over) // attributesOmitted, once added, costs one more round
			attrs = build()
			continue
		}
		if !truncated && size(attrs) > MaxTopicMessageBytes {
			truncated = true
			attrs = build()
			continue
		}
		break
	}
	if !truncated {
		return &pubsub.Message{Data: r.Payload, Attributes: attrs, OrderingKey: r.OrderingKey}
	}
	// The attributes left out after the cut may have made room for the whole payload.
	truncated = false
	if whole := build(); size(whole) <= MaxTopicMessageBytes {
		return &pubsub.Message{Data: r.Payload, Attributes: whole, OrderingKey: r.OrderingKey}
	}
	// The length prefix of the data field shrinks with it, so cutting "over" bytes is enough.
	over := size(attrs) - MaxTopicMessageBytes
	return &pubsub.Message{Data: r.Payload[:max(0, len(r.Payload)-over)], Attributes: attrs, OrderingKey: r.OrderingKey}
}
