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
}

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
	if toInsert {
		if err := takesNoInsert(ctx, conn, database, table); err != nil {
			return nil, err
		}
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
	return t, nil
}

// takesNoInsert returns an error naming database.table when system.tables says it is a View or
// of an engine that takes no INSERT (readOnlyEngines, the system tables' engines); nil otherwise,
// and when system.tables cannot be read (the INSERT then says what is wrong).
func takesNoInsert(ctx context.Context, conn driver.Conn, database, table string) error {
	var engine string
	if err := conn.QueryRow(ctx, "SELECT engine FROM system.tables WHERE database = ? AND name = ?", database, table).Scan(&engine); err != nil {
		return nil
	}
	switch {
	case engine == "View":
		return fmt.Errorf("%s.%s is a View, which cannot be inserted into: give the table the view reads from", database, table)
	case readOnlyEngines[engine] || strings.HasPrefix(engine, "System"):
		return fmt.Errorf("%s.%s has the engine %s, which cannot be inserted into (the server refuses every INSERT, code 48): "+
			"give a table of an engine that stores what is inserted (MergeTree, or a Distributed table over one)", database, table, engine)
	}
	return nil
}
