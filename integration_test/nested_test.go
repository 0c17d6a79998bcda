package integration_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/ch-beam/pubsub-to-clickhouse/internal/chtest"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/convert"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/flow"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/write"
)

// rowsCase is one table of an end-to-end test: its DDL, messages that must convert and be
// inserted in order, the expected TabSeparated output of each query (ORDER BY id), and messages
// that must be dead letters, with their whole error text.
type rowsCase struct {
	name string
	ddl  string // CREATE TABLE {table} …
	rows []string
	want map[string]string
	bad  map[string]string
}

// runRowsCase creates the table in the test's database, fetches its schema from system.columns,
// converts the rows, inserts them through the write stage's blocks as the pipeline does, and
// reads each expression back.
func runRowsCase(t *testing.T, srv *chtest.Server, conn driver.Conn, table string, tc rowsCase) {
	t.Helper()
	srv.CreateTable(t, tc.ddl, table)
	conv := insertThroughWriteStage(t, conn, srv.Database, table, tc.rows...)
	if got, want := srv.MustQuery(t, "SELECT count() FROM "+table), fmt.Sprint(len(tc.rows)); got != want {
		t.Fatalf("rows in table = %s, want %s", got, want)
	}
	for expr, want := range tc.want {
		got := srv.MustQuery(t, fmt.Sprintf("SELECT %s FROM %s ORDER BY id FORMAT TabSeparated", expr, table))
		if got != want {
			t.Errorf("SELECT %s = %q, want %q", expr, got, want)
		}
	}
	for payload, want := range tc.bad {
		_, err := conv.Convert(nil, []byte(payload))
		if err == nil || err.Error() != want {
			t.Errorf("payload %s: error %v, want %s", payload, err, want)
		}
	}
}

// TestNestedEndToEnd inserts the three forms of a Nested structure's fields (a field per column,
// an object of arrays, an array of objects) and dotted columns that are not a Nested structure
// into ClickHouse 18.16, which flattens Nested into n.a Array(UInt8), n.b Array(String), and
// reads the rows back. Before, the message {"id":4,"n":{"a":[3],"b":["z"]}} landed with empty
// arrays and no error.
func TestNestedEndToEnd(t *testing.T) {
	srv := chtest.New(t)
	conn := srv.Conn(t)
	const nType = `column "n" (Nested(a UInt8, b String)): `
	for i, tc := range []rowsCase{
		{
			name: "Nested",
			ddl: "CREATE TABLE {table} (id UInt32, n Nested(a UInt8, b String), x Nested(y UInt16, z Nullable(String)), " +
				"`d.k` Array(String), `d.v` Array(Array(UInt8)) DEFAULT arrayMap(s -> [toUInt8(length(s))], `d.k`)) ENGINE = MergeTree ORDER BY id",
			rows: []string{
				`{"id":1,"n":{"a":[3,4],"b":["y","z"]}}`,
				`{"id":2,"n":[{"a":3,"b":"y"},{"b":"z","a":4}],"x":[{"y":1},{"y":2,"z":"q"}]}`,
				`{"id":3,"n.a":[5],"n.b":["w"],"x.y":[7],"x.z":[null],"d":[{"k":"abc"},{"k":"de"}]}`,
				`{"id":4,"n":{"a":[3],"b":["z"]},"d":{"k":["xyz"],"v":[[9]]}}`,
				`{"id":5,"n":[],"x":null,"d":{}}`,
			},
			want: map[string]string{
				"n.a": "[3,4]\n[3,4]\n[5]\n[3]\n[]",
				"n.b": "['y','z']\n['y','z']\n['w']\n['z']\n[]",
				"x.y": "[]\n[1,2]\n[7]\n[]\n[]",
				"x.z": "[]\n[NULL,'q']\n[NULL]\n[]\n[]",
				"d.k": "[]\n[]\n['abc','de']\n['xyz']\n[]",
				"d.v": "[]\n[]\n[[3],[2]]\n[[9]]\n[]",
				"arrayStringConcat(arrayMap((a, b) -> concat(toString(a), b), n.a, n.b), ',')": "3y,4z\n3y,4z\n5w\n3z\n",
			},
			bad: map[string]string{
				`{"id":9,"n":"x"}`:                       nType + `"x" is a string; "n" takes an object of arrays ({"a":[…]}) or an array of objects ([{"a":…}])`,
				`{"id":9,"n":{"a":[3],"c":["z"]}}`:       nType + `"c" names no column: the table has no column "n.c", and nothing given under "n" is dropped`,
				`{"id":9,"n":[{"a":3,"b":"z"},{"a":4}]}`: `column "n.b" (Array(String)): element [1]: is missing, and the element type String is not Nullable`,
				`{"id":9,"n":{"a":[1,2],"b":["x"]}}`:     `column "n.b" (Array(String)): ["x"] has 1 element, but column "n.a" has 2; the arrays of the Nested structure "n" must be equally long in a row`,
				`{"id":9,"n":{"a":[3]},"n.b":["z"]}`:     nType + `{"a":[3]} is given together with the field "n.b"; a message gives the columns under "n." in one form: the field "n", or fields of their own names`,
				`{"id":9,"n":[3]}`:                       nType + `element [0]: 3 is not an object; each element of the array is an object of the columns under "n." ({"a":…})`,
			},
		},
		{
			name: "dotted columns",
			ddl:  "CREATE TABLE {table} (id UInt32, `user.id` UInt32, `user.name` String DEFAULT 'anon', `user.geo.lat` Nullable(Float64)) ENGINE = MergeTree ORDER BY id",
			rows: []string{
				`{"id":1,"user":{"id":7,"geo":{"lat":1.5}}}`,
				`{"id":2,"user":{"id":8,"name":"u","geo.lat":null}}`,
				`{"id":3,"user.id":9,"user.geo":{"lat":-2}}`,
				`{"id":4,"user.id":10,"user.name":"v"}`,
			},
			want: map[string]string{
				"`user.id`":      "7\n8\n9\n10",
				"`user.name`":    "anon\nu\nanon\nv",
				"`user.geo.lat`": "1.5\n\\N\n-2\n\\N",
			},
			bad: map[string]string{
				`{"id":9,"user":5}`:                  `column "user" (user.id UInt32, user.name String, user.geo.lat Nullable(Float64)): 5 is a number; "user" takes an object of its columns ({"id":…})`,
				`{"id":9,"user":{"id":1,"age":3}}`:   `column "user" (user.id UInt32, user.name String, user.geo.lat Nullable(Float64)): "age" names no column: the table has no column "user.age", and nothing given under "user" is dropped`,
				`{"id":9,"user":{"name":"x"}}`:       `column "user.id" (UInt32): the field is missing, and the column has no DEFAULT and is not Nullable`,
				`{"id":9,"user":{"id":1},"user":{}}`: `payload: field "user" appears twice; which value is meant is ambiguous`,
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) { runRowsCase(t, srv, conn, fmt.Sprintf("nested_%d", i), tc) })
	}
}

