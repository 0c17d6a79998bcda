// Decoding: the rows this package encodes (ClickHouse's RowBinaryWithDefaults format,
// https://clickhouse.com/docs/interfaces/formats/RowBinaryWithDefaults) back into columns that
// clickhouse-go/v2's batch API appends in one call per column (batch.Column(i).Append(slice)).
//
// Encoding per type (little-endian, two's complement), as the RowBinary format documents it:
//
//	Int8…Int256, UInt8…UInt256   1, 2, 4, 8, 16 or 32 bytes
//	Float32, Float64, BFloat16   IEEE 754 in 4 or 8 bytes; BFloat16 as the upper 2 bytes of a Float32
//	Bool                         1 byte, 0 or 1
//	Decimal(P, S)                the value × 10^S as an integer of 4 (P ≤ 9), 8 (P ≤ 18), 16 (P ≤ 38) or 32 bytes
//	String, JSON                 a LEB128 length and the bytes (JSON as its text, see json.go)
//	FixedString(N)               exactly N bytes
//	Date, Date32                 UInt16 / Int32 days since 1970-01-01
//	DateTime, DateTime64(P)      UInt32 seconds / Int64 10^-P second ticks since the epoch
//	Time, Time64(P)              Int32 seconds / Int64 10^-P second ticks
//	Enum8, Enum16                the number as Int8 / Int16
//	UUID                         16 bytes: two UInt64 halves, each little-endian
//	IPv4, IPv6                   UInt32 / 16 bytes in network order
//	Nullable(T)                  1 byte (1 = NULL), then T unless NULL
//	Array(T)                     a LEB128 count, then the elements
//	Map(K, V)                    a LEB128 count, then key and value of each entry
//	Tuple(T1, …, Tn)             the elements one after the other
//	Nested(a T1, …)              as Array(Tuple(a T1, …))
//	Point                        Tuple(Float64, Float64)
//	Ring, LineString             Array(Point); Polygon, MultiLineString: Array(Ring); MultiPolygon: Array(Polygon)
//	LowCardinality(T), SimpleAggregateFunction(f, T)   as T
//
// Each column of a row starts with one byte: 1 when the server computes the column's DEFAULT (no
// value follows), else 0.
//
// Every type family has one row in the table of families (family.go), which gives its skip
// (Layout), its Column and its decoder inside composite values. A scalar type's codec, in its
// family's file (int.go, decimal.go, …), encodes, gives the width of its RowBinary value and
// decodes it (the scalar interface); the composite types (Nullable, Array, Map, Tuple, Nested, the
// geo arrays) are combinations of those, decoded in decodecomposite.go.

package convert

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/ch-beam/pubsub-to-clickhouse/transforms/chtype"
)

// ErrCorrupt is wrapped by every decoding error: the row does not match the column types, which
// means the parse and write stages disagree on the schema.
var ErrCorrupt = errors.New("the RowBinary row does not match the column types")

// scalar is implemented by the encoder of every type whose value is one Go value of
// clickhouse-go's column of the type (not a slice, map or tuple of them).
type scalar interface {
	encoder
	// size is the size in bytes of one RowBinary value; 0 for a LEB128 length followed by that
	// many bytes (String, JSON).
	size() int
	// column returns the Column that decodes the type's values, plain (shapePlain), or wrapped
	// in Nullable (shapeNullable) or Array (shapeArray).
	column(wrap shape) Column
}

// Layout splits rows of one list of column types into each column's value bytes. Build it once
// per schema with NewLayout; it is safe for concurrent use.
type Layout struct {
	skips []skipFunc
}

// skipFunc returns the end of the value that starts at b[i].
type skipFunc func(b []byte, i int) (int, error)

// NewLayout returns the Layout of rows over types. The error wraps ErrCorrupt and names the first
// type without a decoder.
func NewLayout(types []*chtype.Type) (*Layout, error) {
	l := &Layout{skips: make([]skipFunc, len(types))}
	for c, t := range types {
		var err error
		if l.skips[c], err = newSkip(t); err != nil {
			return nil, err
		}
	}
	return l, nil
}

