package chclient

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"regexp"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/ClickHouse/ch-go/proto"
	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/column"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
	"github.com/zeebo/blake3"

	"github.com/ch-beam/pubsub-to-clickhouse/transforms/chtype"
)

// Identity is what an INSERT's insert_deduplication_token is derived from: the Pub/Sub message
// ids of its rows, in insert order, and for each row the bytes that stand for it (the write
// stage gives the row's RowBinaryWithDefaults encoding, the dead-letter stage the original
// payload). IDs and Data are hashed as two lists, so they need not be of the same length.
type Identity struct {
	IDs  []string
	Data [][]byte
}

// tokenScheme names and versions the hashing of DeduplicationToken; it is hashed first, so
// that a future scheme cannot produce the tokens of this one. v1 (until 2026-12-04) hashed the
// same layout with SHA-256.
const tokenScheme = "pubsub-to-clickhouse insert_deduplication_token v2"

// DeduplicationToken returns the insert_deduplication_token of an INSERT naming columns with the
// rows of id: 64 lowercase hex digits, the BLAKE3 hash (256 bits; github.com/zeebo/blake3) of
//
//	part(tokenScheme)
//	count(columns) part(columns[0]) part(columns[1]) ...
//	count(id.IDs)  part(id.IDs[0])  part(id.IDs[1])  ...
//	count(id.Data) part(id.Data[0]) part(id.Data[1]) ...
//
// where count(n) is n as 8 bytes big-endian and part(s) is count(len(s)) followed by the bytes
// of s. Every part is length-prefixed and every list counted, so the hashed bytes decode back to
// exactly one input: two inputs that differ in any column name, message id or row bytes, or in
// their order, or only in where one part ends and the next begins ("ab","c" against "a","bc"),
// get different tokens. The same INSERT built again from the same rows (a retry, or the runner
// retrying the bundle) gets the same token, so a server that deduplicates stores it once
// (ClickHouse 22.2 and newer; see TokenSetting).
//
// The rows' bytes are hashed, not only their ids, because an id does not always tell two rows
// apart: the Pub/Sub emulator numbers its messages afresh after a restart, and ids are unique only
// within a topic (the ids the Dataflow read derives for messages without one left out the
// ordering key until 2026-12-04). Rows that share their ids and convert to the same bytes still share a token (two
// messages of one id and one payload, without a metadata column that tells them apart).
//
// BLAKE3 rather than SHA-256, because it is a cryptographic hash of the same output size that
// hashes these bytes, with AVX2, about 2 times as fast as SHA-256 on a CPU with SHA extensions
// and 7 times as fast on one without them (Intel before Ice Lake); without AVX2 (the library's
// SSE4.1 code, BLAKE3_DISABLE_AVX2=1) about 2 times as fast as SHA-256 without SHA extensions
// (BenchmarkDeduplicationToken in transforms/write).
func DeduplicationToken(columns []string, id Identity) string {
	h := blake3.New()
	var n [8]byte
	count := func(c int) {
		binary.BigEndian.PutUint64(n[:], uint64(c))
		h.Write(n[:])
	}
	part := func(s string) {
		count(len(s))
		h.WriteString(s)
	}
	part(tokenScheme)
	count(len(columns))
	for _, c := range columns {
		part(c)
	}
	count(len(id.IDs))
	for _, s := range id.IDs {
		part(s)
	}
	count(len(id.Data))
	for _, d := range id.Data {
		count(len(d))
		h.Write(d)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// QuoteIdent quotes a ClickHouse identifier (a database, table or column name) with backticks,
// escaping a backslash as \\ and a backtick as \` (ClickHouse docs, "Syntax: Identifiers"):
// QuoteIdent("t`x") is "`t\`x`".
func QuoteIdent(s string) string {
	return "`" + identEscaper.Replace(s) + "`"
}

var identEscaper = strings.NewReplacer(`\`, `\\`, "`", "\\`")

// InsertNameFault says what in name, a database, table or column name, clickhouse-go v2.51.0's
// batch cannot name in the INSERT that InsertStatement writes, as a phrase that follows "the
// name holds"; "" when nothing. Every INSERT naming it would fail, so the launch refuses such a
// table or column and addNewColumns refuses such a field:
//
//   - a backtick or a backslash: the batch reads the column names back from the statement and
//     removes every backtick from them (batch.go, extractInsertQueryComponents), so it looks for
//     a column the server does not have;
//   - "SETTINGS", in any letter case, after whitespace, ';' or ')' and before a setting's name
//     and "=" (`x SETTINGS max_threads=1`): the batch looks for a trailing SETTINGS clause with a
//     pattern that does not skip quoted names (extractInsertSettingsMatch), takes everything from
//     there for the clause and cuts the statement before it, and the server refuses the INSERT
//     (code 62, a syntax error). SETTINGS at the start of a name follows the opening backtick,
//     which the batch does not take for a boundary;
//   - parentheses other than pairs side by side after no white space ("f(x, y)", "a(b)c(d)"): the
//     batch finds the column list by its parentheses, with at most one level inside
//     (normalizeInsertQueryMatch), and reads the names from the last white space and "(" of the
//     statement (extractInsertColumnsMatch), so that "(", "a)", "a(b(c))" or "a (b)" lose or cut
//     the column list and the INSERT fails (a syntax error, or no column to write).
//
// It finds no more than that: the checks are name by name, and a differential test of some
// 1,100 names and 400 pairs against ClickHouse 18.16 (2026-12-06) found no name it passes that
// fails an INSERT, nor two names it passes that fail together. It refuses a few names that
// would pass beside the rest ("SETTINGS x=1 y SETTINGS z=1", where the batch stops at the first).
func InsertNameFault(name string) string {
	if strings.ContainsAny(name, "`\\") {
		return "a backtick or a backslash, which clickhouse-go cannot name in an INSERT"
	}
	if fault := parenthesesFault(name); fault != "" {
		return fault + ", which clickhouse-go cannot read around: it finds the column list of an INSERT by its parentheses"
	}
	for _, m := range settingsInName.FindAllStringIndex(name, -1) {
		if m[0] > 0 && strings.IndexByte(" \t\r\n\v\f;)", name[m[0]-1]) >= 0 && strings.EqualFold(name[m[0]:m[0]+len("SETTINGS")], "SETTINGS") {
			return fmt.Sprintf("%q after whitespace, a semicolon or a closing parenthesis, which clickhouse-go takes for "+
				"the SETTINGS clause of the INSERT (it does not skip quoted names), so that the server would refuse every INSERT", name[m[0]:m[1]])
		}
	}
	return ""
}

// parenthesesFault says what of name's parentheses clickhouse-go's batch cannot read around (see
// InsertNameFault), "" when they are pairs side by side, none after whitespace (of Go's
// regexp \s: space, tab, newline, form feed, carriage return).
func parenthesesFault(name string) string {
	open := false
	for i := 0; i < len(name); i++ {
		switch name[i] {
		case '(':
			switch {
			case open:
				return "a parenthesis inside another"
			case i > 0 && strings.IndexByte(" \t\n\f\r", name[i-1]) >= 0:
				return "whitespace before a '('"
			}
			open = true
		case ')':
			if !open {
				return "a ')' without its '(' before it"
			}
			open = false
		}
	}
	if open {
		return "a '(' without its ')'"
	}
	return ""
}

// settingsInName is the start of the SETTINGS clause that clickhouse-go v2.51.0's batch looks
// for in an INSERT (batch.go, extractInsertSettingsMatch: `(?is)\s*\b(SETTINGS\s+\w+\s*=.+?)[\s;]*$`).
var settingsInName = regexp.MustCompile(`(?i)\bSETTINGS\s+\w+\s*=`)

// InsertStatement returns "INSERT INTO `database`.`table` (`a`, `b`)" for the columns a, b, each
// name quoted by QuoteIdent. Naming the columns lets the server compute the DEFAULT of every
// other column, and lets clickhouse-go's native batch work with ClickHouse 18.16.
func InsertStatement(database, table string, columns []string) string {
	names := make([]string, len(columns))
	for i, c := range columns {
		names[i] = QuoteIdent(c)
	}
	return "INSERT INTO " + QuoteIdent(database) + "." + QuoteIdent(table) + " (" + strings.Join(names, ", ") + ")"
}

// InsertSettings returns the settings of one INSERT: settings (as ResolveSettings returns them)
// and, when withToken (the server takes insert_deduplication_token), TokenSetting set to
// DeduplicationToken(columns, id). settings itself is never modified.
func InsertSettings(settings clickhouse.Settings, withToken bool, columns []string, id Identity) clickhouse.Settings {
	if !withToken {
		return settings
	}
	s := maps.Clone(settings)
	if s == nil {
		s = clickhouse.Settings{}
	}
	s[TokenSetting] = DeduplicationToken(columns, id)
	return s
}

// defaultMaxQuerySize is ClickHouse's default max_query_size, in bytes: the most of a query's
// text its SQL parser reads (an INSERT's data excepted), so that an INSERT naming columns whose
// names, quoted and separated, add up to more fails with code 62, "Max query size exceeded",
// whatever its rows, as does a CREATE TABLE of them (ClickHouse docs, "Settings:
// max_query_size"; on 18.16, 1,100 columns of 240-byte names).
const defaultMaxQuerySize = 256 << 10

// WithQuerySize returns settings with max_query_size raised to hold statement (and what
// clickhouse-go appends to an INSERT, " FORMAT Native", with 1 KiB to spare), when statement is
// longer than defaultMaxQuerySize; else settings as they are (nil stays nil). settings itself is
// never modified.
func WithQuerySize(settings clickhouse.Settings, statement string) clickhouse.Settings {
	if len(statement) <= defaultMaxQuerySize-1<<10 {
		return settings
	}
	s := maps.Clone(settings)
	if s == nil {
		s = clickhouse.Settings{}
	}
	s["max_query_size"] = len(statement) + 1<<10
	return s
}

// missingColumn is how clickhouse-go v2.51.0's HTTP transport says, before it sends an INSERT,
// that the table has no column the INSERT names (conn_http_batch.go: it reads DESCRIBE TABLE
// first). Over the native protocol the server says so itself, with code 16 NO_SUCH_COLUMN_IN_TABLE.
var missingColumn = regexp.MustCompile(`column (.+) is not present in the table `)

// Native is a whole column of an INSERT already in ClickHouse's Native format, Head and then
// Values, of Rows rows, as convert.NativeColumn builds it: Insert has the driver's column read it
// (ReadNative) instead of appending a Go value per row, and the driver writes it to the server
// unchanged.
type Native struct {
	// Head is what comes before the values: a byte per row of a Nullable, the offsets of an
	// Array; nothing for a plain type.
	Head []byte
	// Values are the values (of a Nullable with the zero value for NULL, of an Array the
	// elements); for String values, each after its LEB128 length.
	Values []byte
	Rows   int
	// Type is the column's type as the rows were converted for it (schema.Column.TypeName). The
	// driver's column has the type the server gives the INSERT: when the two differ (the table
	// changed since its schema was read), the bytes would read as values of another type, so
	// Insert refuses them with an *AppendError holding a *TypesChangedError (Classify: Schema).
	Type string
}

// Strings is a whole String column of an INSERT as Go strings, one per row, as
// convert.StringColumn gathers them: Insert has the driver's String column take them with room
// made first for Bytes bytes (ReadStrings), which copies each once.
type Strings struct {
	Values []string
	// Bytes is the length of Values, summed.
	Bytes int
	// Type is the column's type as the rows were converted for it, String; as for a Native,
	// Insert refuses the values when the server's type is another.
	Type string
}

// Typed is a whole column of Go values, one slice with a value per row as batch.Column(i).Append
// takes it ([]string for String, [][]*uint8 for Array(Nullable(UInt8)), ...), converted for the
// column type Type. clickhouse-go appends Go values to a column of another type when it can (a
// nil *uint8 to an Array(UInt8) as 0), so, as for a Native, Insert refuses them when the server's
// type is not Type.
type Typed struct {
	Values any
	Type   string
}

// TypesChangedError says which columns of an INSERT the server gives a type other than the one
// their values were converted for (in an *AppendError naming the first: Classify says Schema).
type TypesChangedError struct{ Changed []TypeChange }

// TypeChange is one column whose type in the server's INSERT header (Server) is not the type
// its values were converted for (Converted).
type TypeChange struct{ Column, Server, Converted string }

func (e *TypesChangedError) Error() string {
	var b strings.Builder
	for i, c := range e.Changed {
		if i > 0 {
			b.WriteString("; column " + quoteName(c.Column) + ": ")
		}
		fmt.Fprintf(&b, "the table's column is %s now, but the rows were converted for %s", c.Server, c.Converted)
	}
	return b.String()
}

// CheckInsert begins an INSERT into database.table with settings (the resolved insert settings)
// and ends it before any row is sent: the server checks the statement, the user's right to insert
// (a readonly profile, code 164; a missing grant, 497 on servers with access control) and the
// settings (a constraint of the user's profile, 452) when it reads the statement, over the
// native protocol; the error is the server's, as it came. Over HTTP, where clickhouse-go sends
// an INSERT with its rows, no INSERT is sent: clickhouse-go reads the table's columns (DESC TABLE,
// with the settings), which checks the settings and the user's right to read the table alone.
func CheckInsert(ctx context.Context, conn driver.Conn, database, table string, settings clickhouse.Settings) error {
	batch, err := conn.PrepareBatch(clickhouse.Context(ctx, clickhouse.WithSettings(settings)), "INSERT INTO "+QuoteIdent(database)+"."+QuoteIdent(table))
	if err != nil {
		return err
	}
	batch.Abort() // no row: nothing is inserted
	return nil
}

// Insert sends one INSERT of a block of rows through clickhouse-go's batch API: the statement is
// InsertStatement(database, table, columns), and values[i] is the whole column columns[i], either
// in the Native format (a Native), a String column's values as Go strings (a Strings), or one
// slice with a value per row as batch.Column(i).Append
// takes it ([]string for String, []time.Time for DateTime, ...), with the type it was converted
// for (a Typed) or without (then nothing checks that the server's type is still that one). The INSERT carries
// InsertSettings(settings, withToken, columns, id): the resolved insert settings and, on a server
// that takes it, the deduplication token of the columns and id, so that sending the same rows
// again is deduplicated; and max_query_size when the statement is longer than the server's
// default takes (WithQuerySize).
//
// Insert makes one attempt and never retries: the caller decides what a failure means (see
// Classify) and retries with Retry. A failure of clickhouse-go to take a column's values, and
// its HTTP transport's finding that the table no longer has a column the INSERT names, are
// returned as an *AppendError naming the column (Classify: Schema), as are Native, Strings and
// Typed columns whose type the server names otherwise (a *TypesChangedError listing every one of them,
// checked before any column is appended); any other failure, of the
// server (a *clickhouse.Exception) or of the transport, is returned as it is, but for a server
// message longer than MaxServerMessageBytes, cut in its middle (BoundServerMessage). columns must name
// at least one column, and values must hold one slice per column; otherwise Insert sends nothing
// and returns an error saying so.
func Insert(ctx context.Context, conn driver.Conn, database, table string, columns []string, values []any,
	settings clickhouse.Settings, withToken bool, id Identity) (err error) {
	if len(columns) == 0 {
		return errors.New("an INSERT must name at least one column")
	}
	if len(values) != len(columns) {
		return fmt.Errorf("INSERT into %s.%s names %d columns but has %d columns of values", database, table, len(columns), len(values))
	}
	statement := InsertStatement(database, table, columns)
	ctx = clickhouse.Context(ctx, clickhouse.WithSettings(WithQuerySize(InsertSettings(settings, withToken, columns, id), statement)))
	batch, err := conn.PrepareBatch(ctx, statement)
	if err != nil {
		if m := missingColumn.FindStringSubmatch(err.Error()); m != nil {
			if _, fromServer := Code(err); !fromServer {
				return &AppendError{Column: m[1], Err: err, Statement: true}
			}
		}
		return BoundServerMessage(err)
	}
	defer batch.Abort()
	if err := checkTypes(batch, columns, values); err != nil {
		return err
	}
	var driverColumns []column.Interface
	current := ""
	defer func() {
		// A panic of clickhouse-go on values it was given (v2.51.0's Enum8 column dereferenced
		// the nil of a NULL in a Tuple) would end the worker at every retry of the bundle; it is
		// the values' refusal instead (ValuesRefused), which the write stage isolates.
		// One in Send is left to end the worker: Send gives its connection back to the pool as it
		// unwinds, half-way through the INSERT's packets, which the next query would follow.
		if current == "" {
			return
		}
		if p := recover(); p != nil {
			// Each panic is logged; its stack once per process, since the write stage's split
			// meets the panic again at each of its halvings.
			if panicLogged.CompareAndSwap(false, true) {
				slog.Error("clickhouse-go panicked taking the values of an INSERT (its stack logged this once)", "table", table, "column", current, "panic", p, "stack", string(debug.Stack()))
			} else {
				slog.Error("clickhouse-go panicked taking the values of an INSERT", "table", table, "column", current, "panic", p)
			}
			err = &AppendError{Column: current, Err: fmt.Errorf("clickhouse-go panicked taking the values: %v", p)}
		}
	}()
	for i, v := range values {
		current = columns[i]
		switch v := v.(type) {
		case Native:
			if driverColumns == nil {
				driverColumns = batch.Columns()
			}
			if err := ReadNative(driverColumns[i], v); err != nil {
				return &AppendError{Column: columns[i], Err: err}
			}
		case Strings:
			if driverColumns == nil {
				driverColumns = batch.Columns()
			}
			if err := ReadStrings(driverColumns[i], v); err != nil {
				return &AppendError{Column: columns[i], Err: err}
			}
		case Typed:
			if err := batch.Column(i).Append(v.Values); err != nil {
				return &AppendError{Column: columns[i], Err: err}
			}
		default:
			if err := batch.Column(i).Append(v); err != nil {
				return &AppendError{Column: columns[i], Err: err}
			}
		}
	}
	current = ""
	return BoundServerMessage(batch.Send())
}

// panicLogged is whether a panic of clickhouse-go in Insert was logged with its stack.
var panicLogged atomic.Bool

// ReadNative has col, the driver's column of n's type, read n's rows (clickhouse-go's
// column.Interface.Decode, as for a block the server sends); an error when the bytes do not hold
// exactly n.Rows values of it. A String column takes the values as Go strings instead
// (appendStrings), and a column of String values gets room for them first (reserveStrings).
func ReadNative(col column.Interface, n Native) error {
	if s, ok := col.(*column.String); ok && len(n.Head) == 0 && SameType(n.Type, "String") {
		return appendStrings(s, n)
	}
	reserveStrings(col, n.Values)
	r := nativeReaders.Get().(*nativeReader)
	r.src.parts = [2][]byte{n.Head, n.Values}
	if err := col.Decode(r.Reader, n.Rows); err != nil {
		return err // r is left to the garbage collector: its buffer may hold bytes of n
	}
	if _, err := r.ReadByte(); !errors.Is(err, io.EOF) {
		return fmt.Errorf("%d rows of %s in the Native format left bytes unread", n.Rows, n.Type)
	}
	nativeReaders.Put(r)
	return nil
}

// ReadStrings has col, the driver's String column, take s's values, with room made for them
// first (Append would grow its buffer by doubling, copying what it holds at each step). The
// column copies each value, so s's strings may point into memory that changes once it returns.
// A column of another type is an error, and takes nothing: its Append could keep the strings
// themselves (clickhouse-go's LowCardinality keeps them as map keys) or take them as values of
// another type (a FixedString(1) takes "aa"); Insert refuses such a column before (checkTypes).
func ReadStrings(col column.Interface, s Strings) error {
	c, ok := col.(*column.String)
	if !ok {
		return fmt.Errorf("%d String values for a column of type %s", len(s.Values), col.Type())
	}
	reserveRoom(c, s.Bytes)
	_, err := c.Append(s.Values)
	return err
}

// reserveRoom gives an empty String column room for n bytes of values, as reserveStrings does,
// appending n bytes of a pooled buffer whose content does not matter.
func reserveRoom(col *column.String, n int) {
	if col.Rows() > 0 || n <= 0 {
		return
	}
	p := roomBuffers.Get().(*[]byte)
	if cap(*p) < n {
		*p = make([]byte, n+n/4) // columns differ in size: room for somewhat larger ones after
	}
	reserveStrings(col, (*p)[:n])
	if cap(*p) <= maxRoomBytes {
		roomBuffers.Put(p)
	}
}

// roomBuffers hold the bytes reserveRoom appends, of up to maxRoomBytes each, one for each
// column being handed to the driver at the same time (one per INSERT under way): the largest
// String column of the usual batches (a 5,000-row batch of the demo's events: about 1.5 MB).
// The buffers count as live memory, which the garbage collector lets the heap grow by twice
// again (GOGC=200), so a larger column's buffer is left to it instead, and its INSERT pays for
// a fresh one; sync.Pool drops them over two collections once unused.
var roomBuffers = sync.Pool{New: func() any { return new([]byte) }}

const maxRoomBytes = 8 << 20

// appendStrings is ReadNative of a String column: it appends the values of n.Values (each after
// its LEB128 length) to col as Go strings, which col copies into its buffer, with room made for
// them first. That costs less than col's Decode, which reads each length a byte at a time
// through a bufio.Reader (both copy each value twice: through the bufio.Reader, or once for the
// room and once into it).
func appendStrings(col *column.String, n Native) error {
	reserveStrings(col, n.Values)
	values := make([]string, 0, n.Rows)
	for b := n.Values; len(b) > 0; {
		size, k := binary.Uvarint(b)
		if k <= 0 || size > uint64(len(b)-k) {
			return fmt.Errorf("%d rows of %s in the Native format: value %d is cut short", n.Rows, n.Type, len(values))
		}
		v := b[k : k+int(size)]
		b = b[k+int(size):]
		values = append(values, unsafe.String(unsafe.SliceData(v), len(v)))
	}
	if len(values) != n.Rows {
		return fmt.Errorf("%d rows of %s in the Native format hold %d values", n.Rows, n.Type, len(values))
	}
	_, err := col.Append(values) // copies each value
	return err
}

// nativeReader is a proto.Reader over a source that can change: once it has read one source to
// its end (the io.EOF that its bufio.Reader returns once), it reads the next. proto.NewReader
// allocates a bufio.Reader of 128 KiB (ch-go v0.75.0), which for every column of every INSERT
// was about an eighth of the write stage's allocated bytes.
type nativeReader struct {
	*proto.Reader
	src *source
}

// source reads its parts one after the other, then io.EOF.
type source struct{ parts [2][]byte }

func (s *source) Read(p []byte) (int, error) {
	for i := range s.parts {
		if len(s.parts[i]) > 0 {
			n := copy(p, s.parts[i])
			s.parts[i] = s.parts[i][n:]
			return n, nil
		}
	}
	return 0, io.EOF
}

var nativeReaders = sync.Pool{New: func() any {
	src := &source{}
	return &nativeReader{Reader: proto.NewReader(src), src: src}
}}

// reserveStrings gives the String column at the heart of col (col itself, or the base of a
// Nullable or an Array of String) room for values (its values as the Native format holds them,
// each after its length: a little more than they take in the column), by appending them as one
// value and resetting the column, which keeps the room. Without it, ch-go's ColStr.DecodeColumn
// (v0.75.0) grows the column's buffer by guesses (at a value of n < 128 bytes that does not fit,
// room for n bytes for every row left), which on the demo's batches allocated about ten times
// the column's bytes.
func reserveStrings(col column.Interface, values []byte) {
	for {
		switch c := col.(type) {
		case *column.Nullable:
			col = c.Base()
		case *column.Array:
			col = c.Base()
		case *column.String:
			if c.Rows() == 0 {
				// Append copies the string into the column and keeps no reference to it.
				c.Append([]string{unsafe.String(unsafe.SliceData(values), len(values))})
				c.Reset()
			}
			return
		default:
			return
		}
	}
}

// checkTypes returns an *AppendError holding a *TypesChangedError when the server's INSERT header
// gives a Native, Strings or Typed column a type other than its Type.
func checkTypes(batch driver.Batch, columns []string, values []any) error {
	var (
		changed       []TypeChange
		driverColumns []column.Interface
	)
	for i, v := range values {
		var converted string
		switch v := v.(type) {
		case Native:
			converted = v.Type
		case Strings:
			converted = v.Type
		case Typed:
			converted = v.Type
		default:
			continue
		}
		if driverColumns == nil {
			driverColumns = batch.Columns()
		}
		server := string(driverColumns[i].Type())
		if !SameType(server, converted) && !SameType(server, driverName(converted)) {
			changed = append(changed, TypeChange{Column: columns[i], Server: server, Converted: converted})
		}
	}
	if len(changed) == 0 {
		return nil
	}
	return &AppendError{Column: changed[0].Column, Err: &TypesChangedError{Changed: changed}}
}

// driverName is the name clickhouse-go gives its column of type t (column.Interface.Type), which
// is what Insert compares with t: clickhouse-go v2.51.0 names a Nested(a UInt8, b String) column
// Array(Tuple(a UInt8, b String)) (lib/column/nested.go), whatever the server called it. t itself
// when clickhouse-go has no column of it.
func driverName(t string) string {
	col, err := column.Type(t).Column("", &column.ServerContext{})
	if err != nil {
		return t
	}
	return string(col.Type())
}

// SameType reports whether the type names a and b name the same type: equal once parsed
// (chtype.Parse; spacing and quoting may differ), or equal as they are when either does not parse.
func SameType(a, b string) bool {
	if a == b {
		return true
	}
	ta, errA := chtype.Parse(a)
	tb, errB := chtype.Parse(b)
	return errA == nil && errB == nil && ta.String() == tb.String()
}
