// The table of ClickHouse type families. Every function of this package whose work depends on a
// type's family reads it here, in families: the encoder (a JSON value into RowBinary: newEncoder),
// the skip (the end of a RowBinary value: newSkip, Layout), the Go column (RowBinary into the slice
// clickhouse-go's Append takes: NewColumn), the decoder of a value inside a composite one
// (newValueDecoder), and what the rules of null, missing fields and the message's metadata ask of a
// type (emptyOnNull, metadata.go). Adding a type is a row here and, for a new family, its file:
// its conversion, its encoding and its codec, as in int.go.
//
// The table is written by hand. clickhouse-go generates its switch (lib/column/column_gen.go from
// codegen/column.tpl) because a template there stamps out a column type per Go number type, rows
// that differ only in names and sizes. Here each row is one call to a constructor in the family's
// own file; the rows that differ only in width and Go type (the integers) share one generic
// function, intFamily, which the compiler checks as it is. A generator would add a template, a
// go generate step and a test that its output is current, and write no rule fewer times.

package convert

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"reflect"
	"time"

	"github.com/paulmach/orb"

	"github.com/ch-beam/pubsub-to-clickhouse/transforms/chtype"
)

// family is what this package knows of one type family (a chtype.Type's Name).
type family struct {
	// scalar returns the codec of a type whose value is one Go value: one value holding the
	// type's parameters, that encodes a JSON value, gives the width of a RowBinary value and
	// decodes it (as each clickhouse-go column type both appends and decodes). nil for the
	// other families; scalarFamily derives the functions below from it.
	scalar codecFunc
	// encoder returns the encoder of a type of the family. Its error says why the pipeline has
	// no converter for the type (UnsupportedTypeError.Reason).
	encoder func(t *chtype.Type, zone *time.Location) (encoder, error)
	// skip returns the function that finds the end of one RowBinary value of the type; nil when
	// the family has no decoder (then column and value are nil too).
	skip func(t *chtype.Type) (skipFunc, error)
	// column returns the Column of a column of the type.
	column func(t *chtype.Type) (Column, error)
	// value returns the decoder of one value of the type inside a composite value.
	value func(t *chtype.Type) (*valueDecoder, error)
	// native: a column of a type of the family in ClickHouse's Native format is its values'
	// RowBinary, one after another (fixed-width little-endian numbers, LEB128-counted String
	// bytes), so that NativeColumn builds it by copying (native.go). Set only for the scalar
	// families whose clickhouse-go column reads that format (column.Interface.Decode).
	native bool

	// as: a value of the type is a value of its one element type, in JSON and in RowBinary
	// (LowCardinality, SimpleAggregateFunction).
	as bool
	// shape is what a type of the family makes of its element types, for the rules that ask:
	// Nullable and Array wrap a scalar's typed Column (scalar.column) and are what unwrapColumn
	// and the groups of dotted columns look through (group.go, nested.go), Tuple and Nested have
	// the named elements that dotted column names reach.
	shape shape
	// notNullable, when set, refuses Nullable(T) for a T of the family, and says why.
	notNullable error
	// empty: JSON null, and a missing field, are the empty value of the type, as for Array.
	empty bool
	// takesString: a JSON string can be a value of the type (metadata.go: a message's ordering
	// key and attributes are strings).
	takesString bool
	// publishTime is how a column of the type takes a message's publish time (metadata.go).
	publishTime publishForm
	// object reports whether a column of the type t takes a JSON object of strings: a
	// message's attributes or the unknown fields (metadata.go), as String (the object's JSON
	// text) and Map(String, String) do; nil: no type of the family does.
	object func(t *chtype.Type) bool
	// messageID reports whether a type of the family, whose codec is s, holds every Pub/Sub
	// message id, and when it does not, why (metadata.go); nil: no type of the family does.
	messageID func(t *chtype.Type, s scalar) (fits bool, why string)
}

// shape is what a type makes of its element types (family.shape).
type shape uint8

const (
	shapePlain    shape = iota // none of the below: a scalar, Map, LowCardinality, a geo type, ...
	shapeNullable              // Nullable(T): T or NULL
	shapeArray                 // Array(T)
	shapeFields                // Tuple, Nested: elements that may have names
)

// shapeOf returns the shape of t's family; shapePlain for a type of no family.
func shapeOf(t *chtype.Type) shape {
	if f := families[t.Name]; f != nil {
		return f.shape
	}
	return shapePlain
}

