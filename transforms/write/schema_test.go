package write

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
	"github.com/google/go-cmp/cmp"

	"github.com/ch-beam/pubsub-to-clickhouse/internal/chtest"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/chclient"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/convert"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/flow"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/schema"
)

// TestRowsOfANewerSchema: rows that the parse stage converted against a schema the write stage
// never had (a column added after the write stage read the table, less than a second ago) make
// it read the schema at once, and the INSERT fills the new column (without that, the row went in
// with NULL in it).
func TestRowsOfANewerSchema(t *testing.T) {
	srv := chtest.New(t)
	srv.CreateTable(t, `CREATE TABLE {table} (id UInt32) ENGINE = MergeTree ORDER BY id`, "events")
	ctx := context.Background()
	f := &insertFn{Config: Config{ClickHouse: srv.Config(), Table: "events", Settings: chclient.Settings{MaxInsertBlockSize: 1000}}}
	if err := f.Setup(ctx); err != nil {
		t.Fatal(err)
	}
	defer f.Teardown()
	srv.MustExec(t, "ALTER TABLE events ADD COLUMN n Nullable(Int64)")
	parse := &convert.Tracker{Stage: "parse", Database: srv.Database, Table: "events"}
	if err := parse.Refresh(ctx, srv.Conn(t)); err != nil {
		t.Fatal(err)
	}
	if f.tracker.Age() > time.Second {
		t.Skip("the write stage's schema is more than a second old already: the test is about a recent one")
	}
	rows := flow.Rows{Rows: []flow.Row{{Payload: []byte(`{"id":1,"n":7}`), Schema: parse.Converter().SchemaHash(), MessageID: "m1"}}}
	if err := f.ProcessElement(ctx, 0, rows, func(d flow.DeadLetter) { t.Errorf("dead letter: %s", d.ErrorMessage) }, func([]string) {}); err != nil {
		t.Fatal(err)
	}
	if got := srv.MustQuery(t, "SELECT id, n FROM events"); got != "1\t7" {
		t.Errorf("row %q, want 1\\t7: the new column filled", got)
	}
}

// TestColumnGoneWithAddNewColumns: with addNewColumns, a row whose field had a column when the
// message was parsed, and lost it before the INSERT (an operator dropped it), is a dead letter
// naming the field, not a row without its value; a null in that field, and a row without it, are
// rows as before. Without addNewColumns the field is ignored, as any field no column takes.
func TestColumnGoneWithAddNewColumns(t *testing.T) {
	for _, add := range []bool{true, false} {
		srv := chtest.New(t)
		srv.CreateTable(t, `CREATE TABLE {table} (id UInt32, bar Nullable(Int64)) ENGINE = MergeTree ORDER BY id`, "events")
		ctx := context.Background()
		f := &insertFn{Config: Config{ClickHouse: srv.Config(), Table: "events", Settings: chclient.Settings{MaxInsertBlockSize: 1000}, AddNewColumns: add}}
		if err := f.Setup(ctx); err != nil {
			t.Fatal(err)
		}
		schema := f.conv.SchemaHash() // the parse stage's, as the row carries it
		srv.MustExec(t, "ALTER TABLE events DROP COLUMN bar")
		rows := flow.Rows{Rows: []flow.Row{
			{Payload: []byte(`{"id":1,"bar":2}`), Schema: schema, MessageID: "m1"},
			{Payload: []byte(`{"id":2,"bar":null}`), Schema: schema, MessageID: "m2"},
			{Payload: []byte(`{"id":3}`), Schema: schema, MessageID: "m3"},
			// The JavaScript UDF's output, which the message does not hold as it is.
			{Payload: []byte(`{"id":4,"bar":5}`), Schema: schema, MessageID: "m4", Transformed: true, Original: []byte(`{"n":4}`)},
		}}
		var dead []string
		if err := f.ProcessElement(ctx, 0, rows, func(d flow.DeadLetter) { dead = append(dead, string(d.Payload)+": "+d.ErrorMessage) }, func([]string) {}); err != nil {
			t.Fatal(err)
		}
		f.Teardown()
		want, wantRows := []string(nil), "1\n2\n3\n4"
		if add {
			const rule = ` names no column any more: with addNewColumns the parse stage gave it one, so the column is gone since (dropped or renamed) or not yet visible on the server this worker writes to; the message is a dead letter rather than a row without the value (replaying it adds the column again)`
			want = []string{`{"id":1,"bar":2}: field "bar" (value 2)` + rule,
				`{"n":4}: converting the output of the javascript UDF: field "bar" (value 5)` + rule}
			wantRows = "2\n3"
		}
		if diff := cmp.Diff(want, dead); diff != "" {
			t.Errorf("addNewColumns %v: dead letters (-want +got):\n%s", add, diff)
		}
		if got := srv.MustQuery(t, "SELECT id FROM events ORDER BY id"); got != wantRows {
			t.Errorf("addNewColumns %v: rows %q, want %q", add, got, wantRows)
		}
	}
}

