// Package convert is the type layer: it turns one JSON message into one row of a ClickHouse table,
// exactly or not at all, and decodes such rows into the columns clickhouse-go appends (decode.go).
// Each ClickHouse type has one place, the encoder newEncoder returns for it, in its family's file:
// the conversion from JSON, the RowBinary encoding and, for scalars, the width and the decoder.
//
// A payload must be exactly one JSON object (RFC 8259), valid UTF-8, with nothing but white space
// after it. Its top-level field names are matched to column names exactly (case-sensitive, after
// escapes are resolved). A field that names no writable column but is the part before a dot of
// column names (n of n.a, n.b: a flattened Nested) gives values to those columns, as an object or
// an array of objects (nested.go); a field that names an element of a Tuple or Nested column
// (t.a) is an error. Other fields without a column are ignored (but must still be valid JSON),
// and a field with a column or a group of columns given twice is an error (which value is meant
// is ambiguous).
// Each field is converted by the converter of its column's type family (one file per family:
// int.go, bigint.go, float.go, bfloat16.go, decimal.go, bool.go, string.go, fixedstring.go,
// uuid.go, ip.go, enum.go, datetime.go, datetime64.go, timeofday.go, composite.go, map.go,
// tuple.go, nested.go, geo.go, json.go). A value that does not fit its column exactly is an error;
// nothing is wrapped, clamped, truncated (except fractions of a second beyond what DateTime,
// DateTime64(P) and Time64(P) hold) or guessed. Floats round to the nearest value of their type,
// as IEEE 754 does.
//
// The row is encoded in ClickHouse's RowBinaryWithDefaults format over the table's writable
// columns (see schema.Table.Writable), in table order: for each column one byte, 1 when the server
// must compute the column's DEFAULT, else 0 followed by the value in RowBinary
// (https://clickhouse.com/docs/interfaces/formats/RowBinaryWithDefaults). The write stage decodes it
// (decode.go: Layout.Split and NewColumn).
//
// Missing fields and JSON null: an explicit null gives NULL for a Nullable column, [] for an
// Array, the DEFAULT for a column that has one, else an error. A missing field gives the DEFAULT
// when the column has one, else NULL for Nullable, [] for Array, else an error. Map, Nested and
// the geo types that are arrays count as Array here (empty). MATERIALIZED, ALIAS and EPHEMERAL
// columns are never written, whatever the payload holds. The Array columns of one Nested structure
// must be equally long in a row (nested.go).
package convert

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"strings"
	"time"
	_ "time/tzdata" // DateTime('Zone') must resolve in minimal containers, e.g. the template's image.

	"github.com/ch-beam/pubsub-to-clickhouse/transforms/chtype"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/schema"
)

// encoder appends the RowBinary encoding of a non-null JSON value to dst.
type encoder interface {
	encode(dst []byte, v value, c *Converter) ([]byte, error)
}

// column is one writable column with its encoder.
type column struct {
	name       string
	typeName   string
	typ        *chtype.Type
	enc        encoder
	hasDefault bool
	nullable   bool // Nullable, possibly under LowCardinality
	array      bool // Array: null and missing give []
	isString   bool // the encoder is stringEncoder: a JSON string can be scanned into the row (appendField)
	// origin is what fills the column instead of the payload's field of its name
	// ("metadataColumns publish_time=ts", "unknownFieldsColumn"), "" for the payload (metadata.go).
	origin string
	meta   bool // a metadata column: its value is known before the payload is scanned
}

