// Columns whose values do not come from the payload's fields of their names: the message's
// metadata (template parameter metadataColumns) and the fields that match no column (template
// parameter unknownFieldsColumn). Both are rendered as JSON text and converted by the column's
// own encoder, so each takes exactly what a JSON field of that text would give it.

package convert

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/ch-beam/pubsub-to-clickhouse/transforms/chtype"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/schema"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/text"
)

// The keys of metadataColumns.
const (
	KeyMessageID   = "message_id"   // the Pub/Sub message id, as a JSON string
	KeyPublishTime = "publish_time" // the publish time: RFC 3339 with milliseconds, or Unix milliseconds
	KeyOrderingKey = "ordering_key" // the ordering key, as a JSON string; empty (no key) is "" for a column without DEFAULT or Nullable, else absent
	KeyAttributes  = "attributes"   // every attribute, as a JSON object of strings
	KeyAttribute   = "attribute."   // attribute.NAME: one attribute, as a JSON string; absent when the message lacks it
)

// MetadataColumn is one KEY=column pair of the template parameter metadataColumns.
type MetadataColumn struct {
	Key    string // message_id, publish_time, ordering_key, attributes or attribute.NAME, as written
	Column string // the column it fills
}

// String returns the pair as written, KEY=column.
func (m MetadataColumn) String() string { return m.Key + "=" + m.Column }

// Attribute returns NAME of a key attribute.NAME, else "".
func (m MetadataColumn) Attribute() string {
	name, _ := strings.CutPrefix(m.Key, KeyAttribute)
	if name == m.Key {
		return ""
	}
	return name
}

// ParseMetadataColumns parses metadataColumns: comma-separated KEY=column pairs, KEY one of
// message_id, publish_time, ordering_key, attributes and attribute.NAME. The first "=" of a pair
// ends its key, so an attribute name holds neither "," nor "=" (a column name may hold "="). The
// error names the pair and its rule: a pair without "=" or with an empty side, spaces around a
// key or column, an unknown key, or a column named twice. "" gives no pairs.
func ParseMetadataColumns(spec string) ([]MetadataColumn, error) {
	if spec == "" {
		return nil, nil
	}
	var out []MetadataColumn
	for _, pair := range strings.Split(spec, ",") {
		key, col, ok := strings.Cut(pair, "=")
		var rule string
		switch {
		case pair == "":
			rule = "is empty (two commas in a row, or a comma at an end); give comma-separated KEY=column pairs"
		case !ok:
			rule = "has no \"=\"; give KEY=column, for example message_id=msg_id"
		case key == "" || col == "":
			rule = "needs a KEY before \"=\" and a column after it, for example message_id=msg_id"
		case strings.TrimSpace(key) != key || strings.TrimSpace(col) != col:
			rule = "has spaces around its key or column; write the pairs without spaces"
		case key == KeyAttribute:
			rule = "names no attribute; write attribute.NAME, for example attribute.source"
		case key != KeyMessageID && key != KeyPublishTime && key != KeyOrderingKey && key != KeyAttributes && !strings.HasPrefix(key, KeyAttribute):
			rule = fmt.Sprintf("has the unknown key %q; KEY is one of message_id, publish_time, ordering_key, attributes and attribute.NAME", key)
		}
		if i := slices.IndexFunc(out, func(m MetadataColumn) bool { return m.Column == col }); rule == "" && i >= 0 {
			rule = fmt.Sprintf("names the column %q, which %q already fills; a column takes one value", col, out[i].String())
		}
		if rule != "" {
			return nil, fmt.Errorf("pair %q %s", pair, rule)
		}
		out = append(out, MetadataColumn{Key: key, Column: col})
	}
	return out, nil
}

// Options are the columns of a Converter whose values come from the message rather than from the
// payload's fields of their names.
type Options struct {
	// Metadata are the pairs of metadataColumns (ParseMetadataColumns); nil for none.
	Metadata []MetadataColumn
	// UnknownFields is unknownFieldsColumn, the column that takes the payload's fields that give
	// the row no value; "" for none.
	UnknownFields string
}

