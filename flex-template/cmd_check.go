package main

// check: the row each message of a file becomes, or its dead-letter error, by the pipeline's own
// conversion against the live table. Nothing is inserted; no Pub/Sub is needed.

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/ch-beam/pubsub-to-clickhouse/pipeline"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/chtype"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/convert"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/evolve"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/flow"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/parse"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/route"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/schema"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/text"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/udf"
)

// exitCannotCheck is check's exit code when it could not check at all: ClickHouse, the table or
// the JavaScript UDF's file failed.
const exitCannotCheck = 3

const checkDescription = "Prints, for each message of the files, the row it becomes (column = value, as ClickHouse will store it: " +
	"strings quoted, times in the column's time zone, DEFAULT for a column the server computes) or the error its dead letter " +
	"would carry, then a summary by error kind. It converts exactly as the pipeline's parse stage does, against the table as " +
	"it is now, after the JavaScript UDF when one is given, and with routeBy in the table the message names (each row says which); " +
	"nothing is inserted and no Pub/Sub is needed. With --addNewColumns it then lists the columns the messages' new fields would " +
	"become (the ALTER TABLE of each, by the rule and limits of the pipeline) and the fields the limits refuse; it adds none. " +
	"What only the server checks at the INSERT it cannot see: CHECK constraints, a DEFAULT or MATERIALIZED expression that throws " +
	"(throwIf), the values inside a JSON column's object (shown as the text sent); the pipeline dead-letters such rows after the " +
	"server refuses them.\n" +
	"A FILE is read as JSON lines (one message per line; lines of only spaces, tabs and carriage returns skipped), or whole with --perFile; a directory holds one " +
	"message per regular file (symbolic links followed; what else it holds is skipped with a line on standard error); - is standard input. " +
	"Inputs that hold no message at all are a usage error.\n" +
	"A message Pub/Sub refuses to publish (over 10 MB, ...) is said to be one; the pipeline never reads it.\n" +
	"Exit status: 0 when every message becomes a row (or is dropped by the UDF), 1 when some message would be dead-lettered or Pub/Sub refuses it, " +
	"2 on a usage error, 3 when the check could not run (ClickHouse, the table or the UDF's file)."

// checkParams are the template parameters check takes.
var checkParams = append(append(append([]string{}, pipeline.ConnectionParams...), "clickHouseTable", "metadataColumns", "unknownFieldsColumn",
	"routeBy", "routeTables", "routeUnlisted", "addNewColumns", "addNewColumnsMax", "addNewColumnsPattern", "addNewColumnsExcluded",
	"addNewColumnsOnCluster"), pipeline.UDFParams...)

// runCheck runs check.
func runCheck(ctx context.Context, cio *cmdIO, args []string) int {
	fs := newCommandFlags(cio, "check", "[flags] FILE...", checkDescription)
	var o pipeline.Options
	pipeline.RegisterFlagsOf(fs, &o, checkParams...)
	perFile := fs.Bool("perFile", false, "read each FILE whole as one message, not as JSON lines")
	stackTrace := fs.Bool("stackTrace", false, "print each dead letter's stack_trace too, indented under its error")
	envelope := fs.Bool("envelope", false, `read each message as publish's envelope {"data": ..., "attributes": {...}, "orderingKey": "..."}, for metadataColumns`)
	files, code, done := parseCommand(cio, "check", fs, args, &o, checkParams)
	if done {
		return code
	}
	if len(files) == 0 {
		return usageError(cio, "check", errors.New("no FILE given: name a file of JSON lines, a directory of messages, or - for standard input"))
	}
	msgs, err := readInputs(cio.In, files, *perFile, inputNotes(cio, "check"))
	if err != nil {
		return usageError(cio, "check", err)
	}

	c, err := openChecker(ctx, o)
	if err != nil {
		fmt.Fprintf(cio.Err, "pubsub-to-clickhouse check: %v\n", err)
		return exitCannotCheck
	}
	defer c.close()
	c.published = time.Now()
	if o.MetadataColumns != "" {
		fmt.Fprint(cio.Out, metadataNote(c.published))
	}
	var s checkSummary
	for i, in := range msgs {
		m := flow.Message{ID: strconv.Itoa(i + 1), PublishTimeMillis: c.published.UnixMilli(), Data: in.Data}
		if *envelope {
			e, err := parseEnvelope(in.Data)
			if err != nil {
				return usageError(cio, "check", fmt.Errorf("%s: %w", in.Where, err))
			}
			m.Data, m.Attributes, m.OrderingKey = e.Data, e.Attributes, e.OrderingKey
		}
		if err := c.check(cio, in.Where, m, *stackTrace, &s); err != nil {
			fmt.Fprintf(cio.Err, "pubsub-to-clickhouse check: %s: %v\n", in.Where, err)
			return exitCannotCheck
		}
	}
	s.print(cio)
	for _, table := range o.Tables() {
		if why := c.targets[table].table.Discards; why != "" {
			fmt.Fprintf(cio.Out, "note: %s.%s stores none of these rows: %s\n", o.ClickHouseDatabase, table, why)
		}
		if a := c.targets[table].adds; a != nil {
			a.print(cio, o.ClickHouseDatabase, table)
		}
	}
	if s.deadLetters > 0 || s.unpublishable > 0 {
		return exitFailed
	}
	return exitOK
}

