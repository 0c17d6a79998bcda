package main

// check's hints: what a dead letter's error does not say but the message shows (a field that
// differs from a column only in letter case), and the fields of a row that no column takes. (A
// DateTime number that reads as milliseconds is said in the error itself, since 2026-12-06.)

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/ch-beam/pubsub-to-clickhouse/transforms/chtype"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/convert"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/schema"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/text"
)

// missingFieldRule starts the rule of a column whose field the payload lacks (convert).
const missingFieldRule = "the field is missing"

// hints returns the hints for the conversion error err of payload, one line each: for a column
// whose field is missing, a field of the payload of the same name in another letter case.
func hints(payload []byte, err error) []string {
	var re *convert.RowError
	if !errors.As(err, &re) {
		return nil
	}
	var out []string
	var keys []string // the payload's top-level keys, read on first need
	for _, ve := range re.Errs {
		if ve.Origin != "" || !strings.HasPrefix(ve.Rule, missingFieldRule) {
			continue
		}
		if keys == nil {
			keys = topLevelKeys(payload)
		}
		for _, k := range keys {
			if k != ve.Column && strings.EqualFold(k, ve.Column) {
				out = append(out, fmt.Sprintf("the payload has the field %q, and field names are case-sensitive: did you mean %q, the column's name?", k, ve.Column))
			}
		}
	}
	return out
}

// topLevelKeys returns the keys of the JSON object payload, in order; nil when it is not one.
func topLevelKeys(payload []byte) []string {
	d := json.NewDecoder(bytes.NewReader(payload))
	if tok, err := d.Token(); err != nil || tok != json.Delim('{') {
		return nil
	}
	keys := []string{}
	for d.More() {
		tok, err := d.Token()
		if err != nil {
			return keys
		}
		k, _ := tok.(string)
		keys = append(keys, k)
		var skip json.RawMessage
		if err := d.Decode(&skip); err != nil {
			return keys
		}
	}
	return keys
}

// unknownColumn names the column that unknownFields adds to the table: no JSON key can name it
// (a NUL is always escaped in JSON text).
const unknownColumn = "\x00unknown fields"

// unknownFields finds the fields of a payload that no column takes, with the pipeline's own
// converter: the table's, with unknownFieldsColumn set to a column of its own.
type unknownFields struct {
	conv   *convert.Converter
	layout *convert.Layout
	col    *chtype.Type
	buf    []byte
}

// newUnknownFields returns the finder for table t and the options o (metadataColumns; o has no
// unknownFieldsColumn).
func newUnknownFields(t *schema.Table, o convert.Options) (*unknownFields, error) {
	str, err := chtype.Parse("String")
	if err != nil {
		return nil, err
	}
	with := *t
	with.Columns = append(append([]schema.Column{}, t.Columns...), schema.Column{Name: unknownColumn, TypeName: "String", Type: str})
	o.UnknownFields = unknownColumn
	u := &unknownFields{col: str}
	if u.conv, err = convert.NewWith(&with, o); err != nil {
		return nil, err
	}
	var types []*chtype.Type
	for _, col := range with.Writable() {
		types = append(types, col.Type)
	}
	if u.layout, err = convert.NewLayout(types); err != nil {
		return nil, err
	}
	return u, nil
}

// keys returns the keys of the payload's fields that no column takes, in order; nil when there
// are none, or the payload does not convert.
func (u *unknownFields) keys(payload []byte, meta *convert.Meta) []string {
	var err error
	if u.buf, err = u.conv.ConvertMessage(u.buf[:0], payload, meta); err != nil {
		return nil
	}
	spans, err := u.layout.Split(u.buf, nil)
	if err != nil || spans[len(spans)-1] == nil {
		return nil
	}
	dec, err := convert.NewColumn(u.col)
	if err != nil || dec.Append(spans[len(spans)-1]) != nil {
		return nil
	}
	fields, ok := firstValue(dec.Values()).(string)
	if !ok {
		return nil
	}
	keys := topLevelKeys([]byte(fields))
	if len(keys) == 0 {
		return nil
	}
	return keys
}

// quoteAll quotes each string and joins them with ", ": at most maxQuoted of them, each cut to
// maxQuotedBytes (text.Cut), then how many more there are, so that a message of 10,000 fields or
// of a name of megabytes gives a line of a few kilobytes.
func quoteAll(ss []string) string {
	q := make([]string, 0, min(len(ss), maxQuoted+1))
	for i, s := range ss {
		if i == maxQuoted {
			q = append(q, fmt.Sprintf("and %d more", len(ss)-maxQuoted))
			break
		}
		q = append(q, strconv.Quote(text.Cut(s, maxQuotedBytes)))
	}
	return strings.Join(q, ", ")
}

const (
	maxQuoted      = 20  // names quoteAll lists
	maxQuotedBytes = 200 // bytes of each name quoteAll keeps
)
