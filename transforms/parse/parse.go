// Package parse is the parse stage: each Pub/Sub message becomes either a row of the target table
// (main output: the rows of a bundle gathered into flow.Rows elements, see Parse) or a
// dead-letter record that says why not (second output, one element per message).
//
// The DoFn fetches the table's schema in Setup (system.columns and the server time zone), so
// every worker converts against the table as it is when the worker starts. With
// Config.AddNewColumns a field that no column takes becomes a column (evolve.go). Metrics, in
// the Beam namespace PubSubToClickHouse: counters messages-received (every message, before
// parsing), rows-parsed-ok and rows-parse-failed, columns-added (ADD COLUMNs this stage ran that
// succeeded) and messages-waited-for-column (messages converted again after the schema was read
// for a new field of theirs), rows-unchecked (messages of a routed table passed on before the
// table could be read: setupRouted), and the distribution message-payload-bytes.
package parse

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"

	"github.com/ch-beam/pubsub-to-clickhouse/transforms/chclient"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/convert"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/evolve"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/flow"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/schema"
)

var (
	messagesReceived = beam.NewCounter(flow.Namespace, "messages-received")
	rowsParsedOK     = beam.NewCounter(flow.Namespace, "rows-parsed-ok")
	rowsParseFailed  = beam.NewCounter(flow.Namespace, "rows-parse-failed")
	// rowsWithDroppedFields counts the rows whose payload had top-level fields that no column
	// took (and no unknownFieldsColumn kept): the fields are left out of the row, as ClickHouse's
	// input_format_skip_unknown_fields does, and this says how often.
	rowsWithDroppedFields = beam.NewCounter(flow.Namespace, "rows-with-dropped-fields")
	// rowsUnchecked counts the messages a routed table's parse stage passed on unconverted, not
	// having read the table yet (see parseFn.unread): the write stage converts them.
	rowsUnchecked       = beam.NewCounter(flow.Namespace, "rows-unchecked")
	messagePayloadBytes = beam.NewDistribution(flow.Namespace, "message-payload-bytes")
)

func init() {
	register.DoFn5x1[context.Context, beam.EventTime, flow.Messages, func(beam.EventTime, flow.Rows), func(flow.DeadLetter), error](&parseFn{})
	register.Emitter2[beam.EventTime, flow.Rows]()
	register.Emitter1[flow.DeadLetter]()
}

// Parse converts each message of msgs (a PCollection<flow.Messages> in the global window) into a
// row of cfg.Table. It returns the rows (PCollection<flow.Rows>) and the dead-letter records
// (PCollection<flow.DeadLetter>, one element per message) of the messages that cannot become a
// row. A row carries its message's payload, not the converted form: the write stage converts
// again (see flow.Row).
//
// The rows of a bundle travel together: an element of rows holds those of every element of msgs
// the bundle brought until then, up to MaxGatherRows rows or MaxGatherBytes payload bytes, and is
// emitted when one of those fills, before a heartbeat of the source (an element without
// messages, passed on as an element without rows) and at the end of the bundle. On Dataflow,
// whose source gives one message per element, this is what lets rows cross the batch stage's
// GroupByKey many to an element, compressed together (flow.EncodeRows); the local source's
// elements are a Pull response each already. An element of rows is stamped with the latest
// timestamp of the elements it gathers, so it is never behind the watermark.
//
// cfg.SchemaRefresh is how often each worker reads the table's schema again, so that a column
// added while the job runs is filled without a restart; 0 never.
func Parse(s beam.Scope, cfg Config, msgs beam.PCollection) (rows, deadLetters beam.PCollection) {
	s = s.Scope("Parse")
	return beam.ParDo2(s, &parseFn{Config: cfg}, msgs)
}

// Config is what the parse stage needs besides the messages.
type Config struct {
	ClickHouse    chclient.Config // the connection, to read the table's schema
	Table         string          // the target table, in ClickHouse.Database
	SchemaRefresh time.Duration   // how often to read the schema again; 0 never
	// FromMessage are the columns filled from the message instead of the payload
	// (metadataColumns, unknownFieldsColumn; see convert.NewWith); zero for none.
	FromMessage convert.Options
	// Routed counts this table's metrics also under names of its own (flow.TableMetrics):
	// messages-received:<table>, rows-parsed-ok:<table>, rows-parse-failed:<table>,
	// columns-added:<table>, messages-waited-for-column:<table>, and the distribution
	// message-payload-bytes:<table>. The routing stage counts
	// messages-received then (every message, routed or not), not this one.
	Routed bool
	// AddNewColumns turns schema evolution on (template parameter addNewColumns; evolve.go): a
	// top-level field that no column takes becomes a column, within Limits.
	AddNewColumns bool
	Limits        evolve.Limits
}

