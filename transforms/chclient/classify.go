package chclient

import (
	"errors"
	"maps"
	"net/http"
	"slices"
	"strings"

	"github.com/ClickHouse/clickhouse-go/v2"

	"github.com/ch-beam/pubsub-to-clickhouse/transforms/text"
)

// Class is what an INSERT's failure means for the rows, and so what the write stage does. The
// rule is what a retry can change: a failure of the transport or a server state that passes is
// retried and never dead-letters anything; a failure that no split can fix stops loudly; any
// other exception the server raises for a block is presumed to be about the rows in it.
type Class int

const (
	// Transient: the network or the server's state failed, not the rows: a connection refused
	// or reset, a timeout, TLS, and the server codes of transientCodes (memory and part limits,
	// too many queries, timeouts, shutting down, read-only replica, ZooKeeper/Keeper, quorum).
	// Retry with backoff; never dead-letter, never acknowledge.
	Transient Class = iota
	// Data: a code known to be about a value (cannot parse, out of range, throwIf, a violated
	// constraint, ...). Split the INSERT until the offending rows are alone, insert the rest,
	// dead-letter those rows with the server's code and text.
	Data
	// Memory: the INSERT is too large for the server: out of memory (code 241), rows over too
	// many partitions (code 252 with "partitions for single INSERT block", from 19.x), or, over
	// HTTP, a body larger than a proxy in front of the server takes (HTTP 413 without a server
	// exception). Split it into smaller INSERTs; a single row is retried as Transient, and
	// dead-lettered when it still fails after the retries (a value that alone takes more memory
	// than the server has, or a row larger than the proxy takes).
	Memory
	// Schema: the table no longer matches the pipeline's view of it (a column dropped, renamed
	// or changed). Refresh the schema and retry.
	Schema
	// Refused: the server refuses every INSERT into the table whatever the rows (access denied,
	// authentication lost, the table or database dropped, a read-only user): no split can fix
	// it. Retried as Transient (an operator may fix it), then the INSERT fails loudly naming the
	// cause; nothing is dead-lettered.
	Refused
	// Unknown: any other server exception. Presumed to be about the rows (a DEFAULT or
	// MATERIALIZED expression that fails for some values raises codes such as 153, 376, 49, 36,
	// 190): retried a bounded number of times (PresumedDataAttempts), then handled as Data. An
	// unknown code never means "retry forever".
	Unknown
)

// PresumedDataAttempts is how many attempts a block that fails with an Unknown code gets before
// the failure is taken to be about its rows.
const PresumedDataAttempts = 2

func (c Class) String() string {
	return [...]string{"transient", "data", "memory", "schema", "refused", "unknown (presumed data)"}[c]
}

