package convert_test

import (
	"testing"
)

// The columns of the table: n Nested(a UInt8, b String), flattened as on 18.16.
var nestedTable = []string{"id UInt32", "n.a Array(UInt8)", "n.b Array(String)"}

const nestedType = `column "n" (Nested(a UInt8, b String)): `

func cols(extra ...string) []string { return append(append([]string(nil), nestedTable...), extra...) }

// TestNestedForms: a flattened Nested structure takes a field per column, an object of arrays or
// an array of objects, and nothing given for it vanishes.
func TestNestedForms(t *testing.T) {
	want34 := []any{uint32(1), []uint8{3, 4}, []string{"y", "z"}}
	runExact(t, []exactCase{
		// The three forms.
		{"the issue's message: an object of arrays", nestedTable, `{"id":1,"n":{"a":[3],"b":["z"]}}`, []any{uint32(1), []uint8{3}, []string{"z"}}, ""},
		{"object of arrays", nestedTable, `{"id":1,"n":{"a":[3,4],"b":["y","z"]}}`, want34, ""},
		{"array of objects", nestedTable, `{"id":1,"n":[{"a":3,"b":"y"},{"b":"z","a":4}]}`, want34, ""},
		{"a field per column", nestedTable, `{"id":1,"n.a":[3,4],"n.b":["y","z"]}`, want34, ""},
		{"escaped names", nestedTable, `{"id":1,"\u006e":{"\u0061":[3,4],"b":["y","z"]}}`, want34, ""},
		{"white space", nestedTable, "{\"id\":1, \"n\" : [ { \"a\" : 3 , \"b\" : \"y\" } , {\"a\":4,\"b\":\"z\"} ] }", want34, ""},

		// Empty values.
		{"an empty array", nestedTable, `{"id":1,"n":[]}`, []any{uint32(1), []uint8{}, []string{}}, ""},
		{"an empty object", nestedTable, `{"id":1,"n":{}}`, []any{uint32(1), []uint8{}, []string{}}, ""},
		{"null is null for every column", nestedTable, `{"id":1,"n":null}`, []any{uint32(1), []uint8{}, []string{}}, ""},
		{"null arrays in the object", nestedTable, `{"id":1,"n":{"a":null,"b":[]}}`, []any{uint32(1), []uint8{}, []string{}}, ""},

		// Missing sub-fields and elements follow the usual rules.
		{"object: a missing column takes its DEFAULT", []string{"n.a Array(UInt8)", "n.b Array(String) DEFAULT arrayMap(x -> 'z', n.a)"}, `{"n":{"a":[1,2]}}`,
			[]any{[]uint8{1, 2}, useDefault{}}, ""},
		{"array: a key no element names takes the column's DEFAULT", []string{"n.a Array(UInt8)", "n.b Array(String) DEFAULT arrayMap(x -> 'z', n.a)"}, `{"n":[{"a":1},{"a":2}]}`,
			[]any{[]uint8{1, 2}, useDefault{}}, ""},
		{"array: an empty array gives [] also to a DEFAULT column", []string{"n.a Array(UInt8)", "n.b Array(String) DEFAULT arrayMap(x -> 'z', n.a)"}, `{"n":[]}`,
			[]any{[]uint8{}, []string{}}, ""},
		{"array: a missing Nullable element is NULL", []string{"n.a Array(UInt8)", "n.b Array(Nullable(String))"}, `{"n":[{"a":1},{"a":2,"b":"x"},{"a":3,"b":null}]}`,
			[]any{[]uint8{1, 2, 3}, []*string{nil, ptr("x"), nil}}, ""},
		{"array: a missing Nullable element, in no element at all", []string{"n.a Array(UInt8)", "n.b Array(Nullable(String))"}, `{"n":[{"a":1}]}`,
			[]any{[]uint8{1}, []*string{nil}}, ""},
		{"array: a missing Array element is empty", []string{"n.a Array(UInt8)", "n.c Array(Array(UInt8))"}, `{"n":[{"a":1},{"a":2,"c":[5]}]}`,
			[]any{[]uint8{1, 2}, [][]uint8{{}, {5}}}, ""},

		// Deeper dotted names.
		{"deeper: nested objects", []string{"x.y.z Array(UInt8)", "x.y.w Array(String)"}, `{"x":{"y":{"z":[1],"w":["q"]}}}`, []any{[]uint8{1}, []string{"q"}}, ""},
		{"deeper: dotted keys", []string{"x.y.z Array(UInt8)", "x.y.w Array(String)"}, `{"x":{"y.z":[1],"y.w":["q"]}}`, []any{[]uint8{1}, []string{"q"}}, ""},
		{"deeper: the inner group's field", []string{"x.y.z Array(UInt8)", "x.y.w Array(String)"}, `{"x.y":{"z":[1],"w":["q"]}}`, []any{[]uint8{1}, []string{"q"}}, ""},
		{"deeper: an array of objects under the inner group", []string{"x.y.z Array(UInt8)", "x.y.w Array(String)"}, `{"x":{"y":[{"z":1,"w":"q"}]}}`, []any{[]uint8{1}, []string{"q"}}, ""},
		{"deeper: the inner group's field with an array of objects", []string{"x.y.z Array(UInt8)", "x.y.w Array(String)"}, `{"x.y":[{"z":1,"w":"q"}]}`, []any{[]uint8{1}, []string{"q"}}, ""},
		{"deeper: an array of objects with dotted keys", []string{"x.y.z Array(UInt8)", "x.y.w Array(String)"}, `{"x":[{"y.z":1,"y.w":"q"}]}`, []any{[]uint8{1}, []string{"q"}}, ""},

		// Dotted columns that are not a Nested structure.
		{"a lone dotted column", []string{"user.id UInt32"}, `{"user":{"id":5}}`, []any{uint32(5)}, ""},
		{"dotted columns of other types", []string{"user.id UInt32", "user.name Nullable(String)", "user.tags Array(String)"}, `{"user":{"id":5,"tags":["t"]}}`,
			[]any{uint32(5), (*string)(nil), []string{"t"}}, ""},
		{"null into dotted columns", []string{"user.id Nullable(UInt32)", "user.name String DEFAULT 'anon'"}, `{"user":null}`, []any{(*uint32)(nil), useDefault{}}, ""},
		{"a mix of Array and other columns", []string{"n.a Array(UInt8)", "n.x String"}, `{"n":{"a":[1],"x":"s"}}`, []any{[]uint8{1}, "s"}, ""},

		// Which field a name means.
		{"the exact column name wins over the group", []string{"n UInt32", "n.a Array(UInt8)"}, `{"n":5,"n.a":[1]}`, []any{uint32(5), []uint8{1}}, ""},
		{"names are case-sensitive: N is another field", nestedTable, `{"id":1,"N":{"a":[3],"b":["z"]}}`, []any{uint32(1), []uint8{}, []string{}}, ""},
		{"a dotted field that names no column is ignored, as any other", nestedTable, `{"id":1,"n.c":[1],"n.a":[3],"n.b":["z"]}`, []any{uint32(1), []uint8{3}, []string{"z"}}, ""},
		{"a key of a MATERIALIZED column is ignored, as its field is", cols("n.m Array(UInt8) MATERIALIZED n.a"), `{"id":1,"n":{"a":[3],"b":["z"],"m":[9]}}`,
			[]any{uint32(1), []uint8{3}, []string{"z"}}, ""},
		{"a key of a MATERIALIZED column in an element is ignored", cols("n.m Array(UInt8) MATERIALIZED n.a"), `{"id":1,"n":[{"a":3,"b":"z","m":9}]}`,
			[]any{uint32(1), []uint8{3}, []string{"z"}}, ""},
		{"a field whose columns are all MATERIALIZED is ignored", []string{"id UInt32", "k.m Array(UInt8) MATERIALIZED [1]"}, `{"id":1,"k":{"m":[9]}}`, []any{uint32(1)}, ""},

		// Refused: other JSON values.
		{"a string", nestedTable, `{"id":1,"n":"x"}`, nil, nestedType + `"x" is a string; "n" takes an object of arrays ({"a":[…]}) or an array of objects ([{"a":…}])`},
		{"a number", nestedTable, `{"id":1,"n":5}`, nil, nestedType + `5 is a number; "n" takes an object of arrays ({"a":[…]}) or an array of objects ([{"a":…}])`},
		{"a boolean", nestedTable, `{"id":1,"n":true}`, nil, nestedType + `true is a boolean; "n" takes an object of arrays ({"a":[…]}) or an array of objects ([{"a":…}])`},
		{"dotted columns: a string", []string{"user.id UInt32", "user.name String"}, `{"user":"x"}`, nil,
			`column "user" (user.id UInt32, user.name String): "x" is a string; "user" takes an object of its columns ({"id":…})`},
		{"dotted columns of no Array: an array", []string{"user.id UInt32", "user.name String"}, `{"user":[{"id":5}]}`, nil,
			`column "user" (user.id UInt32, user.name String): [{"id":5}] is an array; "user" takes an object of its columns ({"id":…}): an array of objects needs every column under "user." to be an Array, and column "user.id" (UInt32) is not`},
		{"dotted columns: an array", []string{"n.a Array(UInt8)", "n.x String"}, `{"n":[{"a":1}]}`, nil,
			`column "n" (n.a Array(UInt8), n.x String): [{"a":1}] is an array; "n" takes an object of its columns ({"a":…}): an array of objects needs every column under "n." to be an Array, and column "n.x" (String) is not`},

		// Refused: keys that name no column.
		{"object: a key that is no column", nestedTable, `{"id":1,"n":{"a":[3],"c":["z"]}}`, nil,
			nestedType + `"c" names no column: the table has no column "n.c", and nothing given under "n" is dropped`},
		{"object: keys are case-sensitive", nestedTable, `{"id":1,"n":{"A":[3],"b":["z"]}}`, nil,
			nestedType + `"A" names no column: the table has no column "n.A", and nothing given under "n" is dropped`},
		{"array: a key that is no column", nestedTable, `{"id":1,"n":[{"a":3,"b":"z"},{"a":4,"c":"z"}]}`, nil,
			nestedType + `element [1]: "c" names no column: the table has no column "n.c", and nothing given under "n" is dropped`},
		{"array: keys are the names after the dot, not nested objects", []string{"x.y.z Array(UInt8)"}, `{"x":[{"y":{"z":1}}]}`, nil,
			`column "x" (Nested(` + "`y.z`" + ` UInt8)): element [0]: "y" names no column: the table has no column "x.y", and nothing given under "x" is dropped`},
		{"object: a lone surrogate in a key", nestedTable, `{"id":1,"n":{"\ud800":[3]}}`, nil,
			nestedType + `"\ud800" holds \uD800, a lone UTF-16 surrogate that has no UTF-8 form`},

		// Refused: elements that are not objects, keys given twice.
		{"array: a number element", nestedTable, `{"id":1,"n":[{"a":3,"b":"z"},3]}`, nil,
			nestedType + `element [1]: 3 is not an object; each element of the array is an object of the columns under "n." ({"a":…})`},
		{"array: a null element", nestedTable, `{"id":1,"n":[null]}`, nil,
			nestedType + `element [0]: null is not an object; each element of the array is an object of the columns under "n." ({"a":…})`},
		{"array: an array element", nestedTable, `{"id":1,"n":[[3,"z"]]}`, nil,
			nestedType + `element [0]: [3,"z"] is not an object; each element of the array is an object of the columns under "n." ({"a":…})`},
		{"array: a key twice in an element", nestedTable, `{"id":1,"n":[{"a":3,"a":4,"b":"z"}]}`, nil,
			nestedType + `element [0]: "a" appears twice in the element; which value is meant is ambiguous`},
		{"object: a key twice", nestedTable, `{"id":1,"n":{"a":[3],"a":[4],"b":["z"]}}`, nil,
			nestedType + `"a" gives column "n.a" a second value; which value is meant is ambiguous`},
		{"object: one column by two paths", []string{"x.y.z Array(UInt8)"}, `{"x":{"y.z":[1],"y":{"z":[2]}}}`, nil,
			`column "x.y" (Nested(z UInt8)): "z" gives column "x.y.z" a second value; which value is meant is ambiguous`},
		{"the group's field twice", nestedTable, `{"id":1,"n":{},"n":{}}`, nil, `payload: field "n" appears twice; which value is meant is ambiguous`},
		{"the group's field twice, once escaped", nestedTable, `{"id":1,"n":{},"\u006e":[]}`, nil, `payload: field "n" appears twice; which value is meant is ambiguous`},
		{"a column's field twice, once escaped", nestedTable, `{"id":1,"n.a":[],"n\u002ea":[]}`, nil, `payload: field "n.a" appears twice; which value is meant is ambiguous`},

		// Refused: two forms in one message.
		{"the group and a column's field", nestedTable, `{"id":1,"n":{"a":[3],"b":["z"]},"n.a":[4]}`, nil,
			nestedType + `{"a":[3],"b":["z"]} is given together with the field "n.a"; a message gives the columns under "n." in one form: the field "n", or fields of their own names`},
		{"a column's field and the group, for other columns", nestedTable, `{"id":1,"n.b":["z"],"n":{"a":[3]}}`, nil,
			nestedType + `{"a":[3]} is given together with the field "n.b"; a message gives the columns under "n." in one form: the field "n", or fields of their own names`},
		{"two groups, one inside the other", []string{"x.y.z Array(UInt8)", "x.y.w Array(String)"}, `{"x.y":{"w":["q"]},"x":{"y":{"z":[1]}}}`, nil,
			`column "x" (Nested(` + "`y.z`" + ` UInt8, ` + "`y.w`" + ` String)): {"y":{"z":[1]}} is given together with the field "x.y"; a message gives the columns under "x." in one form: the field "x", or fields of their own names`},

		// Refused: the values of the columns.
		{"object: arrays of different lengths", nestedTable, `{"id":1,"n":{"a":[1,2],"b":["x"]}}`, nil,
			`column "n.b" (Array(String)): ["x"] has 1 element, but column "n.a" has 2; the arrays of the Nested structure "n" must be equally long in a row`},
		{"object: a missing column without DEFAULT", nestedTable, `{"id":1,"n":{"a":[3]}}`, nil,
			`column "n.b" (Array(String)): is missing (an empty array), but column "n.a" has 1; the arrays of the Nested structure "n" must be equally long in a row`},
		{"object: a value that is not an array", nestedTable, `{"id":1,"n":{"a":3,"b":["z"]}}`, nil,
			`column "n.a" (Array(UInt8)): 3 is a number; Array(UInt8) takes a JSON array`},
		{"object: an element out of range", nestedTable, `{"id":1,"n":{"a":[1,300],"b":["y","z"]}}`, nil,
			`column "n.a" (Array(UInt8)): element [1]: 300 is out of range for UInt8 (0 to 255)`},
		{"array: an element out of range", nestedTable, `{"id":1,"n":[{"a":1,"b":"y"},{"a":300,"b":"z"}]}`, nil,
			`column "n.a" (Array(UInt8)): element [1]: 300 is out of range for UInt8 (0 to 255)`},
		{"array: a null element of a non-Nullable type", nestedTable, `{"id":1,"n":[{"a":null,"b":"y"}]}`, nil,
			`column "n.a" (Array(UInt8)): element [0]: null is not allowed: the element type UInt8 is not Nullable`},
		{"array: a missing element of a non-Nullable type", nestedTable, `{"id":1,"n":[{"a":3,"b":"y"},{"a":4}]}`, nil,
			`column "n.b" (Array(String)): element [1]: is missing, and the element type String is not Nullable`},
		{"array: a key no element names, without DEFAULT", nestedTable, `{"id":1,"n":[{"a":3}]}`, nil,
			`column "n.b" (Array(String)): element [0]: is missing, and the element type String is not Nullable`},
		{"dotted columns: a missing column", []string{"user.id UInt32", "user.name String"}, `{"user":{"name":"x"}}`, nil,
			`column "user.id" (UInt32): the field is missing, and the column has no DEFAULT and is not Nullable`},
		{"dotted columns: null", []string{"user.id UInt32"}, `{"user":null}`, nil,
			`column "user.id" (UInt32): null is not allowed: the column is not Nullable and has no DEFAULT`},
		{"the exact column takes the object", []string{"n UInt32", "n.a Array(UInt8)"}, `{"n":{"a":[1]}}`, nil,
			`column "n" (UInt32): {"a":[1]} is an object; UInt32 takes an integer`},
		{"errors in table order", nestedTable, `{"id":-1,"n":"x"}`, nil,
			`column "id" (UInt32): -1 is out of range for UInt32 (0 to 4294967295); ` + nestedType + `"x" is a string; "n" takes an object of arrays ({"a":[…]}) or an array of objects ([{"a":…}])`},

		// Refused: a name that is also a column that is never written.
		{"a group named like a MATERIALIZED column", []string{"n.a Array(UInt8)", "n String MATERIALIZED 'x'"}, `{"n":{"a":[1]}}`, nil,
			`column "n" (Nested(a UInt8)): {"a":[1]} is the value of a field that names both the MATERIALIZED column "n", which is never written, and the columns under "n."; which is meant is ambiguous`},
		{"an inner group named like an ALIAS column", []string{"x.y.z Array(UInt8)", "x.y String ALIAS 'q'"}, `{"x":{"y":{"z":[1]}}}`, nil,
			`column "x.y" (Nested(z UInt8)): {"z":[1]} is the value of a key that names both the ALIAS column "x.y", which is never written, and the columns under "x.y."; which is meant is ambiguous`},

		// Refused: a field that names an element of a Tuple or Nested column.
		{"an element of a Tuple column", []string{"t Tuple(a UInt8, b String)"}, `{"t":[1,"x"],"t.a":2}`, nil,
			`column "t" (Tuple(a UInt8, b String)): 2 is the value of the field "t.a", which is not a column: a is an element of the column "t"; give it inside the field "t"`},
		{"an element of a Nested column (flatten_nested = 0)", []string{"nt Nested(a UInt8, b String)"}, `{"nt.a":[1]}`, nil,
			`column "nt" (Nested(a UInt8, b String)): [1] is the value of the field "nt.a", which is not a column: a is an element of the column "nt"; give it inside the field "nt"`},
	})
}