// checker converts messages as the pipeline does: the UDF stage's function, the routing stage's
// choice of table when routeBy is set, then the parse stage's converter of that table, then the
// write stage's decoding of the row.
type checker struct {
	fn      *udf.Local              // nil without a UDF
	spec    route.Spec              // the routing; Tables empty without routeBy
	targets map[string]*checkTarget // by table: clickHouseTable, or each table of the routing
	only    *checkTarget            // without routeBy, clickHouseTable's
	buf     []byte

	fromMessage convert.Options // metadataColumns, unknownFieldsColumn
	published   time.Time       // the publish time the messages are given
}

// checkTarget is one table as the parse and write stages see it.
type checkTarget struct {
	name    string
	table   *schema.Table
	conv    *convert.Converter
	layout  *convert.Layout
	cols    []schema.Column // the writable columns, the row's
	zone    *time.Location  // the server's time zone
	unknown *unknownFields  // the fields no column takes; nil with an unknownFieldsColumn
	adds    *newColumns     // with addNewColumns, the columns the messages would add; else nil
}

// openChecker reads the UDF's file, the password and TLS material, and the schema of each table,
// as the launch's preflight does.
func openChecker(ctx context.Context, o pipeline.Options) (*checker, error) {
	c := &checker{targets: map[string]*checkTarget{}, fromMessage: o.FromMessage()}
	if cfg, ok := o.UDF(); ok {
		var err error
		if c.fn, err = udf.Open(ctx, cfg); err != nil {
			return nil, err
		}
	}
	conn, err := openClickHouse(ctx, o)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	c.spec, _ = o.Routing()
	var checker *evolve.Checker
	var rule evolve.Rule
	if limits, ok := o.NewColumns(); ok {
		if checker, err = evolve.NewChecker(limits); err != nil {
			return nil, err
		}
		if rule.Server, err = evolve.ServerOfConn(ctx, conn); err != nil {
			return nil, err
		}
	}
	for _, table := range o.Tables() {
		t, err := openTarget(ctx, conn, o, table, c.fromMessage)
		if err != nil {
			return nil, err
		}
		if checker != nil {
			t.adds = newNewColumns(checker, rule)
		}
		c.targets[table] = t
	}
	if len(c.spec.Tables) == 0 {
		c.only = c.targets[o.ClickHouseTable]
	}
	return c, nil
}

