package chtype

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// ty builds a type with type arguments only.
func ty(name string, elems ...*Type) *Type { return &Type{Name: name, Elems: elems} }

// lit builds a type with literal arguments only.
func lit(name string, args ...string) *Type { return &Type{Name: name, Args: args} }

// tuple builds a named tuple (or Nested) from alternating names and types.
func tuple(name string, fields ...any) *Type {
	t := &Type{Name: name}
	for i := 0; i < len(fields); i += 2 {
		t.FieldNames = append(t.FieldNames, fields[i].(string))
		t.Elems = append(t.Elems, fields[i+1].(*Type))
	}
	return t
}

func enum(name string, vals ...EnumValue) *Type { return &Type{Name: name, Enum: vals} }

type parseCase struct {
	name string
	in   string
	want *Type
	// canon is the expected String() of the result; empty means the input itself.
	canon string
}

var parseCases = []parseCase{
	// Plain families.
	{name: "Int32", in: "Int32", want: ty("Int32")},
	{name: "String", in: "String", want: ty("String")},
	{name: "UUID", in: "UUID", want: ty("UUID")},
	{name: "IPv4", in: "IPv4", want: ty("IPv4")},
	{name: "IPv6", in: "IPv6", want: ty("IPv6")},
	{name: "Bool", in: "Bool", want: ty("Bool")},
	{name: "Int128", in: "Int128", want: ty("Int128")},
	{name: "UInt256", in: "UInt256", want: ty("UInt256")},
	{name: "Date32", in: "Date32", want: ty("Date32")},
	{name: "Point", in: "Point", want: ty("Point")},
	{name: "Nothing", in: "Nothing", want: ty("Nothing")},
	{name: "JSON", in: "JSON", want: ty("JSON")},
	{name: "Dynamic", in: "Dynamic", want: ty("Dynamic")},
	{name: "DateTime", in: "DateTime", want: ty("DateTime")},
	{name: "empty parens dropped", in: "String()", want: ty("String"), canon: "String"},

	// Wrappers.
	{name: "Nullable(Nothing)", in: "Nullable(Nothing)", want: ty("Nullable", ty("Nothing"))},
	{name: "Nullable", in: "Nullable(String)", want: ty("Nullable", ty("String"))},
	{name: "LowCardinality", in: "LowCardinality(String)", want: ty("LowCardinality", ty("String"))},
	{name: "LowCardinality(Nullable)", in: "LowCardinality(Nullable(String))",
		want: ty("LowCardinality", ty("Nullable", ty("String")))},
	{name: "LowCardinality(Nullable(FixedString))", in: "LowCardinality(Nullable(FixedString(2)))",
		want: ty("LowCardinality", ty("Nullable", lit("FixedString", "2")))},
	{name: "Array", in: "Array(Int8)", want: ty("Array", ty("Int8"))},
	{name: "Array(Array)", in: "Array(Array(Int8))", want: ty("Array", ty("Array", ty("Int8")))},
	{name: "Array(Nullable(DateTime))", in: "Array(Nullable(DateTime('UTC')))",
		want: ty("Array", ty("Nullable", lit("DateTime", "UTC")))},
	{name: "Array(LowCardinality(Nullable))", in: "Array(LowCardinality(Nullable(String)))",
		want: ty("Array", ty("LowCardinality", ty("Nullable", ty("String"))))},
	{name: "Map", in: "Map(String, UInt64)", want: ty("Map", ty("String"), ty("UInt64"))},
	{name: "Map nested", in: "Map(LowCardinality(String), Array(Nullable(Float64)))",
		want: ty("Map", ty("LowCardinality", ty("String")), ty("Array", ty("Nullable", ty("Float64"))))},
	{name: "Map of Map", in: "Map(String, Map(String, Array(Tuple(UInt8, String))))",
		want: ty("Map", ty("String"), ty("Map", ty("String"), ty("Array", ty("Tuple", ty("UInt8"), ty("String")))))},
	{name: "Nullable(Decimal)", in: "Nullable(Decimal(38, 10))", want: ty("Nullable", lit("Decimal", "38", "10"))},

	// Tuple and Nested.
	{name: "unnamed Tuple", in: "Tuple(UInt8, String)", want: ty("Tuple", ty("UInt8"), ty("String"))},
	{name: "named Tuple", in: "Tuple(a UInt8, b String)", want: tuple("Tuple", "a", ty("UInt8"), "b", ty("String"))},
	{name: "empty Tuple", in: "Tuple()", want: ty("Tuple")},
	{name: "Tuple without parens", in: "Tuple", want: ty("Tuple"), canon: "Tuple()"},
	{name: "one-element Tuple", in: "Tuple(Int8)", want: ty("Tuple", ty("Int8"))},
	{name: "nested tuples", in: "Tuple(a Tuple(b UInt8, c Tuple(String, Int8)), d Array(Tuple(x Nullable(Int8))))",
		want: tuple("Tuple",
			"a", tuple("Tuple", "b", ty("UInt8"), "c", ty("Tuple", ty("String"), ty("Int8"))),
			"d", ty("Array", tuple("Tuple", "x", ty("Nullable", ty("Int8")))))},
	{name: "unnamed Tuple of named Tuple", in: "Tuple(Tuple(a UInt8), String)",
		want: ty("Tuple", tuple("Tuple", "a", ty("UInt8")), ty("String"))},
	{name: "Tuple with parameterised elements", in: "Tuple(t DateTime64(3, 'UTC'), e Enum8('x' = 1), m Map(String, String))",
		want: tuple("Tuple",
			"t", lit("DateTime64", "3", "UTC"),
			"e", enum("Enum8", EnumValue{"x", 1}),
			"m", ty("Map", ty("String"), ty("String")))},
	{name: "backquoted names", in: "Tuple(`a b` UInt8, `c` String)",
		want: tuple("Tuple", "a b", ty("UInt8"), "c", ty("String")), canon: "Tuple(`a b` UInt8, c String)"},
	{name: "double-quoted names", in: `Tuple("a.b" UInt8, "c" String)`,
		want: tuple("Tuple", "a.b", ty("UInt8"), "c", ty("String")), canon: "Tuple(`a.b` UInt8, c String)"},
	{name: "escaped backquote in name", in: "Tuple(`x\\`y` UInt8, `p``q` Int8)",
		want: tuple("Tuple", "x`y", ty("UInt8"), "p`q", ty("Int8")), canon: "Tuple(`x\\`y` UInt8, `p\\`q` Int8)"},
	{name: "quoted name without space", in: "Tuple(`a`UInt8)", want: tuple("Tuple", "a", ty("UInt8")), canon: "Tuple(a UInt8)"},
	{name: "name that starts with a digit", in: "Tuple(1st UInt8)", want: tuple("Tuple", "1st", ty("UInt8")),
		canon: "Tuple(`1st` UInt8)"},
	{name: "name equal to a type family", in: "Tuple(Nullable Nullable(String), String String)",
		want: tuple("Tuple", "Nullable", ty("Nullable", ty("String")), "String", ty("String"))},
	{name: "Nested", in: "Nested(a UInt8, b String)", want: tuple("Nested", "a", ty("UInt8"), "b", ty("String"))},
	{name: "Array(Nested)", in: "Array(Nested(id UInt64, tags Array(String)))",
		want: ty("Array", tuple("Nested", "id", ty("UInt64"), "tags", ty("Array", ty("String"))))},

	// Parameterised families.
	{name: "DateTime UTC", in: "DateTime('UTC')", want: lit("DateTime", "UTC")},
	{name: "DateTime Tokyo", in: "DateTime('Asia/Tokyo')", want: lit("DateTime", "Asia/Tokyo")},
	{name: "DateTime64 precision", in: "DateTime64(3)", want: lit("DateTime64", "3")},
	{name: "DateTime64 precision and zone", in: "DateTime64(3, 'UTC')", want: lit("DateTime64", "3", "UTC")},
	{name: "DateTime64 zone with offset", in: "DateTime64(9, 'Etc/GMT+3')", want: lit("DateTime64", "9", "Etc/GMT+3")},
	{name: "Time64", in: "Time64(6)", want: lit("Time64", "6")},
	{name: "FixedString", in: "FixedString(16)", want: lit("FixedString", "16")},
	{name: "Decimal", in: "Decimal(10, 2)", want: lit("Decimal", "10", "2")},
	{name: "Decimal32", in: "Decimal32(4)", want: lit("Decimal32", "4")},
	{name: "Decimal256", in: "Decimal256(40)", want: lit("Decimal256", "40")},
	{name: "Object", in: "Object('json')", want: lit("Object", "json")},
	{name: "unknown family with type and literal", in: "QBit(Float32, 8)",
		want: &Type{Name: "QBit", Elems: []*Type{ty("Float32")}, Args: []string{"8"}}},
	{name: "unknown family, literal first", in: "Foo(8, 'x', Float32)",
		want:  &Type{Name: "Foo", Elems: []*Type{ty("Float32")}, Args: []string{"8", "x"}},
		canon: "Foo(Float32, 8, 'x')"},

	// Enums.
	{name: "Enum8", in: "Enum8('a' = 1, 'b' = -2)", want: enum("Enum8", EnumValue{"a", 1}, EnumValue{"b", -2})},
	{name: "Enum8 limits", in: "Enum8('lo' = -128, 'hi' = 127)", want: enum("Enum8", EnumValue{"lo", -128}, EnumValue{"hi", 127})},
	{name: "Enum16 limits", in: "Enum16('lo' = -32768, 'zero' = 0, 'hi' = 32767)",
		want: enum("Enum16", EnumValue{"lo", -32768}, EnumValue{"zero", 0}, EnumValue{"hi", 32767})},
	{name: "Enum names with quotes and punctuation", in: `Enum8('it\'s' = 1, 'a, (b) = c' = 2, '' = 3, ')' = 4)`,
		want: enum("Enum8", EnumValue{"it's", 1}, EnumValue{"a, (b) = c", 2}, EnumValue{"", 3}, EnumValue{")", 4})},
	{name: "Enum escapes", in: `Enum8('a\\b\tc' = 1, 'x''y' = 2, '\x41\n' = 3, '\q' = 4, 'é' = 5)`,
		want:  enum("Enum8", EnumValue{"a\\b\tc", 1}, EnumValue{"x'y", 2}, EnumValue{"A\n", 3}, EnumValue{"q", 4}, EnumValue{"é", 5}),
		canon: `Enum8('a\\b\tc' = 1, 'x\'y' = 2, 'A\n' = 3, 'q' = 4, 'é' = 5)`},
	{name: "Enum plus sign", in: "Enum8('a' = +5)", want: enum("Enum8", EnumValue{"a", 5}), canon: "Enum8('a' = 5)"},

	// JSON, Object, Variant, Dynamic.
	{name: "JSON with parameters", in: "JSON(max_dynamic_paths=10, a.b UInt32, SKIP x)",
		want: lit("JSON", "max_dynamic_paths=10", "a.b UInt32", "SKIP x")},
	{name: "JSON with quotes and brackets", in: "JSON( SKIP REGEXP 'a,(b' ,`x.y` Array(Tuple(String, UInt8)), \"p,q\" String )",
		want:  lit("JSON", "SKIP REGEXP 'a,(b'", "`x.y` Array(Tuple(String, UInt8))", `"p,q" String`),
		canon: "JSON(SKIP REGEXP 'a,(b', `x.y` Array(Tuple(String, UInt8)), \"p,q\" String)"},
	{name: "JSON empty parens", in: "JSON()", want: ty("JSON"), canon: "JSON"},
	{name: "Variant", in: "Variant(String, UInt64)", want: ty("Variant", ty("String"), ty("UInt64"))},
	{name: "Variant nested", in: "Variant(Array(UInt8), Map(String, Variant(Int8, String)))",
		want: ty("Variant", ty("Array", ty("UInt8")), ty("Map", ty("String"), ty("Variant", ty("Int8"), ty("String"))))},
	{name: "Dynamic with parameter", in: "Dynamic(max_types=10)", want: lit("Dynamic", "max_types=10")},
	{name: "Array(Dynamic)", in: "Array(Dynamic(max_types = 10))", want: ty("Array", lit("Dynamic", "max_types = 10"))},

	// Aggregate functions.
	{name: "SimpleAggregateFunction", in: "SimpleAggregateFunction(sum, UInt64)",
		want: &Type{Name: "SimpleAggregateFunction", Args: []string{"sum"}, Elems: []*Type{ty("UInt64")}}},
	{name: "SimpleAggregateFunction nested type", in: "SimpleAggregateFunction(anyLast, Nullable(DateTime64(3, 'UTC')))",
		want: &Type{Name: "SimpleAggregateFunction", Args: []string{"anyLast"}, Elems: []*Type{ty("Nullable", lit("DateTime64", "3", "UTC"))}}},
	{name: "AggregateFunction", in: "AggregateFunction(uniq, String)",
		want: &Type{Name: "AggregateFunction", Args: []string{"uniq"}, Elems: []*Type{ty("String")}}},
	{name: "AggregateFunction no arguments", in: "AggregateFunction(count)",
		want: &Type{Name: "AggregateFunction", Args: []string{"count"}}},
	{name: "AggregateFunction parametric", in: "AggregateFunction(quantiles(0.5, 0.9), UInt64)",
		want: &Type{Name: "AggregateFunction", Args: []string{"quantiles(0.5, 0.9)"}, Elems: []*Type{ty("UInt64")}}},
	{name: "AggregateFunction array and string parameters", in: "AggregateFunction(sequenceMatch('(?1)(?2)'), DateTime, UInt8, UInt8)",
		want: &Type{Name: "AggregateFunction", Args: []string{"sequenceMatch('(?1)(?2)')"}, Elems: []*Type{ty("DateTime"), ty("UInt8"), ty("UInt8")}}},
	{name: "AggregateFunction array parameter", in: "AggregateFunction(sumMapFiltered([1, 4]), Array(UInt8), Array(UInt64))",
		want: &Type{Name: "AggregateFunction", Args: []string{"sumMapFiltered([1, 4])"}, Elems: []*Type{ty("Array", ty("UInt8")), ty("Array", ty("UInt64"))}}},
	{name: "AggregateFunction versioned", in: "AggregateFunction(1, sumMap, Array(UInt8), Array(UInt64))",
		want: &Type{Name: "AggregateFunction", Args: []string{"1", "sumMap"}, Elems: []*Type{ty("Array", ty("UInt8")), ty("Array", ty("UInt64"))}}},

	// White space.
	{name: "spaces everywhere", in: "  Array ( Nullable (  String ) )  ", want: ty("Array", ty("Nullable", ty("String"))),
		canon: "Array(Nullable(String))"},
	{name: "spaces in Map", in: "Map( String ,UInt64 )", want: ty("Map", ty("String"), ty("UInt64")), canon: "Map(String, UInt64)"},
	{name: "spaces in Enum", in: "Enum8( 'a'=1 ,'b'  =  -2 )", want: enum("Enum8", EnumValue{"a", 1}, EnumValue{"b", -2}),
		canon: "Enum8('a' = 1, 'b' = -2)"},
	{name: "spaces in DateTime64", in: "DateTime64( 3 ,'UTC' )", want: lit("DateTime64", "3", "UTC"), canon: "DateTime64(3, 'UTC')"},
	{name: "spaces in Decimal", in: "Decimal(10,2)", want: lit("Decimal", "10", "2"), canon: "Decimal(10, 2)"},
	{name: "tabs and newlines in Tuple", in: "Tuple(\n\ta  UInt8,\n\tb\tString\n)", want: tuple("Tuple", "a", ty("UInt8"), "b", ty("String")),
		canon: "Tuple(a UInt8, b String)"},
	{name: "spaces in aggregate function", in: "AggregateFunction( quantiles(0.5,0.9) , UInt64 )",
		want:  &Type{Name: "AggregateFunction", Args: []string{"quantiles(0.5,0.9)"}, Elems: []*Type{ty("UInt64")}},
		canon: "AggregateFunction(quantiles(0.5,0.9), UInt64)"},
}

