// Package route is the routing stage: with routeBy and routeTables, each message goes to the
// table its attribute or top-level payload field names, and a message that names no table is a
// dead letter that says why (Route). The rules of the parameters' values are here too (ParseBy,
// ParseTables, New), so that the launch refuses what a worker could not follow.
package route

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/ch-beam/pubsub-to-clickhouse/transforms/convert"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/flow"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/text"
)

// By is where a message's routing value is: an attribute of the Pub/Sub message, or a top-level
// field of its payload (after the JavaScript UDF, when there is one). Its text form, routeBy's
// value, is "attribute:<name>" or "field:<name>".
type By struct {
	Attribute bool   // true: the attribute Name; false: the payload's top-level field Name
	Name      string // the attribute's or the field's name, not empty
}

// String returns b as routeBy takes it: "attribute:event_type", "field:type".
func (b By) String() string {
	if b.Attribute {
		return "attribute:" + b.Name
	}
	return "field:" + b.Name
}

// where returns b in words: `attribute "event_type"`, `field "type"`.
func (b By) where() string {
	if b.Attribute {
		return fmt.Sprintf("attribute %q", b.Name)
	}
	return fmt.Sprintf("field %q", b.Name)
}

// ParseBy parses routeBy's value: "attribute:<name>" or "field:<name>", the name not empty and
// without spaces around it. The error says which form was expected.
func ParseBy(s string) (By, error) {
	kind, name, ok := strings.Cut(s, ":")
	switch {
	case !ok || (kind != "attribute" && kind != "field"):
		return By{}, fmt.Errorf("%q must be attribute:<name> (a Pub/Sub attribute of the message) or field:<name> (a top-level field of the payload)", s)
	case name == "":
		return By{}, fmt.Errorf("%q names no %s: give attribute:<name> or field:<name>", s, kind)
	case strings.TrimSpace(name) != name:
		// A trailing space of a parameters file is invisible, and the name is compared byte for
		// byte: every message would be a dead letter of the routing stage.
		return By{}, fmt.Errorf("%q has spaces around the name %q: the %s's name is compared byte for byte, so remove them", s, name, kind)
	}
	return By{Attribute: kind == "attribute", Name: name}, nil
}

// Entry is one pair of routeTables: the messages whose routing value is Value go to Table.
type Entry struct {
	Value string // the routing value, compared byte for byte (a number as its text: 42, not 42.0)
	Table string // a table of clickHouseDatabase
}

func (e Entry) String() string { return e.Value + "=" + e.Table }

// ParseTables parses routeTables' value: comma-separated value=table pairs, such as
// "click=clicks,order=orders". Spaces around a value or a table are kept out (" click = clicks"
// is click=clicks). checkTable returns what is wrong with a table name, "" if nothing. The error
// names the pair: a pair without "=" or with more than one, an empty value or table, a value
// listed twice, or a table checkTable refuses. Several values may share a table.
func ParseTables(s string, checkTable func(string) string) ([]Entry, error) {
	var out []Entry
	for _, pair := range strings.Split(s, ",") {
		value, table, ok := strings.Cut(pair, "=")
		value, table = strings.TrimSpace(value), strings.TrimSpace(table)
		switch {
		case !ok:
			return nil, fmt.Errorf("the pair %q has no '=': each pair is value=table, such as click=clicks", pair)
		case value == "":
			return nil, fmt.Errorf("the pair %q has no value before '='", pair)
		case table == "":
			return nil, fmt.Errorf("the pair %q has no table after '='", pair)
		case strings.Contains(table, "="):
			// a==clicks would route a to the table "=clicks": a value holds no '=' (see routeBy).
			return nil, fmt.Errorf("the pair %q has more than one '=': each pair is value=table, and neither holds '='", pair)
		case slices.ContainsFunc(out, func(e Entry) bool { return e.Value == value }):
			return nil, fmt.Errorf("the value %q is listed twice; a value goes to one table", value)
		}
		if why := checkTable(table); why != "" {
			return nil, fmt.Errorf("the pair %q: the table %q %s", pair, table, why)
		}
		out = append(out, Entry{Value: value, Table: table})
	}
	return out, nil
}

