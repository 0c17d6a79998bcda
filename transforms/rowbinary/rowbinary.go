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
	"math"
	"math/big"
	"net/netip"
	"reflect"
	"strconv"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/column"
	"github.com/google/uuid"
	"github.com/paulmach/orb"
	"github.com/shopspring/decimal"

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
	//	LowCardinality(T), SimpleAggregateFunction(f, T)  as T
	Values() any
	// Reset empties the column, keeping its memory.
	Reset()
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
func (m *Map) Iterator() column.MapIterator { return &mapIterator{m: m, i: -1} }

type mapIterator struct {
	m *Map
	i int
}

func (it *mapIterator) Next() bool { it.i++; return it.i < len(it.m.Keys) }
func (it *mapIterator) Key() any   { return it.m.Keys[it.i] }
func (it *mapIterator) Value() any { return it.m.Values[it.i] }

var _ column.IterableOrderedMap = (*Map)(nil)

// NewColumn returns the Column for type t. Scalars, Nullable(scalar) and Array(scalar) decode
// into typed slices without reflection; deeper nestings, Map, Tuple, Nested and the geo types
// use reflection (clickhouse-go reads them by reflection anyway).
func NewColumn(t *chtype.Type) (Column, error) {
	switch t.Name {
	case "LowCardinality", "SimpleAggregateFunction":
		if len(t.Elems) != 1 {
			return nil, fmt.Errorf("rowbinary: no decoder for type %s", t)
		}
		return NewColumn(t.Elems[0])
	case "Nullable", "Array":
		inner := t.Elems[0]
		if inner.Name == "LowCardinality" {
			inner = inner.Elems[0]
		}
		if c := scalarColumn(inner, t.Name); c != nil {
			return c, nil
		}
		return newReflectColumn(t)
	case "Map", "Tuple", "Nested", "Ring", "LineString", "Polygon", "MultiLineString", "MultiPolygon":
		return newReflectColumn(t)
	}
	if c := scalarColumn(t, ""); c != nil {
		return c, nil
	}
	return nil, fmt.Errorf("rowbinary: no decoder for type %s", t)
}

