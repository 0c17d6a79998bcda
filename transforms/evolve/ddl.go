package evolve

import (
	"errors"
	"fmt"
	"strings"

	"github.com/ch-beam/pubsub-to-clickhouse/transforms/chclient"
)

// NameError says why a field's name cannot be a column's name.
type NameError struct {
	Field string // the field's name, as the payload gives it (escapes resolved)
	Rule  string // the rule it breaks, e.g. "must not be empty"
}

// Error returns `field "a(b)": cannot be a column: <rule>`.
func (e *NameError) Error() string {
	return fmt.Sprintf("field %s cannot be a column: %s", quote(e.Field), e.Rule)
}

// CheckName returns nil when the field name may be a column's name as it is (spaces, quotes,
// dots and any Unicode are fine: the DDL quotes it), else a *NameError: an empty name (no
// column may have one), a NUL character, a backtick or a backslash (the schema read refuses such
// columns: clickhouse-go cannot name them in an INSERT), a parenthesis (clickhouse-go's batch
// finds an INSERT's column list by its parentheses; the table-name parameters refuse them too).
func CheckName(field string) error {
	var rule string
	switch {
	case field == "":
		rule = "the name is empty; a column needs a name"
	case strings.ContainsRune(field, 0):
		rule = "the name contains a NUL character"
	case strings.ContainsAny(field, "`\\"):
		rule = "the name contains a backtick or a backslash, which clickhouse-go cannot name in an INSERT"
	case strings.ContainsAny(field, "()"):
		rule = "the name contains a parenthesis, which clickhouse-go cannot name in an INSERT"
	default:
		return nil
	}
	return &NameError{Field: field, Rule: rule}
}

// Column is one column of a DDL statement.
type Column struct {
	Name string
	Kind Kind   // what the values seen say; None for a field seen only with null
	Type string // the definition after the name (Rule.Definition): "Nullable(Int64)", "JSON DEFAULT '{}'"
}

// table returns `db`.`t`, or `t` when database is "" (the connection's database).
func table(database, name string) string {
	if database == "" {
		return chclient.QuoteIdent(name)
	}
	return chclient.QuoteIdent(database) + "." + chclient.QuoteIdent(name)
}

// onClusterClause returns " ON CLUSTER `c`", or "" for no cluster.
func onClusterClause(cluster string) string {
	if cluster == "" {
		return ""
	}
	return " ON CLUSTER " + chclient.QuoteIdent(cluster)
}

// AddColumn returns `ALTER TABLE `db`.`t` [ON CLUSTER `c`] ADD COLUMN IF NOT EXISTS `name`
// definition`, each identifier quoted by chclient.QuoteIdent; database "" names the
// connection's database, onCluster "" no cluster. definition is Rule.Definition's. The statement
// is a no-op where the column exists, whatever its type (ClickHouse docs, "ALTER TABLE … ADD
// COLUMN"); it needs ClickHouse 19.1 or later: for older servers, see Server.AddColumn.
func AddColumn(database, tableName, column, definition, onCluster string) string {
	return addColumn(database, tableName, column, definition, onCluster, " IF NOT EXISTS")
}

// AddColumn is the package's AddColumn for this server: without IF NOT EXISTS where the server
// lacks it (ClickHouse 18.16), where a second ADD of the same column fails with code 44, which
// AlreadyExists recognises.
func (s Server) AddColumn(database, tableName, column, definition, onCluster string) string {
	if s.AddIfNotExists {
		return AddColumn(database, tableName, column, definition, onCluster)
	}
	return addColumn(database, tableName, column, definition, onCluster, "")
}

func addColumn(database, tableName, column, definition, onCluster, ifNotExists string) string {
	return "ALTER TABLE " + table(database, tableName) + onClusterClause(onCluster) +
		" ADD COLUMN" + ifNotExists + " " + chclient.QuoteIdent(column) + " " + definition
}

// codeColumnExists is ClickHouse's ILLEGAL_COLUMN, which an ADD COLUMN of an existing column
// fails with ("Cannot add column x: column with this name already exists"): on servers without
// IF NOT EXISTS, and on 19.3, where the clause did not stop it (ClickHouse issue #4565).
const codeColumnExists = 44

// AlreadyExists reports whether err, of an ADD COLUMN, is the server's refusal to add a column
// that exists: the column is there, the statement's aim is met (its type is what the table
// says, which may not be the one asked: read the schema again). Any other error is false.
func AlreadyExists(err error) bool {
	code, ok := chclient.Code(err)
	return ok && code == codeColumnExists && strings.Contains(err.Error(), "already exists")
}

// CreateTable returns a CREATE TABLE of the columns, in their order, one a line:
//
//	CREATE TABLE `db`.`t`
//	(
//	    `a` Nullable(Int64),
//	    `b` Nullable(String)
//	)
//	ENGINE = MergeTree
//	ORDER BY tuple()
//
// engine "" is MergeTree and orderBy "" is tuple() (no sorting key: rows are kept in insertion
// order within a part, and a Nullable column may not be in a MergeTree's key unless
// allow_nullable_key is set). engine and orderBy are SQL, written as given. Columns of kind None
// (no type) cannot be created: they are an error naming them, as is an empty list.
func CreateTable(database, tableName string, columns []Column, engine, orderBy string) (string, error) {
	if len(columns) == 0 {
		return "", errors.New("no column: a table needs at least one")
	}
	if engine == "" {
		engine = "MergeTree"
	}
	if orderBy == "" {
		orderBy = "tuple()"
	}
	var b strings.Builder
	b.WriteString("CREATE TABLE " + table(database, tableName) + "\n(\n")
	for i, c := range columns {
		if c.Type == "" {
			return "", fmt.Errorf("column %s has no type: it was seen only with null", quote(c.Name))
		}
		b.WriteString("    " + chclient.QuoteIdent(c.Name) + " " + c.Type)
		if i < len(columns)-1 {
			b.WriteString(",")
		}
		b.WriteString("\n")
	}
	b.WriteString(")\nENGINE = " + engine + "\nORDER BY " + orderBy)
	return b.String(), nil
}
