package schema

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
	"github.com/google/go-cmp/cmp"
)

// fakeConn answers Fetch's queries from a table's system.columns rows, its engine and the server's
// time zone; every other method of driver.Conn is absent.
type fakeConn struct {
	driver.Conn
	zone    string
	columns [][4]string // name, type, default_kind, default_expression
	engine  string      // "" when system.tables has no row
	fail    error       // the error of the system.columns query
	args    []any       // the arguments of the system.columns query
}

func (c *fakeConn) QueryRow(_ context.Context, query string, args ...any) driver.Row {
	switch {
	case query == "SELECT timezone()":
		return fakeRow{values: []string{c.zone}}
	case strings.Contains(query, "FROM system.tables"):
		if c.engine == "" {
			return fakeRow{err: errors.New("sql: no rows in result set")}
		}
		return fakeRow{values: []string{c.engine}}
	}
	return fakeRow{err: errors.New("unexpected query " + query)}
}

func (c *fakeConn) Query(_ context.Context, query string, args ...any) (driver.Rows, error) {
	if !strings.Contains(query, "FROM system.columns") {
		return nil, errors.New("unexpected query " + query)
	}
	c.args = args
	if c.fail != nil {
		return nil, c.fail
	}
	return &fakeRows{rows: c.columns, next: -1}, nil
}

type fakeRow struct {
	driver.Row
	values []string
	err    error
}

func (r fakeRow) Scan(dest ...any) error {
	if r.err != nil {
		return r.err
	}
	return scan(r.values, dest)
}

type fakeRows struct {
	driver.Rows
	rows [][4]string
	next int
}

func (r *fakeRows) Next() bool             { r.next++; return r.next < len(r.rows) }
func (r *fakeRows) Scan(dest ...any) error { return scan(r.rows[r.next][:], dest) }
func (r *fakeRows) Err() error             { return nil }
func (r *fakeRows) Close() error           { return nil }

func scan(values []string, dest []any) error {
	if len(values) != len(dest) {
		return errors.New("wrong number of columns scanned")
	}
	for i, d := range dest {
		*d.(*string) = values[i]
	}
	return nil
}

func TestFetch(t *testing.T) {
	conn := &fakeConn{zone: "Europe/Oslo", engine: "MergeTree", columns: [][4]string{
		{"id", "String", "", ""},
		{"ts", "DateTime('UTC')", "default", "now()"},
		{"day", "Date", "MATERIALIZED", "toDate(ts)"},
		{"len", "UInt64", "ALIAS", "length(id)"},
		{"tmp", "String", "EPHEMERAL", "''"},
		{"tags", "Array(Nullable(String))", "", ""},
	}}
	got, err := Fetch(context.Background(), conn, "db", "events")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]any{"db", "events"}, conn.args); diff != "" {
		t.Errorf("system.columns query arguments (-want +got):\n%s", diff)
	}
	if got.Database != "db" || got.Name != "events" || got.ServerTimeZone != "Europe/Oslo" || len(got.Columns) != 6 {
		t.Fatalf("Fetch = %s.%s in %s with %d columns", got.Database, got.Name, got.ServerTimeZone, len(got.Columns))
	}
	type col struct {
		Name, Type, Kind     string
		Writable, HasDefault bool
	}
	var cols []col
	for _, c := range got.Columns {
		cols = append(cols, col{c.Name, c.Type.String(), c.DefaultKind, c.Writable(), c.HasDefault()})
	}
	want := []col{
		{"id", "String", "", true, false},
		{"ts", "DateTime('UTC')", "DEFAULT", true, true}, // the kind upper-cased, as older servers spell it in lower case
		{"day", "Date", "MATERIALIZED", false, false},
		{"len", "UInt64", "ALIAS", false, false},
		{"tmp", "String", "EPHEMERAL", false, false},
		{"tags", "Array(Nullable(String))", "", true, false},
	}
	if diff := cmp.Diff(want, cols); diff != "" {
		t.Errorf("columns (-want +got):\n%s", diff)
	}
	var writable []string
	for _, c := range got.Writable() {
		writable = append(writable, c.Name)
	}
	if diff := cmp.Diff([]string{"id", "ts", "tags"}, writable); diff != "" {
		t.Errorf("Writable (-want +got):\n%s", diff)
	}
}

func TestFetchRefuses(t *testing.T) {
	tests := []struct {
		name string
		conn fakeConn
		want string
	}{
		{"no such table", fakeConn{}, "table db.events does not exist (no columns in system.columns)"},
		{"nothing writable", fakeConn{columns: [][4]string{{"a", "UInt8", "ALIAS", "1"}}},
			"table db.events has no column an INSERT may write"},
		{"a view", fakeConn{engine: "View", columns: [][4]string{{"a", "UInt8", "", ""}}},
			"db.events is a View, which cannot be inserted into"},
		{"a backtick in a writable column's name", fakeConn{columns: [][4]string{{"a`b", "UInt8", "", ""}}},
			"table db.events column \"a`b\": a name with a backtick or a backslash is not supported"},
		{"a type that does not parse", fakeConn{columns: [][4]string{{"a", "Array(UInt8", "", ""}}},
			`table db.events column "a": `},
		{"system.columns unreadable", fakeConn{fail: errors.New("code: 497, message: not enough privileges")},
			"reading the columns of table db.events from system.columns: code: 497"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Fetch(context.Background(), &tt.conn, "db", "events")
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Fetch: %v, want an error containing %q", err, tt.want)
			}
		})
	}
	// A backtick in a column never written is no obstacle.
	conn := &fakeConn{columns: [][4]string{{"a", "UInt8", "", ""}, {"b`c", "UInt8", "MATERIALIZED", "a"}}}
	if _, err := Fetch(context.Background(), conn, "db", "events"); err != nil {
		t.Errorf("Fetch with a backtick in a MATERIALIZED column's name: %v", err)
	}
}