// TestNestedTypeColumns: a column of type Nested(…) (flatten_nested = 0) takes an array of objects
// or arrays, as before, and an object of arrays.
func TestNestedTypeColumns(t *testing.T) {
	const typ = `column "nt" (Nested(a UInt8, b String)): `
	runExact(t, []exactCase{
		{"an object of arrays", []string{"nt Nested(a UInt8, b String)"}, `{"nt":{"a":[1,2],"b":["x","y"]}}`, []any{[][]any{{uint8(1), "x"}, {uint8(2), "y"}}}, ""},
		{"keys in any order, escaped", []string{"nt Nested(a UInt8, b String)"}, `{"nt":{"b":["x"],"\u0061":[1]}}`, []any{[][]any{{uint8(1), "x"}}}, ""},
		{"a missing Nullable element", []string{"nt Nested(a UInt8, b Nullable(String))"}, `{"nt":{"a":[1]}}`, []any{[][]any{{uint8(1), (*string)(nil)}}}, ""},
		{"empty", []string{"nt Nested(a UInt8, b String)", "nu Nested(a UInt8, b String)"}, `{"nt":{},"nu":{"a":null,"b":[]}}`, []any{[][]any{}, [][]any{}}, ""},
		{"the array forms, as before", []string{"nt Nested(a UInt8, b String)"}, `{"nt":[{"a":1,"b":"x"},[2,"y"]]}`, []any{[][]any{{uint8(1), "x"}, {uint8(2), "y"}}}, ""},
		{"arrays of different lengths", []string{"nt Nested(a UInt8, b String)"}, `{"nt":{"a":[1,2],"b":["x"]}}`, nil,
			typ + `{"a":[1,2],"b":["x"]} has arrays of different lengths: "b" has 1 element, but "a" has 2; the arrays of an object of arrays into Nested(a UInt8, b String) must be equally long`},
		{"a null array against a non-empty one", []string{"nt Nested(a UInt8, b String)"}, `{"nt":{"a":[1],"b":null}}`, nil,
			typ + `{"a":[1],"b":null} has arrays of different lengths: "b" has 0 elements, but "a" has 1; the arrays of an object of arrays into Nested(a UInt8, b String) must be equally long`},
		{"a key that is no element", []string{"nt Nested(a UInt8, b String)"}, `{"nt":{"a":[1],"c":["x"]}}`, nil,
			typ + `"c" is not an element of Nested(a UInt8, b String); nothing is dropped from a Nested column`},
		{"a key twice", []string{"nt Nested(a UInt8, b String)"}, `{"nt":{"a":[1],"a":[2]}}`, nil, typ + `"a" appears twice in the object; which value is meant is ambiguous`},
		{"a value that is not an array", []string{"nt Nested(a UInt8, b String)"}, `{"nt":{"a":1,"b":["x"]}}`, nil,
			typ + `element .a: 1 is a number; in an object of arrays each element name of Nested(a UInt8, b String) takes a JSON array`},
		{"a missing element of a non-Nullable type", []string{"nt Nested(a UInt8, b String)"}, `{"nt":{"a":[1]}}`, nil,
			typ + `element [0].b: is missing, and the element type String is not Nullable`},
		{"an element out of range", []string{"nt Nested(a UInt8, b String)"}, `{"nt":{"a":[1,300],"b":["x","y"]}}`, nil,
			typ + `element [1].a: 300 is out of range for UInt8 (0 to 255)`},
		{"a string", []string{"nt Nested(a UInt8, b String)"}, `{"nt":"x"}`, nil,
			typ + `"x" is a string; Nested(a UInt8, b String) takes a JSON array of objects or an object of arrays`},
	})
}