// OptionError says why a metadataColumns pair or the unknownFieldsColumn does not fit the table.
type OptionError struct {
	Option Option // OptionMetadata or OptionUnknownFields
	Pair   string // the pair of metadataColumns, or the column of unknownFieldsColumn
	Rule   string
}

func (e *OptionError) Error() string {
	if e.Option == OptionMetadata {
		return fmt.Sprintf("%s: pair %q: %s", e.Option, e.Pair, e.Rule)
	}
	return fmt.Sprintf("%s %q: %s", e.Option, e.Pair, e.Rule)
}

// Option is one of the Options that fill columns from the message.
type Option int

// The Options that fill columns from the message. Their names are their template parameters
// (metadataColumns, unknownFieldsColumn), which the converter writes into what it returns: the
// text of an OptionError and the Origin of a ValueError, which a dead-letter row's error_message
// carries.
const (
	OptionMetadata      Option = iota + 1 // Options.Metadata: metadataColumns
	OptionUnknownFields                   // Options.UnknownFields: unknownFieldsColumn
)

// String returns the option's template parameter: "metadataColumns" or "unknownFieldsColumn".
func (o Option) String() string {
	switch o {
	case OptionMetadata:
		return "metadataColumns"
	case OptionUnknownFields:
		return "unknownFieldsColumn"
	}
	return fmt.Sprintf("convert.Option(%d)", int(o))
}

// metadataOrigin is the origin of a column that the pair of metadataColumns fills:
// "metadataColumns publish_time=ts".
func metadataOrigin(pair string) string { return OptionMetadata.String() + " " + pair }

// Meta is the metadata of one Pub/Sub message that metadataColumns puts into columns.
type Meta struct {
	ID                string            // the message id
	PublishTimeMillis int64             // the publish time, Unix milliseconds (UTC)
	OrderingKey       string            // the ordering key; "" when it has none
	Attributes        map[string]string // the attributes; nil or empty when it has none
}

// injection is one metadata column of a Converter.
type injection struct {
	col    int    // the column
	key    string // the key of metadataColumns (attribute. for attribute.NAME)
	attr   string // NAME of attribute.NAME
	number bool   // publish_time into an integer column: Unix milliseconds
	// emptyKey: ordering_key into a column without DEFAULT that is not Nullable, which takes a
	// message without an ordering key as Pub/Sub gives it, "" (a column with a DEFAULT takes
	// its DEFAULT, a Nullable one NULL).
	emptyKey bool
}

// isStringMap reports whether t, a Map, is Map(String, String), either side possibly
// LowCardinality or Nullable.
func isStringMap(t *chtype.Type) bool {
	return len(t.Elems) == 2 && isString(t.Elems[0]) && isString(t.Elems[1])
}

// isString reports whether t is String, possibly LowCardinality or Nullable: whether its codec is
// String's.
func isString(t *chtype.Type) bool {
	base, _ := unwrapColumn(t)
	s, ok := scalarOf(base)
	return ok && s == stringEncoder{}
}

// messageIDRule says why t (a base type) cannot hold every Pub/Sub message id, "" when it can.
// Pub/Sub's message ids are decimal numbers of up to 19 digits, rendered as a JSON string
// ("9999999999999999999" at most): a type must take every such string exactly. String does;
// FixedString(N) with N >= 19; UInt64 (up to 18446744073709551615); Int128, UInt128, Int256,
// UInt256; Decimal(P, S) with P - S >= 19 digits before the point. Int64 does not: it holds at
// most 9223372036854775807.
func messageIDRule(t *chtype.Type) string {
	const needs = "message_id is a decimal number of up to 19 digits (Pub/Sub's message ids, up to \"9999999999999999999\"), " +
		"which needs String, FixedString(N) with N >= 19, UInt64, Int128, UInt128, Int256, UInt256 or Decimal(P, S) with P - S >= 19"
	why := ""
	if s, ok := scalarOf(t); ok && families[t.Name].messageID != nil {
		var fits bool
		if fits, why = families[t.Name].messageID(t, s); fits {
			return ""
		}
	}
	if why == "" {
		return needs
	}
	return needs + "; " + why
}

// maxMessageID is the largest Pub/Sub message id.
const maxMessageID = 9999999999999999999

