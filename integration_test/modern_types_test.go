package integration_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/ch-beam/pubsub-to-clickhouse/internal/chtest"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/flow"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/write"
)

// modernTypeCase is one value of a type, as the ClickHouse 26 engine stores and prints it.
type modernTypeCase struct {
	typ   string // the column's type
	value string // the JSON of the field
	want  string // toString of the stored value, as the engine prints it (\N for NULL)
	// expr, when set, is what is read back instead of toString(x): where toString would hide a
	// difference (FixedString's padding, BFloat16's last digits).
	expr string
}

// modernTypeCases covers the types of docs/conversion.md's table, the newer ones (which 18.16
// lacks) at their edges.
var modernTypeCases = []modernTypeCase{
	// 18.16's types, on a current server.
	{"Int8", `-128`, "-128", ""},
	{"UInt64", `"18446744073709551615"`, "18446744073709551615", ""},
	{"Int64", `9007199254740993`, "9007199254740993", ""},
	{"Float32", `0.1`, "0.1", ""},
	{"Float64", `"-Infinity"`, "-inf", ""},
	{"String", `"Zürich 東京 😀"`, "Zürich 東京 😀", ""},
	{"String", `{"zeta": 1, "alpha": [ 2.50 ]}`, `{"zeta":1,"alpha":[2.50]}`, ""},
	{"FixedString(4)", `"ab"`, "61620000", "hex(x)"},
	{"UUID", `"123e4567-e89b-12d3-a456-426614174000"`, "123e4567-e89b-12d3-a456-426614174000", ""},
	{"Enum8('a' = 1, 'b' = -2)", `-2`, "b", ""},
	{"Enum16('x' = -1000, 'it\\'s' = 1000)", `"it's"`, "it's", ""},
	{"Date", `"2149-06-06"`, "2149-06-06", ""},
	{"Date", `0`, "1970-01-01", ""},
	{"DateTime('UTC')", `"2106-02-07T06:28:15Z"`, "2106-02-07 06:28:15", ""},
	{"DateTime('Asia/Tokyo')", `"2024-01-01 09:00:00"`, "2024-01-01 09:00:00", ""},
	{"Decimal(10, 2)", `"99999999.99"`, "99999999.99", ""},
	{"Array(Nullable(String))", `["x",null]`, "['x',NULL]", ""},
	{"LowCardinality(String)", `"a"`, "a", ""},
	// A NaN, which clickhouse-go's LowCardinality dictionary finds by a Go map (convert.lowCardinalityFloat).
	{"LowCardinality(Float64)", `"NaN"`, "nan", ""},
	{"Array(LowCardinality(Float32))", `[1,"NaN",1,"NaN"]`, "[1,nan,1,nan]", ""},
	// The types 18.16 lacks.
	{"DateTime64(3, 'UTC')", `"2024-03-10T12:00:00.123456789Z"`, "2024-03-10 12:00:00.123", ""},
	{"DateTime64(9, 'UTC')", `"2262-04-11T23:47:16.854775807Z"`, "2262-04-11 23:47:16.854775807", ""},
	{"DateTime64(0, 'UTC')", `-1.5`, "1969-12-31 23:59:58", ""},
	{"DateTime64(6, 'Asia/Tokyo')", `"2024-01-01 09:00:00.000001"`, "2024-01-01 09:00:00.000001", ""},
	{"DateTime64(3, 'UTC')", `"1900-01-01T00:00:00Z"`, "1900-01-01 00:00:00.000", ""},
	{"Nullable(DateTime64(3, 'UTC'))", `null`, `\N`, ""},
	{"Array(DateTime64(2, 'UTC'))", `[0.01]`, "['1970-01-01 00:00:00.01']", ""},
	{"Date32", `"1900-01-01"`, "1900-01-01", ""},
	{"Date32", `120529`, "2299-12-31", ""},
	{"Date32", `-1`, "1969-12-31", ""},
	{"Nullable(Date32)", `"2024-02-29"`, "2024-02-29", ""},
	{"Bool", `true`, "true", ""},
	{"Bool", `0`, "false", ""},
	{"Nullable(Bool)", `null`, `\N`, ""},
	{"Array(Bool)", `[true,false]`, "[true,false]", ""},
	{"IPv4", `"192.168.0.1"`, "192.168.0.1", ""},
	{"IPv6", `"2001:db8::1"`, "2001:db8::1", ""},
	{"IPv6", `"192.168.0.1"`, "::ffff:192.168.0.1", ""},
	{"Nullable(IPv4)", `null`, `\N`, ""},
	{"Array(IPv6)", `["::1"]`, "['::1']", ""},
	{"Int128", `"170141183460469231731687303715884105727"`, "170141183460469231731687303715884105727", ""},
	{"UInt256", `"115792089237316195423570985008687907853269984665640564039457584007913129639935"`, "115792089237316195423570985008687907853269984665640564039457584007913129639935", ""},
	{"Int256", `"-57896044618658097711785492504343953926634992332820282019728792003956564819968"`, "-57896044618658097711785492504343953926634992332820282019728792003956564819968", ""},
	{"UInt128", `1e20`, "100000000000000000000", ""},
	{"Nullable(Int256)", `-1`, "-1", ""},
	{"Array(Nullable(UInt128))", `[1,null]`, "[1,NULL]", ""},
	{"Decimal(76, 10)", `"-123456789012345678901234567890.0123456789"`, "-123456789012345678901234567890.0123456789", ""},
	{"Decimal(76, 0)", `"` + strings.Repeat("9", 76) + `"`, strings.Repeat("9", 76), ""},
	{"Decimal(40, 2)", `1.5`, "1.5", ""},
	{"Decimal(9, 2)", `-0.01`, "-0.01", ""},
	{"Nullable(Decimal(76, 0))", `null`, `\N`, ""},
	{"Map(String, UInt64)", `{"b":2,"a":1}`, "{'b':2,'a':1}", ""},
	{"Map(LowCardinality(String), Nullable(Decimal(10, 2)))", `{"x":null,"y":"1.5"}`, "{'x':NULL,'y':1.5}", ""},
	{"Map(UInt8, Array(String))", `{"1":["a"],"2":null}`, "{1:['a'],2:[]}", ""},
	{"Map(Date, Map(String, Int8))", `{"2024-01-01":{"k":-1}}`, "{'2024-01-01':{'k':-1}}", ""},
	{"Map(String, UInt8)", `null`, "{}", ""},
	{"Array(Map(String, UUID))", `[{"u":"123e4567-e89b-12d3-a456-426614174000"},{}]`, "[{'u':'123e4567-e89b-12d3-a456-426614174000'},{}]", ""},
	{"Map(Enum8('a' = 1, 'b' = 2), Bool)", `{"b":true}`, "{'b':true}", ""},
	{"Tuple(a UInt8, b Nullable(String), c Array(Int128))", `{"c":[1],"a":7}`, "(7,NULL,[1])", ""},
	{"Tuple(UInt8, DateTime64(3, 'UTC'), Map(String, UInt8))", `[1,"2024-01-01T00:00:00.5Z",{"k":2}]`, "(1,'2024-01-01 00:00:00.500',{'k':2})", ""},
	{"Array(Tuple(a IPv4, b Decimal(9, 3)))", `[{"a":"10.0.0.1","b":"1.5"},["10.0.0.2",-2]]`, "[('10.0.0.1',1.5),('10.0.0.2',-2)]", ""},
	{"Nested(a UInt8, b String)", `[{"a":1,"b":"x"},[2,"y"]]`, "[(1,'x'),(2,'y')]", ""},
	// clickhouse-go names its column of this type Array(Tuple(a UInt8, n Array(Tuple(b String,
	// c UInt8)))), the INSERT's check takes that name for the type (chclient.driverName).
	{"Nested(a UInt8, n Nested(b String, c UInt8))", `[{"a":1,"n":[{"b":"x","c":2}]}]`, "[(1,[('x',2)])]", ""},
	{"Nullable(Point)", `[1,2]`, "(1,2)", ""},
	{"Nullable(Point)", `null`, `\N`, ""},
	{"Nullable(JSON)", `{"a":1}`, `{"a":1}`, ""},
	{"Nullable(JSON)", `null`, `\N`, ""},
	{"LowCardinality(Nullable(FixedString(2)))", `"DE"`, "DE", ""},
	{"LowCardinality(Nullable(String))", `null`, `\N`, ""},
	{"Array(Array(Array(Int128)))", `[[[1],[]],null]`, "[[[1],[]],[]]", ""},
	{"Array(Array(Nullable(Date32)))", `[[null,0]]`, "[[NULL,'1970-01-01']]", ""},
	{"JSON", `{"a": 1, "b": {"c": ["x"]}}`, `{"a":1,"b":{"c":["x"]}}`, ""},
	{"JSON", `{"a": 1, "b": {"c": ["x"]}}`, "Int64 Array(Nullable(String))", "concat(dynamicType(x.a), ' ', dynamicType(x.b.c))"},
	{"Array(JSON)", `[{"a":1},{}]`, `['{"a":1}','{}']`, ""},
	{"Time", `"-12:34:56"`, "-12:34:56", ""},
	{"Time64(6)", `3723.1234567`, "01:02:03.123456", ""},
	{"BFloat16", `0.1`, "0.099609375", "toString(toFloat64(x))"},
	{"Point", `[1.5,-2]`, "(1.5,-2)", ""},
	{"Ring", `[[0,0],[1,0],[0,0]]`, "[(0,0),(1,0),(0,0)]", ""},
	{"Polygon", `[[[0,0],[1,0],[0,0]]]`, "[[(0,0),(1,0),(0,0)]]", ""},
	{"MultiPolygon", `[[[[0,0],[1,0],[0,0]]]]`, "[[[(0,0),(1,0),(0,0)]]]", ""},
	{"LineString", `[[0,0],[1,1]]`, "[(0,0),(1,1)]", ""},
	{"MultiLineString", `[[[0,0],[1,1]]]`, "[[(0,0),(1,1)]]", ""},
	{"SimpleAggregateFunction(sum, UInt64)", `5`, "5", ""},
	{"SimpleAggregateFunction(anyLast, Nullable(Decimal(10, 2)))", `null`, `\N`, ""},
}