// unwrapColumn returns the base type of t under Nullable, LowCardinality and
// SimpleAggregateFunction(f, T), which holds plain values of T (the families of shapeNullable and
// as), and whether one of them is Nullable.
func unwrapColumn(t *chtype.Type) (base *chtype.Type, nullable bool) {
	for len(t.Elems) == 1 {
		f := families[t.Name]
		switch {
		case f == nil:
			return t, nullable
		case f.shape == shapeNullable:
			nullable = true
		case !f.as:
			return t, nullable
		}
		t = t.Elems[0]
	}
	return t, nullable
}

// codecFunc returns the codec of a scalar type; zone is the server's time zone, which a DateTime
// without its own zone takes (decoding passes UTC: values decode in UTC, whatever the zone).
type codecFunc func(t *chtype.Type, zone *time.Location) (scalar, error)

// publishForm is how a column takes a message's publish time.
type publishForm uint8

const (
	publishNone   publishForm = iota // it does not
	publishTime                      // as a time: DateTime, DateTime64, String (RFC 3339)
	publishMillis                    // as Unix milliseconds: Int64, UInt64
)

// families gives each type family, by name, what this package knows of it.
var families map[string]*family

func init() {
	le := binary.LittleEndian
	// asElement is LowCardinality(T) and SimpleAggregateFunction(f, T): RowBinary writes them as T.
	asElement := &family{as: true, encoder: newElementEncoder, skip: newElementSkip, column: newElementColumn, value: newElementDecoder}
	families = map[string]*family{
		"Nullable":                {encoder: newNullableEncoder, skip: newNullableSkip, column: newWrapperColumn, value: newNullableDecoder, shape: shapeNullable},
		"LowCardinality":          {as: true, encoder: newElementEncoder, skip: newElementSkip, column: newLowCardinalityColumn, value: newLowCardinalityDecoder},
		"SimpleAggregateFunction": asElement,
		"Array":                   {encoder: newArrayEncoder, skip: countedSkip(arrayElems), column: newWrapperColumn, value: newSliceDecoder, empty: true, shape: shapeArray},
		"Map":                     {encoder: newMapEncoder, skip: countedSkip(mapElems), column: newReflectColumn, value: newMapDecoder, empty: true, object: isStringMap},
		"Tuple":                   {encoder: newTupleEncoder, skip: newTupleSkip, column: newReflectColumn, value: newTupleDecoder, shape: shapeFields, notNullable: errNullableTuple},
		"Nested":                  {encoder: newNestedEncoder, skip: countedSkip(nestedElems), column: newReflectColumn, value: newNestedDecoder, empty: true, shape: shapeFields},

		"Int8":    intFamily(1, func(b []byte) int8 { return int8(b[0]) }).nativeAsRowBinary(),
		"Int16":   intFamily(2, func(b []byte) int16 { return int16(le.Uint16(b)) }).nativeAsRowBinary(),
		"Int32":   intFamily(4, func(b []byte) int32 { return int32(le.Uint32(b)) }).nativeAsRowBinary(),
		"Int64":   intFamily(8, func(b []byte) int64 { return int64(le.Uint64(b)) }).publishes(publishMillis).nativeAsRowBinary(),
		"UInt8":   intFamily(1, func(b []byte) uint8 { return b[0] }).nativeAsRowBinary(),
		"UInt16":  intFamily(2, le.Uint16).nativeAsRowBinary(),
		"UInt32":  intFamily(4, le.Uint32).nativeAsRowBinary(),
		"UInt64":  intFamily(8, le.Uint64).publishes(publishMillis).nativeAsRowBinary(),
		"Int128":  bigIntFamily(16).nativeAsRowBinary(),
		"UInt128": bigIntFamily(16).nativeAsRowBinary(),
		"Int256":  bigIntFamily(32).nativeAsRowBinary(),
		"UInt256": bigIntFamily(32).nativeAsRowBinary(),

		"Float32":    scalarFamily(always(floatEncoder{bits: 32})).nativeAsRowBinary(),
		"Float64":    scalarFamily(always(floatEncoder{bits: 64})).nativeAsRowBinary(),
		"BFloat16":   scalarFamily(always(bfloat16Encoder{})),
		"Decimal":    decimalFamily(0).nativeAsRowBinary(),
		"Decimal32":  decimalFamily(9).nativeAsRowBinary(),
		"Decimal64":  decimalFamily(18).nativeAsRowBinary(),
		"Decimal128": decimalFamily(38).nativeAsRowBinary(),
		"Decimal256": decimalFamily(76).nativeAsRowBinary(),
		"Bool":       scalarFamily(always(boolEncoder{})).nativeAsRowBinary(),

		"String":      scalarFamily(always(stringEncoder{})).publishes(publishTime).holdsIDs(alwaysHoldsIDs).holdsObjects().nativeAsRowBinary(),
		"FixedString": scalarFamily(typeOnly(newFixedStringEncoder)).holdsIDs(fixedStringHoldsIDs).nativeAsRowBinary(),
		"JSON":        scalarFamily(typeOnly(newJSONEncoder)).noString(),
		"UUID":        scalarFamily(always(uuidEncoder{})).nativeAsRowBinary(),
		"IPv4":        scalarFamily(always(ipv4Encoder{})).nativeAsRowBinary(),
		"IPv6":        scalarFamily(always(ipv6Encoder{})).nativeAsRowBinary(),
		"Enum8":       enumFamily(1).nativeAsRowBinary(),
		"Enum16":      enumFamily(2).nativeAsRowBinary(),

		"Date":       scalarFamily(always(epochDateEncoder{})).nativeAsRowBinary(),
		"Date32":     scalarFamily(always(date32Encoder{})).nativeAsRowBinary(),
		"DateTime":   scalarFamily(newDateTimeEncoder).publishes(publishTime).nativeAsRowBinary(),
		"DateTime64": scalarFamily(newDateTime64Encoder).publishes(publishTime).nativeAsRowBinary(),
		"Time":       scalarFamily(always(timeEncoder{name: "Time"})),
		"Time64":     scalarFamily(typeOnly(newTime64Encoder)),

		"Point":           scalarFamily(always(pointEncoder{})).noString(),
		"Ring":            geoArray("Point", orb.Ring(nil)),
		"LineString":      geoArray("Point", orb.LineString(nil)),
		"Polygon":         geoArray("Ring", orb.Polygon(nil)),
		"MultiLineString": geoArray("LineString", orb.MultiLineString(nil)),
		"MultiPolygon":    geoArray("Polygon", orb.MultiPolygon(nil)),

		// Families without a converter, and why.
		"Object":            refused(errors.New("Object('json') is ClickHouse's deprecated experimental JSON type, which clickhouse-go v2.51.0 cannot insert into; use JSON (ClickHouse 24.8 and later) or String")),
		"Variant":           refused(errAmbiguousType),
		"Dynamic":           refused(errAmbiguousType),
		"AggregateFunction": refused(errors.New("its values are aggregation states in a binary form that JSON cannot give; insert into a SimpleAggregateFunction or a plain column and aggregate in a materialized view")),
	}
}

