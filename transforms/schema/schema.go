// Package schema reads a ClickHouse table's columns from system.columns, together with the
// server's time zone, and parses each column's type into a chtype.Type tree.
package schema

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/ch-beam/pubsub-to-clickhouse/transforms/chclient"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/chtype"
)

// Column is one column of the target table as system.columns describes it.
type Column struct {
	Name string
	// TypeName is the type as the server spells it, e.g. "Array(Nullable(DateTime('UTC')))".
	TypeName string
	// Type is TypeName parsed.
	Type *chtype.Type
	// DefaultKind is "" (no default), "DEFAULT", "MATERIALIZED", "ALIAS" or "EPHEMERAL".
	DefaultKind string
	// DefaultExpression is the expression text when DefaultKind is not empty.
	DefaultExpression string
	// NotWritten says why a column that an INSERT could name is not written, "" when it is. Of an
	// EPHEMERAL column: its type has no converter (Dynamic, say), its name holds what clickhouse-go
	// cannot name in an INSERT (chclient.InsertNameFault), or its name is also the part before a
	// dot of other columns, whose group its field would then be ambiguous with (convert.NewWith
	// sets it). Of any other column: its name holds what clickhouse-go cannot name (Fetch sets it;
	// the launch refuses such a table, NameFault, and a worker that reads one added while the job
	// runs leaves it to its DEFAULT rather than fail every INSERT). Its field is then ignored, as
	// a MATERIALIZED column's is.
	NotWritten string
}

// Writable reports whether an INSERT may name the column: not a MATERIALIZED or ALIAS one, which
// the server computes, nor an EPHEMERAL one with a NotWritten reason. An EPHEMERAL column is written: it
// is stored nowhere, and exists so that an INSERT gives it a value that the DEFAULT expressions
// of other columns read (ClickHouse docs, "CREATE TABLE", "EPHEMERAL"), as ClickHouse's own
// JSONEachRow gives it the field of its name.
func (c Column) Writable() bool {
	switch c.DefaultKind {
	case "MATERIALIZED", "ALIAS":
		return false
	}
	return c.NotWritten == ""
}

// HasDefault reports whether the server computes the column's value when an INSERT omits it:
// DefaultKind DEFAULT, and EPHEMERAL (its expression, or its type's default value).
func (c Column) HasDefault() bool { return c.DefaultKind == "DEFAULT" || c.DefaultKind == "EPHEMERAL" }

// Table is the target table's schema.
type Table struct {
	Database string
	Name     string
	// Columns in table order, including the ones the pipeline never writes.
	Columns []Column
	// ServerTimeZone is the server's time zone (SELECT timezone()), e.g. "Etc/UTC". DateTime
	// columns without a time zone of their own use it.
	ServerTimeZone string
	// Discards is, for a table that stores nothing of what is inserted into it, why: a table of
	// the engine Null that no materialized view reads (system.tables' dependencies_table empty);
	// "" otherwise, and for a table only read (FetchToRead). ClickHouse takes such a table's
	// INSERTs and throws their rows away (ClickHouse docs, "Null Table Engine"), which is the
	// point of one that feeds materialized views, and a loss of every row without one.
	Discards string
	// Buffer is, for a table of the engine Buffer, the table it passes its rows on to at each
	// flush (Database and Table "" for a Buffer without one); nil for any other engine, and for a
	// Buffer whose destination Fetch cannot read from its engine_full (an expression such as
	// currentDatabase()).
	Buffer *Destination
}

// Destination is the table a Buffer table passes its rows on to: the first two arguments of its
// engine, Buffer(database, table, num_layers, min_time, ...) (ClickHouse docs, "Buffer Table
// Engine").
type Destination struct{ Database, Table string }

// NameFault returns, for the first column of t that is not written because of its name (one
// neither EPHEMERAL nor computed whose Column.NotWritten Fetch set), an error naming the column
// and the rule: the launch and the check command refuse such a table, since every message's
// value for that column would be left out. nil when there is none.
func (t *Table) NameFault() error {
	for _, c := range t.Columns {
		if c.NotWritten != "" && c.DefaultKind != "EPHEMERAL" { // Fetch marks no computed column
			return fmt.Errorf("table %s.%s column %q: the %s; rename the column", t.Database, t.Name, c.Name, strings.TrimPrefix(c.NotWritten, "its "))
		}
	}
	return nil
}

