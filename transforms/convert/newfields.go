// What schema evolution (template parameter addNewColumns) asks of the converter: which of a
// payload's top-level fields no column of the table takes, and so could become a column.

package convert

// Untaken returns how many top-level fields of the payload last converted gave the row no value:
// the fields that unknownFieldsColumn keeps (a name that is no writable column, or the name of a
// column filled from the message). 0 after a payload that is not one JSON object. It costs
// nothing: the conversion counts them; NewFields says which of them name no column at all.
func (c *Converter) Untaken() int { return c.untaken }

// NewFields calls fn, in the payload's order, for each top-level field of payload that names no
// column of the table at all, with its name (escapes resolved) and its value's exact text (as
// TopLevelFields gives them): not a writable column, not a MATERIALIZED, ALIAS or EPHEMERAL one,
// not a column of metadataColumns or unknownFieldsColumn, not the part before a dot of column
// names (n of n.a), not an element of a Tuple or Nested column (t.a). Those are the fields a new
// column could take. A name given twice is passed twice. The payload is checked as
// TopLevelFields checks it, and its errors are TopLevelFields'; an error of fn stops the walk and
// is returned as it is.
func (c *Converter) NewFields(payload []byte, fn func(name string, value []byte) error) error {
	return walkTopLevel(payload, func(name []byte, v value) error {
		if c.tableColumns[string(name)] {
			return nil
		}
		if _, ok := c.groupIndex[string(name)]; ok {
			return nil
		}
		if _, ok := c.elemFields[string(name)]; ok {
			return nil
		}
		return fn(string(name), v.raw)
	})
}

// GroupOf returns what a new column named name would fall under, by the part of the name before
// one of its dots: a column of the table ("n" for n.b beside a column n, the ambiguity rule 1 of
// docs/conversion.md warns of), or a group whose columns are all arrays (a flattened Nested: "n"
// for n.b beside n.a Array(UInt8), whose array-of-objects form a column that is not an Array
// would break for every later message). It returns "" when there is none: a name without a dot,
// or under a group of other columns, whose object form a new Nullable column joins.
func (c *Converter) GroupOf(name string) string {
	for j := 1; j < len(name); j++ {
		if name[j] != '.' {
			continue
		}
		prefix := name[:j]
		if c.tableColumns[prefix] {
			return prefix
		}
		if g, ok := c.groupIndex[prefix]; ok && c.groups[g].arrays {
			return prefix
		}
	}
	return ""
}