// ClickHouse error codes, with their names in src/Common/ErrorCodes.cpp of the ClickHouse
// repository. The numbers are stable across releases; the names of every list were checked
// against ClickHouse 26.7's errorCodeToName on 2026-12-02 (integration_test, TestCodeNamesOnModern,
// which also provokes the faults the lists name and checks their codes and classes:
// TestErrorCodesOnModern). 18.16 prints no names, and one name changed since: 190 was
// SIZES_OF_ARRAYS_DOESNT_MATCH.
var (
	// dataCodes: checked against 26.7's errorCodeToName on 2026-12-02; provoked on 26.7 by a
	// DEFAULT, MATERIALIZED, CHECK or JSON fault: 6, 38, 41, 53, 69, 70, 72, 117, 131, 153, 190,
	// 376, 395, 407, 469, 691. Not provoked: 26 and 27 (text input formats, which the pipeline
	// does not send), 43, 321 and 349 (a NULL into a column that is not Nullable gives 53 or 70
	// on 26.7).
	dataCodes = map[int32]string{
		6:   "CANNOT_PARSE_TEXT",
		26:  "CANNOT_PARSE_QUOTED_STRING",
		27:  "CANNOT_PARSE_INPUT_ASSERTION_FAILED",
		38:  "CANNOT_PARSE_DATE",
		41:  "CANNOT_PARSE_DATETIME",
		43:  "ILLEGAL_TYPE_OF_ARGUMENT",
		53:  "TYPE_MISMATCH",
		69:  "ARGUMENT_OUT_OF_BOUND",
		70:  "CANNOT_CONVERT_TYPE",
		72:  "CANNOT_PARSE_NUMBER",
		117: "INCORRECT_DATA",
		131: "TOO_LARGE_STRING_SIZE",
		153: "ILLEGAL_DIVISION",
		190: "SIZES_OF_ARRAYS_DONT_MATCH",
		321: "VALUE_IS_OUT_OF_RANGE_OF_DATA_TYPE",
		349: "CANNOT_INSERT_NULL_IN_ORDINARY_COLUMN",
		376: "CANNOT_PARSE_UUID",
		395: "FUNCTION_THROW_IF_VALUE_IS_NON_ZERO",
		407: "DECIMAL_OVERFLOW",
		469: "VIOLATED_CONSTRAINT",
		691: "UNKNOWN_ELEMENT_OF_ENUM",
	}
	// schemaCodes: checked against 26.7's errorCodeToName on 2026-12-02; 16 and 47 provoked on
	// 26.7 (an INSERT naming a dropped column, the DEFAULT of insertDefaults naming another column).
	// 44 ILLEGAL_COLUMN is one too when its text says an INSERT named a column the server
	// computes (Classify), else unknown.
	schemaCodes = map[int32]string{
		8:   "THERE_IS_NO_COLUMN",
		10:  "NOT_FOUND_COLUMN_IN_BLOCK",
		16:  "NO_SUCH_COLUMN_IN_TABLE",
		47:  "UNKNOWN_IDENTIFIER",
		517: "CANNOT_ASSIGN_ALTER",
	}
	// memoryCodes: checked against 26.7's errorCodeToName on 2026-12-02 and provoked on 26.7
	// (max_memory_usage); so was 252 with "partitions for single INSERT block" (Classify).
	memoryCodes = map[int32]string{
		241: "MEMORY_LIMIT_EXCEEDED",
	}
	// transientCodes: checked against 26.7's errorCodeToName on 2026-12-02; the faults (a full
	// disk, Keeper, quorum, time-outs, shutdown) are not provoked in tests on 26.7.
	transientCodes = map[int32]string{
		// The server's read of the INSERT's data stopped short: a connection cut or half-closed
		// in the middle of a block (seen on 18.16 behind a proxy that closed its side), which
		// says nothing of the rows. The driver builds the blocks, so a block it sent whole
		// always reads to its end.
		23:   "CANNOT_READ_FROM_ISTREAM",
		33:   "CANNOT_READ_ALL_DATA",
		74:   "CANNOT_READ_FROM_FILE_DESCRIPTOR",
		75:   "CANNOT_WRITE_TO_FILE_DESCRIPTOR", // 18.16's "No space left on device"
		76:   "CANNOT_OPEN_FILE",
		1000: "POCO_EXCEPTION", // 18.16's "File access error: no space left on device"
		1001: "STD_EXCEPTION",
		159:  "TIMEOUT_EXCEEDED",
		160:  "TOO_SLOW",
		173:  "CANNOT_ALLOCATE_MEMORY",
		201:  "QUOTA_EXCEEDED",
		202:  "TOO_MANY_SIMULTANEOUS_QUERIES",
		203:  "NO_FREE_CONNECTION",
		209:  "SOCKET_TIMEOUT",
		210:  "NETWORK_ERROR",
		225:  "NO_ZOOKEEPER",
		236:  "ABORTED",
		242:  "TABLE_IS_READ_ONLY",
		243:  "NOT_ENOUGH_SPACE",
		252:  "TOO_MANY_PARTS",
		279:  "ALL_CONNECTION_TRIES_FAILED",
		285:  "TOO_FEW_LIVE_REPLICAS",
		286:  "UNSATISFIED_QUORUM_FOR_PREVIOUS_WRITE",
		289:  "REPLICA_IS_NOT_IN_QUORUM",
		319:  "UNKNOWN_STATUS_OF_INSERT",
		394:  "QUERY_WAS_CANCELLED",
		425:  "SYSTEM_ERROR",
		439:  "CANNOT_SCHEDULE_TASK",
		// The INSERT waited lock_acquire_timeout (120 s by default, from 20.x) for its lock on
		// the table, which an ALTER, TRUNCATE, RENAME or DROP held or queued for behind a long
		// query: "READ locking attempt on "db.t" has timed out! (120000ms) Possible deadlock
		// avoided. Client should retry." (IStorage::lockForShare).
		473: "DEADLOCK_AVOIDED",
		// SYSTEM RESTART REPLICA (or its start-up) is re-initialising the replicated table.
		733: "TABLE_IS_BEING_RESTARTED",
		999: "KEEPER_EXCEPTION",
	}
	// refusedCodes: checked against 26.7's errorCodeToName on 2026-12-02; 48, 60, 81 and 164
	// provoked on 26.7 (a Merge table, a dropped table and database, readonly = 1); the engine
	// has no users, so the codes of users and grants (192 to 195, 291, 497, 516) and of settings
	// profiles (452) are not.
	refusedCodes = map[int32]string{
		48:  "NOT_IMPLEMENTED", // e.g. a table engine that takes no INSERT
		60:  "UNKNOWN_TABLE",
		81:  "UNKNOWN_DATABASE",
		164: "READONLY",
		// A Distributed table over a cluster no longer in the server's remote_servers (its
		// configuration reloaded while the job runs): "Requested cluster 'x' not found"
		// (Clusters::getCluster). 18.16 refuses to create such a table, but not an INSERT into
		// one whose cluster went since; every INSERT into it fails alike until the cluster is back.
		170: "BAD_GET",
		192: "UNKNOWN_USER",
		193: "WRONG_PASSWORD",
		194: "REQUIRED_PASSWORD",
		195: "IP_ADDRESS_NOT_ALLOWED",
		// An INSERT that found the table while a DROP or DETACH of it was under way ("Table is
		// dropped or detached"); the next finds no table (60), or the table attached again.
		218: "TABLE_IS_DROPPED",
		291: "DATABASE_ACCESS_DENIED",
		// A constraint of the user's settings profile (ClickHouse docs, "Constraints on
		// Settings": "Setting x should not be changed", "shouldn't be greater than ...") refuses a
		// setting the INSERT carries, which every INSERT of the job carries alike (from 19.x).
		452: "SETTING_CONSTRAINT_VIOLATION",
		497: "ACCESS_DENIED",
		516: "AUTHENTICATION_FAILED",
	}
)