// openTarget reads table's schema and builds its converter and decoder.
func openTarget(ctx context.Context, conn driver.Conn, o pipeline.Options, table string, fromMessage convert.Options) (*checkTarget, error) {
	t := &checkTarget{name: table}
	var err error
	t.table, t.conv, err = parse.CheckWith(ctx, conn, o.ClickHouseDatabase, table, fromMessage)
	if err != nil {
		return nil, pipeline.Labelled(err, o.TableParam(table))
	}
	t.cols = t.table.Writable()
	types := make([]*chtype.Type, len(t.cols))
	for i, col := range t.cols {
		types[i] = col.Type
	}
	if t.layout, err = convert.NewLayout(types); err != nil {
		return nil, err
	}
	if t.zone, err = time.LoadLocation(t.table.ServerTimeZone); err != nil {
		t.zone = time.UTC
	}
	if fromMessage.UnknownFields == "" {
		if t.unknown, err = newUnknownFields(t.table, fromMessage); err != nil {
			return nil, err
		}
	}
	return t, nil
}

func (c *checker) close() {
	if c.fn != nil {
		c.fn.Close()
	}
}

// check converts one message, read at where, and prints its row or dead letter, each line of it
// one line of the output (control characters escaped, flow.OneLine). The error is for a UDF whose
// process cannot be started again.
func (c *checker) check(cio *cmdIO, where string, m flow.Message, stackTrace bool, s *checkSummary) error {
	s.messages++
	where = flow.OneLine(where)
	if err := pubsubRefuses(m); err != nil {
		// publish refuses it too: the pipeline never sees such a message.
		s.unpublishable++
		fmt.Fprintf(cio.Out, "%s: not a message Pub/Sub takes: %v\n", where, err)
		return nil
	}
	var dl *flow.DeadLetter
	kinds := []string{"javascript UDF"}
	if c.fn != nil {
		var dropped bool
		var err error
		if m, dropped, dl, err = c.fn.Apply(m); err != nil {
			return err
		}
		if bad := convert.CheckUTF8(m.Data); dl != nil && bad != nil {
			kinds = errorKinds(bad) // failed before any call, by the parse stage's rule
		}
		if dropped {
			s.dropped++
			fmt.Fprintf(cio.Out, "%s: dropped by the javascript UDF (acknowledged; neither a row nor a dead letter)\n", where)
			return nil
		}
	}
	var hinted []string
	meta := convert.Meta{ID: m.ID, PublishTimeMillis: m.PublishTimeMillis, OrderingKey: m.OrderingKey, Attributes: m.Attributes}
	t := c.only
	if dl == nil && t == nil { // routeBy: the table the message names
		table, err := c.spec.Of(m)
		if err != nil {
			d := route.NewDeadLetter(m, err)
			dl, kinds = &d, []string{"routing: " + c.spec.By.String()}
		}
		t = c.targets[table]
	}
	if dl == nil {
		var err error
		if c.buf, err = t.conv.ConvertMessage(c.buf[:0], m.Data, &meta); err != nil {
			d := c.parseDeadLetter(m, err, t)
			dl, kinds, hinted = &d, errorKinds(err), hints(m.Data, err)
		}
	}
	var newFields []string // with addNewColumns, the fields no column takes yet
	if dl == nil && t.adds != nil {
		var dead error
		if newFields, dead = t.adds.add(t.conv, m.Data, where, c.fromMessage.UnknownFields != ""); dead != nil {
			d := c.parseDeadLetter(m, dead, t)
			dl, kinds = &d, errorKinds(dead)
		}
	}
	if dl != nil {
		s.deadLetter(kinds)
		fmt.Fprintf(cio.Out, "%s: dead letter: %s\n", where, flow.OneLine(dl.ErrorMessage))
		for _, h := range hinted {
			fmt.Fprintf(cio.Out, "  hint: %s\n", flow.OneLine(h))
		}
		if stackTrace { // one cause a line, as stack_trace holds them
			lines := strings.Split(dl.StackTrace, "\n")
			for i, l := range lines {
				lines[i] = flow.OneLine(l)
			}
			fmt.Fprintf(cio.Out, "    %s\n", strings.Join(lines, "\n    "))
		}
		return nil
	}
	lines, err := t.render(c.buf)
	if err != nil {
		// The converter wrote a row its own decoder does not read: a bug, not a dead letter.
		s.deadLetter([]string{"internal error"})
		fmt.Fprintf(cio.Out, "%s: internal error decoding the row: %s\n", where, flow.OneLine(err.Error()))
		return nil
	}
	s.rows++
	if c.only == nil {
		fmt.Fprintf(cio.Out, "%s: row of table %s\n%s", where, flow.OneLine(t.name), lines)
	} else {
		fmt.Fprintf(cio.Out, "%s: row\n%s", where, lines)
	}
	if t.adds != nil {
		if len(newFields) > 0 {
			fmt.Fprintf(cio.Out, "  note: no column takes %s %s yet: addNewColumns would add a column for each (or refuse it: see the end)\n",
				map[bool]string{true: "the field", false: "the fields"}[len(newFields) == 1], flow.OneLine(quoteAll(newFields)))
		}
	} else if t.unknown != nil {
		if keys := t.unknown.keys(m.Data, &meta); len(keys) > 0 {
			s.dropsFields++
			var none []string // the keys that name no column; the others are said one by one
			for _, k := range keys {
				if why := c.columnNotTaking(t, k); why != "" {
					fmt.Fprintf(cio.Out, "  note: the field %s is dropped: %s; unknownFieldsColumn would keep it in a String column\n", flow.OneLine(strconv.Quote(text.Cut(k, maxQuotedBytes))), flow.OneLine(why))
				} else {
					none = append(none, k)
				}
			}
			if len(none) > 0 {
				fields, them := "the fields", "them"
				if len(none) == 1 {
					fields, them = "the field", "it"
				}
				fmt.Fprintf(cio.Out, "  note: no column takes %s %s: dropped (unknownFieldsColumn would keep %s in a String column)\n",
					fields, flow.OneLine(quoteAll(none)), them)
			}
		}
	}
	return nil
}

