//go:build chdb

package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"

	chdbpurego "github.com/chdb-io/chdb-go/chdb-purego"
)

// engine is the ClickHouse engine of the process (chDB allows one), running one statement at a
// time in its one session. Between requests it puts back what a statement of one request would
// otherwise leave to the next: settings (SET, and the settings of the URL), the current database
// and temporary tables; a server gives each HTTP request a session of its own.
type engine struct {
	mu   sync.Mutex
	conn chdbpurego.ChdbConn
	dir  string // the session directory: the tables
	tmp  string // INSERT data, one file a statement: the directory <dir>.insert
	seq  int
	// database is the current database as the last request left it; "" when a statement
	// may have changed it (USE).
	database string
	// baseline is the settings changed at start, with their values: what a request's changes are
	// reset to.
	baseline map[string]string
	version  string
	timezone string
	hostname string
}

// serverSettings are what clickhouse-local sets differently from a server and the stand-in sets
// back: implicit_select (a bare expression is a SELECT) is off on a server, so "SELEC" is a
// syntax error (62) there.
var serverSettings = []string{"implicit_select = 0"}

// openEngine starts the engine on the session directory dir (created if missing), whose tables
// stay there between runs.
func openEngine(dir string) (*engine, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	// Beside the tables, so that a stand-in ended by SIGKILL leaves nothing elsewhere; what a
	// previous run left there goes.
	tmp := abs + ".insert"
	if err := os.RemoveAll(tmp); err != nil {
		return nil, err
	}
	if err := os.Mkdir(tmp, 0o700); err != nil {
		return nil, err
	}
	conn, err := chdbpurego.NewConnectionFromConnString(abs)
	if err != nil {
		return nil, fmt.Errorf("the ClickHouse engine on %s: %w", abs, err)
	}
	e := &engine{conn: conn, dir: abs, tmp: tmp}
	for _, s := range serverSettings {
		if _, err := e.exec("SET " + s); err != nil {
			return nil, err
		}
	}
	if _, err := e.exec("USE default"); err != nil {
		return nil, err
	}
	e.database = "default"
	if e.baseline, err = e.changedSettings(); err != nil {
		return nil, err
	}
	out, err := e.exec("SELECT version(), timezone(), hostName() FORMAT TabSeparated")
	if err != nil {
		return nil, err
	}
	f := strings.Split(strings.TrimSuffix(string(out), "\n"), "\t")
	if len(f) != 3 {
		return nil, fmt.Errorf("the engine's version, time zone and host name: %q is not three fields", out)
	}
	e.version, e.timezone, e.hostname = f[0], f[1], f[2]
	return e, nil
}

func (e *engine) close() {
	e.conn.Close()
	os.RemoveAll(e.tmp)
}

// exec runs one statement and returns its whole output in format (the engine's default output
// format when format is ""), copied out of the engine's memory.
func (e *engine) exec(sql string, format ...string) ([]byte, error) {
	f := "TabSeparated"
	if len(format) > 0 && format[0] != "" {
		f = format[0]
	}
	res, err := e.conn.Query(sql, f)
	if err != nil {
		return nil, newEngineError(err.Error())
	}
	if res == nil {
		return nil, nil
	}
	defer res.Free()
	if err := res.Error(); err != nil {
		return nil, newEngineError(err.Error())
	}
	return append([]byte(nil), res.Buf()...), nil
}

// changedSettings returns the session's settings that differ from their defaults.
func (e *engine) changedSettings() (map[string]string, error) {
	out, err := e.exec("SELECT name, value FROM system.settings WHERE changed FORMAT TabSeparated")
	if err != nil {
		return nil, err
	}
	m := map[string]string{}
	for _, line := range strings.Split(strings.TrimSuffix(string(out), "\n"), "\n") {
		if name, value, ok := strings.Cut(line, "\t"); ok {
			m[name] = value
		}
	}
	return m, nil
}

// request is one statement as the HTTP interface received it.
type request struct {
	sql      string
	data     []byte // an INSERT's data (the statement's format names its format); nil for none
	hasData  bool
	format   string // the default output format
	database string
	settings [][2]string // name, value: applied for this statement only
	params   [][2]string // query parameters, without their param_ prefix
}

