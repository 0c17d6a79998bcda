// Column, the values of one column for one INSERT, and its implementations without reflection:
// the typed columns of scalars, Nullable(scalar) and Array(scalar), built from a scalar type's
// codec (its file holds the codec); and Map, the Go value of one Map(K, V) value.

package convert

import (
	"encoding/binary"
	"fmt"
	"slices"
	"unsafe"

	chcolumn "github.com/ClickHouse/clickhouse-go/v2/lib/column"
)

// Column accumulates the values of one column for one INSERT.
type Column interface {
	// Append decodes one value (the bytes Split returned for this column) and appends it.
	Append(value []byte) error
	// Values returns the accumulated values as the slice clickhouse-go's Column.Append takes:
	//
	//	Int8…UInt64, Float32, Float64   []int8 … []uint64, []float32, []float64
	//	BFloat16                        []float32 (each exactly a BFloat16 value)
	//	Int128, UInt128, Int256, UInt256 []*big.Int
	//	Decimal                         []decimal.Decimal (github.com/shopspring/decimal, exponent -S)
	//	Bool                            []bool
	//	String, JSON, FixedString(N)    []string (FixedString values are N bytes, zero-padded)
	//	Date, Date32, DateTime, DateTime64  []time.Time, in UTC
	//	Time, Time64                    []time.Duration
	//	Enum8, Enum16                   []int8, []int16 (the numbers)
	//	UUID                            []uuid.UUID (github.com/google/uuid)
	//	IPv4, IPv6                      []netip.Addr (IPv6 always in its 16-byte form)
	//	Nullable(T)                     []*T; []*big.Int with nil for the big integers
	//	Array(T)                        [][]T
	//	Map(K, V)                       []*Map, keeping the entries' order
	//	Tuple(…)                        [][]any, one Go value per element
	//	Nested(…)                       [][][]any (Array(Tuple(…)))
	//	Point, Ring, Polygon, …         []orb.Point, []orb.Ring, … (github.com/paulmach/orb)
	//	LowCardinality(T), SimpleAggregateFunction(f, T)  as T; but []*float32, []*float64 (never nil)
	//	                                for LowCardinality(Float32), LowCardinality(Float64) (lowCardinalityFloat)
	Values() any
	// Reset empties the column, keeping its memory.
	Reset()
}

// Reserver is a Column that can make room ahead of its Appends: for values more values whose
// encodings (what Split returned) take bytes bytes in all.
type Reserver interface {
	Reserve(values, bytes int)
}

// Map is one value of a Map(K, V) column: its entries in the order of the JSON object, with the
// Go values of K and V as Column.Values gives them. *Map is the column.IterableOrderedMap that
// clickhouse-go's Map column appends; a Go map would lose the order.
type Map struct {
	Keys   []any
	Values []any
}

// Put appends an entry.
func (m *Map) Put(key, value any) {
	m.Keys = append(m.Keys, key)
	m.Values = append(m.Values, value)
}

// Iterator returns the entries in order.
func (m *Map) Iterator() chcolumn.MapIterator { return &mapIterator{m: m, i: -1} }

type mapIterator struct {
	m *Map
	i int
}

func (it *mapIterator) Next() bool { it.i++; return it.i < len(it.m.Keys) }
func (it *mapIterator) Key() any   { return it.m.Keys[it.i] }
func (it *mapIterator) Value() any { return it.m.Values[it.i] }

var _ chcolumn.IterableOrderedMap = (*Map)(nil)

// codec reads one scalar from the start of b: the value, the bytes it took, and false when b is
// too short.
type codec[T any] func(b []byte) (T, int, bool)

// fixedCodec is the codec of a type whose values take width bytes, read by read.
func fixedCodec[T any](width int, read func([]byte) T) codec[T] {
	return func(b []byte) (T, int, bool) {
		if len(b) < width {
			var zero T
			return zero, 0, false
		}
		return read(b), width, true
	}
}

// fixedColumn is the Column of a fixed-width scalar: wrapped(wrap, fixedCodec(width, read)).
func fixedColumn[T any](wrap shape, width int, read func([]byte) T) Column {
	return wrapped(wrap, fixedCodec(width, read))
}

// bytesCodec reads a LEB128 length and that many bytes, which it returns without copying them.
func bytesCodec(b []byte) ([]byte, int, bool) {
	n, k := binary.Uvarint(b)
	if k <= 0 || n > uint64(len(b)-k) {
		return nil, 0, false
	}
	return b[k : k+int(n)], k + int(n), true
}

// stringCodec is bytesCodec giving a string.
func stringCodec(b []byte) (string, int, bool) {
	v, n, ok := bytesCodec(b)
	return string(v), n, ok
}

// stringColumnOf is the Column of String and JSON values: stringColumn for String and
// Nullable(String), the generic one for Array(String).
func stringColumnOf(wrap shape) Column {
	switch wrap {
	case shapePlain:
		return &stringColumn{}
	case shapeNullable:
		return &stringColumn{nullable: true}
	}
	return wrapped(wrap, codec[string](stringCodec))
}