// TestUncheckedRows: rows the parse stage passed on unchecked (flow.Unchecked: a routed table it
// could not read) are converted with every check, valid UTF-8 included, which ConvertChecked
// leaves out; a value the table cannot take, and with addNewColumns a field no column takes, make
// dead letters that say the parse stage had not checked them, and the other rows land.
func TestUncheckedRows(t *testing.T) {
	srv := chtest.New(t)
	srv.CreateTable(t, `CREATE TABLE {table} (id UInt32, s String) ENGINE = MergeTree ORDER BY id`, "events")
	ctx := context.Background()
	f := &insertFn{Config: Config{ClickHouse: srv.Config(), Table: "events", Settings: chclient.Settings{MaxInsertBlockSize: 1000}, AddNewColumns: true}}
	if err := f.Setup(ctx); err != nil {
		t.Fatal(err)
	}
	defer f.Teardown()
	rows := flow.Rows{Rows: []flow.Row{
		{Payload: []byte(`{"id":1,"s":"a"}`), Schema: flow.Unchecked, MessageID: "m1"},
		{Payload: []byte("{\"id\":2,\"s\":\"\xff\"}"), Schema: flow.Unchecked, MessageID: "m2"},
		{Payload: []byte(`{"id":3,"s":"c","new":5}`), Schema: flow.Unchecked, MessageID: "m3"},
		{Payload: []byte(`{"id":-4,"s":"d"}`), Schema: flow.Unchecked, MessageID: "m4"},
	}}
	dead := map[string]string{}
	if err := f.ProcessElement(ctx, 0, rows, func(d flow.DeadLetter) { dead[d.MessageID] = d.ErrorMessage + " | " + d.StackTrace }, func([]string) {}); err != nil {
		t.Fatal(err)
	}
	if got := srv.MustQuery(t, "SELECT id, s FROM events ORDER BY id"); got != "1\ta" {
		t.Errorf("rows %q, want 1\ta", got)
	}
	const stage = "the parse stage could not read the table, so this is the first conversion"
	for id, want := range map[string]string{"m2": "UTF-8", "m3": `field "new" (value 5) names no column: the parse stage could not read the table`, "m4": "-4"} {
		if got := dead[id]; !strings.Contains(got, want) || !strings.Contains(got, stage) {
			t.Errorf("dead letter of %s: %q, want one holding %q and %q", id, got, want, stage)
		}
	}
	if len(dead) != 3 {
		t.Errorf("%d dead letters, want 3: %v", len(dead), dead)
	}
}

// refusingConn is a connection whose INSERTs' Go values (the Typed columns', handed to the
// driver's Append) go through refuse first, as clickhouse-go's own refusal of a value would.
type refusingConn struct {
	driver.Conn
	refuse func(v any) error
}

func (c refusingConn) PrepareBatch(ctx context.Context, query string, opts ...driver.PrepareBatchOption) (driver.Batch, error) {
	b, err := c.Conn.PrepareBatch(ctx, query, opts...)
	if err != nil {
		return nil, err
	}
	return refusingBatch{b, c.refuse}, nil
}

type refusingBatch struct {
	driver.Batch
	refuse func(v any) error
}

func (b refusingBatch) Column(i int) driver.BatchColumn {
	return refusingColumn{b.Batch.Column(i), b.refuse}
}

type refusingColumn struct {
	driver.BatchColumn
	refuse func(v any) error
}

