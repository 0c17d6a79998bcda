package integration_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
	"github.com/google/go-cmp/cmp"

	"github.com/ch-beam/pubsub-to-clickhouse/internal/chtest"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/chclient"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/chtype"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/convert"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/parse"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/schema"
)

// refusal is a kind of type the pipeline refuses at start-up, by the sentence its error gives,
// which docs/conversion.md ("Types refused at start-up") must give too.
type refusal string

const (
	accepted       refusal = ""
	ambiguousType  refusal = "which of its types a JSON value is meant to be is ambiguous (42 could be any number type, or a String), and the pipeline does not guess; use a column of one type, or JSON or String for mixed values"
	aggregateState refusal = "its values are aggregation states in a binary form that JSON cannot give; insert into a SimpleAggregateFunction or a plain column and aggregate in a materialized view"
	typedJSONPaths refusal = "is not supported: the server converts their values with its own rules, and a value it rejects would fail the whole INSERT; declare the column JSON without typed paths, or give the path a column of its own"
	enumEscape     refusal = "is written with a backslash escape in the type, and clickhouse-go v2.51.0's Enum parser (lib/column/enum.go) fails on such a name unless it is the last one; rename the value"
	noConverter    refusal = "this pipeline has no JSON converter for it"
	nullableTuple  refusal = "clickhouse-go v2.51.0 cannot insert a Nullable(Tuple): its column counts no row for a Tuple's values and takes no NULL for one; declare the Tuple's elements Nullable instead, or use a JSON or String column"
	mapIPKey       refusal = "clickhouse-go v2.51.0 cannot insert a Map whose keys are IPv4 or IPv6: its Map column needs keys it can compare, and it reads IP addresses as net.IP, a slice, so every INSERT would fail with 'unsupported column type'; use String keys (the address's text)"
	tupleName      refusal = "even between backquotes, so every INSERT into the table would fail with 'unsupported column type'; rename the element"
)

// modernSchemaCase is one column, as a CREATE TABLE writes it, and what the start-up check makes
// of the table the ClickHouse 26 engine creates with it.
type modernSchemaCase struct {
	column   string   // the column's definition, named x
	settings []string // the settings its CREATE TABLE needs
	want     refusal
	// tree, when set, is what chtype.Parse must read from the type the engine prints: where a
	// type's text has escapes or arguments whose reading String() could hide.
	tree *chtype.Type
}