// TestNestedBesideColumnOfItsPrefix: with a column named as the part before the dot of a Nested
// structure's columns (n String beside n.a and n.b), the name n is no group, and a payload whose
// fields come in table order is encoded while it is scanned, keeping of each value only its kind.
// The check of the arrays' lengths then counted the elements of a value it no longer had, and
// panicked (index out of range) on every such message, valid ones too: the parse stage's bundle
// failed, again at each retry, and check crashed. The lengths are checked in every order.
func TestNestedBesideColumnOfItsPrefix(t *testing.T) {
	columns := []string{"n String", "n.a Array(UInt8)", "n.b Array(String)"}
	runExact(t, []exactCase{
		{"in table order", columns, `{"n":"s","n.a":[1,2],"n.b":["x","y"]}`, []any{"s", []uint8{1, 2}, []string{"x", "y"}}, ""},
		{"in table order, one Nested column missing", columns, `{"n":"s","n.a":[]}`, []any{"s", []uint8{}, []string{}}, ""},
		{"another field in between", columns, `{"n":"s","n.a":[1,2],"x":1,"n.b":["x","y"]}`, []any{"s", []uint8{1, 2}, []string{"x", "y"}}, ""},
		{"out of order", columns, `{"n.b":["x","y"],"n":"s","n.a":[1,2]}`, []any{"s", []uint8{1, 2}, []string{"x", "y"}}, ""},
		{"in table order, arrays of different lengths", columns, `{"n":"s","n.a":[1,2],"n.b":["x"]}`, nil,
			`column "n.b" (Array(String)): ["x"] has 1 element, but column "n.a" has 2; the arrays of the Nested structure "n" must be equally long in a row`},
		{"in table order, a missing Nested column", columns, `{"n":"s","n.a":[1]}`, nil,
			`column "n.b" (Array(String)): is missing (an empty array), but column "n.a" has 1; the arrays of the Nested structure "n" must be equally long in a row`},
	})
}

