package convert

import (
	"fmt"
	"strings"
	"time"

	"github.com/ch-beam/pubsub-to-clickhouse/transforms/chtype"
)

// Nested(a T1, b T2, …), and every other set of columns with dotted names.
//
// As ClickHouse stores it by default (flatten_nested = 1, and always on 18.16), a Nested column n
// is a set of columns n.a Array(T1), n.b Array(T2), …. The server requires the arrays of one Nested
// structure to be equally long in every row, and fails the whole INSERT otherwise ("Elements 'n.a'
// and 'n.b' of Nested data structure 'n' (Array columns) have different array sizes"); so the
// converter checks it, for every group of Array columns whose names share the part before the
// first dot (as the server groups them), and a row whose arrays differ is an error of the later
// column:
// column "n.b" (Array(String)): ["x"] has 1 element, but column "n.a" has 2; …
// A missing field of a column without DEFAULT whose elements may be missing (Nullable, Array or
// Map elements) is as long as the group's first given array, each element missing (fillNested),
// as ClickHouse fills such a column that an INSERT leaves out; another missing field, or null,
// counts as an empty array. A column the server fills with its DEFAULT is left out of the check:
// the server computes the expression, and rejects the INSERT when its array is of another length
// (code 190 on 18.16 and 26.7: a constant DEFAULT [7] beside n.a = [1,2]), after which the write
// stage dead-letters the row alone; a DEFAULT built from another column (arrayMap(x -> 0, n.a))
// fits.
//
// Fields. A Nested structure n takes any one of three forms in a message:
//   - a field per column: {"n.a":[3,4],"n.b":["y","z"]}, each an Array as any other column;
//   - one field "n" holding an object of arrays: {"n":{"a":[3,4],"b":["y","z"]}};
//   - one field "n" holding an array of objects: {"n":[{"a":3,"b":"y"},{"a":4,"b":"z"}]}.
//
// More generally, a name P that is the part before a dot of writable column names (n of n.a; x
// and x.y of x.y.z; user of a lone user.id UInt32), and is not itself the name of a writable column,
// is a group: a field named P gives values to the columns under "P.". Its value is:
//   - an object: each key k gives the value of column P.k, converted as that column's field would
//     be. A key that names no column but a group P.k takes that group's forms, so {"x":{"y":{"z":
//     [1]}}} and {"x":{"y.z":[1]}} both fill x.y.z. A key of a MATERIALIZED, ALIAS or EPHEMERAL
//     column P.k is ignored, as its top-level field is. Any other key is an error: nothing under P
//     is dropped. A column without a key is missing, with the usual rule (its DEFAULT, else NULL
//     for Nullable, [] for Array, else an error).
//   - an array of objects, when every writable column under P is an Array: element i of column P.k
//     is the value of key k of object i. A column that no object names takes its DEFAULT when it
//     has one (the server computes it; see above for one of another length); else, and in every
//     object that lacks the key, the element is as null: NULL for a Nullable element type, empty for an Array or Map
//     element type, else an error (element [0]: is missing, and the element type String is not
//     Nullable). An empty array gives [] to every column. The keys are the names after "P.", and
//     the elements must be objects.
//   - null: null for every column under P (so [] for an Array).
//   - anything else (a string, a number, a boolean) is an error naming the group.
//
// A message gives the columns under P either in the field P or in fields of their own names
// (P.k, or a group P.x), never both: {"n":{"a":[3]},"n.b":["z"]} is an error even though the two
// fill different columns. A group field given twice is a payload error, as a column's field is.
// The exact name of a writable column always wins: with columns n UInt32 and n.a Array(UInt8),
// the field "n" fills column n, and n.a takes only the field "n.a". A field named like a
// MATERIALIZED, ALIAS or EPHEMERAL column that is also a group is an error (which is meant is
// ambiguous). Errors of a group name it as the column, with a type that shows its columns:
// column "n" (Nested(a UInt8, b String)): "x" is a string; "n" takes an object of arrays …
//
// A column filled from the message (metadataColumns, unknownFieldsColumn: metadata.go) is a
// column under its groups as any other: P is no group when it is such a column's name, and a key
// of a group's value that names such a column is not read, as that column's own field is not,
// and goes to unknownFieldsColumn under the column's name ({"u":{"id":1}} gives "u.id":1, as
// {"u.id":1} does). The array-of-objects form needs only the columns the payload fills to be
// Arrays (the message's never are).
//
// The inverse: a field "t.a" where t is a writable column of type Tuple(a …) or Nested(a …)
// (flatten_nested = 0), and no column or group has that name, is an error of column t: the value
// would otherwise vanish.
//
// With flatten_nested = 0 the column has the type Nested(a T1, b T2), which is Array(Tuple(a T1,
// b T2)): it takes a JSON array of objects ([{"a":1,"b":"x"}]) or of arrays ([[1,"x"]]), each
// element converted as the named Tuple (tuple.go), or an object of arrays ({"a":[1,2],"b":["x",
// "y"]}), whose arrays must be equally long (a key that is null is an empty array), converted as
// the array of objects it stands for (a missing key is then missing in every element); null or
// missing is [].
//
// RowBinary: as Array(Tuple(a T1, b T2)).

