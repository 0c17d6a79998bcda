// Package evolve is the rule by which a JSON value names the ClickHouse type of a new column,
// and the DDL that adds such columns to a table or creates a table of them. It is what schema
// evolution (a field that no column takes becomes a column) and the infer command share, so
// that a column gets the same type from the same value on every worker and in every run.
//
// The rule (docs/conversion.md, "Inferring a table from messages", has the same table):
//
//	JSON value                                  Kind     column type
//	null                                        None     no column yet: the field waits for a value
//	true, false                                 Bool     Nullable(Bool); Nullable(UInt8) before ClickHouse 21.12
//	whole number 0 … 9223372036854775807        Whole    Nullable(Int64)
//	  (no fraction, no exponent: 0, 42, -0)
//	negative whole number within Int64          Int64    Nullable(Int64)
//	  (-1 … -9223372036854775808)
//	whole number above Int64, within UInt64     UInt64   Nullable(UInt64)
//	  (9223372036854775808 … 18446744073709551615)
//	any other number within Float64's range     Float64  Nullable(Float64) (rounded to the nearest
//	  (1.5, 1e3, 42.0, -9223372036854775809)             double, as IEEE 754 does)
//	a number beyond Float64 (1e400)             String   Nullable(String) of its text
//	a string                                    String   Nullable(String); no DateTime guessing:
//	                                                     "2024-01-02T03:04:05Z" stays a string
//	an array                                    String   Nullable(String) of its JSON text
//	an object                                   Object   Nullable(String) of its JSON text; JSON
//	                                                     DEFAULT '{}' when Rule.ObjectsAsJSON and the
//	                                                     server has JSON (ClickHouse 25.3 and later)
//
// The kind depends only on the value's text (its spelling: 42.0 is a Float64, "42" a String),
// never on other fields, the order of messages or the worker; the type, on the kind and on the
// Rule (the server's capabilities and the JSON option). Every type is Nullable (but JSON, which
// keeps no NULL and is given DEFAULT '{}' instead), so that a message without the field, or with
// null, still becomes a row. Each type is one the product's converter takes the value into
// (transforms/convert: an integer column takes whole numbers and true/false, Float64 any number
// within its range, String any value, as its text when it is not a string).
//
// Values of several messages merge into the narrowest kind that the converter takes all of
// them into and that does not depend on their order (Merge): None with any kind is that kind;
// Whole with Int64 is Int64 and with UInt64 UInt64 (0 and 18446744073709551615 are a UInt64
// column); Int64+UInt64, and any whole kind with Float64, is Float64 (no integer type of every
// server takes both -1 and 18446744073709551615; Float64 rounds integers beyond 2^53); Bool with
// a number is String (Float64 refuses booleans, and an Int64 column for true and 5 would make
// the kind of Bool, Int64 and UInt64 depend on the order of merging); anything else mixed is
// String.
package evolve

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/ch-beam/pubsub-to-clickhouse/transforms/convert"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/text"
)

// Kind is what a JSON value says of its column's type; see the package's table. Kinds are not
// totally ordered by width (Int64 and UInt64 each take values the other refuses): Merge gives
// the narrowest kind of two.
type Kind uint8

const (
	None    Kind = iota // null: no type yet
	Bool                // true, false
	Whole               // a whole number 0 … 2^63-1: within Int64 and UInt64 alike
	Int64               // a negative whole number within Int64
	UInt64              // a whole number above Int64, within UInt64
	Float64             // any other number within Float64
	String              // a string, an array, a number beyond Float64; or values of kinds that merge to nothing narrower
	Object              // an object
)

func (k Kind) String() string {
	if k > Object {
		return fmt.Sprintf("Kind(%d)", uint8(k))
	}
	return [...]string{"None", "Bool", "Whole", "Int64", "UInt64", "Float64", "String", "Object"}[k]
}

// Infer returns the kind of one JSON value, given as its exact text (as convert.TopLevelFields
// gives it; white space around it is ignored). The value must be valid JSON: text that is not
// one (empty, or a number outside JSON's grammar) is an error that quotes it.
func Infer(value []byte) (Kind, error) {
	v := bytes.TrimSpace(value)
	if len(v) == 0 {
		return None, fmt.Errorf("an empty value is not JSON")
	}
	switch c := v[0]; {
	case c == 'n':
		return None, nil
	case c == 't' || c == 'f':
		return Bool, nil
	case c == '"' || c == '[':
		return String, nil
	case c == '{':
		return Object, nil
	case c == '-' || c >= '0' && c <= '9':
		return inferNumber(v)
	}
	return None, fmt.Errorf("%s is not a JSON value", quote(v))
}

// inferNumber returns the kind of the JSON number n.
func inferNumber(n []byte) (Kind, error) {
	whole := bytes.IndexAny(n, ".eE") < 0
	if whole {
		if i, err := strconv.ParseInt(string(n), 10, 64); err == nil {
			if i < 0 {
				return Int64, nil
			}
			return Whole, nil
		}
		if n[0] != '-' {
			if _, err := strconv.ParseUint(string(n), 10, 64); err == nil {
				return UInt64, nil
			}
		}
	}
	f, err := convert.ParseFloat(n, 64) // not strconv alone: it misreads numbers of over 800 digits
	switch {
	case err == nil:
		return Float64, nil
	case math.IsInf(f, 0):
		return String, nil // beyond Float64: Float64 refuses it, String keeps its text
	}
	return None, fmt.Errorf("%s is not a JSON number", quote(n))
}