// columnNotTaking says why the column of table t named key, a field that gives the row no value,
// does not take it: a column of metadataColumns, or one never written (MATERIALIZED, ALIAS, or a
// NotWritten reason), or a column of the name in another letter case (a field "Id" beside the
// column "ID", which takes its DEFAULT or nothing); "" when no column has that name.
func (c *checker) columnNotTaking(t *checkTarget, key string) string {
	for _, m := range c.fromMessage.Metadata {
		if m.Column == key {
			return fmt.Sprintf("its column %q is filled from %s (metadataColumns)", key, m.Key)
		}
	}
	for _, col := range t.table.Columns {
		switch {
		case col.Name != key:
		case col.DefaultKind == "MATERIALIZED" || col.DefaultKind == "ALIAS":
			return fmt.Sprintf("its column %q is %s, computed by the server", key, col.DefaultKind)
		case col.NotWritten != "":
			return fmt.Sprintf("its column %q is never written: %s", key, col.NotWritten)
		}
	}
	for _, col := range t.table.Columns {
		if col.Name != key && strings.EqualFold(col.Name, key) {
			return fmt.Sprintf("the column %q differs from it only in letter case, and ClickHouse's names are case-sensitive: did you mean %q?", col.Name, col.Name)
		}
	}
	return ""
}

// parseDeadLetter is the parse stage's dead letter of m in table t, whose stack trace names the
// table when messages are routed, as the routed table's parse stage writes it.
func (c *checker) parseDeadLetter(m flow.Message, err error, t *checkTarget) flow.DeadLetter {
	d := parse.NewDeadLetter(m, err)
	if c.only == nil {
		d.StackTrace = flow.WithTable(d.StackTrace, t.name)
	}
	return d
}

// render decodes a row and writes its columns, one "  column = value" line each.
func (c *checkTarget) render(row []byte) (string, error) {
	spans, err := c.layout.Split(row, nil)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for i, col := range c.cols {
		if spans[i] == nil {
			fmt.Fprintf(&b, "  %s = DEFAULT (%s)\n", flow.OneLine(col.Name), flow.OneLine(col.DefaultExpression))
			continue
		}
		dec, err := convert.NewColumn(col.Type)
		if err != nil {
			return "", err
		}
		if err := dec.Append(spans[i]); err != nil {
			return "", err
		}
		note := ""
		if col.DefaultKind == "EPHEMERAL" {
			note = "  -- EPHEMERAL: read by the DEFAULTs, not stored"
		}
		fmt.Fprintf(&b, "  %s = %s%s\n", flow.OneLine(col.Name), renderValue(col.Type, firstValue(dec.Values()), c.zone), note)
	}
	return b.String(), nil
}

