// The errors of the package: ValueError (one column), RowError (the columns of one payload),
// PayloadError (not one JSON object) and UnsupportedTypeError (a column type without converter),
// and how an error quotes the offending value.

package convert

import (
	"bytes"
	"errors"
	"fmt"
	"strings"

	"github.com/ch-beam/pubsub-to-clickhouse/transforms/text"
)

// maxValueText is how many bytes of an offending value an error quotes.
const maxValueText = 100

// ValueError says why a JSON value cannot become a value of its column.
type ValueError struct {
	Column string // column name
	Type   string // the column's ClickHouse type, e.g. "Array(UInt8)"
	Path   string // within the value: "" for the value itself, "[1]" for an array's second element
	Value  string // the offending JSON text, cut to 100 bytes; "" for a missing field
	Rule   string // the rule it breaks, e.g. "is out of range for UInt8 (0 to 255)"
	// Origin is what gave the value instead of the payload's field of the column's name:
	// "metadataColumns attribute.n=n", "unknownFieldsColumn"; "" for the payload.
	Origin string
}

// Error returns `column "c" (T): <value> <rule>`; with an Origin, `column "c" (T, from <origin>): ...`.
func (e *ValueError) Error() string {
	path := ""
	if e.Path != "" {
		path = "element " + e.Path + ": "
	}
	typ := e.Type
	if e.Origin != "" {
		typ += ", from " + e.Origin
	}
	if e.Value == "" {
		return fmt.Sprintf("column %q (%s): %s%s", e.Column, typ, path, e.Rule)
	}
	return fmt.Sprintf("column %q (%s): %s%s %s", e.Column, typ, path, e.Value, e.Rule)
}

// OnlyMetadata reports whether err (a *RowError anywhere in its chain) says that only columns
// filled by metadataColumns failed: the values came from the message's metadata, not from the
// payload (or the JavaScript UDF's output), whose fields all converted. False for any other
// error.
func OnlyMetadata(err error) bool {
	var re *RowError
	if !errors.As(err, &re) || len(re.Errs) == 0 {
		return false
	}
	for _, ve := range re.Errs {
		if !strings.HasPrefix(ve.Origin, metadataOrigin("")) {
			return false
		}
	}
	return true
}

// RowError lists the columns of one payload that cannot take their fields, in table order.
type RowError struct {
	Errs []*ValueError
}

// Columns returns the names of the columns that err (a *RowError anywhere in its chain) says
// failed, joined with ", " in the order of its errors, for a dead letter's stack trace; "" when
// err holds no *RowError (a server's rejection, for one).
func Columns(err error) string {
	var re *RowError
	if !errors.As(err, &re) {
		return ""
	}
	names := make([]string, len(re.Errs))
	for i, ve := range re.Errs {
		names[i] = ve.Column
	}
	return strings.Join(names, ", ")
}

// Error joins the column errors with "; ".
func (e *RowError) Error() string {
	var b strings.Builder
	for i, err := range e.Errs {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(err.Error())
	}
	return b.String()
}

// Unwrap returns the column errors.
func (e *RowError) Unwrap() []error {
	out := make([]error, len(e.Errs))
	for i, err := range e.Errs {
		out[i] = err
	}
	return out
}

// PayloadError says why a payload is not one JSON object.
type PayloadError struct {
	Rule string
}

func (e *PayloadError) Error() string { return "payload: " + e.Rule }

// FieldTwice is the *PayloadError of a payload that gives the field name twice: which of its
// values is meant is ambiguous, so the message is a dead letter.
func FieldTwice[T ~string | ~[]byte](name T) *PayloadError {
	return &PayloadError{Rule: fmt.Sprintf("field %q appears twice; which value is meant is ambiguous", name)}
}

// UnsupportedTypeError is returned by New for a column whose type has no converter.
type UnsupportedTypeError struct {
	Column string
	Type   string
	Reason string
}