// The family.messageID of the families some of whose types hold every message id.

func alwaysHoldsIDs(*chtype.Type, scalar) (bool, string) { return true, "" }

func intHoldsIDs(t *chtype.Type, s scalar) (bool, string) {
	if m := s.(*intEncoder).max; m < maxMessageID {
		return false, fmt.Sprintf("%s holds at most %d", t, m)
	}
	return true, ""
}

func fixedStringHoldsIDs(t *chtype.Type, s scalar) (bool, string) {
	if n := s.(fixedStringEncoder).n; n < 19 {
		return false, fmt.Sprintf("%s holds at most %d bytes", t, n)
	}
	return true, ""
}

func decimalHoldsIDs(t *chtype.Type, s scalar) (bool, string) {
	if d := s.(decimalEncoder); d.precision-d.scale < 19 {
		return false, fmt.Sprintf("%s holds at most %d digits before the point", t, d.precision-d.scale)
	}
	return true, ""
}

// applyOptions marks the columns of o as filled from the message, before the keys and groups of
// the payload's fields are built: their names then match no field.
func (c *Converter) applyOptions(t *schema.Table, o Options) error {
	c.unknownCol = -1
	find := func(opt Option, pair, name string) (int, error) {
		if i, ok := c.index[name]; ok {
			return i, nil
		}
		for _, col := range t.Columns {
			if col.Name == name && col.NotWritten != "" {
				return 0, &OptionError{opt, pair, fmt.Sprintf("column %q is EPHEMERAL and not written: %s; name another column", name, col.NotWritten)}
			}
			if col.Name == name {
				return 0, &OptionError{opt, pair, fmt.Sprintf("column %q is %s, which an INSERT never writes; name a column without MATERIALIZED or ALIAS", name, col.DefaultKind)}
			}
		}
		return 0, &OptionError{opt, pair, fmt.Sprintf("the table %s has no column %q", t.Name, name)}
	}
	for _, m := range o.Metadata {
		i, err := find(OptionMetadata, m.String(), m.Column)
		if err != nil {
			return err
		}
		col := &c.columns[i]
		if col.origin != "" {
			return &OptionError{OptionMetadata, m.String(), fmt.Sprintf("column %q is named twice; a column takes one value", m.Column)}
		}
		base, _ := unwrapColumn(col.typ)
		in := injection{col: i, key: m.Key, attr: m.Attribute()}
		if in.attr != "" {
			in.key = KeyAttribute
		}
		var rule string
		switch in.key {
		case KeyPublishTime:
			switch families[base.Name].publishTime {
			case publishMillis:
				in.number = true
			case publishTime:
			default:
				rule = "publish_time goes into DateTime, DateTime64 (milliseconds kept where the precision holds them), Int64 or UInt64 (Unix milliseconds) or String (RFC 3339 with milliseconds)"
			}
		case KeyAttributes:
			if !takesObject(base) {
				rule = "attributes go into Map(String, String) or String (a JSON object)"
			}
		case KeyMessageID:
			rule = messageIDRule(base)
		default: // ordering_key, attribute.NAME: JSON strings
			if !families[base.Name].takesString {
				rule = fmt.Sprintf("%s is a JSON string, which %s never takes; name a column of a type that takes a string (String, a number, a date, UUID, ...)", m.Key, base)
			}
		}
		if rule != "" {
			return &OptionError{OptionMetadata, m.String(), fmt.Sprintf("column %q (%s) cannot take the value: %s", m.Column, col.typeName, rule)}
		}
		in.emptyKey = in.key == KeyOrderingKey && !col.hasDefault && !col.nullable
		col.origin, col.meta = metadataOrigin(m.String()), true
		c.injected = append(c.injected, in)
	}
	if o.UnknownFields != "" {
		i, err := find(OptionUnknownFields, o.UnknownFields, o.UnknownFields)
		if err != nil {
			return err
		}
		col := &c.columns[i]
		if col.origin != "" {
			return &OptionError{OptionUnknownFields, o.UnknownFields, fmt.Sprintf("column %q is also filled by %s; a column takes one value", o.UnknownFields, strings.TrimPrefix(col.origin, metadataOrigin("")))}
		}
		if base, _ := unwrapColumn(col.typ); !takesObject(base) {
			return &OptionError{OptionUnknownFields, o.UnknownFields, fmt.Sprintf("column %q (%s) cannot take the fields: give a String column (a JSON object of the fields' exact text) or a Map(String, String)", o.UnknownFields, col.typeName)}
		}
		col.origin = OptionUnknownFields.String()
		c.unknownCol = i
		if base, _ := unwrapColumn(col.typ); base.Name == "Map" && len(base.Elems) == 2 {
			_, nullable := unwrapColumn(base.Elems[1])
			c.unknownNullText = !nullable
		}
	}
	for i := range c.columns {
		if c.columns[i].origin != "" {
			delete(c.index, c.columns[i].name) // no field fills it
		}
	}
	return nil
}

