// Package rowbinary decodes rows encoded by package convert (ClickHouse's RowBinaryWithDefaults
// format, https://clickhouse.com/docs/interfaces/formats/RowBinaryWithDefaults) into columns that
// clickhouse-go/v2's batch API appends in one call per column (batch.Column(i).Append(slice)).
//
// Encoding per type (little-endian): IntN/UIntN in N/8 bytes; Float32/64 as IEEE 754; String as a
// LEB128 length and the bytes; Date as UInt16 days since 1970-01-01; DateTime as UInt32 seconds
// since the epoch; Nullable(T) as one byte (1 = NULL) then T unless NULL; Array(T) as a LEB128
// count then the elements; LowCardinality(T) as T. Each column of a row starts with one byte: 1
// when the server computes the column's DEFAULT (no value follows), else 0.
package rowbinary

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"reflect"
	"time"

	"github.com/ch-beam/pubsub-to-clickhouse/transforms/chtype"
)

// ErrCorrupt is wrapped by every decoding error: the row does not match the column types, which
// means the parse and write stages disagree on the schema.
var ErrCorrupt = errors.New("rowbinary: row does not match the column types")

// Split walks one row over the column types and returns each column's value bytes, nil for a
// column whose DEFAULT the server computes. spans is reused when it has room.
func Split(types []*chtype.Type, row []byte, spans [][]byte) ([][]byte, error) {
	spans = spans[:0]
	i := 0
	for c, t := range types {
		if i >= len(row) {
			return nil, fmt.Errorf("%w: row ends before column %d", ErrCorrupt, c)
		}
		flag := row[i]
		i++
		switch flag {
		case 1:
			spans = append(spans, nil)
			continue
		case 0:
		default:
			return nil, fmt.Errorf("%w: column %d has default flag %d", ErrCorrupt, c, flag)
		}
		end, err := skip(t, row, i)
		if err != nil {
			return nil, err
		}
		spans = append(spans, row[i:end:end])
		i = end
	}
	if i != len(row) {
		return nil, fmt.Errorf("%w: %d bytes after the last column", ErrCorrupt, len(row)-i)
	}
	return spans, nil
}

// skip returns the end of the value of type t that starts at b[i].
func skip(t *chtype.Type, b []byte, i int) (int, error) {
	need := func(n int) (int, error) {
		if i+n > len(b) {
			return 0, fmt.Errorf("%w: %s value cut short", ErrCorrupt, t)
		}
		return i + n, nil
	}
	switch t.Name {
	case "Nullable":
		if i >= len(b) {
			return need(1)
		}
		if b[i] == 1 {
			return i + 1, nil
		}
		return skip(t.Elems[0], b, i+1)
	case "LowCardinality":
		return skip(t.Elems[0], b, i)
	case "Array":
		n, k := binary.Uvarint(b[i:])
		if k <= 0 {
			return need(len(b) + 1)
		}
		i += k
		for ; n > 0; n-- {
			var err error
			if i, err = skip(t.Elems[0], b, i); err != nil {
				return 0, err
			}
		}
		return i, nil
	case "String":
		n, k := binary.Uvarint(b[i:])
		if k <= 0 || n > uint64(len(b)) {
			return need(len(b) + 1)
		}
		i += k
		return need(int(n))
	}
	if w := fixedWidth(t.Name); w > 0 {
		return need(w)
	}
	return 0, fmt.Errorf("%w: no decoder for type %s", ErrCorrupt, t)
}

func fixedWidth(name string) int {
	switch name {
	case "Int8", "UInt8":
		return 1
	case "Int16", "UInt16", "Date":
		return 2
	case "Int32", "UInt32", "Float32", "DateTime":
		return 4
	case "Int64", "UInt64", "Float64":
		return 8
	}
	return 0
}

// Column accumulates the values of one column for one INSERT.
type Column interface {
	// Append decodes one value (the bytes Split returned for this column) and appends it.
	Append(value []byte) error
	// Values returns the accumulated values as the slice clickhouse-go's Column.Append takes:
	// []int32 for Int32, []string for String, []time.Time for Date and DateTime, []*T for
	// Nullable(T), [][]T for Array(T).
	Values() any
	// Reset empties the column, keeping its memory.
	Reset()
}

