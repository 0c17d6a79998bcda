// Package chtype parses ClickHouse data type names, as system.columns prints them, into a tree.
//
// The input is the canonical spelling that ClickHouse writes into system.columns.type
// (and returns from toTypeName or DESCRIBE TABLE). The families and their arguments
// follow the ClickHouse data type reference, https://clickhouse.com/docs/sql-reference/data-types,
// and in particular the pages on Nullable, LowCardinality, Array, Map, Tuple, Nested,
// Enum, DateTime, DateTime64, Decimal, FixedString, Variant, Dynamic, JSON/Object,
// AggregateFunction and SimpleAggregateFunction. Quoted strings use the ClickHouse
// SQL literal rules (https://clickhouse.com/docs/sql-reference/syntax#string):
// backslash escapes (\', \\, \n, \t, \0, \xHH, ...) or a doubled quote character.
//
// Every parsed type is a *Type. Which fields are filled depends on the family:
//
//	Int32, String, UUID, IPv4, Bool, Date32, Point, Nothing, JSON, Dynamic, ...
//	                                      Name only
//	Nullable(T), LowCardinality(T), Array(T)
//	                                      Elems = [T]
//	Map(K, V)                             Elems = [K, V]
//	Tuple(T1, T2)                         Elems = [T1, T2], FieldNames = nil
//	Tuple(a T1, b T2), Nested(a T1, b T2) Elems = [T1, T2], FieldNames = ["a", "b"]
//	Variant(T1, T2)                       Elems = [T1, T2]
//	DateTime('UTC')                       Args = ["UTC"]
//	DateTime64(3, 'UTC')                  Args = ["3", "UTC"]
//	Decimal(10, 2), Decimal32(4)          Args = ["10", "2"], Args = ["4"]
//	FixedString(16)                       Args = ["16"]
//	Object('json')                        Args = ["json"]
//	Enum8('a' = 1, 'b' = -2), Enum16(...) Enum = [{"a", 1}, {"b", -2}]
//	JSON(max_dynamic_paths=10, a.b UInt32, SKIP x)
//	                                      Args = ["max_dynamic_paths=10", "a.b UInt32", "SKIP x"]
//	Dynamic(max_types=10)                 Args = ["max_types=10"]
//	SimpleAggregateFunction(sum, UInt64)  Args = ["sum"], Elems = [UInt64]
//	AggregateFunction(uniq, String)       Args = ["uniq"], Elems = [String]
//	AggregateFunction(quantiles(0.5, 0.9), UInt64)
//	                                      Args = ["quantiles(0.5, 0.9)"], Elems = [UInt64]
//	AggregateFunction(1, sumMap, Array(UInt8), Array(UInt64))
//	                                      Args = ["1", "sumMap"], Elems = [Array(UInt8), Array(UInt64)]
//
// The arguments of JSON and Dynamic, and the function of AggregateFunction and
// SimpleAggregateFunction, are kept as raw text: one entry per top-level
// comma-separated part, trimmed of surrounding white space, quotes left in place.
// For a versioned AggregateFunction the version comes first, so the function is
// always the last entry of Args.
//
// Any other family with parentheses, including ones this package does not know
// (for example QBit(Float32, 8)), is read generically: an argument that is a type
// goes to Elems, a number or a single-quoted string goes to Args (quotes removed).
package chtype

// Type is one node of a parsed ClickHouse type.
type Type struct {
	// Name is the type family name as ClickHouse spells it: "Int32", "String", "Nullable",
	// "LowCardinality", "Array", "Map", "Tuple", "Nested", "DateTime", "DateTime64", "Decimal",
	// "Decimal32", "FixedString", "Enum8", "Enum16", "Object", "JSON", "Variant", "Dynamic", "SimpleAggregateFunction", "AggregateFunction", ...
	Name string
	// Elems are the type arguments: one for Nullable, LowCardinality, Array; key and value for Map;
	// the elements for Tuple, Nested and Variant. For SimpleAggregateFunction(f, T): Elems = [T], Args = [f].
	Elems []*Type
	// FieldNames holds the element names of a named Tuple or of Nested, parallel to Elems; nil for unnamed tuples.
	FieldNames []string
	// Args are the non-type parameters, in order, as literal text with string quotes removed and
	// escapes resolved: DateTime('UTC') -> ["UTC"]; DateTime64(3, 'UTC') -> ["3", "UTC"];
	// FixedString(16) -> ["16"]; Decimal(10, 2) -> ["10", "2"]; Object('json') -> ["json"].
	Args []string
	// Enum holds the values of Enum8/Enum16 in declaration order.
	Enum []EnumValue
}

// EnumValue is one name = number pair of an Enum8 or Enum16.
type EnumValue struct {
	Name  string
	Value int16
}

// Unwrap returns the type with any LowCardinality and Nullable wrappers removed (in any order/nesting) and whether a Nullable was among them.
//
// Only the outer wrappers are removed: Unwrap of LowCardinality(Nullable(String))
// is (String, true), of Array(Nullable(String)) the Array itself and false.
func (t *Type) Unwrap() (base *Type, nullable bool) {
	for t != nil && (t.Name == "Nullable" || t.Name == "LowCardinality") && len(t.Elems) == 1 {
		if t.Name == "Nullable" {
			nullable = true
		}
		t = t.Elems[0]
	}
	return t, nullable
}
