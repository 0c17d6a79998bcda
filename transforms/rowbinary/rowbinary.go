// Package rowbinary decodes rows encoded by package convert (ClickHouse's RowBinaryWithDefaults
// format, https://clickhouse.com/docs/interfaces/formats/RowBinaryWithDefaults) into columns that
// clickhouse-go/v2's batch API appends in one call per column (batch.Column(i).Append(slice)).
//
// Encoding per type (little-endian, two's complement), as the RowBinary format documents it:
//
//	Int8…Int256, UInt8…UInt256   1, 2, 4, 8, 16 or 32 bytes
//	Float32, Float64, BFloat16   IEEE 754 in 4 or 8 bytes; BFloat16 as the upper 2 bytes of a Float32
//	Bool                         1 byte, 0 or 1
//	Decimal(P, S)                the value × 10^S as an integer of 4 (P ≤ 9), 8 (P ≤ 18), 16 (P ≤ 38) or 32 bytes
//	String, JSON                 a LEB128 length and the bytes (JSON as its text, see package convert)
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
// The Go values NewColumn builds are the ones clickhouse-go v2.51.0's columns take in Append
// (lib/column/*.go): see Column.Values.
package rowbinary

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"

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

// geoTypes are the geo types' element types: a Ring is an Array of Points, and so on.
var geoTypes = func() map[string]*chtype.Type {
	m := map[string]*chtype.Type{}
	for _, n := range []string{"Point", "Ring", "LineString", "Polygon", "MultiLineString", "MultiPolygon"} {
		m[n] = &chtype.Type{Name: n}
	}
	return m
}()

var geoElem = map[string]string{
	"Ring": "Point", "LineString": "Point", "Polygon": "Ring", "MultiLineString": "LineString",
	"MultiPolygon": "Polygon",
}

// elemTypes returns the types of one element of a type that RowBinary writes as a count followed
// by that many elements: Array, Map (key and value), Nested (its fields), the geo arrays.
func elemTypes(t *chtype.Type) ([]*chtype.Type, bool) {
	switch t.Name {
	case "Array":
		return t.Elems, len(t.Elems) == 1
	case "Map":
		return t.Elems, len(t.Elems) == 2
	case "Nested":
		return t.Elems, len(t.Elems) > 0
	}
	if e, ok := geoElem[t.Name]; ok {
		return []*chtype.Type{geoTypes[e]}, true
	}
	return nil, false
}

// skip returns the end of the value of type t that starts at b[i].
func skip(t *chtype.Type, b []byte, i int) (int, error) {
	need := func(n int) (int, error) {
		if n < 0 || i+n > len(b) {
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
	case "LowCardinality", "SimpleAggregateFunction":
		return skip(t.Elems[0], b, i)
	case "String", "JSON":
		n, k := binary.Uvarint(b[i:])
		if k <= 0 || n > uint64(len(b)) {
			return need(len(b) + 1)
		}
		i += k
		return need(int(n))
	case "Tuple":
		for _, e := range t.Elems {
			var err error
			if i, err = skip(e, b, i); err != nil {
				return 0, err
			}
		}
		return i, nil
	}
	if elems, ok := elemTypes(t); ok {
		n, k := binary.Uvarint(b[i:])
		if k <= 0 || n > uint64(len(b)) {
			return need(len(b) + 1)
		}
		i += k
		for ; n > 0; n-- {
			for _, e := range elems {
				var err error
				if i, err = skip(e, b, i); err != nil {
					return 0, err
				}
			}
		}
		return i, nil
	}
	if w := fixedWidth(t); w > 0 {
		return need(w)
	}
	return 0, fmt.Errorf("%w: no decoder for type %s", ErrCorrupt, t)
}

// fixedWidth returns the size of a value of a fixed-size type, 0 for any other type.
func fixedWidth(t *chtype.Type) int {
	switch t.Name {
	case "Int8", "UInt8", "Bool", "Enum8":
		return 1
	case "Int16", "UInt16", "Date", "Enum16", "BFloat16":
		return 2
	case "Int32", "UInt32", "Float32", "DateTime", "Date32", "IPv4", "Time":
		return 4
	case "Int64", "UInt64", "Float64":
		return 8
	case "DateTime64", "Time64":
		if _, ok := precisionArg(t); ok {
			return 8
		}
	case "Int128", "UInt128", "UUID", "IPv6", "Point":
		return 16
	case "Int256", "UInt256":
		return 32
	case "Decimal", "Decimal32", "Decimal64", "Decimal128", "Decimal256":
		p, _, ok := decimalParams(t)
		if !ok {
			return 0
		}
		return decimalWidth(p)
	case "FixedString":
		if len(t.Args) == 1 {
			if n, err := strconv.Atoi(t.Args[0]); err == nil && n > 0 {
				return n
			}
		}
	}
	return 0
}

// decimalParams returns the precision and scale of Decimal(P, S), Decimal(P) or DecimalN(S).
func decimalParams(t *chtype.Type) (p, s int, ok bool) {
	var err error
	switch t.Name {
	case "Decimal":
		switch len(t.Args) {
		case 2:
			if s, err = strconv.Atoi(t.Args[1]); err != nil {
				return 0, 0, false
			}
			fallthrough
		case 1:
			if p, err = strconv.Atoi(t.Args[0]); err != nil {
				return 0, 0, false
			}
		default:
			return 0, 0, false
		}
	default:
		p = map[string]int{"Decimal32": 9, "Decimal64": 18, "Decimal128": 38, "Decimal256": 76}[t.Name]
		if len(t.Args) != 1 {
			return 0, 0, false
		}
		if s, err = strconv.Atoi(t.Args[0]); err != nil {
			return 0, 0, false
		}
	}
	return p, s, p >= 1 && p <= 76 && s >= 0 && s <= p
}

func decimalWidth(p int) int {
	switch {
	case p <= 9:
		return 4
	case p <= 18:
		return 8
	case p <= 38:
		return 16
	}
	return 32
}

// precisionArg returns P of DateTime64(P[, tz]) or Time64(P).
func precisionArg(t *chtype.Type) (int, bool) {
	if len(t.Args) == 0 {
		return 0, false
	}
	p, err := strconv.Atoi(t.Args[0])
	return p, err == nil && p >= 0 && p <= 9
}