type nestedEncoder struct {
	name  string
	arr   arrayEncoder
	index map[string]int // element name -> position
}

// nestedTuple is the Tuple of one element of Nested(a T1, …): Tuple(a T1, …).
func nestedTuple(t *chtype.Type) *chtype.Type {
	return &chtype.Type{Name: "Tuple", Elems: t.Elems, FieldNames: t.FieldNames}
}

func newNestedEncoder(t *chtype.Type, zone *time.Location) (encoder, error) {
	tt := nestedTuple(t)
	tuple, err := newTupleEncoder(tt, zone)
	if err != nil {
		return nil, err
	}
	e := nestedEncoder{name: t.String(), arr: arrayEncoder{elem: tuple, elemType: tt}, index: map[string]int{}}
	for i, n := range t.FieldNames {
		e.index[n] = i
	}
	return e, nil
}

func (e nestedEncoder) encode(dst []byte, v value, c *Converter) ([]byte, error) {
	switch v.kind {
	case kindArray, kindNull:
		return e.arr.encode(dst, v, c)
	case kindObject:
		rows, err := e.fromColumns(v, c)
		if err != nil {
			return dst, err
		}
		return e.arr.encode(dst, rows, c)
	}
	return dst, errValue(v, fmt.Sprintf("is %s; %s takes a JSON array of objects or an object of arrays", v.kind, e.name))
}

// fromColumns turns an object of arrays, {"a":[1,2],"b":["x","y"]}, into the array of objects it
// stands for, [{"a":1,"b":"x"},{"a":2,"b":"y"}].
func (e nestedEncoder) fromColumns(v value, c *Converter) (value, error) {
	type column struct {
		key   []byte // the key as written
		index int    // element position
		n     int    // array length
		it    elements
	}
	var small [8]column
	cols := small[:0]
	for it := newMembers(v.raw); ; {
		key, val, ok := it.next()
		if !ok {
			break
		}
		name, err := c.text(key)
		if err != nil {
			return v, errValue(key, err.Error())
		}
		i, ok := e.index[string(name)]
		if !ok {
			return v, errValue(key, fmt.Sprintf("is not an element of %s; nothing is dropped from a Nested column", e.name))
		}
		col := column{key: key.raw, index: i}
		for _, other := range cols {
			if other.index == i {
				return v, errValue(key, "appears twice in the object; which value is meant is ambiguous")
			}
		}
		switch val.kind {
		case kindNull:
		case kindArray:
			col.n = countElements(val.raw)
			col.it = newElements(val.raw)
		default:
			ve := errValue(val, fmt.Sprintf("is %s; in an object of arrays each element name of %s takes a JSON array", val.kind, e.name))
			ve.Path = "." + string(name)
			return v, ve
		}
		cols = append(cols, col)
	}
	n := 0
	for i, col := range cols {
		if i == 0 {
			n = col.n
		} else if col.n != n {
			return v, errValue(v, fmt.Sprintf("has arrays of different lengths: %s has %d element%s, but %s has %d; the arrays of an object of arrays into %s must be equally long",
				cols[i].key, col.n, plural(col.n), cols[0].key, n, e.name))
		}
	}
	buf := make([]byte, 0, len(v.raw)+n*(2+len(cols)*4))
	buf = append(buf, '[')
	for j := 0; j < n; j++ {
		if j > 0 {
			buf = append(buf, ',')
		}
		buf = append(buf, '{')
		for k := range cols {
			if k > 0 {
				buf = append(buf, ',')
			}
			el, _ := cols[k].it.next()
			buf = append(append(append(buf, cols[k].key...), ':'), el.raw...)
		}
		buf = append(buf, '}')
	}
	return value{kind: kindArray, raw: append(buf, ']')}, nil
}