// The bounds of an element of rows out of the parse stage (see Parse): the rows of a bundle are
// emitted as one element once they are this many, or their payloads this many bytes.
const (
	MaxGatherRows  = 1000
	MaxGatherBytes = 4 << 20
)

// parseFn converts messages into rows. Exported fields are its configuration (serialised to
// workers); the converter is built in Setup.
type parseFn struct {
	Config

	ch      *chclient.Resolved // ClickHouse with its secrets read, once, in Setup
	tracker *convert.Tracker
	evolver *evolver // nil without AddNewColumns
	// serverKnown: the evolver's rule has the server's version (evolve.ServerOfConn).
	serverKnown bool
	// unread is why a routed table's schema could not be read yet (nil once it has been, and
	// always without routing): until then the stage passes the table's messages on unchecked
	// (flow.Unchecked) and reads the table in the background every unreadRetry.
	unread       error
	unreadLogged time.Time    // when the stage last logged that it could not read the table
	attempted    time.Time    // the last refresh attempt, failed or not
	buf          []byte       // the converted row, kept for the next message while at most maxKeptBuf bytes
	meta         convert.Meta // the current message's metadata, for the metadata columns
	byTable      *flow.TableMetrics

	// In a routed pipeline the periodic read of the schema runs in the background
	// (refreshInBackground): background is the read under way (nil when none), again asks for
	// another once it is done, and life ends such a read at Teardown.
	background chan fetched
	again      bool
	needServer bool // the read under way reads the server's version too
	life       context.Context
	endLife    context.CancelFunc

	// The rows of the bundle not yet emitted, their payload bytes, and the latest timestamp of
	// the elements they came in.
	gathered      flow.Rows
	gatheredBytes int
	latest        beam.EventTime
}

// Setup reads the secrets the configuration names (chclient.Config.Resolve), fetches the table's
// schema and builds the converter. An unsupported column type fails here, before any message is
// read. A routed table's stage does not wait for its table: see setupRouted.
func (f *parseFn) Setup(ctx context.Context) error {
	f.life, f.endLife = context.WithCancel(context.Background())
	f.byTable = flow.NewTableMetrics(f.Routed, f.Table, []string{"messages-received", "rows-parsed-ok", "rows-parse-failed",
		"rows-with-dropped-fields", "columns-added", "messages-waited-for-column", "rows-unchecked"}, []string{"message-payload-bytes"})
	f.tracker = &convert.Tracker{Stage: "parse", Database: f.ClickHouse.Database, Table: f.Table, Options: f.FromMessage}
	var err error
	if f.evolver, err = f.newEvolver(); err != nil {
		return err
	}
	if f.Routed {
		return f.setupRouted(ctx)
	}
	_, err = chclient.SetupRetry.Do(ctx, func() error {
		if f.ch == nil {
			var err error
			if f.ch, err = f.ClickHouse.Resolve(ctx); err != nil {
				return err
			}
		}
		if err := f.refresh(ctx); err != nil || f.evolver == nil {
			return err
		}
		return f.readServer(ctx)
	}, func(n int, err error) {
		slog.Warn("parse: reading the table's schema failed; retrying", "table", f.Table, "attempt", n, "error", err)
	})
	f.attempted = time.Now()
	return err
}

// unreadRetry is how often the parse stage of a routed table it could not read tries again, and
// unreadLog how often it logs that it still cannot.
const (
	unreadRetry = 5 * time.Second
	unreadLog   = time.Minute
)

// routedSetupRetry is setupRouted's retries of a table's read: a blip (a connection refused, a
// server restarting) passes within them, at the cost of holding up the other tables for about
// 3.5 s; a table away longer is read in the background instead. A table the server says does not
// exist (schema.ErrNotFound: detached, dropped, renamed) is not retried: the parse stages of the
// tables set up one after another, so N such tables held up every table for N times 3.5 s.
var routedSetupRetry = chclient.Retry{MaxRetries: 3, InitialBackoff: 500 * time.Millisecond, MaxBackoff: 2 * time.Second}

