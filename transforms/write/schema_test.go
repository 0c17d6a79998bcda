package write

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/ch-beam/pubsub-to-clickhouse/internal/chtest"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/chclient"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/convert"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/flow"
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
		}}
		var dead []string
		if err := f.ProcessElement(ctx, 0, rows, func(d flow.DeadLetter) { dead = append(dead, string(d.Payload)+": "+d.ErrorMessage) }, func([]string) {}); err != nil {
			t.Fatal(err)
		}
		f.Teardown()
		want, wantRows := []string(nil), "1\n2\n3"
		if add {
			want = []string{`{"id":1,"bar":2}: field "bar" (value 2) names no column any more: with addNewColumns the parse stage gave it one, so the column is gone since (dropped or renamed) or not yet visible on the server this worker writes to; the message is a dead letter rather than a row without the value (replaying it adds the column again)`}
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
