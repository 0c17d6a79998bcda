package evolve

import (
	"errors"
	"fmt"
	"slices"
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
// column may have one), a NUL character, what clickhouse-go cannot name in an INSERT
// (chclient.InsertNameFault: a backtick, a backslash, or "x SETTINGS a=1"; the schema read
// refuses such columns), a parenthesis (clickhouse-go's batch
// finds an INSERT's column list by its parentheses; the table-name parameters refuse them too),
// a name too long for the files ClickHouse keeps a column in (fileNameBytes), the name of one of
// MergeTree's virtual columns (mergeTreeVirtual).
func CheckName(field string) error {
	var rule string
	switch fault := chclient.InsertNameFault(field); {
	case field == "":
		rule = "the name is empty; a column needs a name"
	case strings.ContainsRune(field, 0):
		rule = "the name contains a NUL character"
	case strings.ContainsAny(field, "()"): // all of them, where the schema read refuses only some (chclient.InsertNameFault)
		rule = "the name contains a parenthesis, which clickhouse-go cannot name in an INSERT"
	case fault != "":
		rule = "the name holds " + fault
	case fileNameBytes(field) > maxFileNameBytes:
		rule = fmt.Sprintf("the name is %d bytes long as ClickHouse names the column's files (each byte other than A-Z, a-z, 0-9 and _ as %%XX), "+
			"more than %d: with a suffix such as .null.mrk2 that is more than a file name holds (255 bytes), and every INSERT into the table would then fail",
			fileNameBytes(field), maxFileNameBytes)
	case slices.Contains(mergeTreeVirtual, field):
		rule = "the name is that of a virtual column of MergeTree tables, which ClickHouse (18.16 among others) reads instead of a column of that name"
	default:
		return nil
	}
	return &NameError{Field: field, Rule: rule}
}

// maxFileNameBytes is the longest name, as fileNameBytes counts it, that a new column may have:
// ClickHouse keeps a column of a MergeTree part in files named after it, escaped
// (escapeForFileName: every byte but A-Z, a-z, 0-9 and _ as %XX), plus a suffix, of which
// ".null.mrk2" (a Nullable column's null map's marks) is the longest a new column gets, and a
// Linux file system holds names of up to 255 bytes (NAME_MAX). Servers from 23.10 on may replace
// long names by a hash (replace_long_file_name_to_hash), older ones fail every INSERT into the
// table after such an ADD COLUMN (errno 36, File name too long).
const maxFileNameBytes = 255 - len(".null.mrk2")

// fileNameBytes returns the length of name as ClickHouse's escapeForFileName writes it.
func fileNameBytes(name string) int {
	n := 0
	for i := 0; i < len(name); i++ {
		switch b := name[i]; {
		case b >= 'a' && b <= 'z', b >= 'A' && b <= 'Z', b >= '0' && b <= '9', b == '_':
			n++
		default:
			n += 3
		}
	}
	return n
}

// mergeTreeVirtual are the virtual columns of MergeTree tables (ClickHouse docs, "MergeTree",
// "Virtual columns"): a column of one of these names is stored, but a SELECT reads the virtual
// column instead on older servers (ClickHouse 18.16 returns the part's name for _part).
var mergeTreeVirtual = []string{"_part", "_part_index", "_part_uuid", "_partition_id", "_partition_value", "_sample_factor",
	"_part_offset", "_part_granule_offset", "_part_starting_offset", "_row_exists", "_block_number", "_block_offset", "_part_data_version",
	"_disk_name", "_distance", "_table", "_database"}

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

// AddColumn is the ADD COLUMN that schema evolution runs on this server: without IF NOT EXISTS,
// so that the server refuses a column that exists (code 44 on ClickHouse 18.16, 15 on current
// releases), which AlreadyExists recognises, and a worker knows whether it added the column or
// another did first (addNewColumnsMax counts only its own), where IF NOT EXISTS succeeds either
// way. With onCluster, the package's AddColumn where the server has IF NOT EXISTS: a replica
// that has the column already does not fail the distributed DDL.
func (s Server) AddColumn(database, tableName, column, definition, onCluster string) string {
	if s.AddIfNotExists && onCluster != "" {
		return AddColumn(database, tableName, column, definition, onCluster)
	}
	return addColumn(database, tableName, column, definition, onCluster, "")
}

func addColumn(database, tableName, column, definition, onCluster, ifNotExists string) string {
	return "ALTER TABLE " + table(database, tableName) + onClusterClause(onCluster) +
		" ADD COLUMN" + ifNotExists + " " + chclient.QuoteIdent(column) + " " + definition
}

// The codes of an ADD COLUMN of an existing column ("Cannot add column x: column with this name
// already exists"): ILLEGAL_COLUMN on ClickHouse 18.16 (and on 19.3 with IF NOT EXISTS, which did
// not stop it there: ClickHouse issue #4565), DUPLICATE_COLUMN on current releases (26.7).
const (
	codeColumnExists    = 44
	codeDuplicateColumn = 15
)

// AlreadyExists reports whether err, of an ADD COLUMN, is the server's refusal to add a column
// that exists: the column is there, the statement's aim is met (its type is what the table
// says, which may not be the one asked: read the schema again). Any other error is false.
func AlreadyExists(err error) bool {
	code, ok := chclient.Code(err)
	return ok && (code == codeColumnExists || code == codeDuplicateColumn) && strings.Contains(err.Error(), "already exists")
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
// engine "" is MergeTree. ORDER BY is a clause of the MergeTree family's engines alone (an engine
// whose name, before any parenthesis, ends in MergeTree); another engine (Log, Memory, …) gets
// none, and an orderBy given with one is an error naming both. For a MergeTree engine orderBy ""
// is tuple() (no sorting key: rows are kept in insertion order within a part, and a Nullable
// column may not be in a MergeTree's key unless allow_nullable_key is set). engine and orderBy are
// SQL, written as given. Columns of kind None (no type) cannot be created: they are an error
// naming them, as is an empty list.
func CreateTable(database, tableName string, columns []Column, engine, orderBy string) (string, error) {
	if len(columns) == 0 {
		return "", errors.New("no column: a table needs at least one")
	}
	if engine == "" {
		engine = "MergeTree"
	}
	if err := CheckOrderBy(engine, orderBy); err != nil {
		return "", err
	}
	// An engine's own ORDER BY is kept; otherwise the key goes before its SETTINGS, which
	// ClickHouse takes last of the engine's clauses (18.16 refuses an ORDER BY after them), and
	// before the table's COMMENT, which a newer server takes after the engine and its clauses
	// (it refuses an ORDER BY after it, code 62).
	mergeTree := isMergeTree(engine) && clauseAt(engine, "ORDER BY") < 0
	if mergeTree && orderBy == "" {
		orderBy = "tuple()"
	}
	if i := firstClause(engine, "SETTINGS", "COMMENT"); mergeTree && i >= 0 {
		engine = strings.TrimSpace(engine[:i]) + "\nORDER BY " + orderBy + "\n" + engine[i:]
		mergeTree = false // written
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
	b.WriteString(")\nENGINE = " + engine)
	if mergeTree {
		b.WriteString("\nORDER BY " + orderBy)
	}
	return b.String(), nil
}

// CheckOrderBy returns an error naming both when orderBy is given (not "") with an engine outside
// the MergeTree family (engine "" is MergeTree), which takes no ORDER BY clause, or with an
// engine that has its own ORDER BY.
func CheckOrderBy(engine, orderBy string) error {
	switch {
	case orderBy != "" && engine != "" && !isMergeTree(engine):
		return fmt.Errorf("ORDER BY %s with engine %s: ORDER BY is a clause of the MergeTree engines alone", orderBy, engine)
	case orderBy != "" && clauseAt(engine, "ORDER BY") >= 0:
		return fmt.Errorf("ORDER BY %s with engine %s: the engine has its ORDER BY already; give it in one place", orderBy, engine)
	}
	return nil
}

// firstClause returns where engine (SQL) holds the first of the clause keywords (clauseAt); -1
// when it holds none.
func firstClause(engine string, keywords ...string) int {
	first := -1
	for _, k := range keywords {
		if i := clauseAt(engine, k); i >= 0 && (first < 0 || i < first) {
			first = i
		}
	}
	return first
}

// clauseAt returns where engine (SQL) holds the clause keyword (words separated by one space,
// such as "ORDER BY"), in any letter case and outside quotes and parentheses, with white space of
// any kind between its words and around it; -1 when it does not.
func clauseAt(engine, keyword string) int {
	words := strings.Fields(strings.ToUpper(keyword))
	depth, quote := 0, byte(0)
	for i := 0; i < len(engine); i++ {
		c := engine[i]
		switch {
		case quote != 0:
			if c == '\\' {
				i++
			} else if c == quote {
				quote = 0
			}
			continue
		case c == '\'' || c == '"' || c == '`':
			quote = c
			continue
		case c == '(':
			depth++
			continue
		case c == ')':
			depth--
			continue
		}
		if depth != 0 || i > 0 && !isSpace(engine[i-1]) {
			continue
		}
		j := i
		matched := true
		for w, word := range words {
			if w > 0 {
				k := j
				for k < len(engine) && isSpace(engine[k]) {
					k++
				}
				if k == j {
					matched = false
					break
				}
				j = k
			}
			if len(engine)-j < len(word) || strings.ToUpper(engine[j:j+len(word)]) != word {
				matched = false
				break
			}
			j += len(word)
		}
		if matched && (j == len(engine) || isSpace(engine[j]) || engine[j] == '(' || engine[j] == '\'') {
			return i
		}
	}
	return -1
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// isMergeTree reports whether engine (SQL, as in ENGINE = …, with any clauses after the name) is
// of the MergeTree family: its name, the leading word, ends in MergeTree (MergeTree,
// ReplicatedReplacingMergeTree('/p', 'r'), MergeTree PARTITION BY toYYYYMM(ts), …).
func isMergeTree(engine string) bool {
	engine = strings.TrimSpace(engine)
	end := strings.IndexFunc(engine, func(r rune) bool {
		return !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9')
	})
	if end < 0 {
		end = len(engine)
	}
	return strings.HasSuffix(engine[:end], "MergeTree")
}