// nestedGroup is the Array columns whose names share the part before the first dot.
type nestedGroup struct {
	prefix  string
	columns []int
}

// nestedGroups finds the groups of at least two Array columns with a common dotted prefix.
func nestedGroups(cols []column) []nestedGroup {
	var groups []nestedGroup
	at := map[string]int{}
	for i, col := range cols {
		prefix, _, ok := strings.Cut(col.name, ".")
		if !ok || shapeOf(col.typ) != shapeArray {
			continue
		}
		g, ok := at[prefix]
		if !ok {
			g = len(groups)
			at[prefix] = g
			groups = append(groups, nestedGroup{prefix: prefix})
		}
		groups[g].columns = append(groups[g].columns, i)
	}
	out := groups[:0]
	for _, g := range groups {
		if len(g.columns) > 1 {
			out = append(out, g)
		}
	}
	return out
}

// fillNested gives each missing column of a Nested group (no field, no key in the group's object)
// that has no DEFAULT, and whose elements may be missing (Nullable, Array or Map elements), as
// many missing elements as the group's first given array has: the value [null,null,…], which
// its encoder makes NULLs or empty values, as an array of objects without the key gives them,
// and as ClickHouse fills a column of a Nested structure that an INSERT leaves out (18.16 and
// 26.7: n.d Array(Nullable(UInt8)) beside n.a = [1,2] is [NULL,NULL]). A column of other
// elements stays missing, an empty array that checkNested refuses beside a longer one.
func (c *Converter) fillNested() {
	c.filled = c.filled[:0]
	if c.wasFilled == nil {
		c.wasFilled = make([]bool, len(c.columns))
	}
	clear(c.wasFilled)
	for _, g := range c.nested {
		n := -1
		for _, i := range g.columns {
			if v := c.fields[i]; v.kind == kindArray && (c.failed == nil || !c.failed[i]) {
				n = countElements(v.raw)
				break
			}
		}
		if n <= 0 {
			continue
		}
		for _, i := range g.columns {
			col := &c.columns[i]
			if c.fields[i].kind != kindNone || col.hasDefault || col.origin != "" || (c.failed != nil && c.failed[i]) || len(col.typ.Elems) != 1 {
				continue
			}
			elem := col.typ.Elems[0]
			if _, nullable := unwrapColumn(elem); !nullable && !emptyOnNull(elem) {
				continue
			}
			start := len(c.filled)
			c.filled = append(c.filled, '[')
			for j := 0; j < n; j++ {
				if j > 0 {
					c.filled = append(c.filled, ',')
				}
				c.filled = append(c.filled, "null"...)
			}
			c.filled = append(c.filled, ']')
			c.fields[i] = value{kind: kindArray, raw: c.filled[start:len(c.filled):len(c.filled)]}
			c.wasFilled[i] = true
		}
	}
}

// checkNested appends an error for each column of a Nested group whose array length differs from
// the group's first given column. Columns whose group field failed, and values that are not
// arrays, have their error already; a column that fillNested made as long as the first given
// array is left out, so that an error names only what the message gave (or lacks).
func (c *Converter) checkNested(errs []*ValueError) []*ValueError {
	for _, g := range c.nested {
		first, firstLen := -1, 0
		for _, i := range g.columns {
			col := &c.columns[i]
			v := c.fields[i]
			if v.kind == kindNone && col.hasDefault {
				continue // the server computes it (and rejects one of another length)
			}
			if c.failed != nil && c.failed[i] || c.wasFilled[i] {
				continue
			}
			if v.kind != kindArray && v.kind != kindNull && v.kind != kindNone {
				continue // not an array: the column has its own error
			}
			n := 0
			if v.kind == kindArray {
				n = countElements(v.raw)
			}
			if first < 0 {
				first, firstLen = i, n
				continue
			}
			if n == firstLen {
				continue
			}
			ve := &ValueError{Column: col.name, Type: col.typeName}
			what := fmt.Sprintf("has %d element%s", n, plural(n))
			switch v.kind {
			case kindNone:
				what = "is missing (an empty array)"
			case kindNull:
				ve.Value = "null"
				what = "is an empty array"
			default:
				ve.Value = quote(v.raw)
			}
			ve.Rule = fmt.Sprintf("%s, but column %q has %d; the arrays of the Nested structure %q must be equally long in a row", what, c.columns[first].name, firstLen, g.prefix)
			errs = append(errs, ve)
		}
	}
	return errs
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