func newReflectColumn(t *chtype.Type) (Column, error) {
	typ, err := goType(t)
	if err != nil {
		return nil, err
	}
	return &reflectColumn{t: t, slice: reflect.MakeSlice(reflect.SliceOf(typ), 0, 64)}, nil
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

// scalarColumn returns the Column of a scalar type, plain (wrap ""), or wrapped in "Nullable" or
// "Array"; nil when t is not a scalar.
func scalarColumn(t *chtype.Type, wrap string) Column {
	switch t.Name {
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
	case "String", "JSON":
		return wrapped(wrap, codec[string](stringCodec))
	case "Bool":
		return wrapped(wrap, fixedCodec(1, func(b []byte) bool { return b[0] != 0 }))
	case "Enum8":
		return wrapped(wrap, fixedCodec(1, func(b []byte) int8 { return int8(b[0]) }))
	case "Enum16":
		return wrapped(wrap, fixedCodec(2, func(b []byte) int16 { return int16(binary.LittleEndian.Uint16(b)) }))
	case "BFloat16":
		return wrapped(wrap, fixedCodec(2, func(b []byte) float32 {
			return math.Float32frombits(uint32(binary.LittleEndian.Uint16(b)) << 16)
		}))
	case "Date32":
		return wrapped(wrap, fixedCodec(4, func(b []byte) time.Time {
			return time.Unix(int64(int32(binary.LittleEndian.Uint32(b)))*86400, 0).UTC()
		}))
	case "DateTime64":
		p, ok := precisionArg(t)
		if !ok {
			return nil
		}
		return wrapped(wrap, fixedCodec(8, func(b []byte) time.Time {
			ticks, scale := int64(binary.LittleEndian.Uint64(b)), pow10(p)
			sec, frac := ticks/scale, ticks%scale
			if frac < 0 {
				sec, frac = sec-1, frac+scale
			}
			return time.Unix(sec, frac*pow10(9-p)).UTC()
		}))
	case "Time":
		return wrapped(wrap, fixedCodec(4, func(b []byte) time.Duration {
			return time.Duration(int32(binary.LittleEndian.Uint32(b))) * time.Second
		}))
	case "Time64":
		p, ok := precisionArg(t)
		if !ok {
			return nil
		}
		return wrapped(wrap, fixedCodec(8, func(b []byte) time.Duration {
			return time.Duration(int64(binary.LittleEndian.Uint64(b)) * pow10(9-p))
		}))
	case "Int128", "Int256", "UInt128", "UInt256":
		w, signed := fixedWidth(t), t.Name[0] == 'I'
		return wrappedPtr(wrap, fixedCodec(w, func(b []byte) *big.Int { return readBigInt(b[:w], signed) }))
	case "Decimal", "Decimal32", "Decimal64", "Decimal128", "Decimal256":
		p, s, ok := decimalParams(t)
		if !ok {
			return nil
		}
		w := decimalWidth(p)
		return wrapped(wrap, fixedCodec(w, func(b []byte) decimal.Decimal {
			switch w {
			case 4:
				return decimal.New(int64(int32(binary.LittleEndian.Uint32(b))), int32(-s))
			case 8:
				return decimal.New(int64(binary.LittleEndian.Uint64(b)), int32(-s))
			}
			return decimal.NewFromBigInt(readBigInt(b[:w], true), int32(-s))
		}))
	case "FixedString":
		n := fixedWidth(t)
		if n == 0 {
			return nil
		}
		return wrapped(wrap, fixedCodec(n, func(b []byte) string { return string(b[:n]) }))
	case "UUID":
		return wrapped(wrap, fixedCodec(16, func(b []byte) uuid.UUID {
			var u uuid.UUID
			for i := 0; i < 8; i++ {
				u[i], u[8+i] = b[7-i], b[15-i]
			}
			return u
		}))
	case "IPv4":
		return wrapped(wrap, fixedCodec(4, func(b []byte) netip.Addr {
			var a [4]byte
			binary.BigEndian.PutUint32(a[:], binary.LittleEndian.Uint32(b))
			return netip.AddrFrom4(a)
		}))
	case "IPv6":
		return wrapped(wrap, fixedCodec(16, func(b []byte) netip.Addr { return netip.AddrFrom16([16]byte(b[:16])) }))
	case "Point":
		return wrapped(wrap, fixedCodec(16, func(b []byte) orb.Point {
			return orb.Point{
				math.Float64frombits(binary.LittleEndian.Uint64(b)),
				math.Float64frombits(binary.LittleEndian.Uint64(b[8:])),
			}
		}))
	}
	return nil
}

func pow10(n int) int64 {
	p := int64(1)
	for ; n > 0; n-- {
		p *= 10
	}
	return p
}

// readBigInt reads a little-endian integer, two's complement when signed.
func readBigInt(b []byte, signed bool) *big.Int {
	be := make([]byte, len(b))
	for i := range b {
		be[len(b)-1-i] = b[i]
	}
	x := new(big.Int).SetBytes(be)
	if signed && len(b) > 0 && b[len(b)-1]&0x80 != 0 {
		x.Sub(x, new(big.Int).Lsh(big.NewInt(1), uint(len(b)*8)))
	}
	return x
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

// wrappedPtr is wrapped for a pointer type T, whose Nullable is T itself with nil for NULL
// (clickhouse-go's BigInt column takes []*big.Int for both).
func wrappedPtr[T any](wrap string, c codec[T]) Column {
	if wrap == "Nullable" {
		return &nilNullColumn[T]{read: c}
	}
	return wrapped(wrap, c)
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
		c.vals = append(c.vals, &v)
	}
	return nil
}
func (c *nullableColumn[T]) Values() any { return c.vals }
func (c *nullableColumn[T]) Reset()      { c.vals = c.vals[:0] }

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