// illegalColumn is ClickHouse's ILLEGAL_COLUMN (44).
const illegalColumn = 44

// Classify says what an INSERT's error means. A *clickhouse.Exception is classified by its code
// (see the Class constants); every other error (network, TLS, timeouts, the client itself) is
// Transient. Errors raised by clickhouse-go while appending the columns, before anything is
// sent, are wrapped in AppendError by the caller and classified Schema: the server's column
// types no longer match.
func Classify(err error) Class {
	var re *RowsError
	if errors.As(err, &re) {
		return Data
	}
	var ae *AppendError
	if errors.As(err, &ae) {
		return Schema
	}
	var fe *RefusedError
	if errors.As(err, &fe) {
		return Refused
	}
	var ex *clickhouse.Exception
	if !errors.As(err, &ex) {
		var he *clickhouse.HTTPError
		if errors.As(err, &he) && he.StatusCode == http.StatusRequestEntityTooLarge {
			// 413 without a server exception: something in front of ClickHouse that limits the
			// size of a request (nginx's client_max_body_size, 1 MiB unless set) refused the
			// INSERT's body. Retried as it is, it is refused for ever; smaller INSERTs pass.
			return Memory
		}
		return Transient
	}
	if ex.Code == illegalColumn && strings.Contains(ex.Message, "Cannot insert column") {
		// 18.16's answer to an INSERT that names a column made MATERIALIZED or ALIAS since
		// ("Cannot insert column m, because it is MATERIALIZED column"): the schema changed.
		// ILLEGAL_COLUMN's other causes (a function given a column of a kind it does not take,
		// in a DEFAULT or a view) stay unknown.
		return Schema
	}
	if ex.Code == 252 && strings.Contains(ex.Message, "partitions for single INSERT block") {
		return Memory // too many partitions in one block, not too many parts: split it
	}
	return ClassOf(ex.Code)
}

