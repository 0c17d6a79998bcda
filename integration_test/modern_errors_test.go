package integration_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/google/go-cmp/cmp"

	"github.com/ch-beam/pubsub-to-clickhouse/internal/chtest"
	"github.com/ch-beam/pubsub-to-clickhouse/pipeline"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/chclient"
)

// TestCodeNamesOnModern: every code of chclient's lists has, in the ClickHouse 26 engine's
// errorCodeToName, the name the list gives it.
func TestCodeNamesOnModern(t *testing.T) {
	srv := chtest.StartModern(t)
	known := chclient.KnownCodes()
	codes := make([]string, len(known))
	want := map[int32]string{}
	for i, k := range known {
		codes[i] = fmt.Sprint(k.Code)
		want[k.Code] = k.Name
	}
	got := map[int32]string{}
	for _, l := range strings.Split(srv.MustQuery(t, "SELECT c, errorCodeToName(c) FROM (SELECT arrayJoin(["+strings.Join(codes, ", ")+"]) AS c)"), "\n") {
		var code int32
		var name string
		if _, err := fmt.Sscanf(l, "%d\t%s", &code, &name); err != nil {
			t.Fatalf("%q: %v", l, err)
		}
		got[code] = name
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the lists' names (-) and ClickHouse %s's errorCodeToName (+):\n%s", srv.Version, diff)
	}
	t.Logf("%d codes, each named as ClickHouse %s names it", len(known), srv.Version)
}

// modernFault is a fault of an INSERT, and the code and class it must have on the ClickHouse 26
// engine.
type modernFault struct {
	name     string
	ddl      string // the table the fault needs, {db}.t; "" for none
	insert   string // the statement into {db}, sent through clickhouse-go as the pipeline sends its own
	settings clickhouse.Settings
	code     int32
	class    chclient.Class
}

// mergeTree is the DDL of a MergeTree table {db}.t of columns.
func mergeTree(columns string) string {
	return "CREATE TABLE {db}.t (" + columns + ") ENGINE = MergeTree ORDER BY tuple()"
}

