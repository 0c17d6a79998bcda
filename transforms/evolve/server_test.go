package evolve

import (
	"context"
	"strings"
	"testing"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
	"github.com/google/go-cmp/cmp"

	"github.com/ch-beam/pubsub-to-clickhouse/internal/chtest"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/chclient"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/chtype"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/convert"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/schema"
)

// serverSample is a sample of messages with every kind of the rule, and names with a space, a
// double quote, a single quote, a dot and non-ASCII letters.
var serverSample = []string{
	`{"id": 1, "count": 42, "big": 18446744073709551615, "ratio": 0.5, "ok": true, "name": "first", "tags": ["a", "b"], "obj": {"k":  [1, 2.50]}, "a b": 1, "q\"x": "q", "it's": 1, "a.b": 1, "名前": "ü", "never": null}`,
	`{"id": 2, "count": -7, "big": 0, "ratio": 1e3, "ok": false, "name": "", "tags": [], "obj": {}, "a b": -2, "q\"x": null, "never": null}`,
	`{"id": 3, "count": null, "ratio": 42, "ok": null, "name": "line\nbreak \u00e9", "tags": null, "late": 2.25}`,
}

// TestOnServer: on the server (ClickHouse 18.16 here), the table the rule infers from a sample is
// created, a column added later by ADD COLUMN is added once (the second ADD is refused as
// existing, which AlreadyExists recognises; 18.16 has no IF NOT EXISTS), an ADD of an existing
// column with another type leaves it as it is, and the sample, converted by the product's
// converter against the table's schema, is inserted and read back as the rule says.
func TestOnServer(t *testing.T) {
	ctx := context.Background()
	srv := chtest.New(t)
	conn := srv.Conn(t)
	server, s, last := createFromSample(t, conn, srv.Database, false, serverSample)
	if diff := cmp.Diff([]string{"never"}, s.Pending()); diff != "" {
		t.Errorf("pending (-want +got):\n%s", diff)
	}
	if last.Name != "late" {
		t.Fatalf("last column %q, want late", last.Name)
	}
	add := server.AddColumn(srv.Database, "events", last.Name, last.Type, "")
	if err := conn.Exec(ctx, add); err != nil {
		t.Fatalf("%s: %v", add, err)
	}
	// The second ADD, and one of another type for an existing column: refused as existing; the
	// column keeps its type.
	other := server.AddColumn(srv.Database, "events", "count", "Nullable(String)", "")
	for _, q := range []string{add, other} {
		if err := conn.Exec(ctx, q); !AlreadyExists(err) {
			t.Errorf("%s on a column that exists: %v", q, err)
		}
	}
	if !server.AddIfNotExists {
		// What this server makes of IF NOT EXISTS: a syntax error, not a no-op.
		err := conn.Exec(ctx, AddColumn(srv.Database, "events", "late", last.Type, ""))
		if code, _ := chclient.Code(err); code != 62 {
			t.Errorf("ADD COLUMN IF NOT EXISTS on a server without it: %v, want code 62 (a syntax error)", err)
		}
	} else if err := conn.Exec(ctx, AddColumn(srv.Database, "events", "late", last.Type, "")); err != nil {
		t.Errorf("ADD COLUMN IF NOT EXISTS of an existing column: %v", err)
	}
	got := srv.MustQuery(t, "SELECT name, type FROM system.columns WHERE database = currentDatabase() AND table = 'events' FORMAT TSVRaw") // in table order (18.16 has no position)
	want := strings.Join([]string{
		"id\tNullable(Int64)",
		"count\tNullable(Int64)",
		"big\tNullable(UInt64)",
		"ratio\tNullable(Float64)",
		"ok\tNullable(UInt8)",
		"name\tNullable(String)",
		"tags\tNullable(String)",
		"obj\tNullable(String)",
		"a b\tNullable(Int64)",
		"q\"x\tNullable(String)",
		"it's\tNullable(Int64)",
		"a.b\tNullable(Int64)",
		"名前\tNullable(String)",
		"late\tNullable(Float64)",
	}, "\n")
	if server.Bool {
		want = strings.Replace(want, "ok\tNullable(UInt8)", "ok\tNullable(Bool)", 1)
	}
	expect(t, "columns", want, got)
	insertSample(t, conn, srv.Database, "events", serverSample)
	got = srv.MustQuery(t, "SELECT * FROM events ORDER BY id FORMAT TSV")
	want = strings.Join([]string{
		"1\t42\t18446744073709551615\t0.5\t1\tfirst\t[\"a\",\"b\"]\t{\"k\":[1,2.50]}\t1\tq\t1\t1\tü\t\\N",
		"2\t-7\t0\t1000\t0\t\t[]\t{}\t-2\t\\N\t\\N\t\\N\t\\N\t\\N",
		"3\t\\N\t\\N\t42\t\\N\tline\\nbreak é\t\\N\t\\N\t\\N\t\\N\t\\N\t\\N\t\\N\t2.25",
	}, "\n")
	if server.Bool {
		want = strings.NewReplacer("\t1\tfirst", "\ttrue\tfirst", "\t0\t\t", "\tfalse\t\t").Replace(want)
	}
	expect(t, "rows", want, got)
}

