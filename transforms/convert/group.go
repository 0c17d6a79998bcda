// The groups of dotted column names (nested.go says which fields they take): finding them among
// the table's writable columns, routing a payload's fields to them, and recording their errors.

package convert

import (
	"fmt"
	"strings"

	"github.com/ch-beam/pubsub-to-clickhouse/transforms/chtype"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/schema"
)

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
//
// A column filled from the message (metadata.go) is a member of its groups as any other column
// is, so that a group takes the same forms with or without metadataColumns, and its name is a
// column's name: the payload never gives it a value, in its own field (not read) or under a
// group (expandObject, expandArray: not read either, or given to unknownFieldsColumn as its own
// field would be).
func (c *Converter) buildGroups(t *schema.Table) {
	isColumn := make(map[string]bool, len(c.columns))
	for i := range c.columns {
		isColumn[c.columns[i].name] = true
	}
	for i := range c.columns {
		name := c.columns[i].name
		for j := 1; j < len(name); j++ {
			if name[j] != '.' {
				continue
			}
			prefix := name[:j]
			if isColumn[prefix] {
				continue // the field of that name is the column's (not read when the message fills it)
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
		given, injected := 0, false // the columns the payload fills; whether the message fills any
		for _, i := range gr.cols {
			col := &c.columns[i]
			cols = append(cols, col.name+" "+col.typeName)
			names = append(names, col.name[len(gr.name)+1:])
			var elem *chtype.Type
			base, _ := unwrapColumn(col.typ)
			if shapeOf(base) == shapeArray && len(base.Elems) == 1 {
				elem = base.Elems[0]
			}
			gr.elems = append(gr.elems, elem)
			if col.origin != "" {
				injected = true
				continue // the array-of-objects form gives it no value
			}
			given++
			if elem == nil {
				gr.arrays = false
			}
		}
		gr.arrays = gr.arrays && given > 0
		if gr.arrays && !injected {
			gr.typ = (&chtype.Type{Name: "Nested", Elems: gr.elems, FieldNames: names}).String()
		} else if gr.arrays {
			gr.typ = strings.Join(cols, ", ")
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
		if shapeOf(base) != shapeFields {
			continue
		}
		for _, elem := range base.FieldNames {
			name := col.name + "." + elem
			if isColumn[name] {
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
		c.groupAt = make([]int, len(c.groups))
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

// otherField handles a top-level field that names no writable column read from the payload, at
// byte at of the payload: a group's field, or a field that names an element of a Tuple or Nested
// column; it reports whether the field was one of those (taken). Other fields are ignored (or
// kept for unknownFieldsColumn).
func (c *Converter) otherField(name []byte, v value, at int) (taken bool, err error) {
	if g, ok := c.groupIndex[string(name)]; ok {
		gr := &c.groups[g]
		if c.groupVals[g].kind != kindNone {
			return true, FieldTwice(name)
		}
		c.groupVals[g], c.groupAt[g] = v, at
		c.groupsGiven = true
		if gr.shadow != "" {
			c.groupError(g, v, "", fmt.Sprintf("is the value of a field that names both the %s column %q, which is never written, and the columns under %q; which is meant is ambiguous", gr.shadow, gr.name, gr.name+"."))
			return true, nil
		}
		for _, i := range gr.cols {
			if c.fields[i].kind != kindNone && c.columns[i].origin == "" {
				c.groupConflict(g, c.columns[i].name)
				return true, nil
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
			return true, nil
		}
		return true, nil
	}
	if i, ok := c.elemFields[string(name)]; ok {
		col := &c.columns[i]
		elem := string(name[len(col.name)+1:])
		c.late = append(c.late, lateError{at: i, err: &ValueError{Column: col.name, Type: col.typeName, Value: quote(v.raw),
			Rule: fmt.Sprintf("is the value of the field %q, which is not a column: %s is an element of the column %q; give it inside the field %q", name, elem, col.name, col.name)}})
		return true, nil
	}
	return false, nil
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
// column of the group that the payload fills without an error of its own (a column filled from
// the message keeps its own). Only a group's first error is kept.
func (c *Converter) groupError(g int, v value, path, rule string) {
	if c.groupFailed[g] {
		return
	}
	gr := &c.groups[g]
	c.groupFailed[g] = true
	for _, i := range gr.cols {
		c.failed[i] = c.columns[i].origin == ""
	}
	c.late = append(c.late, lateError{at: gr.cols[0], err: &ValueError{Column: gr.name, Type: gr.typ, Path: path, Value: quote(v.raw), Rule: rule}})
}
