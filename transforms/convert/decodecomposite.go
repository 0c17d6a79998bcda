// The columns of nested types (Nullable and Array of non-scalars, Map, Tuple, Nested, the geo
// arrays), decoded by reflection into the Go types that clickhouse-go reads by reflection. Each
// column compiles its type once into a tree of valueDecoders.

package convert

import (
	"fmt"
	"reflect"
	"time"

	"github.com/ch-beam/pubsub-to-clickhouse/transforms/chtype"
)

func newReflectColumn(t *chtype.Type) (Column, error) {
	d, err := newValueDecoder(t)
	if err != nil {
		return nil, err
	}
	return &reflectColumn{t: t, d: d, slice: reflect.MakeSlice(reflect.SliceOf(d.typ), 0, 64)}, nil
}

// reflectColumn holds the values of nested types, whose Go types clickhouse-go reads by
// reflection anyway.
type reflectColumn struct {
	t     *chtype.Type
	d     *valueDecoder
	slice reflect.Value
}

func (c *reflectColumn) Append(b []byte) error {
	v, rest, err := c.d.decode(b)
	if err != nil {
		return err
	}
	if len(rest) != 0 {
		return fmt.Errorf("%w: %d bytes after a %s value", ErrCorrupt, len(rest), c.t)
	}
	c.slice = reflect.Append(c.slice, v)
	return nil
}
func (c *reflectColumn) Values() any { return c.slice.Interface() }
func (c *reflectColumn) Reset()      { c.slice = c.slice.Slice(0, 0) }

var (
	mapType   = reflect.TypeOf((*Map)(nil))
	tupleType = reflect.TypeOf([]any(nil))
)

// valueDecoder decodes one value of a type from the start of b into its Go value (typ), and
// returns it with the rest of b. The value is a copy the caller may keep.
type valueDecoder struct {
	typ    reflect.Type
	decode func(b []byte) (reflect.Value, []byte, error)
}

// newTupleDecoder is the decoder of Tuple(T1, …): []any, one Go value per element.
func newTupleDecoder(t *chtype.Type) (*valueDecoder, error) {
	elems, err := newValueDecoders(t.Elems)
	if err != nil {
		return nil, err
	}
	return &valueDecoder{typ: tupleType, decode: func(b []byte) (reflect.Value, []byte, error) {
		out := make([]any, len(elems))
		for i, e := range elems {
			v, rest, err := e.decode(b)
			if err != nil {
				return reflect.Value{}, nil, err
			}
			out[i], b = rowValue(v), rest
		}
		return reflect.ValueOf(out), b, nil
	}}, nil
}

// rowValue is the Go value of v for clickhouse-go's AppendRow, as a Tuple's element or a Map's
// value: v's own, but an untyped nil for the NULL of a Nullable Enum8 or Enum16. clickhouse-go
// v2.51.0's Enum columns dereference a *int8 or *int16 that AppendRow gets without looking for nil
// (lib/column/enum8.go, enum16.go), and its Nullable column hands them the nil pointer of a NULL,
// so that the write stage panicked; they take a nil as the placeholder of a NULL, and so do the
// Int8 and Int16 columns, whose NULLs are such pointers too.
func rowValue(v reflect.Value) any {
	if (v.Type() == int8Pointer || v.Type() == int16Pointer) && v.IsNil() {
		return nil
	}
	return v.Interface()
}

var (
	int8Pointer  = reflect.TypeOf((*int8)(nil))
	int16Pointer = reflect.TypeOf((*int16)(nil))
	// durationPointer is the Go type of Nullable(Time) and Nullable(Time64(P)). An Array of them
	// is a []any (anySlice) of *time.Duration: clickhouse-go v2.51.0's Array column hands the
	// element type an untyped nil for a nil pointer of a typed slice (lib/column/array.go,
	// append), which its Time and Time64 columns refuse ("converting <nil> to Time is
	// unsupported"), and the *time.Duration of an element of a []any, nil or not, which they take.
	durationPointer = reflect.TypeOf((*time.Duration)(nil))
	anySlice        = reflect.TypeOf([]any(nil))
)