// TestNestedObjectFormAsTheServerReadsIt checks the object-of-arrays form against ClickHouse's own
// reading of it (JSONEachRow with input_format_import_nested_json = 1): the same message stores
// the same row either way. (18.16 reads neither the array-of-objects form nor, with its default
// settings, the object form, and with input_format_skip_unknown_fields = 1 it drops the field.)
func TestNestedObjectFormAsTheServerReadsIt(t *testing.T) {
	srv := chtest.New(t)
	conn := srv.Conn(t)
	const msg = `{"id":1,"n":{"a":[3,4],"b":["y","z"]}}`
	runRowsCase(t, srv, conn, "ours", rowsCase{
		ddl:  "CREATE TABLE {table} (id UInt32, n Nested(a UInt8, b String)) ENGINE = MergeTree ORDER BY id",
		rows: []string{msg},
	})
	srv.CreateTable(t, "CREATE TABLE {table} (id UInt32, n Nested(a UInt8, b String)) ENGINE = MergeTree ORDER BY id", "server")
	srv.MustExec(t, "INSERT INTO server FORMAT JSONEachRow "+msg, "input_format_import_nested_json=1")
	srv.MustExec(t, "INSERT INTO server FORMAT JSONEachRow "+strings.Replace(msg, `"id":1`, `"id":2`, 1), "input_format_skip_unknown_fields=1")
	if got, want := srv.MustQuery(t, "SELECT n.a, n.b FROM ours FORMAT TabSeparated"), "[3,4]\t['y','z']"; got != want {
		t.Errorf("pipeline: %q, want %q", got, want)
	}
	if got, want := srv.MustQuery(t, "SELECT n.a, n.b FROM server ORDER BY id FORMAT TabSeparated"), "[3,4]\t['y','z']\n[]\t[]"; got != want {
		t.Errorf("server: %q, want %q (the object form read, then dropped when unknown fields are skipped)", got, want)
	}
}

// insertThroughWriteStage converts each payload against the table's schema and inserts the rows
// through the write stage's blocks (write.Blocks, Block.Insert), as the pipeline does, and returns
// the converter; a payload that does not convert, or an INSERT that fails, fails the test.
func insertThroughWriteStage(t *testing.T, conn driver.Conn, database, table string, payloads ...string) *convert.Converter {
	t.Helper()
	sch, conv := converterOf(t, conn, database, table)
	var rows []*write.Row
	for j, payload := range payloads {
		row, err := conv.Convert(nil, []byte(payload))
		if err != nil {
			t.Fatalf("payload %s: %v", payload, err)
		}
		rows = append(rows, &write.Row{Row: &flow.Row{MessageID: fmt.Sprint(j)}, Data: row})
	}
	blocks, err := write.Blocks(sch.Writable(), rows, 1000, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range blocks {
		if err := b.Insert(context.Background(), conn, database, table, nil); err != nil {
			t.Fatalf("insert: %v", err)
		}
	}
	return conv
}