// ClassOf returns the class of a ClickHouse server error code.
func ClassOf(code int32) Class {
	switch {
	case dataCodes[code] != "":
		return Data
	case schemaCodes[code] != "":
		return Schema
	case memoryCodes[code] != "":
		return Memory
	case transientCodes[code] != "":
		return Transient
	case refusedCodes[code] != "":
		return Refused
	}
	return Unknown
}

// KnownCode is a server error code of this package's lists: its name as the list gives it, and
// its class.
type KnownCode struct {
	Code  int32
	Name  string
	Class Class
}

// KnownCodes returns every code of the lists, by class (as Class orders them), then by code.
func KnownCodes() []KnownCode {
	var out []KnownCode
	for _, l := range []struct {
		class Class
		codes map[int32]string
	}{{Transient, transientCodes}, {Data, dataCodes}, {Memory, memoryCodes}, {Schema, schemaCodes}, {Refused, refusedCodes}} {
		for _, code := range slices.Sorted(maps.Keys(l.codes)) {
			out = append(out, KnownCode{Code: code, Name: l.codes[code], Class: l.class})
		}
	}
	return out
}

// Code returns the server error code of err, and whether err holds a server exception.
func Code(err error) (int32, bool) {
	var ex *clickhouse.Exception
	if !errors.As(err, &ex) {
		return 0, false
	}
	return ex.Code, true
}

// LoginRefused reports whether code is the server's refusal of the connection's user rather than
// of the table: 192 UNKNOWN_USER, 193 WRONG_PASSWORD, 194 REQUIRED_PASSWORD, 195
// IP_ADDRESS_NOT_ALLOWED, 516 AUTHENTICATION_FAILED (the user dropped, its password changed, its
// addresses narrowed since the connection's password was read).
func LoginRefused(code int32) bool {
	return code == 192 || code == 193 || code == 194 || code == 195 || code == 516
}

// SettingRefused reports whether code is the server's refusal of a setting the INSERT carries,
// by a constraint of the user's settings profile: 452 SETTING_CONSTRAINT_VIOLATION.
func SettingRefused(code int32) bool { return code == 452 }

// CodeName returns the name of a code this package knows (ACCESS_DENIED), or "".
func CodeName(code int32) string {
	for _, m := range []map[int32]string{dataCodes, schemaCodes, memoryCodes, transientCodes, refusedCodes} {
		if n := m[code]; n != "" {
			return n
		}
	}
	return ""
}

// ServerError returns the server's exception that err holds, without what the transport wrapped
// it in, so that an error the server raised reads the same over both protocols: clickhouse-go's
// HTTP transport gives "batch sendStreamQuery: [HTTP 500] code: 469, message: ..." where the
// native protocol gives "code: 469, message: ...". It returns err itself when err holds no server
// exception.
func ServerError(err error) error {
	var ex *clickhouse.Exception
	if errors.As(err, &ex) {
		return ex
	}
	return err
}