// newScalarDecoder is the decoder of a scalar type t whose codec is s: the element type of the
// codec's plain Column.
func newScalarDecoder(t *chtype.Type, s scalar) *valueDecoder {
	skip := widthSkip(t, s.size())
	col := s.column(shapePlain)
	return &valueDecoder{typ: reflect.TypeOf(col.Values()).Elem(), decode: func(b []byte) (reflect.Value, []byte, error) {
		end, err := skip(b, 0)
		if err != nil {
			return reflect.Value{}, nil, err
		}
		col.Reset()
		if err := col.Append(b[:end]); err != nil {
			return reflect.Value{}, nil, err
		}
		// A copy: col's backing array is reused by the next value.
		v := reflect.New(reflect.TypeOf(col.Values()).Elem()).Elem()
		v.Set(reflect.ValueOf(col.Values()).Index(0))
		return v, b[end:], nil
	}}
}

func newValueDecoders(types []*chtype.Type) ([]*valueDecoder, error) {
	out := make([]*valueDecoder, len(types))
	for i, t := range types {
		var err error
		if out[i], err = newValueDecoder(t); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func newNullableDecoder(t *chtype.Type) (*valueDecoder, error) {
	inner, err := newValueDecoder(t.Elems[0])
	if err != nil {
		return nil, err
	}
	typ := inner.typ
	if typ.Kind() != reflect.Pointer {
		typ = reflect.PointerTo(typ)
	}
	return &valueDecoder{typ: typ, decode: func(b []byte) (reflect.Value, []byte, error) {
		if len(b) == 0 {
			return reflect.Value{}, nil, fmt.Errorf("%w: Nullable value cut short", ErrCorrupt)
		}
		if b[0] == 1 {
			return reflect.Zero(typ), b[1:], nil
		}
		v, rest, err := inner.decode(b[1:])
		if err != nil {
			return reflect.Value{}, nil, err
		}
		if v.Type() == typ { // a pointer type already: nil is NULL
			return v, rest, nil
		}
		p := reflect.New(typ.Elem())
		p.Elem().Set(v)
		return p, rest, nil
	}}, nil
}

func newMapDecoder(t *chtype.Type) (*valueDecoder, error) {
	if len(t.Elems) != 2 {
		return nil, noColumn(t)
	}
	kv, err := newValueDecoders(t.Elems)
	if err != nil {
		return nil, err
	}
	return &valueDecoder{typ: mapType, decode: func(b []byte) (reflect.Value, []byte, error) {
		n, i, err := readCount(t, b, 0)
		if err != nil {
			return reflect.Value{}, nil, err
		}
		b = b[i:]
		m := &Map{Keys: make([]any, 0, n), Values: make([]any, 0, n)}
		for j := uint64(0); j < n; j++ {
			key, rest, err := kv[0].decode(b)
			if err != nil {
				return reflect.Value{}, nil, err
			}
			val, rest, err := kv[1].decode(rest)
			if err != nil {
				return reflect.Value{}, nil, err
			}
			m.Put(key.Interface(), rowValue(val))
			b = rest
		}
		return reflect.ValueOf(m), b, nil
	}}, nil
}

// newSliceDecoder is the decoder of Array(T): []T.
func newSliceDecoder(t *chtype.Type) (*valueDecoder, error) {
	if len(t.Elems) != 1 {
		return nil, noColumn(t)
	}
	return newArrayDecoder(t, t.Elems[0], nil)
}

// newNestedDecoder is the decoder of Nested(a T1, …), an Array of its Tuple: [][]any.
func newNestedDecoder(t *chtype.Type) (*valueDecoder, error) {
	if len(t.Elems) == 0 {
		return nil, noColumn(t)
	}
	return newArrayDecoder(t, nestedTuple(t), nil)
}

// newArrayDecoder is the decoder of a type that RowBinary writes as a count and that many values
// of elem, into typ, or into []E (E elem's Go type) when typ is nil.
func newArrayDecoder(t, elem *chtype.Type, typ reflect.Type) (*valueDecoder, error) {
	e, err := newValueDecoder(elem)
	if err != nil {
		return nil, err
	}
	if typ == nil {
		typ = reflect.SliceOf(e.typ)
		if e.typ == durationPointer {
			typ = anySlice
		}
	}
	return &valueDecoder{typ: typ, decode: func(b []byte) (reflect.Value, []byte, error) {
		n, i, err := readCount(t, b, 0)
		if err != nil {
			return reflect.Value{}, nil, err
		}
		b = b[i:]
		s := reflect.MakeSlice(typ, int(n), int(n))
		for j := 0; j < int(n); j++ {
			var v reflect.Value
			if v, b, err = e.decode(b); err != nil {
				return reflect.Value{}, nil, err
			}
			s.Index(j).Set(v)
		}
		return s, b, nil
	}}, nil
}