// setupRouted is Setup's read of a routed table, which may not hold up the other tables: the
// parse stages of every table run in the routing's stage, so a Setup that waited for one table
// (detached, dropped and not yet created again, locked by an ALTER) held up the messages of all
// of them, and failed them all after its retries, on every worker that started meanwhile. Here
// the connection's secrets are read with Setup's retries (they are every table's), and the table
// with a few (routedSetupRetry): when those fail, the stage passes the table's messages on
// unchecked (flow.Unchecked) and reads it again in the background (refreshSchema) until it can.
// The write stage, which reads the table before it inserts, converts the unchecked rows with
// every check and dead-letters those that fail, so that a table away holds up its own rows only.
func (f *parseFn) setupRouted(ctx context.Context) error {
	if _, err := chclient.SetupRetry.Do(ctx, func() error {
		var err error
		f.ch, err = f.ClickHouse.Resolve(ctx)
		return err
	}, func(n int, err error) {
		slog.Warn("parse: reading the connection's secrets failed; retrying", "table", f.Table, "attempt", n, "error", err)
	}); err != nil {
		return err
	}
	_, err := routedSetupRetry.DoIf(ctx, func() error {
		if f.tracker.Converter() == nil {
			if err := f.refresh(ctx); err != nil {
				return err
			}
		}
		if f.evolver != nil && !f.serverKnown {
			return f.readServer(ctx)
		}
		return nil
	}, func(err error) bool { return !errors.Is(err, schema.ErrNotFound) }, func(n int, err error) {
		slog.Warn("parse: reading the table's schema failed; retrying", "table", f.Table, "attempt", n, "error", err)
	})
	f.attempted = time.Now()
	if err != nil {
		f.unread, f.unreadLogged = err, time.Now()
		slog.Warn("parse: reading the table's schema failed; its messages go on unchecked to the write stage, which converts them once "+
			"it can read the table, and this stage reads it again in the background", "table", f.Table, "every", unreadRetry, "error", err)
		f.refreshInBackground()
	}
	return nil
}

