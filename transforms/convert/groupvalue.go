// The value of a group field (nested.go says which forms it takes: an object, an array of
// objects, null), expanded into the values of the group's columns.

package convert

import (
	"fmt"
	"slices"
)

// expandGroups turns the value of each group field of the payload into values of its columns.
func (c *Converter) expandGroups() {
	for g := range c.groups {
		if v := c.groupVals[g]; v.kind != kindNone {
			c.expandAt = c.groupAt[g]
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
			if c.columns[i].origin != "" {
				continue // its value is the message's
			}
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
		notArray := -1 // a column the payload fills, else one the message does
		for _, i := range gr.cols {
			if base, _ := unwrapColumn(c.columns[i].typ); shapeOf(base) != shapeArray && (notArray < 0 || c.columns[i].origin == "") {
				if notArray = i; c.columns[i].origin == "" {
					break
				}
			}
		}
		if notArray < 0 {
			notArray = gr.cols[0]
		}
		c.groupError(g, v, "", fmt.Sprintf("is an array; %q takes an object of its columns ({%q:…}): an array of objects needs every column under %q to be an Array, and column %q (%s) is not",
			gr.name, c.exampleSub(g), gr.name+".", c.columns[notArray].name, c.columns[notArray].typeName))
	default:
		c.groupError(g, v, "", fmt.Sprintf("is %s; %s", v.kind, c.groupTakes(g)))
	}
}

// groupTakes says which JSON a group's field takes.
func (c *Converter) groupTakes(g int) string {
	gr := &c.groups[g]
	sub := c.exampleSub(g)
	if gr.arrays {
		return fmt.Sprintf("%q takes an object of arrays ({%q:[…]}) or an array of objects ([{%q:…}])", gr.name, sub, sub)
	}
	return fmt.Sprintf("%q takes an object of its columns ({%q:…})", gr.name, sub)
}

// exampleSub is the name after the group's name and a dot of its first column that the payload
// fills (of its first column when the message fills them all), for the examples of errors.
func (c *Converter) exampleSub(g int) string {
	gr := &c.groups[g]
	i := gr.cols[0]
	for _, j := range gr.cols {
		if c.columns[j].origin == "" {
			i = j
			break
		}
	}
	return c.columns[i].name[len(gr.name)+1:]
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
			if i := gr.cols[k]; c.columns[i].origin != "" {
				c.notRead(c.columns[i].name, val)
				continue
			}
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
			c.notRead(full, val)
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
			c.groupError(g, el, path, fmt.Sprintf("is not an object; each element of the array is an object of the columns under %q ({%q:…})", gr.name+".", c.exampleSub(g)))
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
				c.notRead(gr.name+"."+string(name), val)
				continue
			case ok && c.columns[gr.cols[k]].origin != "":
				c.notRead(c.columns[gr.cols[k]].name, val)
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
		if col.origin != "" {
			continue // its value is the message's
		}
		named := false
		for _, cl := range cells {
			if cl.sub == k {
				named = true
				break
			}
		}
		if n > 0 && !named && col.hasDefault {
			continue // the server computes the column (and rejects one of another length: nested.go)
		}
		elemType := gr.elems[k]
		_, nullable := unwrapColumn(elemType)
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