// Injected returns the columns filled from the message's metadata rather than from the payload
// (the columns of metadataColumns), each with the pair that fills it ("metadataColumns
// publish_time=ts").
func (c *Converter) Injected() (columns, sources []string) {
	for _, in := range c.injected {
		columns, sources = append(columns, c.columns[in.col].name), append(sources, c.columns[in.col].origin)
	}
	return columns, sources
}

// setMeta gives the metadata columns their values from m (nil: every one absent), rendered as
// JSON text into c.metaBuf.
func (c *Converter) setMeta(m *Meta) {
	if m == nil {
		return
	}
	buf := c.metaBuf[:0]
	spans := c.metaSpans[:0]
	for _, in := range c.injected {
		start, k, escaped := len(buf), kindString, false
		switch in.key {
		case KeyMessageID:
			buf, escaped = appendJSONString(buf, m.ID)
		case KeyPublishTime:
			if in.number {
				buf, k = strconv.AppendInt(buf, m.PublishTimeMillis, 10), kindNumber
			} else {
				buf = append(time.UnixMilli(m.PublishTimeMillis).UTC().AppendFormat(append(buf, '"'), text.MillisUTC), '"')
			}
		case KeyOrderingKey:
			if m.OrderingKey == "" && !in.emptyKey {
				k = kindNone // no ordering key: the column's DEFAULT, or NULL
			} else {
				buf, escaped = appendJSONString(buf, m.OrderingKey) // "" when the message has none, as in Pub/Sub
			}
		case KeyAttributes:
			buf, k = c.appendAttributes(buf, m.Attributes), kindObject
		case KeyAttribute:
			if v, ok := m.Attributes[in.attr]; ok {
				buf, escaped = appendJSONString(buf, v)
			} else {
				k = kindNone
			}
		}
		spans = append(spans, metaSpan{start, len(buf), k, escaped})
	}
	for j, in := range c.injected { // buf has stopped growing
		s := spans[j]
		if s.kind != kindNone {
			c.fields[in.col] = value{kind: s.kind, raw: buf[s.start:s.end], escaped: s.escaped}
		}
	}
	c.metaBuf, c.metaSpans = buf, spans
}

// metaSpan is where setMeta rendered one metadata value.
type metaSpan struct {
	start, end int
	kind       kind
	escaped    bool
}

