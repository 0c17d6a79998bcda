package convert

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/ch-beam/pubsub-to-clickhouse/transforms/chtype"
)

// Tuple(T1, T2, …), Tuple(a T1, b T2, …).
//
// Accepted: a JSON array with exactly one element per Tuple element, in order; for a named Tuple
// also a JSON object whose keys are the element names, in any order. Each element converts as its
// type. A null element is NULL for a Nullable element, empty for an Array, Map or Nested element,
// else an error; in an object, a missing element is treated as null. Errors name the element:
// element .2 (unnamed, counted from 1) or element .name; inside arrays, element [0].name.
// Errors: a different number of array elements, an object key that is not an element name (nothing
// is dropped), a key given twice, an object for an unnamed Tuple, other JSON values.
//
// RowBinary: the elements one after the other, no length (RowBinary format docs, "Tuple").

type tupleEncoder struct {
	name  string // the Tuple's type text
	names []string
	types []*chtype.Type
	elems []encoder
	index map[string]int
}

// tupleNameBreaks are, for each character that clickhouse-go v2.51.0's Tuple parser
// (lib/column/tuple.go, Tuple.parse) reads as syntax wherever it stands, what it takes it for. The
// parser splits the type text the server sends with an INSERT at the commas outside parentheses,
// counts every parenthesis, and takes the text before an element's first space as its name; it
// does not skip backquotes. ClickHouse writes such a name between backquotes, with none of these
// characters escaped (`a b`), so the parser breaks the element there: its type becomes `b` UInt8,
// or the elements run into each other, and clickhouse-go refuses the column ("unsupported column
// type") before sending anything, for every INSERT into the table. The Nested parser
// (lib/column/nested.go) rewrites Nested(…) as Array(Tuple(…)) and meets the same. Names with
// other characters (a backquote, a dot, a quote, a tab, which ClickHouse escapes as \t) are read
// back whole.
var tupleNameBreaks = []struct {
	chars, what, reads string
}{
	{" ", "a space", "the end of the name"},
	{",", "a comma", "the end of the element"},
	{"()", "a parenthesis", "the start or end of a type's arguments"},
}

// checkTupleNames refuses element names that clickhouse-go cannot read back from the type's text
// (tupleNameBreaks).
func checkTupleNames(names []string) error {
	for _, n := range names {
		for _, b := range tupleNameBreaks {
			if strings.ContainsAny(n, b.chars) {
				return fmt.Errorf("the element name %q has %s, which clickhouse-go v2.51.0's Tuple parser (lib/column/tuple.go) reads as %s even between backquotes, "+
					"so every INSERT into the table would fail with 'unsupported column type'; rename the element", n, b.what, b.reads)
			}
		}
	}
	return nil
}

func newTupleEncoder(t *chtype.Type, serverLoc *time.Location) (encoder, error) {
	if err := checkTupleNames(t.FieldNames); err != nil {
		return nil, err
	}
	e := tupleEncoder{name: t.String(), names: t.FieldNames, types: t.Elems}
	for _, et := range t.Elems {
		enc, err := newEncoder(et, serverLoc)
		if err != nil {
			return nil, err
		}
		e.elems = append(e.elems, enc)
	}
	if t.FieldNames != nil {
		e.index = make(map[string]int, len(t.FieldNames))
		for i, n := range t.FieldNames {
			e.index[n] = i
		}
	}
	return e, nil
}

// path names element i: ".name", or ".1" for the first element of an unnamed Tuple.
func (e tupleEncoder) path(i int) string {
	if e.names != nil {
		return "." + e.names[i]
	}
	return "." + strconv.Itoa(i+1)
}

func (e tupleEncoder) takes() string {
	if e.names != nil {
		return "a JSON array of its elements or an object of its element names"
	}
	return "a JSON array of its elements"
}

func (e tupleEncoder) encode(dst []byte, v value, c *Converter) ([]byte, error) {
	switch v.kind {
	case kindArray:
		if n := countElements(v.raw); n != len(e.elems) {
			return dst, errValue(v, fmt.Sprintf("has %d element%s; %s has %d", n, plural(n), e.name, len(e.elems)))
		}
		it := newElements(v.raw)
		for i := range e.elems {
			el, _ := it.next()
			var err error
			if dst, err = encodeElement(dst, el, e.types[i], e.elems[i], c); err != nil {
				return dst, withPath(err, e.path(i))
			}
		}
		return dst, nil
	case kindObject:
		if e.names == nil {
			return dst, errValue(v, fmt.Sprintf("is an object; the unnamed %s takes %s", e.name, e.takes()))
		}
		var small [8]value
		vals := small[:0]
		if len(e.elems) > len(small) {
			vals = make([]value, 0, len(e.elems))
		}
		vals = vals[:len(e.elems)]
		for it := newMembers(v.raw); ; {
			key, val, ok := it.next()
			if !ok {
				break
			}
			name, err := c.text(key)
			if err != nil {
				return dst, errValue(key, err.Error())
			}
			i, ok := e.index[string(name)]
			switch {
			case !ok:
				return dst, errValue(key, fmt.Sprintf("is not an element of %s; nothing is dropped from a Tuple", e.name))
			case vals[i].kind != kindNone:
				return dst, errValue(key, "appears twice in the object; which value is meant is ambiguous")
			}
			vals[i] = val
		}
		for i, el := range vals {
			var err error
			if el.kind == kindNone {
				el = value{kind: kindNull, raw: []byte("null")}
				if dst, err = encodeElement(dst, el, e.types[i], e.elems[i], c); err != nil {
					var ve *ValueError
					if errors.As(err, &ve) {
						ve.Value = ""
						ve.Rule = fmt.Sprintf("is missing, and the element type %s is not Nullable", e.types[i])
					}
					return dst, withPath(err, e.path(i))
				}
				continue
			}
			if dst, err = encodeElement(dst, el, e.types[i], e.elems[i], c); err != nil {
				return dst, withPath(err, e.path(i))
			}
		}
		return dst, nil
	}
	return dst, errValue(v, fmt.Sprintf("is %s; %s takes %s", v.kind, e.name, e.takes()))
}

// encodeElement encodes a Tuple element or a Map value: null is NULL for a Nullable type, empty
// for the types of emptyOnNull, else an error.
func encodeElement(dst []byte, el value, t *chtype.Type, enc encoder, c *Converter) ([]byte, error) {
	if el.kind == kindNull {
		if _, nullable := unwrapColumn(t); !nullable && !emptyOnNull(t) {
			return dst, errValue(el, fmt.Sprintf("is not allowed: the element type %s is not Nullable", t))
		}
	}
	return enc.encode(dst, el, c)
}

// withPath prefixes the path of a *ValueError.
func withPath(err error, path string) error {
	var ve *ValueError
	if errors.As(err, &ve) {
		ve.Path = path + ve.Path
	}
	return err
}

// members iterates over the members of a scanned (hence valid) object.
