package convert

import (
	"testing"
	"time"

	"github.com/ch-beam/pubsub-to-clickhouse/transforms/chtype"
)

// TestFamiliesComplete checks each row of the table of families: every family has an encoder;
// one that decodes has all three decoding functions; and each type below, one or more per family,
// encodes and decodes through its row, or is refused by its encoder alone.
func TestFamiliesComplete(t *testing.T) {
	for name, f := range families {
		if f.encoder == nil {
			t.Errorf("%s: no encoder", name)
		}
		if (f.skip == nil) != (f.column == nil) || (f.skip == nil) != (f.value == nil) {
			t.Errorf("%s: skip, column and value must be given together", name)
		}
	}
	refused := map[string]bool{"Object('json')": true, "Variant(String, UInt8)": true, "Dynamic": true, "AggregateFunction(uniq, String)": true}
	seen := map[string]bool{}
	for _, typ := range []string{
		"Nullable(Int8)", "LowCardinality(String)", "SimpleAggregateFunction(sum, UInt64)", "Array(UInt8)",
		"Map(String, UInt8)", "Tuple(a Int8, b String)", "Nested(a Int8, b String)",
		"Int8", "Int16", "Int32", "Int64", "UInt8", "UInt16", "UInt32", "UInt64", "Int128", "UInt128", "Int256", "UInt256",
		"Float32", "Float64", "BFloat16", "Decimal(10, 2)", "Decimal32(2)", "Decimal64(2)", "Decimal128(2)", "Decimal256(2)", "Bool",
		"String", "FixedString(4)", "JSON", "UUID", "IPv4", "IPv6", "Enum8('a' = 1)", "Enum16('a' = 1)",
		"Date", "Date32", "DateTime", "DateTime('UTC')", "DateTime64(3)", "Time", "Time64(3)",
		"Point", "Ring", "LineString", "Polygon", "MultiLineString", "MultiPolygon",
		"Object('json')", "Variant(String, UInt8)", "Dynamic", "AggregateFunction(uniq, String)",
	} {
		ct, err := chtype.Parse(typ)
		if err != nil {
			t.Fatal(err)
		}
		seen[ct.Name] = true
		_, err = newEncoder(ct, time.UTC)
		if refused[typ] {
			if err == nil {
				t.Errorf("%s: encoder, want a refusal", typ)
			}
			if _, err := NewColumn(ct); err == nil {
				t.Errorf("%s: a Column, want none", typ)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", typ, err)
		}
		if _, err := newSkip(ct); err != nil {
			t.Errorf("%s: skip: %v", typ, err)
		}
		if _, err := NewColumn(ct); err != nil {
			t.Errorf("%s: column: %v", typ, err)
		}
		if _, err := newValueDecoder(ct); err != nil {
			t.Errorf("%s: value: %v", typ, err)
		}
	}
	for name := range families {
		if !seen[name] {
			t.Errorf("family %s has no type in this test", name)
		}
	}
}

// TestFamilyShapes: unwrapColumn and the rules of the metadata read the table's shapes and
// objects: the base type under Nullable, LowCardinality and SimpleAggregateFunction, and which
// base types take a JSON object of strings.
func TestFamilyShapes(t *testing.T) {
	for _, tc := range []struct {
		typ      string
		base     string
		nullable bool
		object   bool
	}{
		{"String", "String", false, true},
		{"LowCardinality(Nullable(String))", "String", true, true},
		{"SimpleAggregateFunction(anyLast, Nullable(UInt8))", "UInt8", true, false},
		{"Nullable(Int8)", "Int8", true, false},
		{"Array(Nullable(String))", "Array(Nullable(String))", false, false},
		{"Map(String, String)", "Map(String, String)", false, true},
		{"Map(LowCardinality(String), Nullable(String))", "Map(LowCardinality(String), Nullable(String))", false, true},
		{"Map(String, UInt8)", "Map(String, UInt8)", false, false},
		{"Map(String, Map(String, String))", "Map(String, Map(String, String))", false, false},
		{"FixedString(8)", "FixedString(8)", false, false},
		{"JSON", "JSON", false, false},
		{"Tuple(a String)", "Tuple(a String)", false, false},
	} {
		ct, err := chtype.Parse(tc.typ)
		if err != nil {
			t.Fatal(err)
		}
		base, nullable := unwrapColumn(ct)
		if base.String() != tc.base || nullable != tc.nullable || takesObject(base) != tc.object {
			t.Errorf("%s: base %s, nullable %v, takes an object %v; want %s, %v, %v", tc.typ, base, nullable, takesObject(base), tc.base, tc.nullable, tc.object)
		}
	}
}
