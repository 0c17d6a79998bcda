// Package convert is the type layer: it turns one JSON message into one row of a ClickHouse table,
// exactly or not at all, and decodes such rows into the columns clickhouse-go appends (decode.go).
// Each ClickHouse type family has one row in the table of families (family.go), which every
// function that depends on a type's family reads, and one file: the conversion from JSON, the
// RowBinary encoding and, for scalars, the width and the decoder. The table is written by hand,
// not generated as clickhouse-go's lib/column/column_gen.go is: each row is one call to a
// constructor in the family's file, the integer rows share one generic function, and a generator
// would add a template, a go generate step and a test of its output without writing any rule
// fewer times (family.go).
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
// (https://clickhouse.com/docs/interfaces/formats/RowBinaryWithDefaults). The write stage splits
// it into column values (decode.go: Layout.Split) and builds each column of an INSERT from them:
// in the Native format by copying, for the types whose Native values are their RowBinary values
// (native.go: NativeColumn), else as the Go values clickhouse-go appends (NewColumn, which the
// table of families gives: family.go).
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
	"fmt"
	"hash/fnv"
	"strings"
	"time"
	_ "time/tzdata" // DateTime('Zone') must resolve in minimal containers, e.g. the template's image.

	"github.com/ch-beam/pubsub-to-clickhouse/transforms/chclient"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/chtype"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/flow"
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

	eager   bool    // the table has no groups and no Nested structure: scanFields may encode the columns
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
	filled      []byte      // the arrays of missing elements fillNested builds
	wasFilled   []bool      // per column, whether fillNested gave it its value

	// Columns filled from the message (metadata.go).
	injected    []injection    // the metadata columns; nil when none
	unknownCol  int            // the column of the unknown fields, -1 when none
	unknown     []unknownField // per payload, its fields that give the row no value
	unknownLate bool           // some of them are keys under a group field (notRead), out of order
	unknownKeys []byte         // the keys of those
	unknownBuf  []byte         // their JSON object
	// unknownNullText: the unknown fields go into a Map whose values are not Nullable, which
	// takes a null field as the text null (as a String column keeps it) rather than refuse it.
	unknownNullText bool
	metaBuf         []byte     // the metadata values as JSON text
	metaSpans       []metaSpan // scratch of setMeta
	attrKeys        []string   // scratch of appendAttributes

	// For schema evolution (newfields.go).
	tableColumns map[string]bool // the name of every column of the table, written or not
	untaken      int             // the top-level fields of the last payload that gave the row no value
}

// New builds the converter for t's writable columns. Every column type must have a converter:
// otherwise the error is an *UnsupportedTypeError naming the first such column, so that the
// pipeline stops at start-up instead of dead-lettering every message.
func New(t *schema.Table) (*Converter, error) { return NewWith(t, Options{}) }

// markEphemeral gives each EPHEMERAL column of t that is not to be written its reason
// (schema.Column.NotWritten): its type has no converter (a Dynamic EPHEMERAL column), or its name
// holds what clickhouse-go cannot name in an INSERT (chclient.InsertNameFault), either of
// which would otherwise refuse a table whose other
// columns all convert (as before EPHEMERAL columns were written); or its name is also the part
// before a dot of writable columns, where its field and the group's would be ambiguous (rule 3
// of docs/conversion.md, as for a MATERIALIZED column of that name).
func markEphemeral(t *schema.Table, serverLoc *time.Location) {
	prefixes := map[string]bool{}
	for _, col := range t.Columns {
		if col.DefaultKind == "MATERIALIZED" || col.DefaultKind == "ALIAS" || col.DefaultKind == "EPHEMERAL" {
			continue
		}
		for j := 1; j < len(col.Name); j++ {
			if col.Name[j] == '.' {
				prefixes[col.Name[:j]] = true
			}
		}
	}
	for i := range t.Columns {
		col := &t.Columns[i]
		if col.DefaultKind != "EPHEMERAL" || col.NotWritten != "" {
			continue
		}
		if _, err := newEncoder(col.Type, serverLoc); err != nil {
			col.NotWritten = "its type has no converter: " + err.Error()
		} else if fault := chclient.InsertNameFault(col.Name); fault != "" {
			col.NotWritten = "its name holds " + fault
		} else if prefixes[col.Name] {
			col.NotWritten = fmt.Sprintf("it is also the part before a dot of other columns (%s.…), whose field it would be ambiguous with", col.Name)
		}
	}
}