var modernFaults = []modernFault{
	{"toUInt32 of text in a DEFAULT", mergeTree("id UInt32, raw String, v UInt32 DEFAULT toUInt32(raw)"), "INSERT INTO {db}.t (id, raw) VALUES (1, 'x')", nil, 6, chclient.Data},
	{"toDate of text in a DEFAULT", mergeTree("id UInt32, raw String, d Date DEFAULT toDate(raw)"), "INSERT INTO {db}.t (id, raw) VALUES (1, 'x')", nil, 38, chclient.Data},
	{"toDateTime of text in a DEFAULT", mergeTree("id UInt32, raw String, d DateTime DEFAULT toDateTime(raw)"), "INSERT INTO {db}.t (id, raw) VALUES (1, 'x')", nil, 41, chclient.Data},
	{"NULL into a String", mergeTree("id UInt32, s String"), "INSERT INTO {db}.t (id, s) VALUES (1, NULL)", clickhouse.Settings{"input_format_null_as_default": 0}, 53, chclient.Data},
	{"too many digits for toDecimal32 in a DEFAULT", mergeTree("id UInt32, raw String, d Decimal(9, 2) DEFAULT toDecimal32(raw, 2)"), "INSERT INTO {db}.t (id, raw) VALUES (1, '99999999999')", nil, 69, chclient.Data},
	{"accurateCast out of range in a DEFAULT", mergeTree("id UInt32, a Int64, x UInt8 DEFAULT accurateCast(a, 'UInt8')"), "INSERT INTO {db}.t (id, a) VALUES (1, 300)", nil, 70, chclient.Data},
	{"NULL from a SELECT, insert_null_as_default = 0", mergeTree("id UInt32, s String"), "INSERT INTO {db}.t (id, s) SELECT 1, NULL", clickhouse.Settings{"insert_null_as_default": 0}, 70, chclient.Data},
	{"toFloat64 of text in a DEFAULT", mergeTree("id UInt32, raw String, f Float64 DEFAULT toFloat64(raw)"), "INSERT INTO {db}.t (id, raw) VALUES (1, 'x')", nil, 72, chclient.Data},
	{"a JSON number beyond UInt64", mergeTree("id UInt32, j JSON"), `INSERT INTO {db}.t (id, j) VALUES (1, '{"n":18446744073709551616}')`, nil, 117, chclient.Data},
	{"toFixedString of a longer string in a DEFAULT", mergeTree("id UInt32, raw String, f FixedString(2) DEFAULT toFixedString(raw, 2)"), "INSERT INTO {db}.t (id, raw) VALUES (1, 'abc')", nil, 131, chclient.Data},
	{"division by zero in a DEFAULT", mergeTree("id UInt32, a Int32, b Int32, q Int32 DEFAULT intDiv(a, b)"), "INSERT INTO {db}.t (id, a, b) VALUES (1, 7, 0)", nil, 153, chclient.Data},
	{"arrays of different sizes in a MATERIALIZED arrayMap", mergeTree("id UInt32, x Array(UInt8), y Array(UInt8), s Array(UInt16) MATERIALIZED arrayMap((p, q) -> p + q, x, y)"), "INSERT INTO {db}.t (id, x, y) VALUES (1, [1, 2], [1])", nil, 190, chclient.Data},
	{"toUUID of text in a DEFAULT", mergeTree("id UInt32, raw String, u UUID DEFAULT toUUID(raw)"), "INSERT INTO {db}.t (id, raw) VALUES (1, 'not-a-uuid')", nil, 376, chclient.Data},
	{"throwIf in a MATERIALIZED column", mergeTree("id UInt32, name String, chk UInt8 MATERIALIZED throwIf(name = 'boom')"), "INSERT INTO {db}.t (id, name) VALUES (1, 'boom')", nil, 395, chclient.Data},
	{"Decimal overflow in a DEFAULT", mergeTree("id UInt32, a Int64, d Decimal(9, 2) DEFAULT toDecimal32(a, 2) * toDecimal32(a, 2)"), "INSERT INTO {db}.t (id, a) VALUES (1, 9999999)", nil, 407, chclient.Data},
	{"a CHECK constraint", mergeTree("id UInt32, a Int32, CONSTRAINT positive CHECK a > 0"), "INSERT INTO {db}.t (id, a) VALUES (1, -1)", nil, 469, chclient.Data},
	{"a CAST to an Enum of an unknown name in a DEFAULT (18.16: 49)", mergeTree("id UInt32, raw String, e Enum8('a' = 1, 'b' = 2) DEFAULT CAST(raw, 'Enum8(\\'a\\' = 1, \\'b\\' = 2)')"), "INSERT INTO {db}.t (id, raw) VALUES (1, 'zz')", nil, 691, chclient.Data},
	{"toUInt32 of an empty string in a DEFAULT", mergeTree("id UInt32, raw String, v UInt32 DEFAULT toUInt32(raw)"), "INSERT INTO {db}.t (id, raw) VALUES (1, '')", nil, 32, chclient.Unknown},
	{"splitByChar with a separator of two bytes", mergeTree("id UInt32, raw String, parts Array(String) DEFAULT splitByChar('ab', raw)"), "INSERT INTO {db}.t (id, raw) VALUES (1, 'x')", nil, 36, chclient.Unknown},
	{"a column that is not in the table", mergeTree("id UInt32"), "INSERT INTO {db}.t (id, gone) VALUES (1, 2)", nil, 16, chclient.Schema},
	{"the rows of insertDefaults, by a DEFAULT that names another column", mergeTree("a Int32 DEFAULT 1, b Int32 DEFAULT 2, q Int32 DEFAULT intDiv(a, b)"),
		"INSERT INTO {db}.t (q) SELECT intDiv(a, b) FROM (SELECT arrayJoin(range(2)) AS __pubsub_to_clickhouse_row)", nil, 47, chclient.Schema},
	{"a memory limit", mergeTree("id UInt64, s String"), "INSERT INTO {db}.t SELECT number, repeat('x', 1000) FROM numbers(100000)", clickhouse.Settings{"max_memory_usage": 100000}, 241, chclient.Memory},
	{"too many partitions for one INSERT", "CREATE TABLE {db}.t (id UInt64) ENGINE = MergeTree PARTITION BY id ORDER BY id", "INSERT INTO {db}.t SELECT number FROM numbers(3)", clickhouse.Settings{"max_partitions_per_insert_block": 1, "throw_on_max_partitions_per_insert_block": 1}, 252, chclient.Memory},
	{"a Merge table, which takes no INSERT", "CREATE TABLE {db}.t (id UInt32) ENGINE = Merge('{db}', '^nothing$')", "INSERT INTO {db}.t (id) VALUES (1)", nil, 48, chclient.Refused},
	{"a dropped table", "", "INSERT INTO {db}.gone (id) VALUES (1)", nil, 60, chclient.Refused},
	{"a dropped database", "", "INSERT INTO gone_database.t (id) VALUES (1)", nil, 81, chclient.Refused},
	{"a read-only user", mergeTree("id UInt32"), "INSERT INTO {db}.t (id) VALUES (1)", clickhouse.Settings{"readonly": 1}, 164, chclient.Refused},
}