// createFromSample creates database.events from the columns that the messages give by the rule
// for conn's server (objects as JSON when asJSON), all but the last, and returns the server, the
// sample and that last column, for ADD COLUMN.
func createFromSample(t *testing.T, conn driver.Conn, database string, asJSON bool, messages []string) (Server, *Sample, Column) {
	t.Helper()
	ctx := context.Background()
	server, err := ServerOfConn(ctx, conn)
	if err != nil {
		t.Fatal(err)
	}
	s := NewSample(Rule{Server: server, ObjectsAsJSON: asJSON})
	for _, m := range messages {
		if err := s.Add([]byte(m)); err != nil {
			t.Fatalf("%s: %v", m, err)
		}
	}
	cols := s.Columns()
	ddl, err := CreateTable(database, "events", cols[:len(cols)-1], "", "")
	if err != nil {
		t.Fatal(err)
	}
	if err := conn.Exec(ctx, ddl); err != nil {
		t.Fatalf("%s\n%v", ddl, err)
	}
	return server, s, cols[len(cols)-1]
}

// expect fails the test, showing the difference, when got is not want.
func expect(t *testing.T, what, want, got string) {
	t.Helper()
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("%s (-want +got):\n%s", what, diff)
	}
}

// insertSample inserts the messages into database.table as the pipeline does: its converter
// against the table's schema, each row decoded into columns, and an INSERT of the columns it
// gives (one a message: a row that leaves a column to its DEFAULT does not name it, as the write
// stage's blocks do not).
func insertSample(t *testing.T, conn driver.Conn, database, table string, messages []string) {
	t.Helper()
	ctx := context.Background()
	tab, err := schema.Fetch(ctx, conn, database, table)
	if err != nil {
		t.Fatal(err)
	}
	conv, err := convert.New(tab)
	if err != nil {
		t.Fatal(err)
	}
	writable := tab.Writable()
	types := make([]*chtype.Type, len(writable))
	for i, c := range writable {
		types[i] = c.Type
	}
	layout, err := convert.NewLayout(types)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range messages {
		row, err := conv.Convert(nil, []byte(m))
		if err != nil {
			t.Fatalf("%s: %v", m, err)
		}
		spans, err := layout.Split(row, nil)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		var values []any
		for i, c := range writable {
			if spans[i] == nil {
				continue // the server computes its DEFAULT
			}
			col, err := convert.NewColumn(c.Type)
			if err != nil {
				t.Fatal(err)
			}
			if err := col.Append(spans[i]); err != nil {
				t.Fatal(err)
			}
			names, values = append(names, c.Name), append(values, col.Values())
		}
		if err := chclient.Insert(ctx, conn, database, table, names, values, nil, false, chclient.Identity{}); err != nil {
			t.Fatalf("%s: %v", m, err)
		}
	}
}

// modernSample has a boolean, an object (null in one message, missing in another) and an array.
var modernSample = []string{
	`{"id": 1, "ok": true, "obj": {"a": 1, "b": {"c": "x"}}, "arr": [1, {"k": 2}]}`,
	`{"id": 2, "ok": false, "obj": null}`,
	`{"id": 3, "ok": null, "arr": []}`,
}

// TestOnModern: on the ClickHouse 26 engine (skipped where it is not installed), booleans are
// Bool columns and, with ObjectsAsJSON, objects a JSON DEFAULT '{}' column, which takes an
// object, null and a missing field alike; the ADD COLUMN of a column that exists is refused as
// existing (AlreadyExists), and ADD COLUMN IF NOT EXISTS of it is a no-op, whatever the type
// asked.
func TestOnModern(t *testing.T) {
	ctx := context.Background()
	srv := chtest.StartModern(t)
	conn := srv.Conn(t)
	server, _, last := createFromSample(t, conn, srv.Database, true, modernSample)
	if !server.Bool || !server.JSON || !server.AddIfNotExists {
		t.Fatalf("ClickHouse %s: %+v, want every capability", srv.Version, server)
	}
	add := server.AddColumn(srv.Database, "events", last.Name, last.Type, "")
	if err := conn.Exec(ctx, add); err != nil {
		t.Fatalf("%s: %v", add, err)
	}
	for _, add := range []string{add, server.AddColumn(srv.Database, "events", "ok", "Nullable(String)", "")} {
		if err := conn.Exec(ctx, add); !AlreadyExists(err) {
			t.Errorf("%s on a column that exists: %v, want it refused as existing", add, err)
		}
	}
	for _, add := range []string{
		AddColumn(srv.Database, "events", last.Name, last.Type, ""),
		AddColumn(srv.Database, "events", "ok", "Nullable(String)", ""),
	} {
		if err := conn.Exec(ctx, add); err != nil {
			t.Errorf("%s: %v", add, err)
		}
	}
	got := srv.MustQuery(t, "SELECT name, type FROM system.columns WHERE database = currentDatabase() AND table = 'events' ORDER BY position FORMAT TSVRaw")
	expect(t, "columns", "id\tNullable(Int64)\nok\tNullable(Bool)\nobj\tJSON\narr\tNullable(String)", got)
	insertSample(t, conn, srv.Database, "events", modernSample)
	got = srv.MustQuery(t, "SELECT id, ok, toString(obj), arr FROM events ORDER BY id FORMAT TSV")
	expect(t, "rows", strings.Join([]string{
		"1\ttrue\t{\"a\":1,\"b\":{\"c\":\"x\"}}\t[1,{\"k\":2}]",
		"2\tfalse\t{}\t\\N",
		"3\t\\N\t{}\t[]",
	}, "\n"), got)
}