// modernSchemaCases are the types of docs/conversion.md, the refused ones and what a 26.x server
// prints for them: canonical names (aliases, Decimal256, Enum without numbers), sorted Variant
// members, JSON's arguments reordered, backquoted Tuple names, Enum escapes.
var modernSchemaCases = []modernSchemaCase{
	{column: "x Int8"}, {column: "x UInt64"}, {column: "x Float32"}, {column: "x BFloat16"},
	{column: "x String"}, {column: "x FixedString(16)"}, {column: "x UUID"}, {column: "x Date"}, {column: "x Date32"},
	{column: "x DateTime"}, {column: "x DateTime('Europe/Berlin')"},
	{column: "x DateTime64(3, 'UTC')", tree: &chtype.Type{Name: "DateTime64", Args: []string{"3", "UTC"}}},
	{column: "x DateTime64(9)"}, {column: "x DateTime64(3, 'Etc/GMT+3')"},
	{column: "x DateTime64(6, 'America/Argentina/Buenos_Aires')"},
	{column: "x Time"}, {column: "x Time64(3)"}, {column: "x Nullable(Time64(6))"},
	{column: "x Bool"}, {column: "x Nullable(Bool)"}, {column: "x IPv4"}, {column: "x IPv6"}, {column: "x Array(Nullable(IPv4))"},
	{column: "x Int128"}, {column: "x UInt128"}, {column: "x Int256"}, {column: "x UInt256"}, {column: "x Nullable(Int256)"},
	{column: "x Decimal(1, 0)"}, {column: "x Decimal(38, 38)"}, {column: "x Decimal(76, 76)"},
	{column: "x Decimal32(4)"}, {column: "x Decimal256(20)"}, {column: "x Nullable(Decimal(76, 2))"},
	// SQL aliases, which the engine prints as the types they stand for.
	{column: "x INT"}, {column: "x BIGINT UNSIGNED"}, {column: "x VARCHAR(255)"}, {column: "x DOUBLE PRECISION"},
	{column: "x BOOLEAN"}, {column: "x TEXT"}, {column: "x INET6"}, {column: "x TIMESTAMP"}, {column: "x DateTime32"},
	{column: "x DECIMAL(10, 2)"},
	{column: "x Enum('a', 'b')", tree: &chtype.Type{Name: "Enum8", Enum: []chtype.EnumValue{{Name: "a", Value: 1}, {Name: "b", Value: 2}}}},
	{column: "x Enum8('a' = -128, 'b' = 127)"},
	{column: "x Enum16('a' = -1000, 'b\\'' = 1000)", tree: &chtype.Type{Name: "Enum16", Enum: []chtype.EnumValue{{Name: "a", Value: -1000}, {Name: "b'", Value: 1000}}}},
	{column: "x Enum8('' = 0, ' ' = 1)"}, {column: "x Enum8('é' = 1)"},
	{column: "x Enum8('a\\0b' = 1)", tree: &chtype.Type{Name: "Enum8", Enum: []chtype.EnumValue{{Name: "a\x00b", Value: 1}}}},
	{column: "x Enum8('\\xff' = 1)", tree: &chtype.Type{Name: "Enum8", Enum: []chtype.EnumValue{{Name: "\xff", Value: 1}}}},
	{column: "x Enum8('it\\'s' = 1, 'back\\\\slash' = 2, 'tab\\t' = 3, 'a' = 5)", want: enumEscape,
		tree: &chtype.Type{Name: "Enum8", Enum: []chtype.EnumValue{{Name: "it's", Value: 1}, {Name: `back\slash`, Value: 2}, {Name: "tab\t", Value: 3}, {Name: "a", Value: 5}}}},
	{column: "x Enum16('\\'' = 1, 'x' = 2)", want: enumEscape},
	{column: "x Nullable(FixedString(2))"}, {column: "x LowCardinality(Nullable(String))"},
	{column: "x LowCardinality(FixedString(3))"}, {column: "x LowCardinality(Nullable(FixedString(2)))"},
	{column: "x LowCardinality(UInt8)", settings: []string{"allow_suspicious_low_cardinality_types=1"}},
	{column: "x LowCardinality(Nullable(UUID))", settings: []string{"allow_suspicious_low_cardinality_types=1"}},
	{column: "x Array(LowCardinality(Nullable(String)))"},
	{column: "x Array(Array(Array(Nullable(Decimal(9, 2)))))"},
	{column: "x Array(Map(String, Array(Tuple(a DateTime64(6, 'Asia/Tokyo'), b LowCardinality(Nullable(String))))))"},
	{column: "x Map(LowCardinality(String), UInt64)", tree: &chtype.Type{Name: "Map", Elems: []*chtype.Type{
		{Name: "LowCardinality", Elems: []*chtype.Type{{Name: "String"}}}, {Name: "UInt64"}}}},
	{column: "x Map(String, Nullable(Decimal(10, 2)))"}, {column: "x Map(UInt8, String)"},
	{column: "x Map(Enum8('a' = 1), UInt8)"}, {column: "x Map(UUID, DateTime64(3, 'UTC'))"}, {column: "x Map(IPv4, Bool)", want: mapIPKey},
	{column: "x Map(Int128, String)"}, {column: "x Map(Date32, String)"}, {column: "x Map(String, Tuple(a UInt8))"},
	{column: "x Map(LowCardinality(String), LowCardinality(Nullable(String)))"},
	{column: "x Tuple(a UInt8, b String)", tree: &chtype.Type{Name: "Tuple", Elems: []*chtype.Type{{Name: "UInt8"}, {Name: "String"}}, FieldNames: []string{"a", "b"}}},
	{column: "x Tuple(UInt8, String)"}, {column: "x Tuple(a Tuple(b Tuple(c UInt8)))"},
	{column: "x Tuple(a Nullable(String), b Array(Tuple(c UInt8)))"},
	{column: "x Tuple(`a``b` UInt8, `1` String, `x.y` Int8)",
		tree: &chtype.Type{Name: "Tuple", Elems: []*chtype.Type{{Name: "UInt8"}, {Name: "String"}, {Name: "Int8"}}, FieldNames: []string{"a`b", "1", "x.y"}}},
	{column: "x Tuple(a UInt8, `x y` Int8)", want: tupleName,
		tree: &chtype.Type{Name: "Tuple", Elems: []*chtype.Type{{Name: "UInt8"}, {Name: "Int8"}}, FieldNames: []string{"a", "x y"}}},
	{column: "x Nested(`a,b` UInt8, c String)", settings: []string{"flatten_nested=0"}, want: tupleName},
	{column: "x Nullable(Tuple(a UInt8, b String))", settings: []string{"enable_nullable_tuple_type=1"}, want: nullableTuple},
	{column: "x Array(Nullable(Tuple(UInt8, String)))", settings: []string{"enable_nullable_tuple_type=1"}, want: nullableTuple},
	{column: "x Nullable(Point)", settings: []string{"enable_nullable_tuple_type=1"}}, // a Tuple(Float64, Float64) that clickhouse-go inserts
	{column: "x Nested(a UInt8, b String)"}, // flattened: the columns x.a and x.b
	{column: "x Nested(a UInt8, b String)", settings: []string{"flatten_nested=0"}},
	{column: "x Nested(`a.b` UInt8, c String)", settings: []string{"flatten_nested=0"}},
	{column: "x Nested(a Nested(b UInt8))", settings: []string{"flatten_nested=0"}},
	{column: "x Nested(a Nested(b UInt8))"}, // flattened: x.a Array(Nested(b UInt8))
	{column: "x JSON"}, {column: "x JSON(max_dynamic_paths=0)"},
	{column: "x JSON(max_dynamic_paths=10, max_dynamic_types=3)",
		tree: &chtype.Type{Name: "JSON", Args: []string{"max_dynamic_types=3", "max_dynamic_paths=10"}}},
	{column: "x JSON(max_dynamic_paths=10, SKIP a.b, SKIP REGEXP 'x.*')",
		tree: &chtype.Type{Name: "JSON", Args: []string{"max_dynamic_paths=10", "SKIP `a.b`", "SKIP REGEXP 'x.*'"}}},
	{column: "x JSON(SKIP REGEXP '^a\\\\.b', max_dynamic_types=1)"},
	{column: "x Array(JSON(max_dynamic_paths=2))"}, {column: "x Tuple(j JSON)"}, {column: "x Map(String, JSON)"},
	{column: "x Nullable(JSON)"},
	{column: "x JSON(a.b UInt32, SKIP c)", want: typedJSONPaths},
	{column: "x Point"}, {column: "x Ring"}, {column: "x LineString"}, {column: "x MultiLineString"}, {column: "x Polygon"},
	{column: "x MultiPolygon"}, {column: "x Array(Point)"},
	{column: "x SimpleAggregateFunction(sum, UInt64)"}, {column: "x SimpleAggregateFunction(anyLast, Nullable(String))"},
	{column: "x SimpleAggregateFunction(max, DateTime64(3, 'UTC'))"},
	{column: "x SimpleAggregateFunction(groupArrayArray, Array(String))"},
	{column: "x SimpleAggregateFunction(sumMap, Tuple(Array(UInt8), Array(UInt64)))"},
	{column: "x AggregateFunction(uniq, String)", want: aggregateState},
	{column: "x AggregateFunction(quantiles(0.5, 0.9), UInt64)", want: aggregateState},
	{column: "x AggregateFunction(sumMap, Array(UInt8), Array(UInt64))", want: aggregateState, // printed with its version, 1
		tree: &chtype.Type{Name: "AggregateFunction", Args: []string{"1", "sumMap"}, Elems: []*chtype.Type{
			{Name: "Array", Elems: []*chtype.Type{{Name: "UInt8"}}}, {Name: "Array", Elems: []*chtype.Type{{Name: "UInt64"}}}}}},
	{column: "x AggregateFunction(argMax, String, DateTime64(3))", want: aggregateState},
	{column: "x Variant(UInt8, String, Array(UInt8))", want: ambiguousType},
	{column: "x Variant(Int64, UInt64, Float64, String, Bool)", want: ambiguousType},
	{column: "x Variant(JSON, String)", want: ambiguousType},
	{column: "x Dynamic", want: ambiguousType}, {column: "x Dynamic(max_types=5)", want: ambiguousType},
	{column: "x Dynamic(max_types=0)", want: ambiguousType}, {column: "x Array(Dynamic)", want: ambiguousType},
	{column: "x Map(String, Map(String, Variant(UInt8, String)))", want: ambiguousType},
	{column: "x Geometry", want: noConverter}, {column: "x Array(Geometry)", want: noConverter},
	{column: "x QBit(Float32, 8)", want: noConverter}, {column: "x QBit(BFloat16, 16)", want: noConverter},
	{column: "x IntervalDay", want: noConverter}, {column: "x IntervalSecond", want: noConverter},
}