func (c refusingColumn) Append(v any) error {
	if err := c.refuse(v); err != nil {
		return err
	}
	return c.BatchColumn.Append(v)
}

// TestValuesClickHouseGoRefuses: a value the converter takes and clickhouse-go refuses, after the
// table is read again and the rows converted again (twice), is about its row: the batch is split,
// the other rows land, and the row is a dead letter naming the refusal. Before, the INSERT failed
// as a change of the table and then the bundle, at every retry (a NULL element of
// Array(Nullable(Time)) on the ClickHouse 26 engine did so, until convert passed it otherwise);
// a panic of the driver on values is such a refusal too.
func TestValuesClickHouseGoRefuses(t *testing.T) {
	for _, panics := range []bool{false, true} {
		t.Run(fmt.Sprint("panics=", panics), func(t *testing.T) {
			srv := chtest.New(t)
			srv.CreateTable(t, `CREATE TABLE {table} (id UInt32, a Array(Nullable(UInt8))) ENGINE = MergeTree ORDER BY id`, "events")
			ctx := context.Background()
			f := &insertFn{Config: Config{ClickHouse: srv.Config(), Table: "events", Settings: chclient.Settings{MaxInsertBlockSize: 1000}}}
			if err := f.Setup(ctx); err != nil {
				t.Fatal(err)
			}
			defer f.Teardown()
			// The driver refuses the row whose array holds 13.
			f.conn = refusingConn{f.conn, func(v any) error {
				for _, row := range v.([][]*uint8) {
					for _, e := range row {
						if e != nil && *e == 13 {
							if panics {
								panic("runtime error: invalid memory address or nil pointer dereference")
							}
							return errors.New("clickhouse [AppendRow]: converting 13 is unsupported")
						}
					}
				}
				return nil
			}}
			var rows flow.Rows
			for i, a := range []string{`[1]`, `[null,13]`, `[]`, `[2,null]`} {
				rows.Rows = append(rows.Rows, flow.Row{Payload: fmt.Appendf(nil, `{"id":%d,"a":%s}`, i, a), Schema: f.conv.SchemaHash(), MessageID: fmt.Sprint("m", i)})
			}
			var dead []string
			if err := f.ProcessElement(ctx, 0, rows, func(d flow.DeadLetter) { dead = append(dead, d.MessageID+": "+d.ErrorMessage) }, func([]string) {}); err != nil {
				t.Fatal(err)
			}
			if got := srv.MustQuery(t, "SELECT id, a FROM events ORDER BY id"); got != "0\t[1]\n2\t[]\n3\t[2,NULL]" {
				t.Errorf("rows %q, want all but the refused one", got)
			}
			want := `m1: the row cannot be inserted: clickhouse-go refuses its values, though the table was read again and the row converted again for it: column "a": clickhouse-go panicked taking the values: runtime error`
			if !panics {
				want = `m1: the row cannot be inserted: clickhouse-go refuses its values, though the table was read again and the row converted again for it: column "a": clickhouse [AppendRow]: converting 13 is unsupported`
			}
			if len(dead) != 1 || !strings.HasPrefix(dead[0], want) {
				t.Errorf("dead letters %q, want one: %s", dead, want)
			}
		})
	}
}