// errorKinds returns the kinds of a conversion error, for the summary: one per column that failed
// (`column "n" (UInt8)`), or the payload's.
func errorKinds(err error) []string {
	var re *convert.RowError
	if errors.As(err, &re) {
		var kinds []string
		for _, ve := range re.Errs {
			kinds = append(kinds, fmt.Sprintf("column %q (%s)", ve.Column, ve.Type))
		}
		return kinds
	}
	var pe *convert.PayloadError
	if errors.As(err, &pe) {
		return []string{"payload: not one JSON object of distinct fields in UTF-8"}
	}
	var refused evolve.Refusals
	if errors.As(err, &refused) {
		return []string{"addNewColumns: a new field refused"}
	}
	return []string{"other"}
}

// checkSummary counts what check found.
type checkSummary struct {
	messages, rows, dropped, deadLetters int
	unpublishable                        int // messages Pub/Sub refuses (psclient.CheckMessage)
	dropsFields                          int // rows with fields that no column takes
	byKind                               map[string]int
}

func (s *checkSummary) deadLetter(kinds []string) {
	s.deadLetters++
	if s.byKind == nil {
		s.byKind = map[string]int{}
	}
	for _, k := range kinds {
		s.byKind[k]++
	}
}

// print writes the summary: the counts, then the dead letters by kind, most frequent first.
func (s *checkSummary) print(cio *cmdIO) {
	fmt.Fprintf(cio.Out, "\n%s: %d would be %s, %s", count(s.messages, "message"), s.rows, map[bool]string{true: "a row", false: "rows"}[s.rows == 1], count(s.deadLetters, "dead letter"))
	if s.dropped > 0 {
		fmt.Fprintf(cio.Out, ", %d dropped by the javascript UDF", s.dropped)
	}
	if s.unpublishable > 0 {
		fmt.Fprintf(cio.Out, ", %d that Pub/Sub refuses to publish", s.unpublishable)
	}
	fmt.Fprintln(cio.Out)
	if s.dropsFields > 0 {
		fmt.Fprintf(cio.Out, "%s with fields that no column takes, dropped from the row (see the notes; unknownFieldsColumn keeps them)\n", count(s.dropsFields, "row"))
	}
	if len(s.byKind) == 0 {
		return
	}
	kinds := make([]string, 0, len(s.byKind))
	for k := range s.byKind {
		kinds = append(kinds, k)
	}
	sort.Slice(kinds, func(i, j int) bool {
		if s.byKind[kinds[i]] != s.byKind[kinds[j]] {
			return s.byKind[kinds[i]] > s.byKind[kinds[j]]
		}
		return kinds[i] < kinds[j]
	})
	fmt.Fprintf(cio.Out, "dead letters by error kind (a message with several failing columns counts under each):\n")
	for _, k := range kinds {
		fmt.Fprintf(cio.Out, "  %6d  %s\n", s.byKind[k], k)
	}
}

// firstValue returns the first element of the slice values (a Column's Values of one row).
func firstValue(values any) any {
	return reflect.ValueOf(values).Index(0).Interface()
}

// metadataNote is what check says before the first message with --metadataColumns: the
// message_id and publish_time its messages get, the latter as a String column gets it (Pub/Sub's
// publish time has milliseconds: so has the one check gives, flow.Message.PublishTimeMillis).
func metadataNote(published time.Time) string {
	return fmt.Sprintf("metadataColumns: a message's message_id is its number in the input (1, 2, ...) and its publish_time the time of this check (%s); "+
		"Pub/Sub sets both when the message is published. Attributes and ordering keys come from --envelope lines; without it a message has none.\n\n",
		time.UnixMilli(published.UnixMilli()).UTC().Format(text.MillisUTC))
}