// TestSchemaOnModern creates each type of modernSchemaCases in the ClickHouse 26 engine and feeds
// what its system.columns and DESCRIBE print through the pipeline: chtype.Parse must read both the
// same, print the type back as system.columns spells it, and match the case's tree; the start-up
// check (parse.Check: schema.Fetch, chtype.Parse, convert.New) must accept the table, with a
// column of the write stage (convert.NewColumn) for every writable column, or refuse it with
// the error docs/conversion.md documents.
func TestSchemaOnModern(t *testing.T) {
	srv := chtest.StartModern(t)
	conn := srv.Conn(t)
	doc := refusalSection(t)
	var types, acceptedTypes, refusedTypes int
	for i, tc := range modernSchemaCases {
		name := strings.TrimPrefix(tc.column, "x ")
		if len(tc.settings) > 0 {
			name += " (" + strings.Join(tc.settings, ", ") + ")"
		}
		t.Run(name, func(t *testing.T) {
			table := fmt.Sprintf("schema_%d", i)
			srv.MustExec(t, "CREATE TABLE "+table+" (id UInt8, "+tc.column+") ENGINE = MergeTree ORDER BY id", tc.settings...)
			printed := printedTypes(t, conn, srv.Database, table)
			for _, p := range printed {
				types++
				got, err := chtype.Parse(p.columns)
				if err != nil {
					t.Fatalf("column %s: chtype.Parse(%q) from system.columns: %v", p.name, p.columns, err)
				}
				described, err := chtype.Parse(p.describe)
				if err != nil {
					t.Fatalf("column %s: chtype.Parse(%q) from DESCRIBE: %v", p.name, p.describe, err)
				}
				if diff := cmp.Diff(got, described); diff != "" {
					t.Errorf("column %s: %q from system.columns and %q from DESCRIBE read differently (-columns +describe):\n%s", p.name, p.columns, p.describe, diff)
				}
				if s := got.String(); s != p.columns {
					t.Errorf("column %s: chtype.Parse(%q).String() = %q", p.name, p.columns, s)
				}
				if tc.tree != nil && len(printed) == 1 {
					if diff := cmp.Diff(tc.tree, got); diff != "" {
						t.Errorf("column %s: chtype.Parse(%q) (-want +got):\n%s", p.name, p.columns, diff)
					}
				}
			}
			sch, _, err := parse.Check(context.Background(), conn, srv.Database, table)
			if tc.want == accepted {
				acceptedTypes += len(printed)
				if err != nil {
					t.Fatalf("the start-up check refuses the table: %v", err)
				}
				for _, c := range sch.Writable() {
					if _, err := convert.NewColumn(c.Type); err != nil {
						t.Errorf("column %s (%s): the write stage's column: %v", c.Name, c.TypeName, err)
					}
				}
				return
			}
			refusedTypes += len(printed)
			if len(printed) != 1 {
				t.Fatalf("a refused type printed as %d columns: %+v", len(printed), printed)
			}
			prefix := fmt.Sprintf("table %s.%s: column \"x\": unsupported type %s (", srv.Database, table, printed[0].columns)
			if err == nil || !strings.HasPrefix(err.Error(), prefix) || !strings.Contains(err.Error(), string(tc.want)) {
				t.Errorf("the start-up check: %v\nwant %s... %s)", err, prefix, tc.want)
			}
			if !strings.Contains(doc, string(tc.want)) {
				t.Errorf("docs/conversion.md's section on refused types does not give the sentence %q", tc.want)
			}
		})
	}
	t.Logf("%d tables of ClickHouse %s, %d columns: %d type strings (system.columns and DESCRIBE) parsed; %d columns converted, %d refused at start-up",
		len(modernSchemaCases), srv.Version, types, 2*types, acceptedTypes, refusedTypes)
}