// Writable returns the columns an INSERT may name, in table order.
func (t *Table) Writable() []Column {
	var out []Column
	for _, c := range t.Columns {
		if c.Writable() {
			out = append(out, c)
		}
	}
	return out
}

// ErrNotFound is what the error of Fetch wraps when system.columns has no column of the table: it
// does not exist, or the user may not read it (ClickHouse lists only the tables a user may read).
var ErrNotFound = errors.New("does not exist")

// ErrNoWritableColumn is what the error of Fetch wraps when the table has columns but an INSERT
// may write none of them.
var ErrNoWritableColumn = errors.New("has no column an INSERT may write")

// readOnlyEngines are the table engines besides View that take no INSERT ("Method write is not
// supported by storage ...", code 48), among them: a Merge table reads the tables it matches, a
// Dictionary table its dictionary, a LiveView its query, GenerateRandom and Executable make
// their rows. The system tables' engines (System...) take none either. Another such engine
// passes the launch, and its first INSERT fails.
var readOnlyEngines = map[string]bool{"Merge": true, "Dictionary": true, "LiveView": true, "GenerateRandom": true, "Executable": true, "ExecutablePool": true}

// nearTable returns a hint naming the table of database that table was likely meant for, the
// same name in another letter case or with spaces around it (ClickHouse compares names byte for
// byte), or "" when there is none or the tables cannot be listed.
func nearTable(ctx context.Context, conn driver.Conn, database, table string) string {
	rows, err := conn.Query(ctx, "SELECT name FROM system.tables WHERE database = ?", database)
	if err != nil {
		return ""
	}
	defer rows.Close()
	want := strings.ToLower(strings.TrimSpace(table))
	for rows.Next() {
		var name string
		if rows.Scan(&name) == nil && name != table && strings.ToLower(strings.TrimSpace(name)) == want {
			return fmt.Sprintf("; the database has the table %q: names are compared byte for byte, letter case and spaces included", name)
		}
	}
	return ""
}

// Fetch reads the schema of database.table, a table to insert into. It fails when the table does
// not exist (ErrNotFound) or has no writable column, when it is a View or of an engine that takes
// no INSERT (readOnlyEngines), and when a column type does not parse; each error names the table.
// A failure to read system.columns (the connection, a privilege) is returned as it came, wrapped.
func Fetch(ctx context.Context, conn driver.Conn, database, table string) (*Table, error) {
	return fetch(ctx, conn, database, table, true)
}

// FetchToRead is Fetch of a table that is only read (replay's dead-letter table): a View, or a
// table of an engine that takes no INSERT (a Merge table over several), is no error.
func FetchToRead(ctx context.Context, conn driver.Conn, database, table string) (*Table, error) {
	return fetch(ctx, conn, database, table, false)
}

