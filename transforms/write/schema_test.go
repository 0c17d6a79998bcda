package write

import (
	"context"
	"testing"
	"time"

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