// TestNestedMissingColumnAsLongAsTheOthers: a column of a Nested structure that the message does
// not give (a column added to the structure later, n.d beside n.a and n.b), without DEFAULT and
// of elements that may be missing (Nullable, Array, Map), is as long as the structure's other
// arrays, each element missing, in all three forms alike: as the array of objects gave it already,
// and as ClickHouse fills such a column when an INSERT leaves it out ([NULL,NULL] on 18.16 and
// 26.7). Before, the field-per-column and object-of-arrays forms made it [] and dead-lettered the
// message for arrays of different lengths. Of other elements, it is still refused.
func TestNestedMissingColumnAsLongAsTheOthers(t *testing.T) {
	columns := cols("n.d Array(Nullable(UInt8))", "n.e Array(Array(String))")
	want := []any{uint32(1), []uint8{3, 4}, []string{"y", "z"}, []*uint8{nil, nil}, [][]string{{}, {}}}
	runExact(t, []exactCase{
		{"a field per column", columns, `{"id":1,"n.a":[3,4],"n.b":["y","z"]}`, want, ""},
		{"an object of arrays", columns, `{"id":1,"n":{"a":[3,4],"b":["y","z"]}}`, want, ""},
		{"an array of objects, as before", columns, `{"id":1,"n":[{"a":3,"b":"y"},{"a":4,"b":"z"}]}`, want, ""},
		{"given, it is the value given", columns, `{"id":1,"n.a":[3,4],"n.b":["y","z"],"n.d":[1,null],"n.e":[["p"],[]]}`,
			[]any{uint32(1), []uint8{3, 4}, []string{"y", "z"}, []*uint8{ptr(uint8(1)), nil}, [][]string{{"p"}, {}}}, ""},
		{"every column missing", columns, `{"id":1}`, []any{uint32(1), []uint8{}, []string{}, []*uint8{}, [][]string{}}, ""},
		{"null is an empty array, as before", columns, `{"id":1,"n.a":[3,4],"n.b":["y","z"],"n.d":null}`, nil,
			`column "n.d" (Array(Nullable(UInt8))): null is an empty array, but column "n.a" has 2; the arrays of the Nested structure "n" must be equally long in a row`},
		{"elements that cannot be missing", cols("n.d Array(UInt8)"), `{"id":1,"n.a":[3,4],"n.b":["y","z"]}`, nil,
			`column "n.d" (Array(UInt8)): is missing (an empty array), but column "n.a" has 2; the arrays of the Nested structure "n" must be equally long in a row`},
		{"a filled column is no party to a length error", columns, `{"id":1,"n.b":["y","z"]}`, nil,
			`column "n.b" (Array(String)): ["y","z"] has 2 elements, but column "n.a" has 0; the arrays of the Nested structure "n" must be equally long in a row`},
		{"the first given array sets the length", columns, `{"id":1,"n.a":[3,4],"n.b":["y"]}`, nil,
			`column "n.b" (Array(String)): ["y"] has 1 element, but column "n.a" has 2; the arrays of the Nested structure "n" must be equally long in a row`},
	})
}
