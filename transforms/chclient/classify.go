package chclient

import (
	"errors"

	"github.com/ClickHouse/clickhouse-go/v2"
)

// Class is what an INSERT's failure means for the rows, and so what the write stage does.
type Class int

const (
	// Transient: the server or the network failed, not the rows (connection refused or reset,
	// timeouts, too many parts, a server shutting down, authentication lost at runtime, an
	// unknown error). Retry with backoff; never dead-letter, never acknowledge.
	Transient Class = iota
	// Data: the server rejected a value of the rows (cannot parse, type mismatch, out of range,
	// throwIf, a violated constraint). Split the INSERT until the offending rows are isolated,
	// insert the rest, dead-letter those rows with the server's error text.
	Data
	// Memory: the server ran out of memory for the INSERT (code 241). Retry with smaller INSERTs.
	Memory
	// Schema: the table no longer matches the pipeline's view of it (a column dropped, renamed
	// or changed). Refresh the schema and retry.
	Schema
)

func (c Class) String() string {
	return [...]string{"transient", "data", "memory", "schema"}[c]
}

// ClickHouse error codes (src/Common/ErrorCodes.cpp in the ClickHouse repository).
var (
	dataCodes = map[int32]bool{
		6:   true, // CANNOT_PARSE_TEXT
		26:  true, // CANNOT_PARSE_QUOTED_STRING
		27:  true, // CANNOT_PARSE_INPUT_ASSERTION_FAILED
		38:  true, // CANNOT_PARSE_DATE
		41:  true, // CANNOT_PARSE_DATETIME
		43:  true, // ILLEGAL_TYPE_OF_ARGUMENT
		53:  true, // TYPE_MISMATCH
		69:  true, // ARGUMENT_OUT_OF_BOUND
		70:  true, // CANNOT_CONVERT_TYPE
		72:  true, // CANNOT_PARSE_NUMBER
		117: true, // INCORRECT_DATA
		131: true, // TOO_LARGE_STRING_SIZE
		321: true, // VALUE_IS_OUT_OF_RANGE_OF_DATA_TYPE
		349: true, // CANNOT_INSERT_NULL_IN_ORDINARY_COLUMN
		395: true, // FUNCTION_THROW_IF_VALUE_IS_NON_ZERO
		407: true, // DECIMAL_OVERFLOW
		469: true, // VIOLATED_CONSTRAINT
		691: true, // UNKNOWN_ELEMENT_OF_ENUM
	}
	schemaCodes = map[int32]bool{
		8:   true, // THERE_IS_NO_COLUMN
		10:  true, // NOT_FOUND_COLUMN_IN_BLOCK
		16:  true, // NO_SUCH_COLUMN_IN_TABLE
		47:  true, // UNKNOWN_IDENTIFIER
		517: true, // CANNOT_ASSIGN_ALTER
	}
	memoryCodes = map[int32]bool{
		241: true, // MEMORY_LIMIT_EXCEEDED
	}
)

// Classify says what an INSERT's error means. A *clickhouse.Exception is classified by its code;
// every other error (network, timeouts, the client itself) is Transient. Errors raised by
// clickhouse-go while appending the columns, before anything is sent, are wrapped in
// AppendError by the caller and classified Schema: the server's column types no longer match.
func Classify(err error) Class {
	var ae *AppendError
	if errors.As(err, &ae) {
		return Schema
	}
	var ex *clickhouse.Exception
	if !errors.As(err, &ex) {
		return Transient
	}
	switch {
	case dataCodes[ex.Code]:
		return Data
	case schemaCodes[ex.Code]:
		return Schema
	case memoryCodes[ex.Code]:
		return Memory
	}
	return Transient
}

// AppendError is a failure of clickhouse-go to take a column's values for an INSERT: the
// values' Go type does not fit the column type the server announced.
type AppendError struct {
	Column string
	Err    error
}

func (e *AppendError) Error() string { return "column " + quoteName(e.Column) + ": " + e.Err.Error() }
func (e *AppendError) Unwrap() error { return e.Err }

func quoteName(s string) string { return `"` + s + `"` }
