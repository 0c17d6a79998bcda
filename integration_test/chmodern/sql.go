//go:build chdb

package main

import (
	"strings"
)

// word is a keyword or bare identifier at the top level of a statement (outside parentheses,
// string literals, quoted identifiers and comments), with its byte offsets.
type word struct {
	text       string
	start, end int
}

// topWords returns the statement's top-level words, in order, up to the first ';' outside quotes.
// Quoted names (`a`, "a") are returned with their quotes, so that they never match a keyword.
func topWords(sql string) []word {
	var words []word
	depth := 0
	for i := 0; i < len(sql); {
		c := sql[i]
		switch {
		case c == '\'' || c == '"' || c == '`':
			j := skipQuoted(sql, i)
			if depth == 0 && c != '\'' {
				words = append(words, word{sql[i:j], i, j})
			}
			i = j
		case c == '-' && strings.HasPrefix(sql[i:], "--"), c == '#' && strings.HasPrefix(sql[i:], "#!"):
			for i < len(sql) && sql[i] != '\n' {
				i++
			}
		case c == '/' && strings.HasPrefix(sql[i:], "/*"):
			if j := strings.Index(sql[i+2:], "*/"); j >= 0 {
				i += j + 4
			} else {
				i = len(sql)
			}
		case c == '(' || c == '[' || c == '{':
			depth++
			i++
		case c == ')' || c == ']' || c == '}':
			depth--
			i++
		case c == ';' && depth == 0:
			return words
		case isWordByte(c):
			j := i
			for j < len(sql) && isWordByte(sql[j]) {
				j++
			}
			if depth == 0 {
				words = append(words, word{sql[i:j], i, j})
			}
			i = j
		default:
			i++
		}
	}
	return words
}

// skipQuoted returns the offset just past the quoted literal or name that starts at i, with
// ClickHouse's escapes: a backslash, or the quote doubled.
func skipQuoted(sql string, i int) int {
	q := sql[i]
	for j := i + 1; j < len(sql); j++ {
		switch sql[j] {
		case '\\':
			j++
		case q:
			if j+1 < len(sql) && sql[j+1] == q {
				j++
				continue
			}
			return j + 1
		}
	}
	return len(sql)
}

func isWordByte(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c >= 0x80
}

// statement is what the stand-in needs to know of a statement: its kind and, for an INSERT that
// takes data in a format, where the format's name ends (the data follows it).
type statement struct {
	kind string // the first keyword, upper case: SELECT, INSERT, SET, USE, CREATE...
	// format is the name after the top-level FORMAT keyword ("" without one), and formatEnd the
	// offset just past it.
	format    string
	formatEnd int
	// clauseStart is, for an INSERT, the offset of its first top-level SETTINGS or FORMAT
	// keyword: where FROM INFILE goes.
	clauseStart int
	temporary   bool // mentions TEMPORARY (a temporary table, which outlives the request)
}

func parseStatement(sql string) statement {
	words := topWords(sql)
	var st statement
	st.clauseStart = -1
	if len(words) > 0 {
		st.kind = strings.ToUpper(words[0].text)
	}
	for i, w := range words {
		switch strings.ToUpper(w.text) {
		case "TEMPORARY":
			st.temporary = true
		case "SETTINGS":
			if st.clauseStart < 0 {
				st.clauseStart = w.start
			}
		case "FORMAT":
			if st.clauseStart < 0 {
				st.clauseStart = w.start
			}
			if i+1 < len(words) {
				st.format = strings.Trim(words[i+1].text, "`\"")
				st.formatEnd = words[i+1].end
			}
		}
	}
	return st
}

// insertData reports whether st is an INSERT whose data, in st.format, follows the query.
func (st statement) insertData() bool {
	return st.kind == "INSERT" && st.format != "" && st.clauseStart >= 0
}

// dataStart returns where an INSERT's data begins in text whose query ends at end: as in
// ClickHouse's INSERT parser, after the spaces that follow the format's name and one line break.
func dataStart(text string, end int) int {
	for end < len(text) && (text[end] == ' ' || text[end] == '\t' || text[end] == '\f') {
		end++
	}
	if end < len(text) && text[end] == '\r' {
		end++
	}
	if end < len(text) && text[end] == '\n' {
		end++
	}
	return end
}

// readOnlyKinds are the statements that an HTTP GET may run (ClickHouse sets readonly=2 for GET).
var readOnlyKinds = map[string]bool{
	"SELECT": true, "WITH": true, "SHOW": true, "DESCRIBE": true, "DESC": true, "EXISTS": true,
	"EXPLAIN": true, "": true,
}

// quote returns s as a ClickHouse string literal.
func quote(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s) + "'"
}

// quoteName returns s as a ClickHouse quoted identifier.
func quoteName(s string) string {
	return "`" + strings.NewReplacer(`\`, `\\`, "`", "\\`").Replace(s) + "`"
}

// isName reports whether s is a setting's or query parameter's name that needs no quoting.
func isName(s string) bool {
	if s == "" || s[0] >= '0' && s[0] <= '9' {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c != '_' && !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}