// appendAttributes appends the attributes as a JSON object, by key order.
func (c *Converter) appendAttributes(dst []byte, attrs map[string]string) []byte {
	keys := c.attrKeys[:0]
	for k := range attrs {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	dst = append(dst, '{')
	for i, k := range keys {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst, _ = appendJSONString(dst, k)
		dst, _ = appendJSONString(append(dst, ':'), attrs[k])
	}
	c.attrKeys = keys[:0]
	return append(dst, '}')
}

// appendJSONString appends s as a JSON string (RFC 8259: quotes, backslashes and control
// characters escaped; a byte that is not UTF-8 becomes U+FFFD, which Pub/Sub's own strings,
// always UTF-8, never hold) and reports whether it wrote an escape.
func appendJSONString(dst []byte, s string) ([]byte, bool) {
	const hex = "0123456789abcdef"
	escaped := false
	dst = append(dst, '"')
	for i := 0; i < len(s); {
		ch := s[i]
		switch {
		case ch >= 0x20 && ch != '"' && ch != '\\' && ch < utf8.RuneSelf:
			dst = append(dst, ch)
			i++
			continue
		case ch == '"' || ch == '\\':
			dst, escaped = append(dst, '\\', ch), true
			i++
			continue
		case ch < 0x20:
			dst, escaped = append(dst, '\\', 'u', '0', '0', hex[ch>>4], hex[ch&0xF]), true
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			dst = utf8.AppendRune(dst, utf8.RuneError)
		} else {
			dst = append(dst, s[i:i+n]...)
		}
		i += n
	}
	return append(dst, '"'), escaped
}

// unknownField is a field of the payload that gives the row no value: its key and value, as
// written, and the offset in the payload of the top-level field it is or is under.
type unknownField struct {
	key, val []byte
	at       int
}

// notRead handles a key of a group's value (expandObject, expandArray) that names the column
// name, which is filled from the message or never written: as the column's own field would be,
// it is not read, and goes to unknownFieldsColumn, under the column's name ({"u":{"id":1}} gives
// "u.id":1, as {"u.id":1} does).
func (c *Converter) notRead(name string, val value) {
	if c.unknownCol < 0 {
		return
	}
	start := len(c.unknownKeys)
	c.unknownKeys, _ = appendJSONString(c.unknownKeys, name)
	c.unknown = append(c.unknown, unknownField{key: c.unknownKeys[start:len(c.unknownKeys):len(c.unknownKeys)], val: val.raw, at: c.expandAt})
	c.unknownLate = true
}

// setUnknown gives unknownFieldsColumn its value: a JSON object of the payload's unknown fields,
// keys and values byte for byte as written, in their order ({} when there are none).
func (c *Converter) setUnknown() {
	if c.unknownLate { // the groups' come after the top-level fields: put them in place
		slices.SortStableFunc(c.unknown, func(a, b unknownField) int { return a.at - b.at })
	}
	buf := append(c.unknownBuf[:0], '{')
	for i, f := range c.unknown {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = append(append(buf, f.key...), ':')
		if c.unknownNullText && string(f.val) == "null" {
			buf = append(buf, `"null"`...) // a Map's String value: the field's text, as other values give theirs
		} else {
			buf = append(buf, f.val...)
		}
	}
	buf = append(buf, '}')
	c.unknownBuf = buf
	// Not spaced, whatever the values hold: a String column keeps the text exactly.
	c.fields[c.unknownCol] = value{kind: kindObject, raw: buf}
}

// encodeInjected encodes metadata column col from its value, for the scan that encodes columns
// in order; ok is false for any other column, or when the value fails (Convert records why).
func (c *Converter) encodeInjected(dst []byte, col int) (row []byte, ok bool) {
	if !c.columns[col].meta {
		return dst, false
	}
	start := len(dst)
	row, err := c.encodeColumn(dst, col, c.fields[col])
	if err != nil {
		return row[:start], false
	}
	return row, true
}

// emptyKeyRule is the rule of the ordering_key column col when the message has no ordering key
// and the column, without DEFAULT and not Nullable, cannot take "" (rule is its encoder's); ""
// for any other column or value.
func (c *Converter) emptyKeyRule(col int, v value, rule string) string {
	for _, in := range c.injected {
		if in.col == col && in.emptyKey && string(v.raw) == `""` {
			return rule + ": the message has no ordering key, which Pub/Sub gives as \"\"; a String column stores '', " +
				"a Nullable column NULL and a column with a DEFAULT its DEFAULT, but this column takes none of them"
		}
	}
	return ""
}

// missingRule is the rule of a metadata column whose value the message lacks.
func (c *Converter) missingRule(col int) string {
	for _, in := range c.injected {
		if in.col == col && in.key == KeyOrderingKey {
			return "the message has no ordering key, and the column has no DEFAULT and is not Nullable"
		}
		if in.col == col && in.key == KeyAttribute {
			return fmt.Sprintf("the message has no attribute %q, and the column has no DEFAULT and is not Nullable", in.attr)
		}
	}
	return "the message has no such value, and the column has no DEFAULT and is not Nullable"
}