// TestTypesOnModern has the ClickHouse 26 engine decode, for each value of modernTypeCases, both
// forms of the row that the pipeline produces (insertBothForms); each must read back, through
// toString, as the value the case names.
func TestTypesOnModern(t *testing.T) {
	srv := chtest.StartModern(t)
	conn := srv.Conn(t)
	for i, tc := range modernTypeCases {
		t.Run(tc.typ+" "+tc.value, func(t *testing.T) {
			table := fmt.Sprintf("types_%d", i)
			// flatten_nested = 0 keeps a Nested column one column; Nullable(Point) needs
			// enable_nullable_tuple_type (a Point is a Tuple); LowCardinality(Float64),
			// allow_suspicious_low_cardinality_types.
			srv.MustExec(t, "CREATE TABLE "+table+" (id UInt8, x "+tc.typ+") ENGINE = MergeTree ORDER BY id", "flatten_nested=0", "enable_nullable_tuple_type=1",
				"allow_suspicious_low_cardinality_types=1")
			expr := tc.expr
			if expr == "" {
				expr = "toString(x)"
			}
			insertBothForms(t, srv, conn, table, `"x":`+tc.value, expr, tc.want)
		})
	}
	// A Nested column flattened, as a server does by default: the columns x.a and x.b.
	t.Run("Nested(a UInt8, b String), flattened", func(t *testing.T) {
		srv.MustExec(t, "CREATE TABLE nested_flat (id UInt8, x Nested(a UInt8, b String)) ENGINE = MergeTree ORDER BY id")
		if got := srv.MustQuery(t, "SELECT groupArray(name) FROM system.columns WHERE database = currentDatabase() AND table = 'nested_flat'"); got != `['id','x.a','x.b']` {
			t.Fatalf("the flattened table's columns are %s", got)
		}
		insertBothForms(t, srv, conn, "nested_flat", `"x":[{"a":1,"b":"x"},{"a":2,"b":"y"}]`, "toString((x.a, x.b))", "([1,2],['x','y'])")
	})
}