// TestErrorCodesOnModern provokes each fault of modernFaults on the ClickHouse 26 engine through
// clickhouse-go's HTTP transport, as the write stage meets it: the engine's code is the one the
// case names, chclient.Classify gives the case's class, and a listed code has the engine's name.
// The partitions case is 252 with "partitions for single INSERT block", which Classify reads in
// the text. A column named by the write stage's batch but dropped from the table (chclient.Insert
// over HTTP) is a Schema error too.
func TestErrorCodesOnModern(t *testing.T) {
	srv := chtest.StartModern(t)
	conn := srv.Conn(t)
	ctx := context.Background()
	names := map[int32]string{}
	for _, k := range chclient.KnownCodes() {
		names[k.Code] = k.Name
	}
	type outcome struct {
		Code  int32
		Class string
	}
	for i, f := range modernFaults {
		t.Run(f.name, func(t *testing.T) {
			db := fmt.Sprintf("faults_%d", i)
			srv.MustExec(t, "CREATE DATABASE "+db)
			if f.ddl != "" {
				srv.MustExec(t, strings.ReplaceAll(f.ddl, "{db}", db))
			}
			err := conn.Exec(clickhouse.Context(ctx, clickhouse.WithSettings(f.settings)), strings.ReplaceAll(f.insert, "{db}", db))
			code, ok := chclient.Code(err)
			if !ok {
				t.Fatalf("%s: %v, want the server's code %d", f.insert, err, f.code)
			}
			want := outcome{f.code, f.class.String()}
			if diff := cmp.Diff(want, outcome{code, chclient.Classify(err).String()}); diff != "" {
				t.Errorf("%s: %v (-want +got):\n%s", f.insert, err, diff)
			}
			if n := names[code]; n != "" && !strings.Contains(err.Error(), "("+n+")") {
				t.Errorf("the engine's text does not name %s: %v", n, err)
			}
		})
	}
	t.Run("a column dropped under the write stage's batch", func(t *testing.T) {
		srv.MustExec(t, "CREATE TABLE dropped (id UInt32, s String) ENGINE = MergeTree ORDER BY id")
		srv.MustExec(t, "ALTER TABLE dropped DROP COLUMN s")
		err := chclient.Insert(ctx, conn, srv.Database, "dropped", []string{"id", "s"}, []any{[]uint32{1}, []string{"x"}}, nil, false, chclient.Identity{})
		if got := chclient.Classify(err); got != chclient.Schema {
			t.Errorf("chclient.Insert naming a dropped column: %v, classified %v, want %v", err, got, chclient.Schema)
		}
	})
}

// TestNullTimesInArraysOnModern: a NULL element of Array(Nullable(Time)) or
// Array(Nullable(Time64(3))) is stored as NULL, as the ClickHouse 26 engine's JSONEachRow stores
// it. clickhouse-go v2.51.0 refused it ("converting <nil> to Time is unsupported"), which failed
// every INSERT of its batch as a change of the table, read again twice, and then the bundle at
// each retry, holding up every message with it.
func TestNullTimesInArraysOnModern(t *testing.T) {
	srv := chtest.StartModern(t)
	e := newE2EOn(t, srv.Server, `CREATE TABLE {table} (id UInt32, a Array(Nullable(Time)), b Map(String, Array(Nullable(Time64(3))))) ENGINE = MergeTree ORDER BY id`)
	e.opts.WindowSeconds = pipeline.GivenInt(1)
	e.publishJSON(t, `{"id":1,"a":["00:00:01"]}`, `{"id":2,"a":["00:00:02",null],"b":{"k":[null,"01:00:00.5"]}}`, `{"id":3,"a":[]}`)
	e.runBinary(t, "")
	if got, want := srv.MustQuery(t, "SELECT id, a, b FROM events ORDER BY id"),
		"1\t['00:00:01']\t{}\n2\t['00:00:02',NULL]\t{'k':[NULL,'01:00:00.500']}\n3\t[]\t{}"; got != want {
		t.Errorf("rows:\n%s\nwant\n%s", got, want)
	}
	if got := srv.MustQuery(t, "SELECT count() FROM dead_letters"); got != "0" {
		t.Errorf("%s dead letters, want none: %s", got, srv.MustQuery(t, "SELECT error_message FROM dead_letters"))
	}
}