// Split walks one row over the column types and returns each column's value bytes, nil for a
// column whose DEFAULT the server computes. spans is reused when it has room.
func (l *Layout) Split(row []byte, spans [][]byte) ([][]byte, error) {
	spans = spans[:0]
	i := 0
	for c, skip := range l.skips {
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
		end, err := skip(row, i)
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

// Split is NewLayout(types) followed by its Split, for a single row.
func Split(types []*chtype.Type, row []byte, spans [][]byte) ([][]byte, error) {
	l, err := NewLayout(types)
	if err != nil {
		return nil, err
	}
	return l.Split(row, spans)
}

// cutShort is the error of a value that runs past the end of the row.
func cutShort(t *chtype.Type) error { return fmt.Errorf("%w: %s value cut short", ErrCorrupt, t) }

// readCount reads the LEB128 count (or length) at b[i], at most len(b) since each counted item
// takes at least a byte, and returns it with the index after it.
func readCount(t *chtype.Type, b []byte, i int) (uint64, int, error) {
	if i > len(b) {
		return 0, 0, cutShort(t)
	}
	n, k := binary.Uvarint(b[i:])
	if k <= 0 || n > uint64(len(b)) {
		return 0, 0, cutShort(t)
	}
	return n, i + k, nil
}

// newNullableSkip is the skip of Nullable(T): a flag byte, then T unless it is 1 (NULL).
func newNullableSkip(t *chtype.Type) (skipFunc, error) {
	inner, err := newSkip(t.Elems[0])
	if err != nil {
		return nil, err
	}
	return func(b []byte, i int) (int, error) {
		if i >= len(b) {
			return 0, cutShort(t)
		}
		if b[i] == 1 {
			return i + 1, nil
		}
		return inner(b, i+1)
	}, nil
}

// newTupleSkip is the skip of Tuple(T1, …): its elements one after the other.
func newTupleSkip(t *chtype.Type) (skipFunc, error) {
	elems, err := newSkips(t.Elems)
	if err != nil {
		return nil, err
	}
	return func(b []byte, i int) (int, error) { return skipAll(elems, b, i) }, nil
}

// countedSkip returns the family's skip of a type that RowBinary writes as a LEB128 count followed
// by that many elements, each of the types elems gives (Array, Map's key and value, Nested's
// fields, the geo arrays' element type).
func countedSkip(elems func(t *chtype.Type) ([]*chtype.Type, bool)) func(t *chtype.Type) (skipFunc, error) {
	return func(t *chtype.Type) (skipFunc, error) {
		types, ok := elems(t)
		if !ok {
			return nil, noDecoder(t)
		}
		skips, err := newSkips(types)
		if err != nil {
			return nil, err
		}
		return func(b []byte, i int) (int, error) {
			n, i, err := readCount(t, b, i)
			if err != nil {
				return 0, err
			}
			for ; n > 0; n-- {
				if i, err = skipAll(skips, b, i); err != nil {
					return 0, err
				}
			}
			return i, nil
		}, nil
	}
}

// widthSkip is the skip of a scalar type t whose values take w bytes, or, for w = 0, a LEB128
// length and that many bytes (scalar.size).
func widthSkip(t *chtype.Type, w int) skipFunc {
	if w > 0 {
		return func(b []byte, i int) (int, error) {
			if i+w > len(b) {
				return 0, cutShort(t)
			}
			return i + w, nil
		}
	}
	return func(b []byte, i int) (int, error) {
		n, i, err := readCount(t, b, i)
		if err != nil {
			return 0, err
		}
		if uint64(len(b)-i) < n {
			return 0, cutShort(t)
		}
		return i + int(n), nil
	}
}

func newSkips(types []*chtype.Type) ([]skipFunc, error) {
	out := make([]skipFunc, len(types))
	for i, t := range types {
		var err error
		if out[i], err = newSkip(t); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func skipAll(skips []skipFunc, b []byte, i int) (int, error) {
	for _, skip := range skips {
		var err error
		if i, err = skip(b, i); err != nil {
			return 0, err
		}
	}
	return i, nil
}