// stringColumn is the Column of String or Nullable(String) values (Values gives []string or
// []*string). The bytes of every value go into one buffer, and Values cuts each value from the
// buffer itself, as a string that shares it (the bytes given out are never written again: Reset
// goes on after them): an allocation per column rather than one per value, and no copy.
type stringColumn struct {
	nullable bool
	buf      []byte
	ends     []int // where each value ends in buf; -1 for a NULL
}

func (c *stringColumn) Append(b []byte) error {
	var v []byte
	if c.nullable {
		var null bool
		var err error
		if v, null, err = readNullable(b, bytesCodec); err != nil {
			return err
		}
		if null {
			c.ends = append(c.ends, -1)
			return nil
		}
	} else {
		var n int
		var ok bool
		if v, n, ok = bytesCodec(b); !ok || n != len(b) {
			return fmt.Errorf("%w: %d bytes do not hold one String", ErrCorrupt, len(b))
		}
	}
	c.buf = append(c.buf, v...)
	c.ends = append(c.ends, len(c.buf))
	return nil
}

// Reserve makes room for values values of bytes bytes in all (their encodings' length, a little
// more than the values').
func (c *stringColumn) Reserve(values, bytes int) {
	c.buf, c.ends = slices.Grow(c.buf, bytes), slices.Grow(c.ends, values)
}

func (c *stringColumn) Values() any {
	all, start := unsafe.String(unsafe.SliceData(c.buf), len(c.buf)), 0
	if !c.nullable {
		vals := make([]string, len(c.ends))
		for i, end := range c.ends {
			vals[i], start = all[start:end], end
		}
		return vals
	}
	vals, strs := make([]*string, len(c.ends)), make([]string, len(c.ends))
	for i, end := range c.ends {
		if end >= 0 {
			strs[i], start = all[start:end], end
			vals[i] = &strs[i]
		}
	}
	return vals
}

// Reset empties the column; the values already given out keep their bytes.
func (c *stringColumn) Reset() { c.buf, c.ends = c.buf[len(c.buf):], c.ends[:0] }

func wrapped[T any](wrap shape, c codec[T]) Column {
	switch wrap {
	case shapeNullable:
		return &nullableColumn[T]{read: c}
	case shapeArray:
		return &arrayColumn[T]{read: c}
	}
	return &plainColumn[T]{read: c}
}

// wrappedPtr is wrapped for a pointer type T, whose Nullable is T itself with nil for NULL
// (clickhouse-go's BigInt column takes []*big.Int for both).
func wrappedPtr[T any](wrap shape, c codec[T]) Column {
	if wrap == shapeNullable {
		return &nilNullColumn[T]{read: c}
	}
	return wrapped(wrap, c)
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
	// pool holds the values vals points to, allocated in chunks rather than one by one: the
	// first of 8 values, each next one twice as large, up to nullablePool (a small block, as
	// when a batch is split to isolate a rejected row, allocates little).
	pool []T
}

// nullablePool is the most values of a Nullable column allocated at once.
const nullablePool = 256

// readNullable reads one Nullable(T) value: its flag byte, then T unless it is NULL.
func readNullable[T any](b []byte, read codec[T]) (v T, null bool, err error) {
	if len(b) == 1 && b[0] == 1 {
		return v, true, nil
	}
	if len(b) == 0 || b[0] != 0 {
		return v, false, fmt.Errorf("%w: bad Nullable value", ErrCorrupt)
	}
	v, n, ok := read(b[1:])
	if !ok || n != len(b)-1 {
		return v, false, fmt.Errorf("%w: %d bytes do not hold one Nullable(%T)", ErrCorrupt, len(b), v)
	}
	return v, false, nil
}

func (c *nullableColumn[T]) Append(b []byte) error {
	v, null, err := readNullable(b, c.read)
	switch {
	case err != nil:
		return err
	case null:
		c.vals = append(c.vals, nil)
	default:
		if len(c.pool) == cap(c.pool) {
			c.pool = make([]T, 0, min(max(8, 2*cap(c.pool)), nullablePool))
		}
		c.pool = append(c.pool, v)
		c.vals = append(c.vals, &c.pool[len(c.pool)-1])
	}
	return nil
}
func (c *nullableColumn[T]) Values() any { return c.vals }

// Reset empties the column; the values already returned by Values stay as they are.
func (c *nullableColumn[T]) Reset() { c.vals, c.pool = c.vals[:0], nil }

// nilNullColumn is Nullable(T) for a pointer type T: NULL is the zero value, nil.
type nilNullColumn[T any] struct {
	vals []T
	read codec[T]
}

func (c *nilNullColumn[T]) Append(b []byte) error {
	v, _, err := readNullable(b, c.read) // NULL reads as the zero value, nil
	if err != nil {
		return err
	}
	c.vals = append(c.vals, v)
	return nil
}
func (c *nilNullColumn[T]) Values() any { return c.vals }
func (c *nilNullColumn[T]) Reset()      { c.vals = c.vals[:0] }

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