func (e *UnsupportedTypeError) Error() string {
	s := fmt.Sprintf("column %q: unsupported type %s", e.Column, e.Type)
	if e.Reason != "" {
		s += " (" + e.Reason + ")"
	}
	return s
}

// quote renders a JSON value's text for an error message, cut to maxValueText bytes on a UTF-8
// boundary.
func quote(raw []byte) string { return text.Cut(raw, maxValueText) }

// errValue builds a ValueError for v; the caller fills Column and Type.
func errValue(v value, rule string) *ValueError {
	return &ValueError{Value: quote(v.raw), Rule: rule}
}

// notANumber is the rule of a string that holds no number, for a column that takes (what takes
// says): "is not a number; "+takes, with, for a string that is a number but for a detail of
// JSON's syntax ("007", "+5", ".5", "5.", "1e", " 5"), that detail: the strings of a number
// column hold a number as JSON writes it (RFC 8259, section 6), where ClickHouse's own parsers
// take some such spellings.
func notANumber(v value, takes string) string {
	if why := numberNearMiss(v.raw); why != "" {
		return fmt.Sprintf("is not a number as JSON writes one (%s; RFC 8259, section 6); %s", why, takes)
	}
	return "is not a number; " + takes
}

// numberNearMiss says why raw, a JSON string token, holds a number but for a detail of JSON's
// number syntax (the first of: spaces around it, a plus sign, a leading zero, no digit before
// or after the decimal point, none after the exponent's e); "" when it holds something else, or
// escapes.
func numberNearMiss(raw []byte) string {
	if len(raw) < 3 || raw[0] != '"' || raw[len(raw)-1] != '"' || bytes.IndexByte(raw, '\\') >= 0 {
		return ""
	}
	s := string(raw[1 : len(raw)-1])
	if isJSONNumber(s) || !strings.ContainsAny(s, "0123456789") {
		return ""
	}
	if t := strings.TrimSpace(s); t != s {
		if isJSONNumber(t) {
			return "it has spaces around it"
		}
		return ""
	}
	if fixed, why := fixNearMiss(s); why != "" && isJSONNumber(fixed) {
		return why
	}
	return ""
}

// fixNearMiss returns s written as JSON would write its number (without a plus sign or leading
// zeros, with a 0 before a bare decimal point and after a bare one or a bare exponent's e), and
// the first of those it changed, as numberNearMiss says it; why is "" when it changed nothing.
func fixNearMiss(s string) (fixed, why string) {
	note := func(reason string) {
		if why == "" {
			why = reason
		}
	}
	sign := ""
	if t, ok := strings.CutPrefix(s, "+"); ok {
		if strings.HasPrefix(t, "-") {
			return s, "" // two signs
		}
		note("a JSON number has no plus sign")
		s = t
	} else if t, ok := strings.CutPrefix(s, "-"); ok {
		sign, s = "-", t
	}
	whole, rest := s, ""
	if i := strings.IndexAny(s, ".eE"); i >= 0 {
		whole, rest = s[:i], s[i:]
	}
	switch t := strings.TrimLeft(whole, "0"); {
	case whole == "" && strings.HasPrefix(rest, "."):
		note("a JSON number has a digit before its decimal point")
		whole = "0"
	case len(whole) > 1 && t != whole:
		note("a JSON number has no leading zero")
		if whole = t; whole == "" {
			whole = "0"
		}
	}
	frac, exp := rest, ""
	if i := strings.IndexAny(rest, "eE"); i >= 0 {
		frac, exp = rest[:i], rest[i:]
	}
	if frac == "." {
		note("a JSON number has a digit after its decimal point")
		frac = ".0"
	}
	if exp != "" && strings.TrimLeft(exp[1:], "+-") == "" && len(exp) <= 2 {
		note("a JSON number has digits after its exponent's e")
		exp += "0"
	}
	return sign + whole + frac + exp, why
}

// isJSONNumber reports whether s is a number in JSON's syntax, and nothing else.
func isJSONNumber(s string) bool {
	end, ok := numberEnd([]byte(s), 0)
	return ok && end == len(s) && s != ""
}