func TestParse(t *testing.T) {
	for _, tc := range parseCases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Parse(tc.in)
			if err != nil {
				t.Fatalf("Parse(%q) error: %v", tc.in, err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Parse(%q) mismatch (-want +got):\n%s", tc.in, diff)
			}
			canon := tc.canon
			if canon == "" {
				canon = tc.in
			}
			if s := got.String(); s != canon {
				t.Errorf("Parse(%q).String() = %q, want %q", tc.in, s, canon)
			}
		})
	}
}

func TestRoundTrip(t *testing.T) {
	for _, tc := range parseCases {
		t.Run(tc.name, func(t *testing.T) {
			checkRoundTrip(t, tc.want)
		})
	}
}

// checkRoundTrip checks that Parse(want.String()) equals want and renders the same text again.
func checkRoundTrip(t *testing.T, want *Type) {
	t.Helper()
	s := want.String()
	got, err := Parse(s)
	if err != nil {
		t.Fatalf("Parse(%q) error: %v", s, err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Parse(%q) mismatch (-want +got):\n%s", s, diff)
	}
	if s2 := got.String(); s2 != s {
		t.Errorf("String() not stable: %q then %q", s, s2)
	}
}

// TestString covers rendering of hand-built trees, including values that need quoting.
func TestString(t *testing.T) {
	tests := []struct {
		name string
		t    *Type
		want string
	}{
		{name: "nil", t: nil, want: ""},
		{name: "DateTime numeric-looking zone", t: lit("DateTime", "3"), want: "DateTime('3')"},
		{name: "DateTime64", t: lit("DateTime64", "3", "UTC"), want: "DateTime64(3, 'UTC')"},
		{name: "Object", t: lit("Object", "json"), want: "Object('json')"},
		{name: "generic string arg", t: lit("Foo", "a b", "-1.5", ""), want: "Foo('a b', -1.5, '')"},
		{name: "enum control characters", t: enum("Enum16", EnumValue{"\x00\x01\x7f\a\b\f\v\r'\\", -1}),
			want: `Enum16('\0\x01\x7F\a\b\f\v\r\'\\' = -1)`},
		{name: "tuple names needing quotes", t: tuple("Tuple", "a-b", ty("Int8"), "`", ty("Int8"), "ok_1", ty("Int8")),
			want: "Tuple(`a-b` Int8, `\\`` Int8, ok_1 Int8)"},
		{name: "versioned aggregate", t: &Type{Name: "AggregateFunction", Args: []string{"1", "sumMap"}, Elems: []*Type{ty("Array", ty("UInt8"))}},
			want: "AggregateFunction(1, sumMap, Array(UInt8))"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.t.String(); got != tc.want {
				t.Errorf("String() = %q, want %q", got, tc.want)
			}
			if tc.t != nil {
				checkRoundTrip(t, tc.t)
			}
		})
	}
}