func fetch(ctx context.Context, conn driver.Conn, database, table string, toInsert bool) (*Table, error) {
	t := &Table{Database: database, Name: table}
	if err := conn.QueryRow(ctx, "SELECT timezone()").Scan(&t.ServerTimeZone); err != nil {
		return nil, fmt.Errorf("reading the server time zone: %w", err)
	}
	rows, err := conn.Query(ctx,
		"SELECT name, type, default_kind, default_expression FROM system.columns WHERE database = ? AND table = ?",
		database, table)
	if err != nil {
		return nil, fmt.Errorf("reading the columns of table %s.%s from system.columns: %w", database, table, err)
	}
	defer rows.Close()
	for rows.Next() {
		var c Column
		if err := rows.Scan(&c.Name, &c.TypeName, &c.DefaultKind, &c.DefaultExpression); err != nil {
			return nil, fmt.Errorf("reading the columns of table %s.%s: %w", database, table, err)
		}
		c.DefaultKind = strings.ToUpper(c.DefaultKind)
		if c.Type, err = chtype.Parse(c.TypeName); err != nil {
			return nil, fmt.Errorf("table %s.%s column %q: %w", database, table, c.Name, err)
		}
		t.Columns = append(t.Columns, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("reading the columns of table %s.%s: %w", database, table, err)
	}
	engine, engineFull := "", ""
	if toInsert {
		var views []string
		engine, engineFull, views = engineOf(ctx, conn, database, table)
		if err := takesNoInsert(database, table, engine); err != nil {
			return nil, err
		}
		t.Discards = discards(engine, views)
	}
	for i, c := range t.Columns {
		if !c.Writable() || c.DefaultKind == "EPHEMERAL" { // an EPHEMERAL one is left unwritten (convert.NewWith)
			continue
		}
		if fault := chclient.InsertNameFault(c.Name); fault != "" {
			t.Columns[i].NotWritten = "its name holds " + fault
		}
	}
	if len(t.Columns) == 0 {
		return nil, fmt.Errorf("table %s.%s %w (no columns in system.columns): check the database and table names, and that the user may read the table%s",
			database, table, ErrNotFound, nearTable(ctx, conn, database, table))
	}
	if len(t.Writable()) == 0 {
		if err := t.NameFault(); err != nil {
			return nil, fmt.Errorf("%w; the table %w besides", err, ErrNoWritableColumn)
		}
		return nil, fmt.Errorf("table %s.%s %w (all are MATERIALIZED or ALIAS)", database, table, ErrNoWritableColumn)
	}
	if engine == "Buffer" {
		if dest, ok := bufferDestination(engineFull); ok {
			t.Buffer = &dest
			if err := CheckBuffer(ctx, conn, t); err != nil {
				return nil, err
			}
		}
	}
	return t, nil
}

// BufferError is what CheckBuffer finds wrong with a Buffer table's destination: rows inserted
// into the Buffer table would not all reach a table.
type BufferError struct{ Err error }

func (e *BufferError) Error() string { return e.Err.Error() }
func (e *BufferError) Unwrap() error { return e.Err }

// CheckBuffer checks that t, a table of the engine Buffer (t and t.Buffer not nil; nil is no error),
// passes every row inserted into it on to a table that stores it: that it has a destination, that
// the destination exists (has columns in system.columns) and that it has every writable column
// of t. ClickHouse takes an INSERT into a Buffer table whatever its destination, and discards at
// the flush what the destination cannot take: every row when the destination does not exist
// (server log "Destination table db.t doesn't exist. Block of data is discarded.", 18.16 and
// 26.7 alike) or when there is none (ClickHouse docs, "Buffer Table Engine": "the buffer is
// simply cleared"), and the values of a column the destination lacks ("Destination table db.t
// doesn't have column n. The default values are used."). Such a finding is a *BufferError naming
// both tables and the column; a failure to read system.columns is returned as it came, wrapped.
// A destination dropped after an INSERT and before the flush (Buffer's max_time at most) still
// loses that INSERT's rows: the check is made before each INSERT, not at the flush.
func CheckBuffer(ctx context.Context, conn driver.Conn, t *Table) error {
	if t == nil || t.Buffer == nil {
		return nil
	}
	d := *t.Buffer
	if d.Table == "" {
		return &BufferError{fmt.Errorf("%s.%s has the engine Buffer without a destination table: ClickHouse clears such a buffer at each flush, "+
			"so every row inserted would be lost; give the table it should pass its rows on to, or that table itself", t.Database, t.Name)}
	}
	if d.Database == "" {
		d.Database = t.Database
	}
	rows, err := conn.Query(ctx, "SELECT name FROM system.columns WHERE database = ? AND table = ?", d.Database, d.Table)
	if err != nil {
		return fmt.Errorf("reading the columns of %s.%s, the destination of the Buffer table %s.%s: %w", d.Database, d.Table, t.Database, t.Name, err)
	}
	defer rows.Close()
	have := map[string]bool{}
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			return fmt.Errorf("reading the columns of %s.%s, the destination of the Buffer table %s.%s: %w", d.Database, d.Table, t.Database, t.Name, err)
		}
		have[name] = true
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("reading the columns of %s.%s, the destination of the Buffer table %s.%s: %w", d.Database, d.Table, t.Database, t.Name, err)
	}
	if len(have) == 0 {
		return &BufferError{fmt.Errorf("the Buffer table %s.%s passes its rows on to %s.%s, which does not exist (or the user may not read it): "+
			"ClickHouse takes an INSERT into the Buffer table all the same and discards its rows at the next flush "+
			"(server log: \"Destination table %s.%s doesn't exist. Block of data is discarded.\"); create %s.%s, or give it as the table",
			t.Database, t.Name, d.Database, d.Table, d.Database, d.Table, d.Database, d.Table)}
	}
	for _, c := range t.Writable() {
		if !have[c.Name] {
			return &BufferError{fmt.Errorf("the Buffer table %s.%s passes its rows on to %s.%s, which has no column %q: "+
				"ClickHouse discards that column's values at each flush (server log: \"Destination table %s.%s doesn't have column %s. The default values are used.\"); "+
				"add the column to %s.%s, or drop it from %s.%s",
				t.Database, t.Name, d.Database, d.Table, c.Name, d.Database, d.Table, c.Name, d.Database, d.Table, t.Database, t.Name)}
		}
	}
	return nil
}