// Merge returns the narrowest kind that the converter takes values of kinds a and b into; see
// the package's comment. It is the join of the order None < Bool < String, None < Whole < Int64,
// UInt64 < Float64 < String, None < Object < String, so it is commutative and associative: the
// kind of a field over a sample does not depend on the order of its messages.
func Merge(a, b Kind) Kind {
	if a > b {
		a, b = b, a
	}
	switch {
	case a == b, a == None:
		return b
	case a == Whole && isNumber(b):
		return b
	case isNumber(a) && isNumber(b):
		return Float64
	}
	return String
}

func isNumber(k Kind) bool { return k >= Whole && k <= Float64 }

// Server says which of the types the rule uses a ClickHouse server has.
type Server struct {
	// Bool: the Bool type, ClickHouse 21.12 and later (ClickHouse changelog 21.12; docs:
	// "Data types: Bool"). Without it a boolean is a Nullable(UInt8) of 0 and 1.
	Bool bool
	// JSON: the JSON type (not the deprecated Object('json')) without a setting: ClickHouse 25.3
	// and later (docs, "JSON data type": production ready in 25.3; 24.8 to 25.2 need
	// allow_experimental_json_type).
	JSON bool
	// AddIfNotExists: ALTER TABLE … ADD COLUMN IF NOT EXISTS, ClickHouse 19.1 and later
	// (ClickHouse pull request #3900; 18.16 refuses the clause with code 62, a syntax error);
	// Server.AddColumn uses it ON CLUSTER only.
	AddIfNotExists bool
	// BigIntegers: Int128, UInt128, Int256, UInt256 and Decimal of up to 76 digits (Decimal256)
	// without a setting: ClickHouse 21.7 and later (ClickHouse pull requests #23631, "Make big
	// integers production ready", and #24812, which removed allow_experimental_bigint_types;
	// 18.16 has none of them). Only infer's notes name them; no inferred column has them.
	BigIntegers bool
}

// ServerOf returns the Server of a ClickHouse version as SELECT version() gives it: "18.16.1",
// "26.7.2.1". Its error quotes a version whose first two parts are not numbers.
func ServerOf(version string) (Server, error) {
	parts := strings.SplitN(version, ".", 3)
	if len(parts) < 2 {
		return Server{}, fmt.Errorf("ClickHouse version %q is not MAJOR.MINOR…", version)
	}
	major, err1 := strconv.Atoi(parts[0])
	minor, err2 := strconv.Atoi(parts[1])
	if err1 != nil || err2 != nil {
		return Server{}, fmt.Errorf("ClickHouse version %q is not MAJOR.MINOR…", version)
	}
	atLeast := func(ma, mi int) bool { return major > ma || major == ma && minor >= mi }
	return Server{Bool: atLeast(21, 12), JSON: atLeast(25, 3), AddIfNotExists: atLeast(19, 1), BigIntegers: atLeast(21, 7)}, nil
}

// ServerOfConn returns the Server of the server conn is connected to, by SELECT version().
func ServerOfConn(ctx context.Context, conn driver.Conn) (Server, error) {
	var version string
	if err := conn.QueryRow(ctx, "SELECT version()").Scan(&version); err != nil {
		return Server{}, fmt.Errorf("reading the ClickHouse server's version: %w", err)
	}
	return ServerOf(version)
}

// Rule turns kinds into column types for one server.
type Rule struct {
	Server Server
	// ObjectsAsJSON makes an object a JSON column where the server has JSON; off (the default),
	// or on a server without it, an object is a Nullable(String) of its text.
	ObjectsAsJSON bool
}

// Type returns the column type of kind k: "Nullable(Int64)", …, or "" for None (no type). An
// object under ObjectsAsJSON on a server with JSON is "JSON", which Definition gives its
// DEFAULT.
func (r Rule) Type(k Kind) string {
	switch k {
	case Bool:
		if r.Server.Bool {
			return "Nullable(Bool)"
		}
		return "Nullable(UInt8)"
	case Whole, Int64:
		return "Nullable(Int64)"
	case UInt64, Float64:
		return "Nullable(" + k.String() + ")"
	case String:
		return "Nullable(String)"
	case Object:
		if r.ObjectsAsJSON && r.Server.JSON {
			return "JSON"
		}
		return "Nullable(String)"
	}
	return ""
}

// Definition returns what follows a new column's name in the DDL: Type, and for JSON "JSON
// DEFAULT '{}'" (JSON cannot hold NULL; the DEFAULT gives a message without the field, or with
// null, a row, as Nullable does for the others). "" for None.
func (r Rule) Definition(k Kind) string {
	t := r.Type(k)
	if t == "JSON" {
		return "JSON DEFAULT '{}'"
	}
	return t
}

// maxQuoted is how many bytes of a value or name an error quotes.
const maxQuoted = 100

// quote returns b Go-quoted for an error message, cut to maxQuoted bytes.
func quote[T ~string | ~[]byte](b T) string { return strconv.Quote(text.Cut(b, maxQuoted)) }