// errAmbiguousType refuses Variant and Dynamic.
var errAmbiguousType = errors.New("which of its types a JSON value is meant to be is ambiguous (42 could be any number type, or a String), and the pipeline does not guess; use a column of one type, or JSON or String for mixed values")

// scalarFamily is the family of scalar types whose codecs codec returns: it encodes, skips and
// decodes them all through the codec.
func scalarFamily(codec codecFunc) *family {
	return &family{
		scalar: codec,
		encoder: func(t *chtype.Type, zone *time.Location) (encoder, error) {
			return codec(t, zone)
		},
		skip: func(t *chtype.Type) (skipFunc, error) {
			s, err := codec(t, time.UTC)
			if err != nil {
				return nil, noDecoder(t)
			}
			return widthSkip(t, s.size()), nil
		},
		column: func(t *chtype.Type) (Column, error) {
			s, err := codec(t, time.UTC)
			if err != nil {
				return nil, noColumn(t)
			}
			return s.column(shapePlain), nil
		},
		value: func(t *chtype.Type) (*valueDecoder, error) {
			s, err := codec(t, time.UTC)
			if err != nil {
				return nil, noColumn(t)
			}
			return newScalarDecoder(t, s), nil
		},
		takesString: true,
	}
}

// always is the codecFunc of a type without parameters.
func always(s scalar) codecFunc {
	return func(*chtype.Type, *time.Location) (scalar, error) { return s, nil }
}

// typeOnly is the codecFunc of a type whose codec needs no time zone.
func typeOnly(codec func(t *chtype.Type) (scalar, error)) codecFunc {
	return func(t *chtype.Type, _ *time.Location) (scalar, error) { return codec(t) }
}

