// NativeColumn: one column of an INSERT in ClickHouse's Native format, built from the column's
// RowBinary values (what Layout.Split returned) by copying, for the driver's column to read whole
// (clickhouse-go's column.Interface.Decode) instead of a Go value per row (Column); and
// StringColumn: a String column's values as Go strings pointing into those RowBinary values,
// which the driver's column copies once.

package convert

import (
	"encoding/binary"
	"fmt"
	"slices"
	"sync"
	"unsafe"

	"github.com/ch-beam/pubsub-to-clickhouse/transforms/chtype"
)

// NativeColumn accumulates the values of one column for one INSERT in ClickHouse's Native format
// (https://clickhouse.com/docs/interfaces/formats/Native): for a type T of a family whose Native
// values are its RowBinary values (family.native: the integers, floats, Decimal, Bool, String,
// FixedString, UUID, IPv4, IPv6, Enum8, Enum16, Date, Date32, DateTime, DateTime64)
//
//	T            the values one after another
//	Nullable(T)  one byte per row (1 for NULL), then a value per row, T's zero value for a NULL
//	Array(T)     per row the UInt64 (little-endian) count of the elements so far, then the elements
//
// which is byte for byte what clickhouse-go v2.51.0 writes for the Go values Column gives (the
// tests compare the two). Other types (LowCardinality, Map, Tuple, JSON, the geo types, nested
// wrappers) have no NativeColumn: their Native form is not their RowBinary.
type NativeColumn struct {
	wrap    shape  // shapePlain, shapeNullable or shapeArray
	width   int    // the bytes of one value of T; 0 for a LEB128 length and that many bytes
	rows    int    // the values appended
	values  []byte // the values (of Nullable: with zeros for NULL; of Array: the elements)
	nulls   []byte // Nullable: a byte per row
	offsets []byte // Array: a UInt64 per row
	elems   uint64 // Array: the elements so far
}

// NewNativeColumn returns the NativeColumn of t, or false when t has none (see NativeColumn).
func NewNativeColumn(t *chtype.Type) (*NativeColumn, bool) {
	wrap := shapeOf(t)
	base := t
	switch wrap {
	case shapeNullable, shapeArray:
		if len(t.Elems) != 1 {
			return nil, false
		}
		base = t.Elems[0]
	case shapePlain:
	default:
		return nil, false
	}
	if f := families[base.Name]; f == nil || !f.native {
		return nil, false
	}
	s, ok := scalarOf(base)
	if !ok {
		return nil, false
	}
	c := nativeColumns.Get().(*NativeColumn)
	c.Reset()
	c.wrap, c.width = wrap, s.size()
	return c, true
}

// nativeColumns keep the memory of released columns of up to maxPooledBytes: fresh buffers cost
// more to clear and fault in than to fill, but a pool of large ones (a column of thousands of
// long strings) is memory the garbage collector counts live, and the heap grows by twice as much
// again (GOGC=200).
var nativeColumns = sync.Pool{New: func() any { return new(NativeColumn) }}

const maxPooledBytes = 256 << 10

// Release gives the column's memory to a later NewNativeColumn. Neither the column nor the bytes
// that Native returned may be used after.
func (c *NativeColumn) Release() {
	if cap(c.values)+cap(c.nulls)+cap(c.offsets) <= maxPooledBytes {
		nativeColumns.Put(c)
	}
}

// Reserve makes room for values more values whose RowBinary takes bytes bytes in all.
func (c *NativeColumn) Reserve(values, bytes int) {
	c.values = slices.Grow(c.values, bytes)
	switch c.wrap {
	case shapeNullable:
		c.nulls = slices.Grow(c.nulls, values)
	case shapeArray:
		c.offsets = slices.Grow(c.offsets, 8*values)
	}
}

// Append appends one value: the RowBinary bytes Layout.Split returned for the column. An error
// wraps ErrCorrupt.
func (c *NativeColumn) Append(b []byte) error {
	switch c.wrap {
	case shapeNullable:
		switch {
		case len(b) == 1 && b[0] == 1:
			c.nulls = append(c.nulls, 1)
			c.values = c.appendZero(c.values)
		case len(b) > 0 && b[0] == 0 && c.isOne(b[1:]):
			c.nulls = append(c.nulls, 0)
			c.values = append(c.values, b[1:]...)
		default:
			return fmt.Errorf("%w: %d bytes do not hold one Nullable value", ErrCorrupt, len(b))
		}
	case shapeArray:
		n, k := binary.Uvarint(b)
		if k <= 0 || !c.areN(b[k:], n) {
			return fmt.Errorf("%w: %d bytes do not hold one Array value", ErrCorrupt, len(b))
		}
		c.elems += n
		c.offsets = binary.LittleEndian.AppendUint64(c.offsets, c.elems)
		c.values = append(c.values, b[k:]...)
	default:
		if !c.isOne(b) {
			return fmt.Errorf("%w: %d bytes do not hold one value", ErrCorrupt, len(b))
		}
		c.values = append(c.values, b...)
	}
	c.rows++
	return nil
}