// bufferDestination reads the destination of a Buffer table from its engine_full in
// system.tables: "Buffer(db, dest, 16, ...)" (18.16 writes identifiers) or "Buffer('db', 'dest',
// 16, ...)" (26.7 writes string literals). An argument that is neither (an expression) gives
// false.
func bufferDestination(engineFull string) (Destination, bool) {
	rest, ok := strings.CutPrefix(strings.TrimSpace(engineFull), "Buffer(")
	if !ok {
		return Destination{}, false
	}
	var args [2]string
	for i := range args {
		rest = strings.TrimLeft(rest, " ")
		arg, tail, ok := chtype.ReadName(rest)
		if !ok {
			return Destination{}, false
		}
		tail = strings.TrimLeft(tail, " ")
		if tail == "" || tail[0] != ',' {
			return Destination{}, false
		}
		args[i], rest = arg, tail[1:]
	}
	return Destination{Database: args[0], Table: args[1]}, true
}

// discards is Table.Discards of a table of engine, which the materialized views views read.
func discards(engine string, views []string) string {
	if engine == "Null" && len(views) == 0 {
		return "it has the engine Null, and no materialized view reads it: ClickHouse takes every INSERT into it and stores nothing"
	}
	return ""
}

// Discards reads from system.tables, as it is now, whether database.table stores what is
// inserted into it, and returns Table.Discards: why it stores nothing, or "" (also when
// system.tables cannot be read: the INSERT then says what is wrong). One query: for a stage that
// checks the table before each INSERT, since its engine (a table dropped and created again as
// Null) or its materialized views (dropped) may change while the job runs.
func Discards(ctx context.Context, conn driver.Conn, database, table string) string {
	engine, _, views := engineOf(ctx, conn, database, table)
	return discards(engine, views)
}

// engineOf returns the engine of database.table, its full clause (engine_full) and the
// materialized views that read it (dependencies_table) as system.tables gives them; "" and nil
// when system.tables cannot be read (the INSERT then says what is wrong).
func engineOf(ctx context.Context, conn driver.Conn, database, table string) (engine, full string, views []string) {
	if err := conn.QueryRow(ctx, "SELECT engine, engine_full, dependencies_table FROM system.tables WHERE database = ? AND name = ?", database, table).Scan(&engine, &full, &views); err != nil {
		return "", "", nil
	}
	return engine, full, views
}

// takesNoInsert returns an error naming database.table when engine (system.tables) is View or
// one that takes no INSERT (readOnlyEngines, the system tables' engines); nil otherwise.
func takesNoInsert(database, table, engine string) error {
	switch {
	case engine == "View":
		return fmt.Errorf("%s.%s is a View, which cannot be inserted into: give the table the view reads from", database, table)
	case readOnlyEngines[engine] || strings.HasPrefix(engine, "System"):
		return fmt.Errorf("%s.%s has the engine %s, which cannot be inserted into (the server refuses every INSERT, code 48): "+
			"give a table of an engine that stores what is inserted (MergeTree, or a Distributed table over one)", database, table, engine)
	}
	return nil
}