// Converter converts payloads into rows of one table. It keeps scratch buffers, so one Converter
// must not be used by two goroutines at once.
type Converter struct {
	columns []column
	index   map[string]int
	names   []string
	keys    []string   // per column, its name and the closing quote: the key that names it without escapes, or ""
	words   []keyWords // per column, the start of keys[i] as words
	hash    uint64
	nested  []nestedGroup // Array columns that must be equally long in a row (nested.go)

	// Fields that name no column but columns under them (nested.go); all nil when the table
	// has no dotted column names, Tuple or Nested columns.
	groups     []group
	groupIndex map[string]int // group name -> index into groups
	under      [][]int        // per column, the groups it is under
	elemFields map[string]int // "t.a" for element a of a Tuple or Nested column t -> t's index

	eager   bool    // the table has no groups: scanFields may encode the columns
	meta    *Meta   // the metadata of the current message (ConvertMessage)
	fields  []value // per column, the field's value in the current payload
	scratch []byte  // unescaped string text

	// Per payload, for the groups.
	groupVals   []value     // per group, its field's value
	groupAt     []int       // per group, the offset of its field in the payload
	expandAt    int         // the offset of the field whose group expandGroups expands
	groupFailed []bool      // per group, whether it has an error
	groupsGiven bool        // some group has a field
	failed      []bool      // per column, whether its error is already in late
	late        []lateError // errors of group and element fields, by column
	cells       []cell      // scratch of expandArray
	seen        []int       // scratch of expandArray
	synth       []byte      // the arrays expandArray builds

	// Columns filled from the message (metadata.go).
	injected    []injection    // the metadata columns; nil when none
	unknownCol  int            // the column of the unknown fields, -1 when none
	unknown     []unknownField // per payload, its fields that give the row no value
	unknownLate bool           // some of them are keys under a group field (notRead), out of order
	unknownKeys []byte         // the keys of those
	unknownBuf  []byte         // their JSON object
	metaBuf     []byte         // the metadata values as JSON text
	metaSpans   []metaSpan     // scratch of setMeta
	attrKeys    []string       // scratch of appendAttributes
}

// New builds the converter for t's writable columns. Every column type must have a converter:
// otherwise the error is an *UnsupportedTypeError naming the first such column, so that the
// pipeline stops at start-up instead of dead-lettering every message.
func New(t *schema.Table) (*Converter, error) { return NewWith(t, Options{}) }

// NewWith is New with columns filled from the message instead of the payload's fields of their
// names (metadata.go): o.Metadata's columns take the message's metadata, o.UnknownFields the
// payload's fields that give the row no value. A pair or column of o that does not fit the
// table (no such writable column, a type that cannot take the value, a column named twice) is an
// *OptionError.
func NewWith(t *schema.Table, o Options) (*Converter, error) {
	serverLoc, err := loadZone(t.ServerTimeZone)
	if err != nil {
		return nil, fmt.Errorf("server time zone: %w", err)
	}
	c := &Converter{index: map[string]int{}}
	for _, col := range t.Writable() {
		enc, err := newEncoder(col.Type, serverLoc)
		if err != nil {
			return nil, &UnsupportedTypeError{Column: col.Name, Type: col.TypeName, Reason: err.Error()}
		}
		base, nullable := unwrapColumn(col.Type)
		c.index[col.Name] = len(c.columns)
		c.names = append(c.names, col.Name)
		c.columns = append(c.columns, column{
			name:       col.Name,
			typeName:   col.TypeName,
			typ:        col.Type,
			enc:        enc,
			hasDefault: col.HasDefault(),
			nullable:   nullable,
			array:      emptyOnNull(base), // Array, Map, Nested, geo arrays: null and missing are empty
			isString:   enc == stringEncoder{},
		})
	}
	c.fields = make([]value, len(c.columns))
	if err := c.applyOptions(t, o); err != nil {
		return nil, err
	}
	for i, name := range c.names {
		key := name + `"`
		if j, ok := c.index[name]; !ok || j != i || strings.ContainsAny(name, "\"\\") || strings.IndexFunc(name, func(r rune) bool { return r < 0x20 }) >= 0 {
			key = "" // the index names another column, or a key needs escapes
		}
		c.keys = append(c.keys, key)
		c.words = append(c.words, newKeyWords(key))
	}
	c.nested = nestedGroups(c.columns)
	c.buildGroups(t)
	c.eager = c.groups == nil && c.elemFields == nil
	h := fnv.New64a()
	for _, col := range c.columns {
		fmt.Fprintf(h, "%s\x00%s\x00%v\x00", col.name, col.typeName, col.hasDefault)
	}
	c.hash = h.Sum64()
	return c, nil
}

// Columns returns the names of the columns a row holds, in order.
func (c *Converter) Columns() []string { return c.names }

// SchemaHash identifies the columns a row holds (names, types, DEFAULTs, in order): rows with the
// same hash decode over the same columns. FNV-1a, 64 bits.
func (c *Converter) SchemaHash() uint64 { return c.hash }

// errUnsupported says why a type has no converter.
var errUnsupported = errors.New("this pipeline has no JSON converter for it")