// TestUncheckedRowsReadNoFreshSchema: rows the parse stage passed on unchecked
// (flow.Unchecked) carry no schema this stage could have seen, which made every batch of them
// read the table's schema again, however recently it was read: a system.columns query per
// batch, for as long as the parse stage could not read the table (on 18.16 one that waits
// behind an ALTER of the table, the very case that leaves it unread). They need the table as it
// is now, as rows of an older schema do, so they read it again once the schema read is more
// than a second old, and an INSERT refused for the table's new structure reads it at once.
func TestUncheckedRowsReadNoFreshSchema(t *testing.T) {
	srv := chtest.New(t)
	srv.CreateTable(t, `CREATE TABLE {table} (id UInt32) ENGINE = MergeTree ORDER BY id`, "events")
	ctx := context.Background()
	f := &insertFn{Config: Config{ClickHouse: srv.Config(), Table: "events", Settings: chclient.Settings{MaxInsertBlockSize: 1000}}}
	if err := f.Setup(ctx); err != nil {
		t.Fatal(err)
	}
	defer f.Teardown()
	read := f.tracker.Schema()
	for i := range 3 {
		rows := flow.Rows{Rows: []flow.Row{{Payload: fmt.Appendf(nil, `{"id":%d}`, i), Schema: flow.Unchecked, MessageID: fmt.Sprint("m", i)}}}
		if err := f.ProcessElement(ctx, 0, rows, func(d flow.DeadLetter) { t.Errorf("dead letter: %s", d.ErrorMessage) }, func([]string) {}); err != nil {
			t.Fatal(err)
		}
	}
	if f.tracker.Age() > time.Second {
		t.Skip("the write stage's schema is more than a second old already: the test is about a recent one")
	}
	if f.tracker.Schema() != read {
		t.Error("three batches of unchecked rows read the table's schema again, less than a second after it was read")
	}
	if got := srv.MustQuery(t, "SELECT count() FROM events"); got != "3" {
		t.Errorf("%s rows, want 3", got)
	}
}

// TestRowsWithoutPublishTime: a row that reaches the write stage without its message's publish
// time (PublishTimeMillis 0: the parse stage keeps it only when the template has metadata
// columns, so a row buffered in the batch stage of a Dataflow job without them and written after
// an --update that added metadataColumns publish_time=...) is a dead letter naming the pair, not
// a row whose column holds 1970-01-01; a row with its publish time is stored with it.
func TestRowsWithoutPublishTime(t *testing.T) {
	srv := chtest.New(t)
	srv.CreateTable(t, `CREATE TABLE {table} (id UInt32, pt DateTime('UTC')) ENGINE = MergeTree ORDER BY id`, "events")
	ctx := context.Background()
	meta, err := convert.ParseMetadataColumns("publish_time=pt")
	if err != nil {
		t.Fatal(err)
	}
	f := &insertFn{Config: Config{ClickHouse: srv.Config(), Table: "events", Settings: chclient.Settings{MaxInsertBlockSize: 1000},
		FromMessage: convert.Options{Metadata: meta}}}
	if err := f.Setup(ctx); err != nil {
		t.Fatal(err)
	}
	defer f.Teardown()
	rows := flow.Rows{Rows: []flow.Row{
		{Payload: []byte(`{"id":1}`), Schema: f.conv.SchemaHash(), MessageID: "m1", PublishTimeMillis: time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC).UnixMilli()},
		{Payload: []byte(`{"id":2}`), Schema: f.conv.SchemaHash(), MessageID: "m2"},
	}}
	dead := map[string]string{}
	if err := f.ProcessElement(ctx, 0, rows, func(d flow.DeadLetter) { dead[d.MessageID] = d.ErrorMessage }, func([]string) {}); err != nil {
		t.Fatal(err)
	}
	if got := srv.MustQuery(t, "SELECT id, pt FROM events ORDER BY id"); got != "1\t2026-03-10 12:00:00" {
		t.Errorf("rows %q, want 1\\t2026-03-10 12:00:00 alone", got)
	}
	if got := dead["m2"]; !strings.Contains(got, `metadataColumns: pair "publish_time=pt"`) || !strings.Contains(got, "no publish time") {
		t.Errorf("dead letter of m2: %q, want one naming the pair publish_time=pt and the publish time it lacks", got)
	}
	if len(dead) != 1 {
		t.Errorf("%d dead letters, want 1: %v", len(dead), dead)
	}
}