// Spec is a checked routing: where the value is, the listed tables, and the table of the values
// not listed. Its exported fields are serialised to workers with the DoFn.
type Spec struct {
	By      By
	Entries []Entry
	// Unlisted is the table of a value no entry lists; "" makes such a message a dead letter.
	Unlisted string
	// Tables are the distinct tables of Entries in their order, then Unlisted when it is not
	// among them: the index Of returns is into Tables.
	Tables []string
}

// New returns the Spec of by, entries and unlisted (the table of the values entries do not
// list; "" for dead letters).
func New(by By, entries []Entry, unlisted string) Spec {
	s := Spec{By: by, Entries: slices.Clone(entries), Unlisted: unlisted}
	for _, e := range entries {
		if !slices.Contains(s.Tables, e.Table) {
			s.Tables = append(s.Tables, e.Table)
		}
	}
	if unlisted != "" && !slices.Contains(s.Tables, unlisted) {
		s.Tables = append(s.Tables, unlisted)
	}
	return s
}

// Error is why a message names no table; its text names routeBy, the attribute or field and the
// value.
type Error struct {
	By      By
	Value   string // the routing value; "" when Missing
	Missing bool   // the message has no such attribute, or its payload no such field (or null)
	Cause   error  // why the payload's field could not be read, if that is the problem
}

func (e *Error) Error() string {
	switch {
	case e.Cause != nil:
		return fmt.Sprintf("routeBy %s: the routing value cannot be read: %v", e.By, e.Cause)
	case e.Missing && e.By.Attribute:
		return fmt.Sprintf("routeBy %s: the message has no attribute %q, so it names no table", e.By, e.By.Name)
	case e.Missing:
		return fmt.Sprintf("routeBy %s: the payload has no field %q (or it is null), so it names no table", e.By, e.By.Name)
	}
	value := strconv.Quote(text.Cut(e.Value, maxValueText))
	if len(e.Value) > maxValueText {
		value += fmt.Sprintf(" (%d bytes)", len(e.Value))
	}
	return fmt.Sprintf("routeBy %s: the value %s of the %s is not listed in routeTables, and routeUnlisted is deadLetter", e.By, value, e.By.where())
}

// maxValueText is how much of a routing value an error quotes, as much as convert quotes of a
// value: the value is the message's, of any length, and the dead letter keeps the message.
const maxValueText = 100

func (e *Error) Unwrap() error { return e.Cause }

// value returns m's routing value, whether it has one, and the error of a payload whose field
// cannot be read.
func (s Spec) value(m flow.Message) (string, bool, error) {
	if s.By.Attribute {
		v, ok := m.Attributes[s.By.Name]
		return v, ok, nil
	}
	return convert.TopLevel(m.Data, s.By.Name)
}

// Of returns the index in s.Tables of the table of m, or an *Error. index is the value to
// index lookup of s.Entries (see lookup).
func (s Spec) of(m flow.Message, index map[string]int) (int, error) {
	v, ok, err := s.value(m)
	switch {
	case err != nil:
		return 0, &Error{By: s.By, Cause: err}
	case !ok:
		return 0, &Error{By: s.By, Missing: true}
	}
	if i, ok := index[v]; ok {
		return i, nil
	}
	if s.Unlisted != "" {
		return slices.Index(s.Tables, s.Unlisted), nil
	}
	return 0, &Error{By: s.By, Value: v}
}

// lookup returns the index in s.Tables of each listed value's table.
func (s Spec) lookup() map[string]int {
	m := make(map[string]int, len(s.Entries))
	for _, e := range s.Entries {
		m[e.Value] = slices.Index(s.Tables, e.Table)
	}
	return m
}

// Of returns the table m goes to (one of s.Tables), or an *Error saying why it names none: for
// the check command, which shows each message's table.
func (s Spec) Of(m flow.Message) (string, error) {
	i, err := s.of(m, s.lookup())
	if err != nil {
		return "", err
	}
	return s.Tables[i], nil
}
