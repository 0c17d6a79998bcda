// The errors of the package: ValueError (one column), RowError (the columns of one payload),
// PayloadError (not one JSON object) and UnsupportedTypeError (a column type without converter),
// and how an error quotes the offending value.

package convert

import (
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