func TestUnwrap(t *testing.T) {
	tests := []struct {
		in           string
		want         string
		wantNullable bool
	}{
		{in: "String", want: "String"},
		{in: "Nullable(String)", want: "String", wantNullable: true},
		{in: "LowCardinality(String)", want: "String"},
		{in: "LowCardinality(Nullable(String))", want: "String", wantNullable: true},
		{in: "Nullable(LowCardinality(String))", want: "String", wantNullable: true},
		{in: "LowCardinality(LowCardinality(Nullable(Nullable(FixedString(4)))))", want: "FixedString(4)", wantNullable: true},
		{in: "Nullable(Nothing)", want: "Nothing", wantNullable: true},
		{in: "Array(Nullable(String))", want: "Array(Nullable(String))"},
		{in: "Nullable(Array(Nullable(Int8)))", want: "Array(Nullable(Int8))", wantNullable: true},
		{in: "LowCardinality(Nullable(DateTime64(3, 'UTC')))", want: "DateTime64(3, 'UTC')", wantNullable: true},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			typ, err := Parse(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			want, err := Parse(tc.want)
			if err != nil {
				t.Fatal(err)
			}
			got, nullable := typ.Unwrap()
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("Unwrap(%q) base mismatch (-want +got):\n%s", tc.in, diff)
			}
			if nullable != tc.wantNullable {
				t.Errorf("Unwrap(%q) nullable = %v, want %v", tc.in, nullable, tc.wantNullable)
			}
		})
	}
	t.Run("nil", func(t *testing.T) {
		var typ *Type
		if got, nullable := typ.Unwrap(); got != nil || nullable {
			t.Errorf("nil.Unwrap() = %v, %v, want nil, false", got, nullable)
		}
	})
	t.Run("does not modify", func(t *testing.T) {
		typ, err := Parse("LowCardinality(Nullable(String))")
		if err != nil {
			t.Fatal(err)
		}
		typ.Unwrap()
		if s := typ.String(); s != "LowCardinality(Nullable(String))" {
			t.Errorf("after Unwrap, String() = %q", s)
		}
	})
}