// errNullableTuple refuses Nullable(Tuple(…)) (ClickHouse 26.x, with enable_nullable_tuple_type =
// 1): the parse stage's RowBinary of it is what the server reads, but clickhouse-go v2.51.0's
// Nullable column counts no row for a Tuple's values (lib/column/nullable.go: the Tuple's Append
// gives no NULL flags), so the ClickHouse 26.7 engine answers the write stage's INSERT with code 108
// NO_DATA_TO_INSERT, and it takes no NULL for a Tuple at all.
var errNullableTuple = errors.New("clickhouse-go v2.51.0 cannot insert a Nullable(Tuple): its column counts no row for a Tuple's values and takes no NULL for one; " +
	"declare the Tuple's elements Nullable instead, or use a JSON or String column")

// newEncoder returns the encoder of a (possibly wrapped) type.
func newEncoder(t *chtype.Type, serverLoc *time.Location) (encoder, error) {
	switch t.Name {
	case "Nullable":
		if t.Elems[0].Name == "Tuple" {
			return nil, errNullableTuple
		}
		inner, err := newEncoder(t.Elems[0], serverLoc)
		if err != nil {
			return nil, err
		}
		return nullableEncoder{inner}, nil
	case "LowCardinality": // RowBinary encodes LowCardinality(T) as T.
		return newEncoder(t.Elems[0], serverLoc)
	case "Array":
		inner, err := newEncoder(t.Elems[0], serverLoc)
		if err != nil {
			return nil, err
		}
		return arrayEncoder{elem: inner, elemType: t.Elems[0]}, nil
	case "Int8", "Int16", "Int32", "Int64", "UInt8", "UInt16", "UInt32", "UInt64":
		return newIntEncoder(t.Name), nil
	case "Float32", "Float64":
		return floatEncoder{bits: map[string]int{"Float32": 32, "Float64": 64}[t.Name]}, nil
	case "String":
		return stringEncoder{}, nil
	case "Date":
		return epochDateEncoder{}, nil
	case "DateTime":
		loc := serverLoc
		if len(t.Args) > 0 {
			var err error
			if loc, err = loadZone(t.Args[0]); err != nil {
				return nil, err
			}
		}
		return epochDateTimeEncoder{dateTimeEncoder{loc: loc}}, nil
	case "Date32":
		return date32Encoder{}, nil
	case "DateTime64":
		return newDateTime64Encoder(t, serverLoc)
	case "Time", "Time64":
		return newTimeEncoder(t)
	case "Decimal", "Decimal32", "Decimal64", "Decimal128", "Decimal256":
		return newDecimalEncoder(t)
	case "Int128", "Int256", "UInt128", "UInt256":
		return newBigIntEncoder(t.Name), nil
	case "BFloat16":
		return bfloat16Encoder{}, nil
	case "Bool":
		return boolEncoder{}, nil
	case "UUID":
		return uuidEncoder{}, nil
	case "IPv4":
		return ipv4Encoder{}, nil
	case "IPv6":
		return ipv6Encoder{}, nil
	case "FixedString":
		return newFixedStringEncoder(t)
	case "Enum8", "Enum16":
		return newEnumEncoder(t)
	case "Map":
		key, err := newEncoder(t.Elems[0], serverLoc)
		if err != nil {
			return nil, err
		}
		val, err := newEncoder(t.Elems[1], serverLoc)
		if err != nil {
			return nil, err
		}
		return newMapEncoder(t, key, val), nil
	case "Tuple":
		return newTupleEncoder(t, serverLoc)
	case "Nested":
		tuple, err := newTupleEncoder(&chtype.Type{Name: "Tuple", Elems: t.Elems, FieldNames: t.FieldNames}, serverLoc)
		if err != nil {
			return nil, err
		}
		return newNestedEncoder(t, tuple), nil
	case "Point", "Ring", "LineString", "Polygon", "MultiLineString", "MultiPolygon":
		return newGeoEncoder(t.Name), nil
	case "SimpleAggregateFunction": // RowBinary encodes SimpleAggregateFunction(f, T) as T.
		if len(t.Elems) != 1 {
			return nil, errUnsupported
		}
		return newEncoder(t.Elems[0], serverLoc)
	case "JSON":
		if err := checkJSONArgs(t); err != nil {
			return nil, err
		}
		return jsonEncoder{}, nil
	case "Object":
		return nil, errors.New("Object('json') is ClickHouse's deprecated experimental JSON type, which clickhouse-go v2.51.0 cannot insert into; use JSON (ClickHouse 24.8 and later) or String")
	case "Variant", "Dynamic":
		return nil, fmt.Errorf("which of its types a JSON value is meant to be is ambiguous (42 could be any number type, or a String), and the pipeline does not guess; use a column of one type, or JSON or String for mixed values")
	case "AggregateFunction":
		return nil, errors.New("its values are aggregation states in a binary form that JSON cannot give; insert into a SimpleAggregateFunction or a plain column and aggregate in a materialized view")
	}
	return nil, errUnsupported
}