// appendZero appends the zero value of T: width zero bytes, or the empty string.
func (c *NativeColumn) appendZero(b []byte) []byte {
	if c.width == 0 {
		return append(b, 0)
	}
	return append(b, make([]byte, c.width)...)
}

// isOne reports whether b is exactly one value of T.
func (c *NativeColumn) isOne(b []byte) bool { return c.areN(b, 1) }

// areN reports whether b is exactly n values of T.
func (c *NativeColumn) areN(b []byte, n uint64) bool {
	if c.width > 0 {
		w := uint64(c.width)
		return uint64(len(b))%w == 0 && uint64(len(b))/w == n
	}
	for ; n > 0; n-- {
		l, k := binary.Uvarint(b)
		if k <= 0 || l > uint64(len(b)-k) {
			return false
		}
		b = b[k+int(l):]
	}
	return len(b) == 0
}

// Native returns the column in the Native format, head and then values, and its row count: head
// is Nullable's byte per row or Array's offsets (empty for T), values the values (of Nullable,
// with the zero value for NULL; of Array, the elements). They are the column's own bytes, which
// stay as they are until Reset.
func (c *NativeColumn) Native() (head, values []byte, rows int) {
	switch c.wrap {
	case shapeNullable:
		return c.nulls, c.values, c.rows
	case shapeArray:
		return c.offsets, c.values, c.rows
	}
	return nil, c.values, c.rows
}

// Rows is the number of values appended.
func (c *NativeColumn) Rows() int { return c.rows }

// Reset empties the column, keeping its memory.
func (c *NativeColumn) Reset() {
	c.rows, c.elems = 0, 0
	c.values, c.nulls, c.offsets = c.values[:0], c.nulls[:0], c.offsets[:0]
}

// StringColumn gathers the values of a String column for one INSERT as Go strings that point into
// the RowBinary values Layout.Split returned, without copying them: the driver's String column
// takes them (chclient.Strings) and copies each once. A NativeColumn of String copies them first
// into the Native format, which the driver then reads back out (chclient.ReadNative): on blocks
// of 5,000 demo rows, whose columns are mostly String, building the columns and handing them to
// the driver took about a fifth longer that way (BenchmarkColumns in transforms/write). The
// bytes Append was given must stay as they are until the driver has taken the strings.
type StringColumn struct {
	values []string
	bytes  int
}

// NewStringColumn returns the StringColumn of t, or false when t is not String (Nullable(String),
// LowCardinality(String), FixedString and the rest have none).
func NewStringColumn(t *chtype.Type) (*StringColumn, bool) {
	if t.Name != "String" || len(t.Elems) > 0 || len(t.Args) > 0 {
		return nil, false
	}
	c := stringColumns.Get().(*StringColumn)
	c.values, c.bytes = c.values[:0], 0
	return c, true
}

// stringColumns keep the slices of released StringColumns: one of 5,000 rows is 80 KB of string
// headers, which each INSERT would otherwise clear and the garbage collector scan.
var stringColumns = sync.Pool{New: func() any { return new(StringColumn) }}

// Reserve makes room for values more values (bytes is not needed: the strings are not copied).
func (c *StringColumn) Reserve(values, _ int) { c.values = slices.Grow(c.values, values) }

// Append appends one value: the RowBinary bytes Layout.Split returned for the column, a LEB128
// length and that many bytes. An error wraps ErrCorrupt.
func (c *StringColumn) Append(b []byte) error {
	n, k := binary.Uvarint(b)
	if k <= 0 || n != uint64(len(b)-k) {
		return fmt.Errorf("%w: %d bytes do not hold one String value", ErrCorrupt, len(b))
	}
	c.values = append(c.values, unsafe.String(unsafe.SliceData(b[k:]), int(n)))
	c.bytes += int(n)
	return nil
}

// Values returns the values appended, one per row, pointing into the bytes Append was given.
func (c *StringColumn) Values() []string { return c.values }

// Bytes returns the length of the values appended, summed.
func (c *StringColumn) Bytes() int { return c.bytes }

// Release gives the column's slice to a later NewStringColumn, without the strings (which point
// into the rows' bytes). Neither the column nor the slice Values returned may be used after.
func (c *StringColumn) Release() {
	clear(c.values)
	c.values, c.bytes = c.values[:0], 0
	if cap(c.values)*int(unsafe.Sizeof("")) <= maxPooledBytes {
		stringColumns.Put(c)
	}
}