func TestParseErrors(t *testing.T) {
	deep := strings.Repeat("Array(", 1001) + "Int8" + strings.Repeat(")", 1001)
	tests := []struct {
		name string
		in   string
		// want is the error message after the `chtype: parse "<in>": ` prefix.
		want string
	}{
		{name: "empty", in: "", want: "empty input at offset 0"},
		{name: "blank", in: "  \t", want: "empty input at offset 3"},
		{name: "missing paren", in: "Array(Int8", want: `missing ")" at offset 10`},
		{name: "missing paren nested", in: "Map(String, Array(Int8)", want: `missing ")" at offset 23`},
		{name: "missing paren after open", in: "Array(", want: `missing ")" at offset 6`},
		{name: "missing paren after comma", in: "Tuple(a Int8, ", want: `missing ")" at offset 14`},
		{name: "extra paren", in: "Array(Int8))", want: `unbalanced ")" at offset 11`},
		{name: "leading paren", in: "(Int8)", want: `expected type name, found "(Int8)" at offset 0`},
		{name: "trailing text", in: "Int8 foo", want: `unexpected trailing text "foo" at offset 5`},
		{name: "trailing comma at top level", in: "Int8, Int16", want: `unexpected trailing text ", Int16" at offset 4`},
		{name: "long trailing text", in: "Int8 abcdefghijklmnopqrstuvwxyz", want: `unexpected trailing text "abcdefghijklmnop"... at offset 5`},
		{name: "junk between arguments", in: "Array(Int8 Int16)", want: `expected "," or ")", found "Int16)" at offset 11`},
		{name: "trailing comma in list", in: "Tuple(a UInt8,)", want: `expected type name, found ")" at offset 14`},
		{name: "Nullable two arguments", in: "Nullable(Int8, Int16)", want: "Nullable must have exactly 1 type argument, got 2 at offset 0"},
		{name: "Nullable no arguments", in: "Nullable()", want: "Nullable must have exactly 1 type argument, got 0 at offset 0"},
		{name: "Nullable bare", in: "Array(Nullable)", want: "Nullable must have exactly 1 type argument, got 0 at offset 6"},
		{name: "Nullable literal", in: "Nullable('x')", want: `expected type name, found "'x')" at offset 9`},
		{name: "LowCardinality two arguments", in: "LowCardinality(String, String)", want: "LowCardinality must have exactly 1 type argument, got 2 at offset 0"},
		{name: "Array two arguments", in: "Array(Int8, Int16)", want: "Array must have exactly 1 type argument, got 2 at offset 0"},
		{name: "Array bare", in: "Array", want: "Array must have exactly 1 type argument, got 0 at offset 0"},
		{name: "Array literal", in: "Array(1)", want: `expected type name, found "1)" at offset 6`},
		{name: "Map one argument", in: "Array(Map(String))", want: "Map must have exactly 2 type arguments, got 1 at offset 6"},
		{name: "Map three arguments", in: "Map(String, Int8, Int8)", want: "Map must have exactly 2 type arguments, got 3 at offset 0"},
		{name: "Variant empty", in: "Variant()", want: "Variant must have at least 1 type argument at offset 0"},
		{name: "Nested empty", in: "Nested()", want: "Nested must have at least 1 element at offset 0"},
		{name: "Nested unnamed", in: "Nested(UInt8)", want: "Nested elements must be named at offset 7"},
		{name: "Tuple mixed named first", in: "Tuple(a UInt8, String)", want: "Tuple cannot mix named and unnamed elements at offset 15"},
		{name: "Tuple mixed unnamed first", in: "Tuple(UInt8, b String)", want: "Tuple cannot mix named and unnamed elements at offset 13"},
		{name: "Tuple empty name", in: "Tuple(`` UInt8)", want: "empty element name at offset 6"},
		{name: "Tuple unterminated name", in: "Tuple(`a UInt8)", want: "unterminated quoted string at offset 6"},
		{name: "Tuple name without type", in: "Tuple(`a`)", want: `expected type name, found ")" at offset 9`},
		{name: "unterminated enum name", in: "Enum8('a = 1)", want: "unterminated quoted string at offset 6"},
		{name: "unterminated after escaped quote", in: `Enum8('a\' = 1)`, want: "unterminated quoted string at offset 6"},
		{name: "unterminated trailing backslash", in: `DateTime('UTC\`, want: "unterminated quoted string at offset 9"},
		{name: "unterminated time zone", in: "DateTime('UTC", want: "unterminated quoted string at offset 9"},
		{name: "unterminated in JSON", in: "JSON(SKIP REGEXP 'x)", want: "unterminated quoted string at offset 17"},
		{name: "Enum8 too large", in: "Enum8('a' = 128)", want: "enum value 128 out of range for Enum8 (-128..127) at offset 12"},
		{name: "Enum8 too small", in: "Enum8('a' = -129)", want: "enum value -129 out of range for Enum8 (-128..127) at offset 12"},
		{name: "Enum16 too large", in: "Enum16('a' = 1, 'b' = 32768)", want: "enum value 32768 out of range for Enum16 (-32768..32767) at offset 22"},
		{name: "Enum16 huge", in: "Enum16('a' = 99999999999999999999)", want: "enum value 99999999999999999999 out of range for Enum16 (-32768..32767) at offset 13"},
		{name: "Enum not integer", in: "Enum16('a' = 1.5)", want: `enum value "1.5" is not an integer at offset 13`},
		{name: "Enum word value", in: "Enum8('a' = x)", want: `enum value "x" is not an integer at offset 12`},
		{name: "Enum missing value", in: "Enum8('a' = )", want: `expected integer enum value, found ")" at offset 12`},
		{name: "Enum missing equals", in: "Enum8('a')", want: `expected "=" after enum name, found ")" at offset 9`},
		{name: "Enum unquoted name", in: "Enum8(a = 1)", want: `expected quoted enum name, found "a = 1)" at offset 6`},
		{name: "Enum empty", in: "Enum8()", want: "Enum8 must have at least 1 value at offset 0"},
		{name: "Enum missing paren", in: "Enum8('a' = 1", want: `missing ")" at offset 13`},
		{name: "JSON empty argument", in: "JSON(a, , b)", want: "empty argument at offset 8"},
		{name: "JSON unbalanced bracket", in: "JSON(a])", want: `unbalanced "]" at offset 6`},
		{name: "JSON unclosed inner paren", in: "JSON(a(b)", want: `missing ")" at offset 9`},
		{name: "AggregateFunction empty", in: "AggregateFunction()", want: "AggregateFunction must name an aggregate function at offset 0"},
		{name: "SimpleAggregateFunction without type", in: "SimpleAggregateFunction(sum)",
			want: "SimpleAggregateFunction must have a function and at least 1 type argument at offset 0"},
		{name: "AggregateFunction literal type", in: "AggregateFunction(uniq, 5)", want: `expected type name, found "5)" at offset 24`},
		{name: "generic bad argument", in: "Decimal(10, \"x\")", want: `expected type name, found "\"x\")" at offset 12`},
		{name: "too deep", in: deep, want: "types nested more than 1000 deep at offset 6000"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Parse(tc.in)
			if err == nil {
				t.Fatalf("Parse(%q) = %v, want error", tc.in, got)
			}
			want := fmt.Sprintf("chtype: parse %q: %s", tc.in, tc.want)
			if diff := cmp.Diff(want, err.Error()); diff != "" {
				t.Errorf("Parse(%q) error mismatch (-want +got):\n%s", tc.in, diff)
			}
			if got != nil {
				t.Errorf("Parse(%q) returned a type with the error: %v", tc.in, got)
			}
		})
	}
}

func FuzzParse(f *testing.F) {
	for _, tc := range parseCases {
		f.Add(tc.in)
	}
	for _, s := range []string{
		"", "(", ")", "Array(", "Enum8('", `Enum8('\`, "Tuple(`", "JSON([)", "Tuple(a b c)",
		"AggregateFunction(1)", "Foo(+, -, .)", "Tuple(a Tuple(b Tuple(c Int8)))",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		typ, err := Parse(s)
		if err != nil {
			if typ != nil {
				t.Fatalf("Parse(%q) returned both a type and an error", s)
			}
			if !strings.HasPrefix(err.Error(), "chtype: parse ") {
				t.Fatalf("Parse(%q) error %q lacks prefix", s, err)
			}
			return
		}
		out := typ.String()
		again, err := Parse(out)
		if err != nil {
			t.Fatalf("Parse(%q) ok, but Parse(String() = %q) failed: %v", s, out, err)
		}
		if diff := cmp.Diff(typ, again); diff != "" {
			t.Fatalf("Parse(%q).String() = %q parses differently (-first +second):\n%s", s, out, diff)
		}
		if out2 := again.String(); out2 != out {
			t.Fatalf("String() not stable for %q: %q then %q", s, out, out2)
		}
	})
}

// TestSnippet: the piece of the input an error quotes is cut at 16 bytes, never inside a
// character.
func TestSnippet(t *testing.T) {
	for in, want := range map[string]string{
		"":                               "end of input",
		"Array(UInt8)":                   `"Array(UInt8)"`,
		"Array(Nullable(String))":        `"Array(Nullable(S"...`,
		strings.Repeat("a", 15) + "éxyz": `"aaaaaaaaaaaaaaa"...`, // é would be bytes 16 and 17
	} {
		if got := (&parser{in: in}).snippet(); got != want {
			t.Errorf("snippet of %q = %s, want %s", in, got, want)
		}
	}
}