// printedType is one column's type as system.columns and DESCRIBE print it.
type printedType struct{ name, columns, describe string }

// printedTypes returns the types of table's columns but id, in table order, as system.columns
// prints them (read by schema.Fetch, as the pipeline reads them) and as DESCRIBE TABLE does (read
// by clickhouse-go, as its batch does; DESCRIBE writes named Tuples over several lines).
func printedTypes(t *testing.T, conn driver.Conn, database, table string) []printedType {
	t.Helper()
	ctx := context.Background()
	sch, err := schema.Fetch(ctx, conn, database, table)
	if err != nil {
		t.Fatalf("schema.Fetch: %v", err)
	}
	rows, err := conn.Query(ctx, "DESCRIBE TABLE "+chclient.QuoteIdent(database)+"."+chclient.QuoteIdent(table))
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	described := map[string]string{}
	for rows.Next() {
		fields := make([]string, len(rows.Columns()))
		dest := make([]any, len(fields))
		for i := range fields {
			dest[i] = &fields[i]
		}
		if err := rows.Scan(dest...); err != nil {
			t.Fatal(err)
		}
		described[fields[0]] = fields[1]
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	var out []printedType
	for _, c := range sch.Columns {
		if c.Name != "id" {
			out = append(out, printedType{name: c.Name, columns: c.TypeName, describe: described[c.Name]})
		}
	}
	return out
}

// refusalSection returns docs/conversion.md's section "Types refused at start-up", its Markdown
// escapes of | undone.
func refusalSection(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "docs", "conversion.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), "\n## Types refused at start-up\n")
	if !ok {
		t.Fatal(`docs/conversion.md has no section "Types refused at start-up"`)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	return strings.ReplaceAll(section, `\|`, "|")
}

// TestDefaultKindsOnModern: the engine's default_kind and default_expression of DEFAULT,
// MATERIALIZED, ALIAS and EPHEMERAL columns, as schema.Fetch reads them; the DEFAULT, EPHEMERAL
// and plain columns are written, the types of the others do not matter (a Variant ALIAS), nor
// that of an EPHEMERAL column without a converter (Dynamic), which is not written, and the
// start-up check accepts the table.
func TestDefaultKindsOnModern(t *testing.T) {
	srv := chtest.StartModern(t)
	conn := srv.Conn(t)
	srv.MustExec(t, "CREATE TABLE kinds (id UInt8, d String DEFAULT concat('a', toString(id)), n Nullable(Int8) DEFAULT NULL COMMENT 'c', "+
		"c UInt8 DEFAULT id + 1 CODEC(ZSTD(3)), m String MATERIALIZED upper(d), a UInt16 ALIAS id * 2, "+
		"e String EPHEMERAL, e2 String EPHEMERAL 'e', dyn Dynamic EPHEMERAL, v Variant(UInt8, String) ALIAS id) ENGINE = MergeTree ORDER BY id")
	sch, conv, err := parse.Check(context.Background(), conn, srv.Database, "kinds")
	if err != nil {
		t.Fatalf("the start-up check: %v", err)
	}
	type column struct{ Name, Type, Kind, Expression string }
	var got []column
	for _, c := range sch.Columns {
		got = append(got, column{c.Name, c.TypeName, c.DefaultKind, c.DefaultExpression})
	}
	want := []column{
		{"id", "UInt8", "", ""},
		{"d", "String", "DEFAULT", "concat('a', toString(id))"},
		{"n", "Nullable(Int8)", "DEFAULT", "NULL"},
		{"c", "UInt8", "DEFAULT", "id + 1"},
		{"m", "String", "MATERIALIZED", "upper(d)"},
		{"a", "UInt16", "ALIAS", "id * 2"},
		{"e", "String", "EPHEMERAL", "defaultValueOfTypeName('String')"},
		{"e2", "String", "EPHEMERAL", "'e'"},
		{"dyn", "Dynamic", "EPHEMERAL", "defaultValueOfTypeName('Dynamic')"},
		{"v", "Variant(String, UInt8)", "ALIAS", "id"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("schema.Fetch's columns (-want +got):\n%s", diff)
	}
	// The EPHEMERAL columns are written (for the DEFAULTs that read them), but the Dynamic one,
	// which has no converter.
	if diff := cmp.Diff([]string{"id", "d", "n", "c", "e", "e2"}, conv.Columns()); diff != "" {
		t.Errorf("the columns a row holds (-want +got):\n%s", diff)
	}
}