// refused is a family without a converter: err says why.
func refused(err error) *family {
	return &family{encoder: func(*chtype.Type, *time.Location) (encoder, error) { return nil, err }}
}

func (f *family) publishes(p publishForm) *family { f.publishTime = p; return f }

func (f *family) holdsIDs(fits func(t *chtype.Type, s scalar) (bool, string)) *family {
	f.messageID = fits
	return f
}

func (f *family) noString() *family { f.takesString = false; return f }

// nativeAsRowBinary: the family's Native columns are its RowBinary values one after another.
func (f *family) nativeAsRowBinary() *family { f.native = true; return f }

// holdsObjects: a column of every type of the family takes a JSON object of strings, as its JSON text.
func (f *family) holdsObjects() *family {
	f.object = func(*chtype.Type) bool { return true }
	return f
}

// errUnsupported says why a type has no converter.
var errUnsupported = errors.New("this pipeline has no JSON converter for it")

// newEncoder returns the encoder of a (possibly wrapped) type.
func newEncoder(t *chtype.Type, zone *time.Location) (encoder, error) {
	f := families[t.Name]
	if f == nil {
		return nil, errUnsupported
	}
	return f.encoder(t, zone)
}

// newSkip returns the skipFunc of type t.
func newSkip(t *chtype.Type) (skipFunc, error) {
	if f := families[t.Name]; f != nil && f.skip != nil {
		return f.skip(t)
	}
	return nil, noDecoder(t)
}

// NewColumn returns the Column for type t. Scalars, Nullable(scalar) and Array(scalar) decode
// into typed slices without reflection (the scalar's own column method); deeper nestings, Map,
// Tuple, Nested and the geo arrays use reflection (clickhouse-go reads them by reflection anyway).
func NewColumn(t *chtype.Type) (Column, error) {
	if f := families[t.Name]; f != nil && f.column != nil {
		return f.column(t)
	}
	return nil, noColumn(t)
}

// newValueDecoder compiles the valueDecoder of t. Its Go type is *T for Nullable(T) (T itself
// when T is a pointer), []T for Array(T), *Map for Map, []any for Tuple, [][]any for Nested, the
// orb type of a geo array, and a scalar's Column element type.
func newValueDecoder(t *chtype.Type) (*valueDecoder, error) {
	if f := families[t.Name]; f != nil && f.value != nil {
		return f.value(t)
	}
	return nil, noColumn(t)
}

// scalarOf returns the codec of t (under any LowCardinality or SimpleAggregateFunction), or false
// when t is not a scalar type or has no converter.
func scalarOf(t *chtype.Type) (scalar, bool) {
	f := families[t.Name]
	for f != nil && f.as && len(t.Elems) == 1 {
		t = t.Elems[0]
		f = families[t.Name]
	}
	if f == nil || f.scalar == nil {
		return nil, false
	}
	s, err := f.scalar(t, time.UTC)
	return s, err == nil
}

// takesObject reports whether a column of t (a base type) takes a JSON object of strings
// (family.object).
func takesObject(t *chtype.Type) bool {
	f := families[t.Name]
	return f != nil && f.object != nil && f.object(t)
}

// emptyOnNull reports whether JSON null stands for an empty value of t, as for Array: Array,
// Map, Nested and the geo types that are arrays.
func emptyOnNull(t *chtype.Type) bool {
	f := families[t.Name]
	return f != nil && f.empty
}

// noDecoder is the error of newSkip for a type without a decoder.
func noDecoder(t *chtype.Type) error { return fmt.Errorf("%w: no decoder for type %s", ErrCorrupt, t) }

// noColumn is the error of NewColumn and newValueDecoder for a type without a decoder.
func noColumn(t *chtype.Type) error { return fmt.Errorf("no RowBinary decoder for type %s", t) }

// The element types of the types that RowBinary writes as a count followed by that many
// elements (countedSkip), and false when t is malformed.

func arrayElems(t *chtype.Type) ([]*chtype.Type, bool)  { return t.Elems, len(t.Elems) == 1 }
func mapElems(t *chtype.Type) ([]*chtype.Type, bool)    { return t.Elems, len(t.Elems) == 2 }
func nestedElems(t *chtype.Type) ([]*chtype.Type, bool) { return t.Elems, len(t.Elems) > 0 }

// The family functions of LowCardinality(T) and SimpleAggregateFunction(f, T): those of T.