// run executes r and returns its output. Whatever happens, the session is left as the request
// found it (settings, current database, temporary tables), except for query parameters: the
// engine cannot unset one, so a parameter given once keeps its last value (a later query that
// uses it without giving it gets that value instead of error 456 UNKNOWN_QUERY_PARAMETER).
func (e *engine) run(r request) (out []byte, err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	st := parseStatement(r.sql)
	defer func() {
		if rerr := e.reset(st, len(r.settings) > 0); rerr != nil && err == nil {
			err = rerr
		}
	}()
	db := r.database
	if db == "" {
		db = "default"
	}
	if db != e.database {
		e.database = ""
		if _, err := e.exec("USE " + quoteName(db)); err != nil {
			return nil, err
		}
		e.database = db
	}
	for _, kv := range r.settings {
		if !isName(kv[0]) {
			return nil, exception(115, "UNKNOWN_SETTING", fmt.Sprintf("Unknown setting '%s'", kv[0]))
		}
		if _, err := e.exec("SET " + kv[0] + " = " + quote(kv[1])); err != nil {
			return nil, err
		}
	}
	for _, kv := range r.params {
		if !isName(kv[0]) {
			return nil, exception(457, "BAD_QUERY_PARAMETER", fmt.Sprintf("Query parameter name '%s' is not an identifier", kv[0]))
		}
		if _, err := e.exec("SET param_" + kv[0] + " = " + quote(kv[1])); err != nil {
			return nil, err
		}
	}
	sql := r.sql
	if r.hasData {
		e.seq++
		path := filepath.Join(e.tmp, "insert-"+strconv.Itoa(e.seq))
		if err := os.WriteFile(path, r.data, 0o600); err != nil {
			return nil, err
		}
		defer os.Remove(path)
		defer func() {
			var ee *engineError
			if errors.As(err, &ee) {
				ee.text = strings.ReplaceAll(strings.ReplaceAll(ee.text, ": (in file/uri "+path+")", ""),
					": While executing File: data for INSERT was parsed from file", "")
			}
		}()
		// INSERT INTO t [(c, ...)] FROM INFILE 'path' [SETTINGS ...] FORMAT f: the engine takes
		// no data beside a statement, only from a file.
		sql = sql[:st.clauseStart] + "FROM INFILE " + quote(path) + " " + sql[st.clauseStart:st.formatEnd]
	}
	return e.exec(sql, r.format)
}

// reset puts back what the statement st of a request may have left in the session: settings
// when it set some (or the request did), the current database after USE, temporary tables.
func (e *engine) reset(st statement, settingsGiven bool) error {
	if st.kind == "USE" {
		e.database = ""
	}
	var errs []error
	if settingsGiven || st.kind == "SET" {
		changed, err := e.changedSettings()
		if err != nil {
			return err
		}
		for name, value := range changed {
			base, ok := e.baseline[name]
			switch {
			case !ok:
				_, err = e.exec("SET " + name + " = DEFAULT")
			case base != value:
				_, err = e.exec("SET " + name + " = " + quote(base))
			default:
				continue
			}
			errs = append(errs, err)
		}
	}
	if st.temporary {
		out, err := e.exec("SELECT name FROM system.tables WHERE is_temporary FORMAT TabSeparatedRaw")
		if err != nil {
			return err
		}
		for _, name := range strings.Fields(string(out)) {
			_, err := e.exec("DROP TEMPORARY TABLE IF EXISTS " + quoteName(name))
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// engineError is an exception of the engine, or one the stand-in raises as a server would.
type engineError struct {
	code int
	name string // ERROR_NAME, as in the text's "(ERROR_NAME)"; "" when unknown
	text string // "Code: N. DB::Exception: ... (ERROR_NAME)"
}

func (e *engineError) Error() string { return e.text }

var (
	codePrefix = regexp.MustCompile(`^Code: (\d+)\. DB::Exception: `)
	errorName  = regexp.MustCompile(`\(([A-Z][A-Z0-9_]+)\)\s*$`)
)

// newEngineError parses the engine's error text. The engine sometimes repeats the prefix
// ("Code: 115. DB::Exception: Code: 115. DB::Exception: Unknown setting..."), which a server
// does not: the repeat is dropped. A text without a code is STD_EXCEPTION (1001), as a server
// reports an exception that is not ClickHouse's.
func newEngineError(text string) *engineError {
	text = strings.TrimSpace(text)
	m := codePrefix.FindStringSubmatch(text)
	if m == nil {
		return exception(1001, "STD_EXCEPTION", text)
	}
	if rest := text[len(m[0]):]; strings.HasPrefix(rest, m[0]) {
		text = rest
	}
	code, _ := strconv.Atoi(m[1])
	e := &engineError{code: code, text: text}
	if n := errorName.FindStringSubmatch(text); n != nil {
		e.name = n[1]
	}
	return e
}

// exception returns an error in the server's words: "Code: N. DB::Exception: message. (NAME)".
func exception(code int, name, message string) *engineError {
	return &engineError{code: code, name: name, text: fmt.Sprintf("Code: %d. DB::Exception: %s. (%s)", code, message, name)}
}