// NewWith is New with columns filled from the message instead of the payload's fields of their
// names (metadata.go): o.Metadata's columns take the message's metadata, o.UnknownFields the
// payload's fields that give the row no value. A pair or column of o that does not fit the
// table (no such writable column, a type that cannot take the value, a column named twice) is an
// *OptionError. It gives t's EPHEMERAL columns that are not written their reason (markEphemeral),
// and fails, wrapping schema.ErrNoWritableColumn, when no column is left to write.
func NewWith(t *schema.Table, o Options) (*Converter, error) {
	serverLoc, err := loadZone(t.ServerTimeZone)
	if err != nil {
		return nil, fmt.Errorf("server time zone: %w", err)
	}
	markEphemeral(t, serverLoc)
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
	if len(c.columns) == 0 {
		return nil, fmt.Errorf("table %s.%s %w (all are MATERIALIZED or ALIAS, or EPHEMERAL and not written)", t.Database, t.Name, schema.ErrNoWritableColumn)
	}
	c.fields = make([]value, len(c.columns))
	c.tableColumns = make(map[string]bool, len(t.Columns))
	for _, col := range t.Columns {
		c.tableColumns[col.Name] = true
	}
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
	// Eager encoding keeps of a value only its kind, and the lengths of a Nested structure's
	// arrays are counted after the scan (checkNested): a table with such a structure encodes after
	// the scan, also where its prefix is no group (n String beside n.a and n.b).
	c.eager = c.groups == nil && c.elemFields == nil && c.nested == nil
	h := fnv.New64a()
	for _, col := range c.columns {
		fmt.Fprintf(h, "%s\x00%s\x00%v\x00", col.name, col.typeName, col.hasDefault)
	}
	if c.hash = h.Sum64(); c.hash == flow.Unchecked {
		c.hash = 1 // flow.Unchecked marks a row no converter checked
	}
	return c, nil
}

// Columns returns the names of the columns a row holds, in order.
func (c *Converter) Columns() []string { return c.names }

// SchemaHash identifies the columns a row holds (names, types, DEFAULTs, in order): rows with the
// same hash decode over the same columns. FNV-1a, 64 bits.
func (c *Converter) SchemaHash() uint64 { return c.hash }

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
	return c.convert(dst, payload, m, false)
}

// ConvertChecked is ConvertMessage for a payload that a ConvertMessage has taken before (of this
// converter, or of one of another schema): it leaves out the check that the payload is valid
// UTF-8 (CheckUTF8), whose outcome does not depend on the schema. The write stage converts again,
// after the GroupByKey, every payload the parse stage took; its rows are what the parse stage's
// check let through. A payload no ConvertMessage took may give a row of invalid UTF-8 strings.
func (c *Converter) ConvertChecked(dst []byte, payload []byte, m *Meta) ([]byte, error) {
	return c.convert(dst, payload, m, true)
}

// convert is ConvertMessage, without CheckUTF8 when utf8Checked.
func (c *Converter) convert(dst []byte, payload []byte, m *Meta, utf8Checked bool) ([]byte, error) {
	c.meta = m
	row, done, err := c.scanFields(dst, payload, utf8Checked)
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
	if c.nested != nil {
		c.fillNested()
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

// maxKeptScratch is the largest scratch buffer (unescaped text, the arrays of a group, the
// unknown fields' JSON) that Release keeps for the next bundle: one grown for a large payload
// would otherwise hold about as many bytes as that payload for as long as the Converter lives.
const maxKeptScratch = 1 << 20

// Release drops what the Converter still references of the last payload it converted and of its
// metadata: the values of its fields (which share the payload, and so keep the whole buffer the
// payload is in alive: a Pull response or a decoded element of up to tens of MiB), of its groups
// and array cells, its unknown fields, and scratch buffers grown beyond maxKeptScratch. A stage
// calls it when a bundle or batch is done; the next conversion works as before. Its cost is a
// clear of a few slices of the table's width, once a bundle.
func (c *Converter) Release() {
	c.meta = nil
	clear(c.fields)
	clear(c.groupVals)
	clear(c.cells[:cap(c.cells)])
	c.cells = c.cells[:0]
	clear(c.unknown[:cap(c.unknown)])
	c.unknown = c.unknown[:0]
	for _, b := range []*[]byte{&c.scratch, &c.synth, &c.filled, &c.unknownKeys, &c.unknownBuf, &c.metaBuf} {
		if cap(*b) > maxKeptScratch {
			*b = nil
		}
	}
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
