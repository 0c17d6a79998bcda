package evolve

import (
	"context"
	"strings"
	"testing"

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
	server, err := ServerOfConn(ctx, conn)
	if err != nil {
		t.Fatal(err)
	}
	rule := Rule{Server: server}
	s := NewSample(rule)
	for _, m := range serverSample {
		if err := s.Add([]byte(m)); err != nil {
			t.Fatalf("%s: %v", m, err)
		}
	}
	cols := s.Columns()
	if diff := cmp.Diff([]string{"never"}, s.Pending()); diff != "" {
		t.Errorf("pending (-want +got):\n%s", diff)
	}
	// The table without its last column, "late", which ADD COLUMN adds.
	last := cols[len(cols)-1]
	if last.Name != "late" {
		t.Fatalf("last column %q, want late", last.Name)
	}
	ddl, err := CreateTable(srv.Database, "events", cols[:len(cols)-1], "", "")
	if err != nil {
		t.Fatal(err)
	}
	if err := conn.Exec(ctx, ddl); err != nil {
		t.Fatalf("%s\n%v", ddl, err)
	}
	add := server.AddColumn(srv.Database, "events", last.Name, last.Type, "")
	if err := conn.Exec(ctx, add); err != nil {
		t.Fatalf("%s: %v", add, err)
	}
	if err := conn.Exec(ctx, add); !AlreadyExists(err) {
		t.Errorf("second %s: %v, want the server's refusal of an existing column", add, err)
	}
	// Another type for an existing column: refused the same way, and the column keeps its type.
	other := server.AddColumn(srv.Database, "events", "count", "Nullable(String)", "")
	if err := conn.Exec(ctx, other); !AlreadyExists(err) {
		t.Errorf("%s: %v, want the server's refusal of an existing column", other, err)
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
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("columns (-want +got):\n%s", diff)
	}

	// Insert the sample as the pipeline does: its converter against the table's schema, the
	// rows decoded into columns, one INSERT.
	tab, err := schema.Fetch(ctx, conn, srv.Database, "events")
	if err != nil {
		t.Fatal(err)
	}
	conv, err := convert.New(tab)
	if err != nil {
		t.Fatal(err)
	}
	writable := tab.Writable()
	types := make([]*chtype.Type, len(writable))
	names := make([]string, len(writable))
	columns := make([]convert.Column, len(writable))
	for i, c := range writable {
		types[i], names[i] = c.Type, c.Name
		if columns[i], err = convert.NewColumn(c.Type); err != nil {
			t.Fatal(err)
		}
	}
	layout, err := convert.NewLayout(types)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range serverSample {
		row, err := conv.Convert(nil, []byte(m))
		if err != nil {
			t.Fatalf("%s: %v", m, err)
		}
		spans, err := layout.Split(row, nil)
		if err != nil {
			t.Fatal(err)
		}
		for i, c := range columns {
			if err := c.Append(spans[i]); err != nil {
				t.Fatal(err)
			}
		}
	}
	values := make([]any, len(columns))
	for i, c := range columns {
		values[i] = c.Values()
	}
	if err := chclient.Insert(ctx, conn, srv.Database, "events", names, values, nil, false, chclient.Identity{}); err != nil {
		t.Fatal(err)
	}
	got = srv.MustQuery(t, "SELECT * FROM events ORDER BY id FORMAT TSV")
	want = strings.Join([]string{
		"1\t42\t18446744073709551615\t0.5\t1\tfirst\t[\"a\",\"b\"]\t{\"k\":[1,2.50]}\t1\tq\t1\t1\tü\t\\N",
		"2\t-7\t0\t1000\t0\t\t[]\t{}\t-2\t\\N\t\\N\t\\N\t\\N\t\\N",
		"3\t\\N\t\\N\t42\t\\N\tline\\nbreak é\t\\N\t\\N\t\\N\t\\N\t\\N\t\\N\t\\N\t2.25",
	}, "\n")
	if server.Bool {
		want = strings.NewReplacer("\t1\tfirst", "\ttrue\tfirst", "\t0\t\t", "\tfalse\t\t").Replace(want)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("rows (-want +got):\n%s", diff)
	}
}
