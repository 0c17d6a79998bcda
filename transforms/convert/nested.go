package convert

import (
	"fmt"
	"slices"
	"strings"

	"github.com/ch-beam/pubsub-to-clickhouse/transforms/chtype"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/schema"
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
// A missing field or null counts as an empty array. A column the server fills with its DEFAULT is
// left out of the check (the server builds it to the right length).
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
//     has one (the server builds it to the right length); else, and in every object that lacks
//     the key, the element is as null: NULL for a Nullable element type, empty for an Array or Map
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

func newNestedEncoder(t *chtype.Type, tuple encoder) encoder {
	tt := &chtype.Type{Name: "Tuple", Elems: t.Elems, FieldNames: t.FieldNames}
	e := nestedEncoder{name: t.String(), arr: arrayEncoder{elem: tuple, elemType: tt}, index: map[string]int{}}
	for i, n := range t.FieldNames {
		e.index[n] = i
	}
	return e
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

// group is a name that is the part before a dot of writable column names, and not itself the name
// of a writable column: a field of that name gives values to the columns under name + ".".
type group struct {
	name     string
	typ      string          // what errors show as the type: Nested(a UInt8, b String), or the columns
	cols     []int           // the writable columns under name + ".", in table order
	subs     map[string]int  // column name after name + "." -> index into cols
	computed map[string]bool // names after name + "." of MATERIALIZED, ALIAS and EPHEMERAL columns
	arrays   bool            // every column is an Array: the array-of-objects form is allowed
	elems    []*chtype.Type  // when arrays, each column's element type, parallel to cols
	related  []int           // the groups whose names are dot-boundary prefixes of this one's, or the reverse
	shadow   string          // the DefaultKind of a column that is not written and has this very name
}

// lateError is an error of a group field or an element field, reported at a column's place in
// table order.
type lateError struct {
	at  int
	err *ValueError
}

// cell is one key of one object of an array-of-objects group value.
type cell struct {
	elem, sub int
	val       value
}

// buildGroups finds the groups of the table's writable columns, and the fields that name elements
// of Tuple and Nested columns. It sets c.groups, c.groupIndex, c.under and c.elemFields, all nil
// when there are none.
func (c *Converter) buildGroups(t *schema.Table) {
	for i := range c.columns {
		name := c.columns[i].name
		for j := 1; j < len(name); j++ {
			if name[j] != '.' {
				continue
			}
			prefix := name[:j]
			if _, ok := c.index[prefix]; ok {
				continue // the field of that name is the column's
			}
			g, ok := c.groupIndex[prefix]
			if !ok {
				if c.groupIndex == nil {
					c.groupIndex = map[string]int{}
					c.under = make([][]int, len(c.columns))
				}
				g = len(c.groups)
				c.groupIndex[prefix] = g
				c.groups = append(c.groups, group{name: prefix, subs: map[string]int{}, arrays: true})
			}
			gr := &c.groups[g]
			gr.subs[name[j+1:]] = len(gr.cols)
			gr.cols = append(gr.cols, i)
			c.under[i] = append(c.under[i], g)
		}
	}
	for _, col := range t.Columns {
		if col.Writable() {
			continue
		}
		if g, ok := c.groupIndex[col.Name]; ok {
			c.groups[g].shadow = col.DefaultKind
		}
		for j := 1; j < len(col.Name); j++ {
			if col.Name[j] != '.' {
				continue
			}
			if g, ok := c.groupIndex[col.Name[:j]]; ok {
				gr := &c.groups[g]
				if gr.computed == nil {
					gr.computed = map[string]bool{}
				}
				gr.computed[col.Name[j+1:]] = true
			}
		}
	}
	for g := range c.groups {
		gr := &c.groups[g]
		var names []string
		var cols []string
		for _, i := range gr.cols {
			col := &c.columns[i]
			cols = append(cols, col.name+" "+col.typeName)
			names = append(names, col.name[len(gr.name)+1:])
			if base, _ := unwrapColumn(col.typ); base.Name == "Array" && len(base.Elems) == 1 {
				gr.elems = append(gr.elems, base.Elems[0])
			} else {
				gr.arrays = false
			}
		}
		if gr.arrays {
			gr.typ = (&chtype.Type{Name: "Nested", Elems: gr.elems, FieldNames: names}).String()
		} else {
			gr.elems = nil
			gr.typ = strings.Join(cols, ", ")
		}
		for j := 1; j < len(gr.name); j++ {
			if gr.name[j] != '.' {
				continue
			}
			if p, ok := c.groupIndex[gr.name[:j]]; ok {
				gr.related = append(gr.related, p)
				c.groups[p].related = append(c.groups[p].related, g)
			}
		}
	}
	for i := range c.columns {
		col := &c.columns[i]
		base, _ := unwrapColumn(col.typ)
		if base.Name != "Tuple" && base.Name != "Nested" {
			continue
		}
		for _, elem := range base.FieldNames {
			name := col.name + "." + elem
			if _, ok := c.index[name]; ok {
				continue
			}
			if _, ok := c.groupIndex[name]; ok {
				continue
			}
			if c.elemFields == nil {
				c.elemFields = map[string]int{}
			}
			c.elemFields[name] = i
		}
	}
	if c.groups != nil {
		c.groupVals = make([]value, len(c.groups))
		c.groupFailed = make([]bool, len(c.groups))
		c.failed = make([]bool, len(c.columns))
	}
}

// resetGroups clears the state of the previous payload.
func (c *Converter) resetGroups() {
	c.late = c.late[:0]
	if c.groups == nil {
		return
	}
	if c.groupsGiven {
		clear(c.groupVals)
		clear(c.groupFailed)
		clear(c.failed)
		c.groupsGiven = false
	}
	c.synth = c.synth[:0]
}

// otherField handles a top-level field that names no writable column: a group's field, or a
// field that names an element of a Tuple or Nested column. Other fields are ignored.
func (c *Converter) otherField(name []byte, v value) error {
	if g, ok := c.groupIndex[string(name)]; ok {
		gr := &c.groups[g]
		if c.groupVals[g].kind != kindNone {
			return &PayloadError{Rule: fmt.Sprintf("field %q appears twice; which value is meant is ambiguous", name)}
		}
		c.groupVals[g] = v
		c.groupsGiven = true
		if gr.shadow != "" {
			c.groupError(g, v, "", fmt.Sprintf("is the value of a field that names both the %s column %q, which is never written, and the columns under %q; which is meant is ambiguous", gr.shadow, gr.name, gr.name+"."))
			return nil
		}
		for _, i := range gr.cols {
			if c.fields[i].kind != kindNone {
				c.groupConflict(g, c.columns[i].name)
				return nil
			}
		}
		for _, q := range gr.related {
			if c.groupVals[q].kind == kindNone {
				continue
			}
			if len(c.groups[q].name) < len(gr.name) { // the error is the outer group's
				c.groupConflict(q, gr.name)
			} else {
				c.groupConflict(g, c.groups[q].name)
			}
			return nil
		}
		return nil
	}
	if i, ok := c.elemFields[string(name)]; ok {
		col := &c.columns[i]
		elem := string(name[len(col.name)+1:])
		c.late = append(c.late, lateError{at: i, err: &ValueError{Column: col.name, Type: col.typeName, Value: quote(v.raw),
			Rule: fmt.Sprintf("is the value of the field %q, which is not a column: %s is an element of the column %q; give it inside the field %q", name, elem, col.name, col.name)}})
	}
	return nil
}

// directUnderGroup checks that column i, just given a field of its own, is not under a group
// whose field the payload gave too.
func (c *Converter) directUnderGroup(i int) {
	for _, g := range c.under[i] {
		if c.groupVals[g].kind != kindNone {
			c.groupConflict(g, c.columns[i].name)
		}
	}
}

func (c *Converter) groupConflict(g int, other string) {
	gr := &c.groups[g]
	c.groupError(g, c.groupVals[g], "", fmt.Sprintf("is given together with the field %q; a message gives the columns under %q in one form: the field %q, or fields of their own names", other, gr.name+".", gr.name))
}

// groupError records an error of group g's value v (the offending part of it) and leaves every
// column of the group without an error of its own. Only a group's first error is kept.
func (c *Converter) groupError(g int, v value, path, rule string) {
	if c.groupFailed[g] {
		return
	}
	gr := &c.groups[g]
	c.groupFailed[g] = true
	for _, i := range gr.cols {
		c.failed[i] = true
	}
	c.late = append(c.late, lateError{at: gr.cols[0], err: &ValueError{Column: gr.name, Type: gr.typ, Path: path, Value: quote(v.raw), Rule: rule}})
}

// expandGroups turns the value of each group field of the payload into values of its columns.
func (c *Converter) expandGroups() {
	for g := range c.groups {
		if v := c.groupVals[g]; v.kind != kindNone {
			c.expandGroup(g, v)
		}
	}
}

// expandGroup gives group g's columns their values from v.
func (c *Converter) expandGroup(g int, v value) {
	gr := &c.groups[g]
	if c.groupFailed[g] {
		return
	}
	switch v.kind {
	case kindNull:
		for _, i := range gr.cols {
			if !c.fillColumn(g, i, v, v) {
				return
			}
		}
	case kindObject:
		c.expandObject(g, v)
	case kindArray:
		if gr.arrays {
			c.expandArray(g, v)
			return
		}
		notArray := gr.cols[0]
		for _, i := range gr.cols {
			if base, _ := unwrapColumn(c.columns[i].typ); base.Name != "Array" {
				notArray = i
				break
			}
		}
		c.groupError(g, v, "", fmt.Sprintf("is an array; %q takes an object of its columns ({%q:…}): an array of objects needs every column under %q to be an Array, and column %q (%s) is not",
			gr.name, c.subName(g, 0), gr.name+".", c.columns[notArray].name, c.columns[notArray].typeName))
	default:
		c.groupError(g, v, "", fmt.Sprintf("is %s; %s", v.kind, c.groupTakes(g)))
	}
}

// groupTakes says which JSON a group's field takes.
func (c *Converter) groupTakes(g int) string {
	gr := &c.groups[g]
	sub := c.subName(g, 0)
	if gr.arrays {
		return fmt.Sprintf("%q takes an object of arrays ({%q:[…]}) or an array of objects ([{%q:…}])", gr.name, sub, sub)
	}
	return fmt.Sprintf("%q takes an object of its columns ({%q:…})", gr.name, sub)
}

// subName is the name after the group's name and a dot of its column k.
func (c *Converter) subName(g, k int) string {
	gr := &c.groups[g]
	return c.columns[gr.cols[k]].name[len(gr.name)+1:]
}

// fillColumn gives column i the value val from group g's value; key is the part of the payload
// that gave it, for the error when the column already has a value.
func (c *Converter) fillColumn(g, i int, val, key value) bool {
	if c.fields[i].kind != kindNone {
		c.groupError(g, key, "", fmt.Sprintf("gives column %q a second value; which value is meant is ambiguous", c.columns[i].name))
		return false
	}
	c.fields[i] = val
	return true
}

// expandObject fills group g's columns from an object: each key is a column's name after the
// group's, or a deeper group's.
func (c *Converter) expandObject(g int, v value) {
	gr := &c.groups[g]
	for it := newMembers(v.raw); ; {
		key, val, ok := it.next()
		if !ok {
			return
		}
		name, err := c.text(key)
		if err != nil {
			c.groupError(g, key, "", err.Error())
			return
		}
		if k, ok := gr.subs[string(name)]; ok {
			if !c.fillColumn(g, gr.cols[k], val, key) {
				return
			}
			continue
		}
		full := gr.name + "." + string(name)
		if q, ok := c.groupIndex[full]; ok {
			if c.groups[q].shadow != "" {
				c.groupError(q, val, "", fmt.Sprintf("is the value of a key that names both the %s column %q, which is never written, and the columns under %q; which is meant is ambiguous", c.groups[q].shadow, full, full+"."))
				continue
			}
			c.expandGroup(q, val)
			continue
		}
		if gr.computed[string(name)] {
			continue
		}
		c.groupError(g, key, "", fmt.Sprintf("names no column: the table has no column %q, and nothing given under %q is dropped", full, gr.name))
		return
	}
}

// expandArray fills group g's Array columns from an array of objects: element i of column
// name.k is key k of object i.
func (c *Converter) expandArray(g int, v value) {
	gr := &c.groups[g]
	cells := c.cells[:0]
	seen := c.seen[:0]
	for range gr.cols {
		seen = append(seen, -1)
	}
	c.seen = seen
	n := 0
	for it := newElements(v.raw); ; n++ {
		el, ok := it.next()
		if !ok {
			break
		}
		path := fmt.Sprintf("[%d]", n)
		if el.kind != kindObject {
			c.groupError(g, el, path, fmt.Sprintf("is not an object; each element of the array is an object of the columns under %q ({%q:…})", gr.name+".", c.subName(g, 0)))
			return
		}
		for m := newMembers(el.raw); ; {
			key, val, ok := m.next()
			if !ok {
				break
			}
			name, err := c.text(key)
			if err != nil {
				c.groupError(g, key, path, err.Error())
				return
			}
			k, ok := gr.subs[string(name)]
			switch {
			case !ok && gr.computed[string(name)]:
				continue
			case !ok:
				c.groupError(g, key, path, fmt.Sprintf("names no column: the table has no column %q, and nothing given under %q is dropped", gr.name+"."+string(name), gr.name))
				return
			case seen[k] == n:
				c.groupError(g, key, path, "appears twice in the element; which value is meant is ambiguous")
				return
			}
			seen[k] = n
			cells = append(cells, cell{elem: n, sub: k, val: val})
		}
	}
	c.cells = cells
	for k, i := range gr.cols {
		col := &c.columns[i]
		named := false
		for _, cl := range cells {
			if cl.sub == k {
				named = true
				break
			}
		}
		if n > 0 && !named && col.hasDefault {
			continue // the server computes the column, to the right length
		}
		elemType := gr.elems[k]
		_, nullable := elemType.Unwrap()
		asNull := nullable || emptyOnNull(elemType)
		start := len(c.synth)
		c.synth = append(c.synth, '[')
		next := 0
		missing := func() bool {
			if !asNull {
				c.failed[i] = true
				c.late = append(c.late, lateError{at: i, err: &ValueError{Column: col.name, Type: col.typeName, Path: fmt.Sprintf("[%d]", next),
					Rule: fmt.Sprintf("is missing, and the element type %s is not Nullable", elemType)}})
				return false
			}
			if next > 0 {
				c.synth = append(c.synth, ',')
			}
			c.synth = append(c.synth, "null"...)
			next++
			return true
		}
		ok := true
		for _, cl := range cells {
			if cl.sub != k {
				continue
			}
			for ok && next < cl.elem {
				ok = missing()
			}
			if !ok {
				break
			}
			if next > 0 {
				c.synth = append(c.synth, ',')
			}
			c.synth = append(c.synth, cl.val.raw...)
			next++
		}
		for ok && next < n {
			ok = missing()
		}
		if !ok {
			continue
		}
		c.synth = append(c.synth, ']')
		if !c.fillColumn(g, i, value{kind: kindArray, raw: c.synth[start:len(c.synth):len(c.synth)]}, v) {
			return
		}
	}
}

// sortLate puts the late errors in table order.
func (c *Converter) sortLate() {
	slices.SortStableFunc(c.late, func(a, b lateError) int { return a.at - b.at })
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
// the group's first given column. Columns whose group field failed, and values that are not
// arrays, have their error already.
func (c *Converter) checkNested(errs []*ValueError) []*ValueError {
	for _, g := range c.nested {
		first, firstLen := -1, 0
		for _, i := range g.columns {
			col := &c.columns[i]
			v := c.fields[i]
			if v.kind == kindNone && col.hasDefault {
				continue // the server computes it, to the right length
			}
			if c.failed != nil && c.failed[i] {
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
