package convert

import (
	"bytes"
	"encoding/binary"
	"fmt"
)

// This file scans a payload's one JSON object field by field: it matches each key to a column,
// records the value's span and, while the fields come in table order, encodes the row as it goes.

// scanFields validates payload and records, per column, the value of its field. While the fields
// come in table order and convert, without a gap, it also encodes them (c.eager: tables without
// groups or Nested structures, whose rows are the columns' values one after the other): it returns dst with the
// columns before done encoded, where Convert goes on; of those columns' values it may keep only
// the kind. A column that fails is left to Convert, which encodes it again and records its error,
// so that the row and the errors are those of encoding every column after the scan. When err is
// not nil, the bytes of dst's capacity past its length may have been written.
func (c *Converter) scanFields(dst, b []byte, utf8Checked bool) (row []byte, done int, err error) {
	clear(c.fields)
	c.resetGroups()
	c.untaken = 0
	if c.injected != nil {
		c.setMeta(c.meta)
	}
	if c.unknownCol >= 0 {
		c.unknown, c.unknownKeys, c.unknownLate = c.unknown[:0], c.unknownKeys[:0], false
	}
	if !utf8Checked {
		if err := CheckUTF8(b); err != nil {
			return dst, 0, err
		}
	}
	i := skipSpace(b, 0)
	if i >= len(b) {
		return dst, 0, &PayloadError{Rule: emptyRule(b)}
	}
	if b[i] != '{' {
		if bytes.HasPrefix(b, []byte(byteOrderMark)) {
			return dst, 0, &PayloadError{Rule: bomRule}
		}
		v, end, err := scanValue(b, i, 0)
		if err != nil {
			return dst, 0, &PayloadError{Rule: err.Error()}
		}
		return dst, 0, notOneObject(b, v, end)
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		i++
	} else {
		next := 0 // the column after the previous field's: fields mostly come in table order
		eager, closed := c.eager, false
		if eager {
			dst, next, i, closed = c.scanInOrder(dst, b, i)
			done = next
		}
		for !closed {
			if i >= len(b) || b[i] != '"' {
				return dst, 0, &PayloadError{Rule: (&syntaxError{i, describeAt(b, i) + ", expected a field name in double quotes"}).Error()}
			}
			// The key: first as the name of the next column, else scanned and looked up.
			keyStart, keyEnd, col, ok := i, 0, 0, false
			var name []byte
			if next < len(c.keys) {
				if k := c.keys[next]; k != "" && len(b)-i > len(k) && string(b[i+1:i+1+len(k)]) == k {
					keyEnd, col, ok = i+1+len(k), next, true
					name = b[i+1 : keyEnd-1]
				}
			}
			keyEscaped := false
			if !ok {
				var err error
				if keyEnd, keyEscaped, err = scanString(b, i); err != nil {
					return dst, 0, syntaxRule(b, err)
				}
			}
			if i = keyEnd; i >= len(b) || b[i] != ':' {
				if i = skipSpace(b, i); i >= len(b) || b[i] != ':' {
					return dst, 0, &PayloadError{Rule: (&syntaxError{i, describeAt(b, i) + `, expected ":" after a field name`}).Error()}
				}
			}
			i = skipSpace(b, i+1)
			// The value: strings and literals here, the others by scanValue.
			var v value
			var end int
			if i < len(b) && b[i] == '"' {
				e, escaped, err := scanString(b, i)
				if err != nil {
					return dst, 0, syntaxRule(b, err)
				}
				v, end = value{kind: kindString, raw: b[i:e], escaped: escaped}, e
			} else if k, n := literalAt(b, i); k != kindNone {
				v, end = value{kind: k, raw: b[i : i+n]}, i+n
			} else {
				var err error
				if v, end, err = scanValue(b, i, 1); err != nil {
					return dst, 0, syntaxRule(b, err)
				}
			}
			if !ok {
				if !keyEscaped {
					name = b[keyStart+1 : keyEnd-1]
					col, ok = c.index[string(name)]
				} else {
					key := value{kind: kindString, raw: b[keyStart:keyEnd], escaped: true}
					var err error
					if name, err = c.text(key); err != nil {
						return dst, 0, &PayloadError{Rule: fmt.Sprintf("field name %s %v", quote(key.raw), err)}
					}
					col, ok = c.index[string(name)]
				}
			}
			if ok {
				if c.fields[col].kind != kindNone {
					return dst, 0, FieldTwice(name)
				}
				c.fields[col] = v
				next = col + 1
				if c.groupsGiven && len(c.under[col]) > 0 {
					c.directUnderGroup(col)
				}
				if eager && col == done {
					start := len(dst)
					if row, err := c.encodeColumn(dst, col, v); err == nil {
						dst = row
						done++
						for c.injected != nil && done < len(c.columns) && c.columns[done].meta {
							if dst, ok = c.encodeInjected(dst, done); !ok {
								eager = false
								break
							}
							done++
						}
					} else {
						dst, eager = row[:start], false
					}
				} else {
					eager = false
				}
			} else {
				taken := false
				if c.groupIndex != nil || c.elemFields != nil {
					var err error
					if taken, err = c.otherField(name, v, keyStart); err != nil {
						return dst, 0, err
					}
				}
				if !taken {
					c.untaken++
					if c.unknownCol >= 0 {
						c.unknown = append(c.unknown, unknownField{key: b[keyStart:keyEnd], val: v.raw, at: keyStart})
					}
				}
			}
			if i = end; i >= len(b) || b[i] != ',' && b[i] != '}' {
				if i = skipSpace(b, i); i >= len(b) {
					return dst, 0, syntaxRule(b, &syntaxError{i, "unexpected end of the payload in an object"})
				}
			}
			if b[i] == '}' {
				i++
				break
			}
			if b[i] != ',' {
				return dst, 0, syntaxRule(b, &syntaxError{i, describeAt(b, i) + ` in an object, expected "," or "}"`})
			}
			i = skipSpace(b, i+1)
		}
	}
	if i = skipSpace(b, i); i < len(b) {
		return dst, 0, &PayloadError{Rule: fmt.Sprintf("unexpected text after the JSON object at byte %d: %s; a message must hold exactly one JSON object", i, quote(b[i:]))}
	}
	return dst, done, nil
}