func newElementEncoder(t *chtype.Type, zone *time.Location) (encoder, error) {
	if len(t.Elems) != 1 {
		return nil, errUnsupported
	}
	return newEncoder(t.Elems[0], zone)
}

func newElementSkip(t *chtype.Type) (skipFunc, error) {
	if len(t.Elems) != 1 {
		return nil, noDecoder(t)
	}
	return newSkip(t.Elems[0])
}

func newElementColumn(t *chtype.Type) (Column, error) {
	if len(t.Elems) != 1 {
		return nil, noColumn(t)
	}
	return NewColumn(t.Elems[0])
}

func newElementDecoder(t *chtype.Type) (*valueDecoder, error) {
	if len(t.Elems) != 1 {
		return nil, noColumn(t)
	}
	return newValueDecoder(t.Elems[0])
}

// newWrapperColumn is the Column of Nullable(T) and Array(T): a typed one when T is a scalar,
// else one by reflection (also for LowCardinality(Float32) and LowCardinality(Float64), whose
// values are pointers: lowCardinalityFloat).
func newWrapperColumn(t *chtype.Type) (Column, error) {
	if lowCardinalityFloat(t.Elems[0]) {
		return newReflectColumn(t)
	}
	if s, ok := scalarOf(t.Elems[0]); ok {
		return s.column(shapeOf(t)), nil
	}
	return newReflectColumn(t)
}

// lowCardinalityFloat reports whether t is LowCardinality(Float32) or LowCardinality(Float64).
// Their Go values are pointers (*float32, *float64, never nil), each its own: clickhouse-go
// v2.51.0's LowCardinality column finds a value's place in its dictionary with the value as a Go
// map key (lib/column/lowcardinality.go, AppendRow), and a NaN is never equal to itself, so
// every NaN got the place of the dictionary's default value and ClickHouse stored 0 for it. A
// pointer is equal to itself; the server merges the dictionary's repeated values.
// (LowCardinality(Nullable(Float64)) has pointers already.)
func lowCardinalityFloat(t *chtype.Type) bool {
	return t.Name == "LowCardinality" && len(t.Elems) == 1 && (t.Elems[0].Name == "Float32" || t.Elems[0].Name == "Float64")
}

// newLowCardinalityColumn is the Column of LowCardinality(T): T's, but one of pointers for a
// float T (lowCardinalityFloat).
func newLowCardinalityColumn(t *chtype.Type) (Column, error) {
	if lowCardinalityFloat(t) {
		return newReflectColumn(t)
	}
	return newElementColumn(t)
}

// newLowCardinalityDecoder is the valueDecoder of LowCardinality(T): T's, but giving a pointer
// to the value for a float T (lowCardinalityFloat). The decoder gives the same pointer for the
// same value (the same bits), for the first maxSharedFloats values it meets: clickhouse-go's
// dictionary then holds each value once, as it does for values that are not pointers, where a
// pointer per row made it an entry per row (a block's column ten times its size for 5,000 rows
// of ten values, and the driver's allocations four times theirs). Nothing writes through these
// pointers. A Column has its own decoder, and a Block its own Columns: the values shared are
// those of one block.
func newLowCardinalityDecoder(t *chtype.Type) (*valueDecoder, error) {
	inner, err := newElementDecoder(t)
	if err != nil || !lowCardinalityFloat(t) {
		return inner, err
	}
	typ := reflect.PointerTo(inner.typ)
	var shared map[uint64]reflect.Value
	return &valueDecoder{typ: typ, decode: func(b []byte) (reflect.Value, []byte, error) {
		v, rest, err := inner.decode(b)
		if err != nil {
			return reflect.Value{}, nil, err
		}
		bits := math.Float64bits(v.Float()) // a Float32 made a Float64 keeps its bits apart
		if p, ok := shared[bits]; ok {
			return p, rest, nil
		}
		p := reflect.New(inner.typ)
		p.Elem().Set(v)
		if shared == nil {
			shared = make(map[uint64]reflect.Value)
		}
		if len(shared) < maxSharedFloats {
			shared[bits] = p
		}
		return p, rest, nil
	}}, nil
}

// maxSharedFloats bounds the values whose pointers a LowCardinality float decoder shares
// (newLowCardinalityDecoder): a column of ever new values (which LowCardinality is not meant
// for) costs a map of this many entries per block, and no more.
const maxSharedFloats = 1024