// TestBufferDestinationGone: a Buffer table takes an INSERT whatever its destination, and
// ClickHouse discards at the flush what the destination cannot take ("Destination table ...
// doesn't exist. Block of data is discarded."). With the destination dropped while the job runs,
// the write stage took the INSERT for stored and the messages were acknowledged: the rows were
// lost. Now the destination is checked before each INSERT: the batch fails as a refusal (retried,
// nothing acknowledged, nothing dead-lettered), and once the destination is back the same batch
// lands in it.
func TestBufferDestinationGone(t *testing.T) {
	srv := chtest.New(t)
	dest := `CREATE TABLE {table} (id UInt32, name String) ENGINE = MergeTree ORDER BY id`
	srv.CreateTable(t, dest, "dest")
	// Flushed at once (min_time 0, min_rows 1), and at the latest after a second.
	srv.CreateTable(t, `CREATE TABLE {table} (id UInt32, name String) ENGINE = Buffer(`+srv.Database+`, dest, 1, 0, 1, 1, 1, 1, 1)`, "events")
	ctx := context.Background()
	f := &insertFn{Config: Config{ClickHouse: srv.Config(), Table: "events", Settings: chclient.Settings{MaxInsertBlockSize: 1000},
		Retry: chclient.Retry{MaxRetries: 1}}}
	if err := f.Setup(ctx); err != nil {
		t.Fatal(err)
	}
	defer f.Teardown()
	srv.MustExec(t, "DROP TABLE dest")
	var batch flow.Rows
	for i := 1; i <= 3; i++ {
		batch.Rows = append(batch.Rows, flow.Row{Payload: fmt.Appendf(nil, `{"id":%d,"name":"n%d"}`, i, i), Schema: f.conv.SchemaHash(),
			MessageID: fmt.Sprint("m", i), AckID: fmt.Sprint("a", i)})
	}
	var stored []string
	dead := func(d flow.DeadLetter) { t.Errorf("dead letter: %s", d.ErrorMessage) }
	err := f.ProcessElement(ctx, 0, batch, dead, func(ids []string) { stored = append(stored, ids...) })
	want := "passes its rows on to " + srv.Database + ".dest, which does not exist"
	if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "the messages stay unacknowledged") {
		t.Errorf("ProcessElement with the Buffer's destination dropped: %v, want an error holding %q", err, want)
	}
	if len(stored) != 0 {
		t.Errorf("messages acknowledged while the Buffer's destination is gone: %v", stored)
	}
	srv.CreateTable(t, dest, "dest")
	if err := f.ProcessElement(ctx, 0, batch, dead, func(ids []string) { stored = append(stored, ids...) }); err != nil {
		t.Fatalf("ProcessElement with the destination back: %v", err)
	}
	srv.MustExec(t, "OPTIMIZE TABLE events") // a Buffer's OPTIMIZE flushes it
	if got := srv.MustQuery(t, "SELECT groupArray(id) FROM (SELECT id FROM dest ORDER BY id)"); got != "[1,2,3]" {
		t.Errorf("rows in the destination: %s, want [1,2,3]", got)
	}
	if len(stored) != 3 {
		t.Errorf("acknowledged %v, want the 3 messages", stored)
	}
}

// TestBufferDestinationRefusedAtSetup: a Buffer table whose destination does not exist, or
// lacks one of its columns (whose values ClickHouse discards at each flush: "Destination table
// ... doesn't have column n. The default values are used."), is refused when the stage reads it,
// as at launch, naming both tables and the column.
func TestBufferDestinationRefusedAtSetup(t *testing.T) {
	for _, tt := range []struct {
		name, dest, want string
	}{
		{"no destination", "", "passes its rows on to {db}.dest, which does not exist"},
		{"a column missing", `CREATE TABLE {table} (id UInt32) ENGINE = MergeTree ORDER BY id`,
			`passes its rows on to {db}.dest, which has no column "name": ClickHouse discards that column's values at each flush`},
		{"every column there", `CREATE TABLE {table} (name String, id UInt32, other UInt8) ENGINE = MergeTree ORDER BY id`, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := chtest.New(t)
			if tt.dest != "" {
				srv.CreateTable(t, tt.dest, "dest")
			}
			srv.CreateTable(t, `CREATE TABLE {table} (id UInt32, name String, m UInt8 MATERIALIZED 1) ENGINE = Buffer(`+srv.Database+`, dest, 1, 0, 1, 1, 1, 1, 1)`, "events")
			conn := srv.Conn(t)
			_, err := schema.Fetch(context.Background(), conn, srv.Database, "events")
			want := strings.ReplaceAll(tt.want, "{db}", srv.Database)
			if want == "" && err != nil || want != "" && (err == nil || !strings.Contains(err.Error(), want)) {
				t.Errorf("reading the Buffer table: %v, want an error holding %q", err, want)
			}
		})
	}
}