// MaxServerMessageBytes bounds the message of a server exception that Insert returns
// (BoundServerMessage). ClickHouse quotes a value it cannot parse whole, as 18.16's "Cannot parse
// string '<value>' as UInt8: syntax error at begin of string" from a DEFAULT or MATERIALIZED
// expression over a String column of a message near Pub/Sub's 10 MB, which every log line of the
// INSERT and the row's dead letter would then repeat (a dead letter's error message is cut at
// flow.MaxErrorBytes from its start, which left the value and not the rule). 800 bytes leave the
// dead-letter topic's errorMessage attribute (1024 bytes) room for "ClickHouse rejected the row:
// code: N, message: " before it, and a routed table's name.
const MaxServerMessageBytes = 800

// BoundServerMessage returns err as it is when the server exception it holds, if any, has a
// message of at most MaxServerMessageBytes; else an error of the same text and the same
// exception (code, name, stack trace) whose message keeps its start and end with the number of
// bytes cut between them (text.CutMiddle), so that it still quotes the value's start and names
// the rule that follows it. What the exception was wrapped in (the HTTP transport's "batch
// sendStreamQuery: [HTTP 500] ") stays in the text, not in the chain: nothing looks for it when
// the server answered with an exception.
func BoundServerMessage(err error) error {
	var ex *clickhouse.Exception
	if !errors.As(err, &ex) || len(ex.Message) <= MaxServerMessageBytes {
		return err
	}
	cut := *ex
	cut.Message = text.CutMiddle(ex.Message, MaxServerMessageBytes)
	if err == error(ex) {
		return &cut
	}
	whole := err.Error()
	if i := strings.Index(whole, ex.Message); i >= 0 {
		return &cutMessageError{whole[:i] + cut.Message + whole[i+len(ex.Message):], &cut}
	}
	return &cutMessageError{text.CutMiddle(whole, 2*MaxServerMessageBytes), &cut}
}

// cutMessageError is an error that wrapped a server exception whose message BoundServerMessage
// cut: its text with the message cut, and the cut exception.
type cutMessageError struct {
	text string
	ex   *clickhouse.Exception
}

func (e *cutMessageError) Error() string { return e.text }
func (e *cutMessageError) Unwrap() error { return e.ex }

// RowsError is the pipeline's own finding that rows cannot be inserted as they are (not the
// server's): a data error of those rows.
type RowsError struct{ Err error }

func (e *RowsError) Error() string { return e.Err.Error() }
func (e *RowsError) Unwrap() error { return e.Err }

// RefusedError is the pipeline's own finding, before an INSERT is sent, that the table cannot
// store any rows now, whatever they are, though the server would take the INSERT: a Buffer table
// whose destination is gone (schema.CheckBuffer). Classified Refused: retried, then the INSERT
// fails naming Err, nothing dead-lettered.
type RefusedError struct{ Err error }

func (e *RefusedError) Error() string { return e.Err.Error() }
func (e *RefusedError) Unwrap() error { return e.Err }

// AppendError is a failure of clickhouse-go to take a column's values for an INSERT: the
// values' Go type does not fit the column type the server announced, or (over HTTP) the table
// the server describes no longer has the column.
type AppendError struct {
	Column string
	Err    error
	// Statement: clickhouse-go refused the INSERT statement (PrepareBatch), which no row's
	// values can cause; otherwise it refused the values of Column.
	Statement bool
}

// ValuesRefused reports whether err is clickhouse-go's refusal of (or panic on) values it was
// given for a column (an *AppendError neither of the statement nor of column types the server
// names otherwise, *TypesChangedError): once the table is read again and the rows converted
// again for it, such a failure is about some row's values, a value the converter took and
// clickhouse-go cannot (a NULL element of Array(Nullable(Time)) in v2.51.0), not the table's.
func ValuesRefused(err error) bool {
	var ae *AppendError
	var tc *TypesChangedError
	return errors.As(err, &ae) && !ae.Statement && !errors.As(err, &tc)
}

func (e *AppendError) Error() string { return "column " + quoteName(e.Column) + ": " + e.Err.Error() }
func (e *AppendError) Unwrap() error { return e.Err }

func quoteName(s string) string { return `"` + s + `"` }