// insertBothForms converts the message {"id":N,<fields>} over table's schema and has the engine
// decode both forms of the row that the pipeline produces: the parse stage's RowBinaryWithDefaults
// (id 1, INSERT ... FORMAT RowBinaryWithDefaults over HTTP, with a JSON value read as text as the
// conversion writes it: docs/conversion.md, "JSON") and the Native block that clickhouse-go builds
// from the write stage's values (id 2, the write stage's Block.Insert over clickhouse-go's HTTP
// transport). Then expr of each row must read back as want.
func insertBothForms(t *testing.T, srv *chtest.ModernServer, conn driver.Conn, table, fields, expr, want string) {
	t.Helper()
	sch, conv := converterOf(t, conn, srv.Database, table)
	row := func(id int) []byte {
		b, err := conv.Convert(nil, []byte(fmt.Sprintf(`{"id":%d,%s}`, id, fields)))
		if err != nil {
			t.Fatalf("converting {%s}: %v", fields, err)
		}
		return b
	}
	if _, err := srv.Post("INSERT INTO "+table+" FORMAT RowBinaryWithDefaults", row(1), "input_format_binary_read_json_as_string=1"); err != nil {
		t.Fatalf("the engine refuses the parse stage's RowBinary: %v", err)
	}
	blocks, err := write.Blocks(sch.Writable(), []*write.Row{{Row: &flow.Row{MessageID: "2"}, Data: row(2)}}, 1000, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range blocks {
		if err := b.Insert(context.Background(), conn, srv.Database, table, nil); err != nil {
			t.Fatalf("the engine refuses the write stage's block: %v", err)
		}
	}
	got := srv.MustQuery(t, "SELECT id, "+expr+" FROM "+table+" ORDER BY id FORMAT TabSeparatedRaw")
	if w := "1\t" + want + "\n2\t" + want; got != w {
		t.Errorf("read back (id, %s):\n got  %q\n want %q", expr, got, w)
	}
}

// TestFloatBitsAsTheEngineParses has the ClickHouse 26 engine store each value twice, once as the
// pipeline converts it (the parse stage's RowBinary, as insertBothForms sends it) and once as
// the engine's own JSONEachRow parses the same JSON, and compares the stored bits: the rounding
// of Float32, the cut of BFloat16 (the upper 16 bits of the nearest Float32), the NaN that
// "nan" and "-nan" give (the quiet NaN with no payload, and its sign), and numbers of more than
// 800 digits before an exponent that brings them back to 1.
func TestFloatBitsAsTheEngineParses(t *testing.T) {
	srv := chtest.StartModern(t)
	conn := srv.Conn(t)
	values := []string{`0.1`, `-0.1`, `"0.1"`, `1.5`, `1.00390625`, `1.01171875`, `16777217`, `0.30000000000000004`,
		`3.39e38`, `3.4e38`, `1e-40`, `-1e-50`, `1e-400`, `"NaN"`, `"-nan"`, `"Infinity"`, `"-Infinity"`,
		`1` + strings.Repeat("0", 800) + `e-800`, `"-1` + strings.Repeat("0", 5000) + `.5e-5000"`}
	for _, typ := range []string{"Float64", "Float32", "BFloat16"} {
		table := "float_bits_" + strings.ToLower(typ)
		srv.MustExec(t, "CREATE TABLE "+table+" (id UInt16, x "+typ+") ENGINE = MergeTree ORDER BY id")
		_, conv := converterOf(t, conn, srv.Database, table)
		for i, v := range values {
			row, err := conv.Convert(nil, []byte(fmt.Sprintf(`{"id":%d,"x":%s}`, i, v)))
			if err != nil {
				t.Fatalf("%s %s: %v", typ, v, err)
			}
			if _, err := srv.Post("INSERT INTO "+table+" FORMAT RowBinaryWithDefaults", row); err != nil {
				t.Fatalf("%s %s: the engine refuses the pipeline's row: %v", typ, v, err)
			}
			if _, err := srv.Post("INSERT INTO "+table+" FORMAT JSONEachRow", []byte(fmt.Sprintf(`{"id":%d,"x":%s}`, 1000+i, v))); err != nil {
				t.Fatalf("%s %s: the engine's own JSONEachRow refuses it: %v", typ, v, err)
			}
		}
		got := srv.MustQuery(t, "SELECT a.id, hex(reinterpretAsString(a.x)), hex(reinterpretAsString(b.x)) FROM "+table+" AS a JOIN "+table+
			" AS b ON b.id = a.id + 1000 WHERE a.id < 1000 ORDER BY a.id FORMAT TabSeparatedRaw")
		lines := strings.Split(got, "\n")
		if len(lines) != len(values) {
			t.Fatalf("%s: %d rows joined, want %d:\n%s", typ, len(lines), len(values), got)
		}
		for _, line := range lines {
			f := strings.Split(line, "\t")
			var i int
			fmt.Sscan(f[0], &i)
			if f[1] != f[2] {
				t.Errorf("%s %s: the pipeline stores %s, the engine's JSONEachRow %s", typ, values[i], f[1], f[2])
			}
		}
	}
}