// readServer reads the server's version for the evolver's rule.
func (f *parseFn) readServer(ctx context.Context) error {
	c, err := f.ch.Open(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	f.evolver.rule.Server, err = evolve.ServerOfConn(ctx, c)
	f.serverKnown = err == nil
	return err
}

// refresh reads the table's schema through a connection of its own.
func (f *parseFn) refresh(ctx context.Context) error {
	c, err := f.ch.Open(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	return f.tracker.Refresh(ctx, c)
}

// refreshSchema reads the schema again when SchemaRefresh has passed, or when another stage of
// this worker read a change of the table since (convert.Tracker.ChangedElsewhere: the write
// stage, whose INSERT the server refused for the table's new structure), so that a column
// altered while the job runs (UInt8 made UInt16) stops dead-lettering the values it now takes
// before SchemaRefresh has passed. With SchemaRefresh 0 never, but with AddNewColumns after a
// change read elsewhere: the stage takes a field whose column it knows for no new field, so a
// column it added and someone dropped since would not be added again until the job restarts, and
// every message with the field would be a dead letter of the write stage. A failure keeps the
// current converter: the write stage notices a real mismatch.
//
// In a routed pipeline the read runs in the background (refreshInBackground), and its result is
// taken at a later call: the parse stages of every table run in the stage of the routing, so a
// read that waits would hold up the messages of every table, and on ClickHouse 18.16 a read of
// system.columns for a table waits for as long as an ALTER TABLE of it waits for the queries
// reading the table (an ADD COLUMN during a long SELECT).
func (f *parseFn) refreshSchema(ctx context.Context) {
	if f.Routed {
		f.takeBackground()
		if f.unread != nil {
			if f.background == nil && time.Since(f.attempted) >= unreadRetry {
				f.attempted = time.Now()
				f.refreshInBackground()
			}
			return
		}
	}
	if f.SchemaRefresh <= 0 && f.evolver == nil {
		return
	}
	if changed := f.tracker.ChangedElsewhere(); !changed && (f.SchemaRefresh <= 0 || time.Since(f.attempted) < f.SchemaRefresh) {
		return
	}
	f.attempted = time.Now()
	if f.Routed {
		f.refreshInBackground()
		return
	}
	if err := f.refresh(ctx); err != nil {
		slog.Warn("parse: refreshing the table's schema failed; keeping the current one", "table", f.Table, "error", err)
	}
}

// fetched is the outcome of a read of the schema in the background, begun at started, with the
// server's version when the evolver's rule lacked it.
type fetched struct {
	table   *schema.Table
	server  *evolve.Server
	err     error
	started time.Time
}

// refreshInBackground starts a read of the table's schema in a goroutine of its own, through a
// connection of its own, whose result a later call takes (takeBackground); with a read under
// way already, another is started once it is done, since the change that asks for this one may
// have come after that read.
func (f *parseFn) refreshInBackground() {
	if f.background != nil {
		f.again = true
		return
	}
	done, started, ctx := make(chan fetched, 1), time.Now(), f.life
	needServer := f.evolver != nil && !f.serverKnown
	f.background = done
	go func() {
		r := fetched{started: started}
		c, err := f.ch.Open(ctx)
		if err == nil {
			r.table, err = schema.Fetch(ctx, c, f.ClickHouse.Database, f.Table)
			if err == nil && needServer {
				var s evolve.Server
				s, err = evolve.ServerOfConn(ctx, c)
				r.server = &s
			}
			c.Close()
		}
		r.err = err
		done <- r
	}()
}

// takeBackground takes the result of the read in the background, if it is done: the tracker
// takes its schema, unless the stage has read the table itself since that read began (adding a
// column: that read is the newer).
func (f *parseFn) takeBackground() {
	if f.background == nil {
		return
	}
	var r fetched
	select {
	case r = <-f.background:
	default:
		return
	}
	f.background = nil
	err := r.err
	if err == nil && f.tracker.Age() >= time.Since(r.started) {
		err = f.tracker.Set(r.table)
	}
	if err == nil && r.server != nil {
		f.evolver.rule.Server, f.serverKnown = *r.server, true
	}
	if err == nil && f.evolver != nil {
		f.evolver.reachable(r.started)
	}
	switch {
	case err == nil && f.unread != nil:
		f.unread = nil
		slog.Info("parse: the table's schema is read; its messages are converted here again", "table", f.Table)
	case f.unread != nil:
		if f.unread = err; time.Since(f.unreadLogged) >= unreadLog {
			f.unreadLogged = time.Now()
			slog.Warn("parse: the table's schema still cannot be read; its messages go on unchecked to the write stage", "table", f.Table, "error", err)
		}
	case err != nil:
		slog.Warn("parse: refreshing the table's schema failed; keeping the current one", "table", f.Table, "error", err)
	}
	if f.again {
		f.again = false
		f.refreshInBackground()
	}
}

// Teardown ends a read of the schema under way in the background.
func (f *parseFn) Teardown() {
	if f.endLife != nil {
		f.endLife()
	}
}

// Check fetches the schema of the table database.table through conn and builds its converter,
// as every worker does at start-up. Call it when the pipeline is constructed, so that a missing
// table or an unsupported column type stops the launch with a clear message instead of failing
// on workers.
func Check(ctx context.Context, conn driver.Conn, database, table string) (*schema.Table, *convert.Converter, error) {
	return CheckWith(ctx, conn, database, table, convert.Options{})
}

// CheckWith is Check for a stage with columns filled from the message (Config.FromMessage): a
// pair of metadataColumns or an unknownFieldsColumn that does not fit the table is a
// *convert.OptionError (wrapped), naming its parameter.
func CheckWith(ctx context.Context, conn driver.Conn, database, table string, o convert.Options) (*schema.Table, *convert.Converter, error) {
	t := &convert.Tracker{Stage: "parse", Database: database, Table: table, Options: o}
	if err := t.Refresh(ctx, conn); err != nil {
		return nil, nil, err
	}
	if err := t.Schema().NameFault(); err != nil { // workers leave such a column out; a launch stops
		return nil, nil, err
	}
	return t.Schema(), t.Converter(), nil
}

// ProcessElement converts the messages of one source element and gathers their rows (see Parse).
func (f *parseFn) ProcessElement(ctx context.Context, et beam.EventTime, ms flow.Messages, emitRows func(beam.EventTime, flow.Rows), emitDeadLetter func(flow.DeadLetter)) error {
	f.refreshSchema(ctx)
	if f.Routed { // the routing stage counted every message, this table's among them
		f.byTable.Inc(ctx, "messages-received", int64(len(ms.Messages)))
	} else {
		messagesReceived.Inc(ctx, int64(len(ms.Messages)))
	}
	if len(ms.Messages) == 0 {
		// A heartbeat of the source passes on (see batch.Rows), after the rows before it.
		f.flush(emitRows)
		emitRows(et, flow.Rows{})
		return nil
	}
	if et > f.latest || len(f.gathered.Rows) == 0 {
		f.latest = et
	}
	if f.unread != nil {
		f.passUnchecked(ctx, et, ms, emitRows)
		return nil
	}
	conv := f.tracker.Converter()
	schemaHash := conv.SchemaHash()
	ok, dropped := 0, 0
	for _, m := range ms.Messages {
		messagePayloadBytes.Update(ctx, int64(len(m.Data)))
		f.byTable.Update(ctx, "message-payload-bytes", int64(len(m.Data)))
		err := f.convert(conv, m)
		if err == nil && f.evolver != nil && conv.Untaken() > 0 {
			reread, dead, fatal := f.addColumns(ctx, conv, m)
			if fatal != nil {
				return fatal // nothing of the bundle is acknowledged: the runner retries it
			}
			if reread {
				conv = f.tracker.Converter()
				schemaHash = conv.SchemaHash()
				messagesWaited.Inc(ctx, 1)
				f.byTable.Inc(ctx, "messages-waited-for-column", 1)
				err = f.convert(conv, m)
			}
			if dead != nil {
				err = dead
			}
		}
		if err != nil {
			rowsParseFailed.Inc(ctx, 1)
			f.byTable.Inc(ctx, "rows-parse-failed", 1)
			d := NewDeadLetter(m, err)
			if f.Routed {
				d.StackTrace = flow.WithTable(d.StackTrace, f.Table)
			}
			emitDeadLetter(d)
			continue
		}
		if conv.Untaken() > 0 && f.FromMessage.UnknownFields == "" {
			dropped++
		}
		f.gather(et, m, schemaHash, len(ms.Messages), emitRows)
		ok++
	}
	rowsParsedOK.Inc(ctx, int64(ok))
	f.byTable.Inc(ctx, "rows-parsed-ok", int64(ok))
	if dropped > 0 {
		rowsWithDroppedFields.Inc(ctx, int64(dropped))
		f.byTable.Inc(ctx, "rows-with-dropped-fields", int64(dropped))
	}
	return nil
}

// gather adds the row of m, of the schema schemaHash, to the rows gathered, and emits them when
// they fill an element (n: the messages of the element m came in, for the first allocation).
func (f *parseFn) gather(et beam.EventTime, m flow.Message, schemaHash uint64, n int, emitRows func(beam.EventTime, flow.Rows)) {
	if f.gathered.Rows == nil {
		f.gathered.Rows = make([]flow.Row, 0, min(max(n, 16), MaxGatherRows))
	}
	f.gathered.Rows = append(f.gathered.Rows, flow.Row{Payload: m.Data, Schema: schemaHash, MessageID: m.ID, AckID: m.AckID, Attributes: m.Attributes,
		OrderingKey: m.OrderingKey, Transformed: m.Transformed, Original: m.Original})
	if len(f.FromMessage.Metadata) > 0 { // the write stage converts again
		f.gathered.Rows[len(f.gathered.Rows)-1].PublishTimeMillis = m.PublishTimeMillis
	}
	if f.gatheredBytes += len(m.Data) + len(m.Original); len(f.gathered.Rows) >= MaxGatherRows || f.gatheredBytes >= MaxGatherBytes {
		f.flush(emitRows)
		f.latest = et
	}
}

// passUnchecked passes the messages of ms on as rows no conversion checked (flow.Unchecked), as
// the stage of a routed table it could not read yet does (see setupRouted): the write stage
// converts them, and dead-letters those that fail.
func (f *parseFn) passUnchecked(ctx context.Context, et beam.EventTime, ms flow.Messages, emitRows func(beam.EventTime, flow.Rows)) {
	for _, m := range ms.Messages {
		messagePayloadBytes.Update(ctx, int64(len(m.Data)))
		f.byTable.Update(ctx, "message-payload-bytes", int64(len(m.Data)))
		f.gather(et, m, flow.Unchecked, len(ms.Messages), emitRows)
	}
	rowsUnchecked.Inc(ctx, int64(len(ms.Messages)))
	f.byTable.Inc(ctx, "rows-unchecked", int64(len(ms.Messages)))
}

// maxKeptBuf is the largest buffer of a converted row the parse stage keeps for the next
// message. The converted row is thrown away (the write stage converts the payload again), so a
// buffer grown for a large message (up to Pub/Sub's 10 MB, about as much in RowBinary) was held by
// every instance of the DoFn for the rest of the run, beside the copies of the message that the
// stages after it hold while they batch and insert it: one more copy of the largest message
// seen, at the run's peak. Above the bound the next message's conversion allocates its own.
const maxKeptBuf = 1 << 20

// convert converts m with conv into f.buf.
func (f *parseFn) convert(conv *convert.Converter, m flow.Message) error {
	var err error
	if len(f.FromMessage.Metadata) > 0 {
		f.meta = convert.Meta{ID: m.ID, PublishTimeMillis: m.PublishTimeMillis, OrderingKey: m.OrderingKey, Attributes: m.Attributes}
		f.buf, err = conv.ConvertMessage(f.buf[:0], m.Data, &f.meta)
	} else {
		f.buf, err = conv.Convert(f.buf[:0], m.Data)
	}
	if cap(f.buf) > maxKeptBuf {
		f.buf = nil
	}
	return err
}

// FinishBundle emits the rows the bundle left gathered, and drops what the stage still
// references of the bundle's last message: the converter's values of its payload
// (convert.Converter.Release) and its metadata. The payloads share the buffer they came in (a
// Pull response of the local source, up to 64 MiB, or the element's buffer on Dataflow), which
// they would otherwise keep alive for as long as the DoFn lives.
func (f *parseFn) FinishBundle(emitRows func(beam.EventTime, flow.Rows), _ func(flow.DeadLetter)) {
	f.flush(emitRows)
	if conv := f.tracker.Converter(); conv != nil {
		conv.Release()
	}
	f.meta = convert.Meta{}
}

// flush emits the gathered rows, if any, as one element.
func (f *parseFn) flush(emitRows func(beam.EventTime, flow.Rows)) {
	if len(f.gathered.Rows) == 0 {
		return
	}
	emitRows(f.latest, f.gathered)
	f.gathered, f.gatheredBytes = flow.Rows{}, 0
}

// NewDeadLetter builds the dead-letter record of a message that failed to parse. The record
// holds the payload as published; when the JavaScript UDF transformed the message and a value of
// its output failed, the error says that its output is what failed ("converting the output of
// the javascript UDF: ...") and the stack trace ends with that output, cut to 1000 bytes. When
// only values of metadataColumns failed (convert.OnlyMetadata), the output is not at fault, and
// the error is the conversion's, as without a UDF.
func NewDeadLetter(m flow.Message, err error) flow.DeadLetter {
	column := convert.Columns(err)
	message, trace := err.Error(), flow.StackTrace("parse", column, err)
	if m.Transformed && !convert.OnlyMetadata(err) {
		if convert.IsByteOrderMark(err) { // the function's doing, not the publisher's
			message = "payload: the function's output starts with a UTF-8 byte order mark (EF BB BF), which JSON text may not " +
				"(RFC 8259, section 8.1): have the function leave it out (JSON.stringify writes none)"
		}
		message = "converting the output of the javascript UDF: " + message
		trace = flow.WithUDFOutput(flow.StackTrace("parse (the output of the javascript UDF)", column, err), m.Data)
	}
	return flow.DeadLetter{
		Payload:        m.Published(),
		ErrorMessage:   message,
		StackTrace:     trace,
		FailedAtMillis: time.Now().UnixMilli(),
		MessageID:      m.ID,
		Attributes:     m.Attributes,
		OrderingKey:    m.OrderingKey,
		AckID:          m.AckID,
	}.BoundErrors()
}
