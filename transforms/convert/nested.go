package convert

import (
	"fmt"
	"strings"

	"github.com/ch-beam/pubsub-to-clickhouse/transforms/chtype"
)

// Nested(a T1, b T2, …).
//
// As ClickHouse stores it by default (flatten_nested = 1, and always on 18.16), a Nested column n
// is a set of columns n.a Array(T1), n.b Array(T2), …, each filled from its own field "n.a",
// "n.b" as an Array. The server requires the arrays of one Nested structure to be equally long in
// every row, and fails the whole INSERT otherwise ("Elements 'n.a' and 'n.b' of Nested data
// structure 'n' (Array columns) have different array sizes"); so the converter checks it, for every
// group of Array columns whose names share the part before the first dot (as the server groups
// them), and a row whose arrays differ is an error of the later column:
// column "n.b" (Array(String)): ["x"] has 1 element, but column "n.a" has 2; …
// A missing field or null counts as an empty array. A column the server fills with its DEFAULT is
// left out of the check (the server builds it to the right length).
//
// With flatten_nested = 0 the column has the type Nested(a T1, b T2), which is Array(Tuple(a T1,
// b T2)): it takes a JSON array of objects ([{"a":1,"b":"x"}]) or of arrays ([[1,"x"]]), each
// element converted as the named Tuple (tuple.go); null or missing is [].
//
// RowBinary: as Array(Tuple(a T1, b T2)).

type nestedEncoder struct {
	name string
	arr  arrayEncoder
}

func newNestedEncoder(t *chtype.Type, tuple encoder) encoder {
	tt := &chtype.Type{Name: "Tuple", Elems: t.Elems, FieldNames: t.FieldNames}
	return nestedEncoder{name: t.String(), arr: arrayEncoder{elem: tuple, elemType: tt}}
}

func (e nestedEncoder) encode(dst []byte, v value, c *Converter) ([]byte, error) {
	if v.kind != kindArray && v.kind != kindNull {
		return dst, errValue(v, fmt.Sprintf("is %s; %s takes a JSON array of objects", v.kind, e.name))
	}
	return e.arr.encode(dst, v, c)
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
		if !ok || !strings.HasPrefix(col.typeName, "Array(") {
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

// checkNested appends an error for each column of a Nested group whose array length differs from
// the group's first given column.
func (c *Converter) checkNested(errs []*ValueError) []*ValueError {
	for _, g := range c.nested {
		first, firstLen := -1, 0
		for _, i := range g.columns {
			col := &c.columns[i]
			v := c.fields[i]
			if v.kind == kindNone && col.hasDefault {
				continue // the server computes it, to the right length
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