func loadZone(name string) (*time.Location, error) {
	if name == "" || name == "UTC" || name == "Etc/UTC" {
		return time.UTC, nil
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return nil, fmt.Errorf("unknown time zone %q: %w", name, err)
	}
	return loc, nil
}

// Convert appends the RowBinaryWithDefaults encoding of payload's row to dst. The error is a
// *PayloadError when the payload is not one JSON object, else a *RowError with one *ValueError per
// column that cannot take its field. The metadata columns of NewWith are absent (missing fields);
// use ConvertMessage to give them values.
func (c *Converter) Convert(dst []byte, payload []byte) ([]byte, error) {
	return c.ConvertMessage(dst, payload, nil)
}

// ConvertMessage is Convert for a message whose metadata m fills the metadata columns of
// NewWith (nil: their values are absent). An error of such a column names its source
// (ValueError.Origin).
func (c *Converter) ConvertMessage(dst []byte, payload []byte, m *Meta) ([]byte, error) {
	c.meta = m
	row, done, err := c.scanFields(dst, payload)
	if err != nil {
		return dst, err
	}
	dst = row
	if c.groupsGiven {
		c.expandGroups()
	}
	if c.unknownCol >= 0 {
		c.setUnknown()
	}
	if len(c.late) > 1 {
		c.sortLate()
	}
	late := c.late
	grouped := c.groupsGiven || len(late) > 0 // errors of group or element fields, failed columns
	var errs []*ValueError
	for i := done; i < len(c.columns); i++ {
		if grouped {
			for len(late) > 0 && late[0].at == i {
				errs = append(errs, late[0].err)
				late = late[1:]
			}
			if c.groupsGiven && c.failed[i] {
				continue // its error is the group's, in late
			}
		}
		v := c.fields[i]
		var err error
		if dst, err = c.encodeColumn(dst, i, v); err != nil {
			ve, ok := err.(*ValueError)
			if !ok {
				ve = &ValueError{Value: quote(v.raw), Rule: err.Error()}
			}
			ve.Column, ve.Type = c.columns[i].name, c.columns[i].typeName
			if o := c.columns[i].origin; o != "" {
				ve.Origin = o
				if v.kind == kindNone {
					ve.Rule = c.missingRule(i)
				} else if r := c.emptyKeyRule(i, v, ve.Rule); r != "" {
					ve.Rule = r
				}
			}
			errs = append(errs, ve)
		}
	}
	if c.nested != nil {
		errs = c.checkNested(errs)
	}
	if len(errs) > 0 {
		return dst, &RowError{Errs: errs}
	}
	// A row in which every column takes its DEFAULT (the message gives no column a value) is a
	// row like any other: the write stage inserts it through one column whose DEFAULT the server
	// computes (see write's insertDefaults), and dead-letters it, with the server's error, when
	// the server cannot compute the DEFAULTs.
	return dst, nil
}

// encodeColumn appends the encoding of column i's value v (of kind kindNone for a missing field)
// to dst.
func (c *Converter) encodeColumn(dst []byte, i int, v value) ([]byte, error) {
	col := &c.columns[i]
	if v.kind == kindNone || v.kind == kindNull {
		return c.appendAbsent(dst, col, v.kind == kindNull)
	}
	return col.enc.encode(append(dst, 0), v, c)
}

// appendAbsent encodes a missing field or an explicit null.
func (c *Converter) appendAbsent(dst []byte, col *column, isNull bool) ([]byte, error) {
	switch {
	case isNull && col.nullable:
		return append(dst, 0, 1), nil
	case isNull && col.array:
		return append(dst, 0, 0), nil
	case col.hasDefault:
		return append(dst, 1), nil
	case col.nullable:
		return append(dst, 0, 1), nil
	case col.array:
		return append(dst, 0, 0), nil
	case isNull:
		return dst, &ValueError{Value: "null", Rule: "is not allowed: the column is not Nullable and has no DEFAULT"}
	default:
		return dst, &ValueError{Rule: "the field is missing, and the column has no DEFAULT and is not Nullable"}
	}
}

// appendUvarint appends a RowBinary length (LEB128).
func appendUvarint(dst []byte, n int) []byte { return binary.AppendUvarint(dst, uint64(n)) }