// NewColumn returns the Column for type t. Scalars, Nullable(scalar) and Array(scalar) decode
// into typed slices without reflection; deeper nestings use reflection (clickhouse-go reads them
// by reflection anyway).
func NewColumn(t *chtype.Type) (Column, error) {
	switch t.Name {
	case "LowCardinality":
		return NewColumn(t.Elems[0])
	case "Nullable", "Array":
		inner := t.Elems[0]
		if inner.Name == "LowCardinality" {
			inner = inner.Elems[0]
		}
		if c := scalarColumn(inner.Name, t.Name); c != nil {
			return c, nil
		}
		typ, err := goType(t)
		if err != nil {
			return nil, err
		}
		return &reflectColumn{t: t, slice: reflect.MakeSlice(reflect.SliceOf(typ), 0, 64)}, nil
	}
	if c := scalarColumn(t.Name, ""); c != nil {
		return c, nil
	}
	return nil, fmt.Errorf("rowbinary: no decoder for type %s", t)
}

// codec reads one scalar from the start of b: the value, the bytes it took, and false when b is
// too short.
type codec[T any] func(b []byte) (T, int, bool)

func fixedCodec[T any](width int, read func([]byte) T) codec[T] {
	return func(b []byte) (T, int, bool) {
		if len(b) < width {
			var zero T
			return zero, 0, false
		}
		return read(b), width, true
	}
}

func stringCodec(b []byte) (string, int, bool) {
	n, k := binary.Uvarint(b)
	if k <= 0 || n > uint64(len(b)-k) {
		return "", 0, false
	}
	return string(b[k : k+int(n)]), k + int(n), true
}

// scalarColumn returns the Column of a scalar type name, plain (wrap ""), or wrapped in
// "Nullable" or "Array"; nil when name is not a scalar.
func scalarColumn(name, wrap string) Column {
	switch name {
	case "Int8":
		return wrapped(wrap, fixedCodec(1, func(b []byte) int8 { return int8(b[0]) }))
	case "Int16":
		return wrapped(wrap, fixedCodec(2, func(b []byte) int16 { return int16(binary.LittleEndian.Uint16(b)) }))
	case "Int32":
		return wrapped(wrap, fixedCodec(4, func(b []byte) int32 { return int32(binary.LittleEndian.Uint32(b)) }))
	case "Int64":
		return wrapped(wrap, fixedCodec(8, func(b []byte) int64 { return int64(binary.LittleEndian.Uint64(b)) }))
	case "UInt8":
		return wrapped(wrap, fixedCodec(1, func(b []byte) uint8 { return b[0] }))
	case "UInt16":
		return wrapped(wrap, fixedCodec(2, binary.LittleEndian.Uint16))
	case "UInt32":
		return wrapped(wrap, fixedCodec(4, binary.LittleEndian.Uint32))
	case "UInt64":
		return wrapped(wrap, fixedCodec(8, binary.LittleEndian.Uint64))
	case "Float32":
		return wrapped(wrap, fixedCodec(4, func(b []byte) float32 { return math.Float32frombits(binary.LittleEndian.Uint32(b)) }))
	case "Float64":
		return wrapped(wrap, fixedCodec(8, func(b []byte) float64 { return math.Float64frombits(binary.LittleEndian.Uint64(b)) }))
	case "Date":
		return wrapped(wrap, fixedCodec(2, readDate))
	case "DateTime":
		return wrapped(wrap, fixedCodec(4, readDateTime))
	case "String":
		return wrapped(wrap, codec[string](stringCodec))
	}
	return nil
}

func wrapped[T any](wrap string, c codec[T]) Column {
	switch wrap {
	case "Nullable":
		return &nullableColumn[T]{read: c}
	case "Array":
		return &arrayColumn[T]{read: c}
	}
	return &plainColumn[T]{read: c}
}

func readDate(b []byte) time.Time {
	return time.Unix(int64(binary.LittleEndian.Uint16(b))*86400, 0).UTC()
}

func readDateTime(b []byte) time.Time {
	return time.Unix(int64(binary.LittleEndian.Uint32(b)), 0).UTC()
}

type plainColumn[T any] struct {
	vals []T
	read codec[T]
}

