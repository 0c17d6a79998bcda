package schema

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/ch-beam/pubsub-to-clickhouse/internal/schemafake"
)

func TestFetch(t *testing.T) {
	conn := &schemafake.Conn{Zone: "Europe/Oslo", Engine: "MergeTree", Columns: [][4]string{
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
	if diff := cmp.Diff([]any{"db", "events"}, conn.Args); diff != "" {
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
		{"tmp", "String", "EPHEMERAL", true, true}, // written, for the DEFAULTs that read it; omitted, its own default
		{"tags", "Array(Nullable(String))", "", true, false},
	}
	if diff := cmp.Diff(want, cols); diff != "" {
		t.Errorf("columns (-want +got):\n%s", diff)
	}
	var writable []string
	for _, c := range got.Writable() {
		writable = append(writable, c.Name)
	}
	if diff := cmp.Diff([]string{"id", "ts", "tmp", "tags"}, writable); diff != "" {
		t.Errorf("Writable (-want +got):\n%s", diff)
	}
	// An EPHEMERAL column marked NotWritten (a type without a converter: convert.NewWith) is not.
	got.Columns[4].NotWritten = "its type has no converter"
	if got.Columns[4].Writable() || len(got.Writable()) != 3 {
		t.Errorf("an EPHEMERAL column marked NotWritten is writable")
	}
}

func TestFetchRefuses(t *testing.T) {
	tests := []struct {
		name string
		conn schemafake.Conn
		want string
	}{
		{"no such table", schemafake.Conn{}, "table db.events does not exist (no columns in system.columns)"},
		{"nothing writable", schemafake.Conn{Columns: [][4]string{{"a", "UInt8", "ALIAS", "1"}}},
			"table db.events has no column an INSERT may write"},
		{"a view", schemafake.Conn{Engine: "View", Columns: [][4]string{{"a", "UInt8", "", ""}}},
			"db.events is a View, which cannot be inserted into"},
		{"a Merge table", schemafake.Conn{Engine: "Merge", Columns: [][4]string{{"a", "UInt8", "", ""}}},
			"db.events has the engine Merge, which cannot be inserted into"},
		{"a system table", schemafake.Conn{Engine: "SystemNumbers", Columns: [][4]string{{"number", "UInt64", "", ""}}},
			"db.events has the engine SystemNumbers, which cannot be inserted into"},
		{"a backtick in the only writable column's name", schemafake.Conn{Columns: [][4]string{{"a`b", "UInt8", "", ""}}},
			"table db.events column \"a`b\": the name holds a backtick or a backslash, which clickhouse-go cannot name in an INSERT; rename the column; the table has no column an INSERT may write besides"},
		{"a type that does not parse", schemafake.Conn{Columns: [][4]string{{"a", "Array(UInt8", "", ""}}},
			`table db.events column "a": `},
		{"system.columns unreadable", schemafake.Conn{Fail: errors.New("code: 497, message: not enough privileges")},
			"reading the columns of table db.events from system.columns: code: 497"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Fetch(context.Background(), &tt.conn, "db", "events")
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Fetch: %v, want an error containing %q", err, tt.want)
			}
			if notFound := tt.name == "no such table"; errors.Is(err, ErrNotFound) != notFound {
				t.Errorf("errors.Is(%v, ErrNotFound) = %v, want %v", err, !notFound, notFound)
			}
		})
	}
	// A backtick in a column never written is no obstacle.
	conn := &schemafake.Conn{Columns: [][4]string{{"a", "UInt8", "", ""}, {"b`c", "UInt8", "MATERIALIZED", "a"}}}
	if _, err := Fetch(context.Background(), conn, "db", "events"); err != nil {
		t.Errorf("Fetch with a backtick in a MATERIALIZED column's name: %v", err)
	}
}

// TestFetchLeavesOutNamesClickHouseGoCannotName: a writable column whose name clickhouse-go
// cannot put in an INSERT (chclient.InsertNameFault) is marked not written, so that a worker
// that reads one added while the job runs leaves it to its DEFAULT instead of failing every
// INSERT; NameFault names the first, for the launch and the check command to refuse the table.
func TestFetchLeavesOutNamesClickHouseGoCannotName(t *testing.T) {
	conn := &schemafake.Conn{Columns: [][4]string{{"id", "UInt8", "", ""}, {"sum (x)", "UInt64", "", ""},
		{"note settings max_threads=2", "String", "DEFAULT", "''"}, {"a`b", "UInt8", "MATERIALIZED", "id"}}}
	got, err := Fetch(context.Background(), conn, "db", "events")
	if err != nil {
		t.Fatal(err)
	}
	var writable []string
	for _, c := range got.Writable() {
		writable = append(writable, c.Name)
	}
	if diff := cmp.Diff([]string{"id"}, writable); diff != "" {
		t.Errorf("writable columns (-want +got):\n%s", diff)
	}
	for i, want := range map[int]string{
		1: "its name holds whitespace before a '(', which clickhouse-go cannot read around",
		2: `its name holds "settings max_threads=" after whitespace, a semicolon or a closing parenthesis`,
		3: "", // computed: never written anyway
	} {
		if c := got.Columns[i]; !strings.HasPrefix(c.NotWritten, want) || (want == "") != (c.NotWritten == "") {
			t.Errorf("column %q: NotWritten %q, want %q…", c.Name, c.NotWritten, want)
		}
	}
	want := "table db.events column \"sum (x)\": the name holds whitespace before a '(', which clickhouse-go cannot read around: it finds the column list of an INSERT by its parentheses; rename the column"
	if err := got.NameFault(); err == nil || err.Error() != want {
		t.Errorf("NameFault: %v,\nwant %s", err, want)
	}
	got.Columns[1].NotWritten, got.Columns[2].NotWritten = "", ""
	if err := got.NameFault(); err != nil {
		t.Errorf("NameFault with every name fine: %v", err)
	}
}

// TestBufferDestination: the destination of a Buffer table, as 18.16 (identifiers) and 26.7
// (string literals) write its engine_full; an expression is not read.
func TestBufferDestination(t *testing.T) {
	for _, tt := range []struct {
		full string
		want Destination
		ok   bool
	}{
		{"Buffer(analytics, events_local, 16, 10, 100, 10000, 1000000, 10000000, 100000000)", Destination{"analytics", "events_local"}, true},
		{`Buffer('analytics', 'events_local', 16, 10, 100, 10000, 1000000, 10000000, 100000000)`, Destination{"analytics", "events_local"}, true},
		{"Buffer(`my db`, `it``s`, 16, 10, 100, 10000, 1000000, 10000000, 100000000)", Destination{"my db", "it`s"}, true},
		{`Buffer('a\'b', 'c', 1, 1, 1, 1, 1, 1, 1)`, Destination{"a'b", "c"}, true},
		{`Buffer('', '', 16, 10, 100, 10000, 1000000, 10000000, 100000000)`, Destination{}, true},
		{"Buffer(currentDatabase(), events, 16, 10, 100, 10000, 1000000, 10000000, 100000000)", Destination{}, false},
		{"MergeTree ORDER BY id", Destination{}, false},
	} {
		got, ok := bufferDestination(tt.full)
		if got != tt.want || ok != tt.ok {
			t.Errorf("bufferDestination(%q) = %+v, %v, want %+v, %v", tt.full, got, ok, tt.want, tt.ok)
		}
	}
}
