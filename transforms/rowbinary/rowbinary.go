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

// NewColumn returns the Column for type t.
func NewColumn(t *chtype.Type) (Column, error) {
	switch t.Name {
	case "Int8":
		return &fixed[int8]{read: func(b []byte) int8 { return int8(b[0]) }, width: 1}, nil
	case "Int16":
		return &fixed[int16]{read: func(b []byte) int16 { return int16(binary.LittleEndian.Uint16(b)) }, width: 2}, nil
	case "Int32":
		return &fixed[int32]{read: func(b []byte) int32 { return int32(binary.LittleEndian.Uint32(b)) }, width: 4}, nil
	case "Int64":
		return &fixed[int64]{read: func(b []byte) int64 { return int64(binary.LittleEndian.Uint64(b)) }, width: 8}, nil
	case "UInt8":
		return &fixed[uint8]{read: func(b []byte) uint8 { return b[0] }, width: 1}, nil
	case "UInt16":
		return &fixed[uint16]{read: binary.LittleEndian.Uint16, width: 2}, nil
	case "UInt32":
		return &fixed[uint32]{read: binary.LittleEndian.Uint32, width: 4}, nil
	case "UInt64":
		return &fixed[uint64]{read: binary.LittleEndian.Uint64, width: 8}, nil
	case "Float32":
		return &fixed[float32]{read: func(b []byte) float32 { return math.Float32frombits(binary.LittleEndian.Uint32(b)) }, width: 4}, nil
	case "Float64":
		return &fixed[float64]{read: func(b []byte) float64 { return math.Float64frombits(binary.LittleEndian.Uint64(b)) }, width: 8}, nil
	case "Date":
		return &fixed[time.Time]{read: readDate, width: 2}, nil
	case "DateTime":
		return &fixed[time.Time]{read: readDateTime, width: 4}, nil
	case "String":
		return &stringColumn{}, nil
	case "LowCardinality":
		return NewColumn(t.Elems[0])
	case "Nullable", "Array":
		typ, err := goType(t)
		if err != nil {
			return nil, err
		}
		return &reflectColumn{t: t, slice: reflect.MakeSlice(reflect.SliceOf(typ), 0, 64)}, nil
	}
	return nil, fmt.Errorf("rowbinary: no decoder for type %s", t)
}

func readDate(b []byte) time.Time {
	return time.Unix(int64(binary.LittleEndian.Uint16(b))*86400, 0).UTC()
}

func readDateTime(b []byte) time.Time {
	return time.Unix(int64(binary.LittleEndian.Uint32(b)), 0).UTC()
}

type fixed[T any] struct {
	vals  []T
	read  func([]byte) T
	width int
}

func (c *fixed[T]) Append(b []byte) error {
	if len(b) != c.width {
		return fmt.Errorf("%w: %d bytes for a %d-byte value", ErrCorrupt, len(b), c.width)
	}
	c.vals = append(c.vals, c.read(b))
	return nil
}
func (c *fixed[T]) Values() any { return c.vals }
func (c *fixed[T]) Reset()      { c.vals = c.vals[:0] }

type stringColumn struct{ vals []string }

func (c *stringColumn) Append(b []byte) error {
	n, k := binary.Uvarint(b)
	if k <= 0 || uint64(len(b)-k) != n {
		return fmt.Errorf("%w: bad String value", ErrCorrupt)
	}
	c.vals = append(c.vals, string(b[k:]))
	return nil
}
func (c *stringColumn) Values() any { return c.vals }
func (c *stringColumn) Reset()      { c.vals = c.vals[:0] }

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