func (c *plainColumn[T]) Append(b []byte) error {
	v, n, ok := c.read(b)
	if !ok || n != len(b) {
		return fmt.Errorf("%w: %d bytes do not hold one %T", ErrCorrupt, len(b), v)
	}
	c.vals = append(c.vals, v)
	return nil
}
func (c *plainColumn[T]) Values() any { return c.vals }
func (c *plainColumn[T]) Reset()      { c.vals = c.vals[:0] }

type nullableColumn[T any] struct {
	vals []*T
	read codec[T]
}

func (c *nullableColumn[T]) Append(b []byte) error {
	if len(b) == 1 && b[0] == 1 {
		c.vals = append(c.vals, nil)
		return nil
	}
	if len(b) == 0 || b[0] != 0 {
		return fmt.Errorf("%w: bad Nullable value", ErrCorrupt)
	}
	v, n, ok := c.read(b[1:])
	if !ok || n != len(b)-1 {
		return fmt.Errorf("%w: %d bytes do not hold one Nullable(%T)", ErrCorrupt, len(b), v)
	}
	c.vals = append(c.vals, &v)
	return nil
}
func (c *nullableColumn[T]) Values() any { return c.vals }
func (c *nullableColumn[T]) Reset()      { c.vals = c.vals[:0] }

type arrayColumn[T any] struct {
	vals [][]T
	read codec[T]
}

func (c *arrayColumn[T]) Append(b []byte) error {
	count, k := binary.Uvarint(b)
	if k <= 0 || count > uint64(len(b)) {
		return fmt.Errorf("%w: bad Array length", ErrCorrupt)
	}
	elems := make([]T, 0, count)
	for b = b[k:]; count > 0; count-- {
		v, n, ok := c.read(b)
		if !ok {
			return fmt.Errorf("%w: Array element cut short", ErrCorrupt)
		}
		elems = append(elems, v)
		b = b[n:]
	}
	if len(b) != 0 {
		return fmt.Errorf("%w: %d bytes after an Array value", ErrCorrupt, len(b))
	}
	c.vals = append(c.vals, elems)
	return nil
}
func (c *arrayColumn[T]) Values() any { return c.vals }
func (c *arrayColumn[T]) Reset()      { c.vals = c.vals[:0] }

// reflectColumn holds Nullable and Array values, whose Go types clickhouse-go reads by reflection
// anyway.
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

// goType is the Go type of one value of t: *T for Nullable(T), []T for Array(T).
func goType(t *chtype.Type) (reflect.Type, error) {
	switch t.Name {
	case "Nullable":
		inner, err := goType(t.Elems[0])
		if err != nil {
			return nil, err
		}
		return reflect.PointerTo(inner), nil
	case "Array":
		inner, err := goType(t.Elems[0])
		if err != nil {
			return nil, err
		}
		return reflect.SliceOf(inner), nil
	case "LowCardinality":
		return goType(t.Elems[0])
	}
	col, err := NewColumn(t)
	if err != nil {
		return nil, err
	}
	return reflect.TypeOf(col.Values()).Elem(), nil
}

// decode decodes one value of t from the start of b and returns it with the rest of b.
func decode(t *chtype.Type, b []byte) (reflect.Value, []byte, error) {
	switch t.Name {
	case "LowCardinality":
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
		p := reflect.New(typ.Elem())
		p.Elem().Set(v)
		return p, rest, nil
	case "Array":
		typ, err := goType(t)
		if err != nil {
			return reflect.Value{}, nil, err
		}
		n, k := binary.Uvarint(b)
		if k <= 0 || n > uint64(len(b)) {
			return reflect.Value{}, nil, fmt.Errorf("%w: bad Array length", ErrCorrupt)
		}
		b = b[k:]
		s := reflect.MakeSlice(typ, int(n), int(n))
		for j := 0; j < int(n); j++ {
			var v reflect.Value
			if v, b, err = decode(t.Elems[0], b); err != nil {
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
	col, err := NewColumn(t)
	if err != nil {
		return reflect.Value{}, nil, err
	}
	if err := col.Append(b[:end]); err != nil {
		return reflect.Value{}, nil, err
	}
	return reflect.ValueOf(col.Values()).Index(0), b[end:], nil
}
