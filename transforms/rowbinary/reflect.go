// The columns of nested types (Nullable and Array of non-scalars, Map, Tuple, Nested, the geo
// types), decoded by reflection into the Go types that clickhouse-go reads by reflection.

package rowbinary

import (
	"encoding/binary"
	"fmt"
	"reflect"

	"github.com/paulmach/orb"

	"github.com/ch-beam/pubsub-to-clickhouse/transforms/chtype"
)

func newReflectColumn(t *chtype.Type) (Column, error) {
	typ, err := goType(t)
	if err != nil {
		return nil, err
	}
	return &reflectColumn{t: t, slice: reflect.MakeSlice(reflect.SliceOf(typ), 0, 64)}, nil
}

// reflectColumn holds the values of nested types, whose Go types clickhouse-go reads by
// reflection anyway.
type reflectColumn struct {
	t     *chtype.Type
	slice reflect.Value
}

func (c *reflectColumn) Append(b []byte) error {
	v, rest, err := decode(c.t, b)
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
	geoGoType = map[string]reflect.Type{
		"Ring": reflect.TypeOf(orb.Ring(nil)), "LineString": reflect.TypeOf(orb.LineString(nil)),
		"Polygon": reflect.TypeOf(orb.Polygon(nil)), "MultiLineString": reflect.TypeOf(orb.MultiLineString(nil)),
		"MultiPolygon": reflect.TypeOf(orb.MultiPolygon(nil)),
	}
)

// goType is the Go type of one value of t: *T for Nullable(T) (T itself when T is a pointer),
// []T for Array(T).
func goType(t *chtype.Type) (reflect.Type, error) {
	switch t.Name {
	case "Nullable":
		inner, err := goType(t.Elems[0])
		if err != nil {
			return nil, err
		}
		if inner.Kind() == reflect.Pointer {
			return inner, nil
		}
		return reflect.PointerTo(inner), nil
	case "Array":
		inner, err := goType(t.Elems[0])
		if err != nil {
			return nil, err
		}
		return reflect.SliceOf(inner), nil
	case "LowCardinality", "SimpleAggregateFunction":
		if len(t.Elems) != 1 {
			break
		}
		return goType(t.Elems[0])
	case "Map":
		if len(t.Elems) != 2 {
			break
		}
		for _, e := range t.Elems {
			if _, err := goType(e); err != nil {
				return nil, err
			}
		}
		return mapType, nil
	case "Tuple", "Nested":
		for _, e := range t.Elems {
			if _, err := goType(e); err != nil {
				return nil, err
			}
		}
		if t.Name == "Nested" {
			return reflect.SliceOf(tupleType), nil
		}
		return tupleType, nil
	}
	if typ, ok := geoGoType[t.Name]; ok {
		return typ, nil
	}
	col := scalarColumn(t, "")
	if col == nil {
		return nil, fmt.Errorf("rowbinary: no decoder for type %s", t)
	}
	return reflect.TypeOf(col.Values()).Elem(), nil
}

// decode decodes one value of t from the start of b and returns it with the rest of b.
func decode(t *chtype.Type, b []byte) (reflect.Value, []byte, error) {
	switch t.Name {
	case "LowCardinality", "SimpleAggregateFunction":
		return decode(t.Elems[0], b)
	case "Nullable":
		typ, err := goType(t)
		if err != nil {
			return reflect.Value{}, nil, err
		}
		if len(b) == 0 {
			return reflect.Value{}, nil, fmt.Errorf("%w: Nullable value cut short", ErrCorrupt)
		}
		if b[0] == 1 {
			return reflect.Zero(typ), b[1:], nil
		}
		v, rest, err := decode(t.Elems[0], b[1:])
		if err != nil {
			return reflect.Value{}, nil, err
		}
		if v.Type() == typ { // a pointer type already: nil is NULL
			return v, rest, nil
		}
		p := reflect.New(typ.Elem())
		p.Elem().Set(v)
		return p, rest, nil
	case "Tuple":
		out := make([]any, len(t.Elems))
		for i, e := range t.Elems {
			v, rest, err := decode(e, b)
			if err != nil {
				return reflect.Value{}, nil, err
			}
			out[i], b = v.Interface(), rest
		}
		return reflect.ValueOf(out), b, nil
	case "Map":
		typ, err := goType(t)
		if err != nil {
			return reflect.Value{}, nil, err
		}
		n, k := binary.Uvarint(b)
		if k <= 0 || n > uint64(len(b)) {
			return reflect.Value{}, nil, fmt.Errorf("%w: bad Map length", ErrCorrupt)
		}
		b = b[k:]
		m := &Map{Keys: make([]any, 0, n), Values: make([]any, 0, n)}
		for j := uint64(0); j < n; j++ {
			key, rest, err := decode(t.Elems[0], b)
			if err != nil {
				return reflect.Value{}, nil, err
			}
			val, rest, err := decode(t.Elems[1], rest)
			if err != nil {
				return reflect.Value{}, nil, err
			}
			m.Put(key.Interface(), val.Interface())
			b = rest
		}
		return reflect.ValueOf(m).Convert(typ), b, nil
	}
	if elems, ok := elemTypes(t); ok {
		typ, err := goType(t)
		if err != nil {
			return reflect.Value{}, nil, err
		}
		elem := elems[0]
		if t.Name == "Nested" {
			elem = &chtype.Type{Name: "Tuple", Elems: t.Elems, FieldNames: t.FieldNames}
		}
		n, k := binary.Uvarint(b)
		if k <= 0 || n > uint64(len(b)) {
			return reflect.Value{}, nil, fmt.Errorf("%w: bad %s length", ErrCorrupt, t.Name)
		}
		b = b[k:]
		s := reflect.MakeSlice(typ, int(n), int(n))
		for j := 0; j < int(n); j++ {
			var v reflect.Value
			if v, b, err = decode(elem, b); err != nil {
				return reflect.Value{}, nil, err
			}
			s.Index(j).Set(v)
		}
		return s, b, nil
	}
	end, err := skip(t, b, 0)
	if err != nil {
		return reflect.Value{}, nil, err
	}
	col := scalarColumn(t, "")
	if col == nil {
		return reflect.Value{}, nil, fmt.Errorf("rowbinary: no decoder for type %s", t)
	}
	if err := col.Append(b[:end]); err != nil {
		return reflect.Value{}, nil, err
	}
	return reflect.ValueOf(col.Values()).Index(0), b[end:], nil
}