// keyWords is the start of a column's key as it is compared with a payload: 16 bytes as two
// little-endian words under masks.
type keyWords struct {
	word, mask [2]uint64
	long       bool // the key is longer (or empty: no key): compare it as a string
}

// newKeyWords returns the keyWords of a key (c.keys).
func newKeyWords(key string) keyWords {
	w := keyWords{long: key == "" || len(key) > 16}
	var pad [16]byte
	copy(pad[:], key)
	for j := range 2 {
		w.word[j] = binary.LittleEndian.Uint64(pad[8*j:])
		for k := 8 * j; k < 8*j+8 && k < len(key); k++ {
			w.mask[j] |= 0xFF << (8 * (k - 8*j))
		}
	}
	return w
}

// scanInOrder is the loop of scanFields for the common case, with less to keep track of: from the
// field at b[i], while each field's key names the next column (c.keys) and its value is followed
// by a comma or the object's end and converts, it records the value and encodes the column. It
// stops before any other field, which scanFields takes up again from its key; it returns dst with
// the columns before col encoded, and the index of that key, or the index after the object when
// the object has ended (closed).
func (c *Converter) scanInOrder(dst, b []byte, i int) (row []byte, col, at int, closed bool) {
loop:
	for ; col < len(c.keys); col++ {
		if w := &c.words[col]; !w.long && i+17 <= len(b) {
			if b[i] != '"' || binary.LittleEndian.Uint64(b[i+1:])&w.mask[0] != w.word[0] ||
				binary.LittleEndian.Uint64(b[i+9:])&w.mask[1] != w.word[1] {
				break
			}
		} else if k := c.keys[col]; k == "" || len(b)-i <= len(k) || b[i] != '"' || string(b[i+1:i+1+len(k)]) != k {
			if k == "" && c.injected != nil {
				var ok bool
				if dst, ok = c.encodeInjected(dst, col); ok {
					continue // a metadata column: no field of the payload
				}
			}
			break
		}
		j := skipSpace(b, i+1+len(c.keys[col]))
		if j >= len(b) || b[j] != ':' {
			break
		}
		j = skipSpace(b, j+1)
		var v value
		var row []byte // the row with the column, when its value is scanned into it
		end := 0
		if j >= len(b) {
			break
		}
		switch ch := b[j]; {
		case ch == '"' && c.columns[col].isString:
			r, e, escaped, ok := stringEncoder{}.appendField(dst, b, j)
			if !ok {
				break loop
			}
			v, end, row = value{kind: kindString, raw: b[j:e], escaped: escaped}, e, r
		case ch == '"':
			e, escaped, err := scanString(b, j)
			if err != nil {
				break loop
			}
			v, end = value{kind: kindString, raw: b[j:e], escaped: escaped}, e
		case ch == '-' || ch >= '0' && ch <= '9':
			e, ok := numberEnd(b, j)
			if !ok {
				break loop
			}
			v, end = value{kind: kindNumber, raw: b[j:e]}, e
		default:
			if k, n := literalAt(b, j); k != kindNone {
				v, end = value{kind: k, raw: b[j : j+n]}, j+n
			} else if r, e, err := scanValue(b, j, 1); err == nil {
				v, end = r, e
			} else {
				break loop
			}
		}
		if end = skipSpace(b, end); end >= len(b) || b[end] != ',' && b[end] != '}' {
			break
		}
		if row == nil {
			start := len(dst)
			r, err := c.encodeColumn(dst, col, v)
			if err != nil {
				return r[:start], col, i, false
			}
			row = r
		}
		// The column is in the row: of its value only the kind is kept, which tells a later
		// field of the same name that it is a second one.
		dst, c.fields[col].kind = row, v.kind
		if b[end] == '}' {
			return dst, col + 1, end + 1, true
		}
		i = skipSpace(b, end+1)
	}
	return dst, col, i, false
}
