package convert_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ch-beam/pubsub-to-clickhouse/internal/events"
	"github.com/ch-beam/pubsub-to-clickhouse/internal/shared"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/convert"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/schema"
)

// The corpora of the parse cost: the demo events (internal/events) and the Wikipedia edits of
// ../shared/data. BenchmarkConvertCorpus converts them; scripts/parse-vs-clickhouse.sh writes them
// as JSON-lines files (TestCorpusFiles) and times the conversion of those files
// (TestConvertFileCPU) beside ClickHouse's own JSONEachRow parse of the same files.

// demoMessages is how many demo events the corpus holds (seed 1, from 2026-11-30 08:00 UTC).
const demoMessages = 10_000

// corpus is a stream of messages, one row each, and its table.
type corpus struct {
	name  string
	table *schema.Table
	msgs  [][]byte
}

// corpora caches the corpora a test binary has built.
var corpora = map[string]*corpus{}

// loadCorpus returns the corpus of that name: "demo", "demo_stringified" (the demo events as
// ClickHouse 18.16 takes them: forClickHouse) or "wikipedia_edits".
func loadCorpus(tb testing.TB, name string) *corpus {
	tb.Helper()
	if c, ok := corpora[name]; ok {
		return c
	}
	c := &corpus{name: name, table: corpusTable(tb, name)}
	switch name {
	case "demo_stringified":
		for i, msg := range loadCorpus(tb, "demo").msgs {
			ch, err := forClickHouse(c.table, msg)
			if err != nil {
				tb.Fatalf("demo event %d: %v", i, err)
			}
			c.msgs = append(c.msgs, ch)
		}
	case "demo":
		gen := events.NewGenerator(1, time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC))
		for range demoMessages {
			_, msg := gen.Next()
			c.msgs = append(c.msgs, msg)
		}
	default:
		var err error
		if c.msgs, err = readLines(filepath.Join(shared.Dir(tb), "data", name+".jsonl")); err != nil {
			tb.Fatal(err)
		}
	}
	corpora[name] = c
	return c
}

// corpusTable returns the table of a corpus: events.DDL for the demo, else ../shared/data's
// <name>.sql.
func corpusTable(tb testing.TB, name string) *schema.Table {
	tb.Helper()
	switch name {
	case "demo", "demo_stringified":
		return tableOfDDL(tb, events.DDL)
	case "wikipedia_edits":
		ddl, err := os.ReadFile(filepath.Join(shared.Dir(tb), "data", name+".sql"))
		if err != nil {
			tb.Fatal(err)
		}
		return tableOfDDL(tb, string(ddl))
	}
	tb.Fatalf("no corpus %q", name)
	return nil
}

// tableOfDDL reads the column list of a corpus' CREATE TABLE statement: -- comments, then
// "CREATE TABLE {table} (", one column or more a line, ") ENGINE". The types are spelled as
// ClickHouse 18.16 reports them in system.columns for these statements.
func tableOfDDL(tb testing.TB, ddl string) *schema.Table {
	tb.Helper()
	var lines []string
	for _, l := range strings.Split(ddl, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(l), "--") {
			lines = append(lines, l)
		}
	}
	stmt := strings.Join(strings.Fields(strings.Join(lines, " ")), " ") // one space between words
	open, closeIdx := strings.Index(stmt, "("), strings.LastIndex(stmt, ") ENGINE")
	if open < 0 || closeIdx < open {
		tb.Fatalf("not a CREATE TABLE statement with an ENGINE: %s", stmt)
	}
	t := table(tb, columnSpecs(stmt[open+1:closeIdx])...)
	t.Name = "corpus"
	return t
}

// readLines returns the lines of a JSON-lines file, without their line ends.
func readLines(path string) ([][]byte, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out [][]byte
	for _, l := range bytes.Split(bytes.TrimSuffix(raw, []byte("\n")), []byte("\n")) {
		out = append(out, l)
	}
	return out, nil
}

// BenchmarkConvertCorpus converts every message of each corpus in turn, with a Converter built
// from the corpus' table (demo_stringified: the demo events as scripts/parse-vs-clickhouse.sh
// gives them to both ClickHouse and the converter): ns/op is per message, MB/s over message bytes, rows/s per wall-clock
// second and rows/CPU-s per CPU second of the process (getrusage: the conversion and the garbage
// collector).
func BenchmarkConvertCorpus(b *testing.B) {
	for _, name := range []string{"demo", "demo_stringified", "wikipedia_edits"} {
		b.Run(name, func(b *testing.B) {
			c := loadCorpus(b, name)
			conv, err := convert.New(c.table)
			if err != nil {
				b.Fatal(err)
			}
			total := 0
			for _, m := range c.msgs {
				total += len(m)
			}
			b.SetBytes(int64(total / len(c.msgs)))
			b.ReportAllocs()
			var row []byte
			b.ResetTimer()
			cpu0 := cpuSeconds(b)
			for i := 0; i < b.N; i++ {
				if row, err = conv.Convert(row[:0], c.msgs[i%len(c.msgs)]); err != nil {
					b.Fatalf("message %d: %v", i%len(c.msgs), err)
				}
			}
			cpu := cpuSeconds(b) - cpu0
			b.StopTimer()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "rows/s")
			b.ReportMetric(float64(b.N)/cpu, "rows/CPU-s")
		})
	}
}

// cpuSeconds returns the CPU time (user and system) the process has used.
func cpuSeconds(tb testing.TB) float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

// forClickHouse rewrites a demo event as ClickHouse 18.16's JSONEachRow takes it: 18.16 refuses a
// JSON object or array for a String column, so each such value becomes a JSON string of its text.
// The converter stores that text for both forms, so both give the same row.
func forClickHouse(t *schema.Table, msg []byte) ([]byte, error) {
	stringCols := map[string]bool{}
	for _, c := range t.Columns {
		stringCols[c.Name] = c.TypeName == "String"
	}
	dec := json.NewDecoder(bytes.NewReader(msg))
	if _, err := dec.Token(); err != nil { // {
		return nil, err
	}
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(false)
	out.WriteByte('{')
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return nil, err
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		if out.Len() > 1 {
			out.WriteByte(',')
		}
		if err := enc.Encode(key); err != nil {
			return nil, err
		}
		out.Truncate(out.Len() - 1) // Encode's newline
		out.WriteByte(':')
		if stringCols[key.(string)] && (v[0] == '{' || v[0] == '[') {
			if err := enc.Encode(string(v)); err != nil {
				return nil, err
			}
			out.Truncate(out.Len() - 1)
		} else {
			out.Write(v)
		}
	}
	out.WriteByte('}')
	return out.Bytes(), nil
}

// TestCorpusFiles checks that every message of both corpora converts, and that each demo event in
// the form ClickHouse 18.16 takes (forClickHouse) converts into the same row as the event itself.
// With CORPUS_DIR set it also writes, for scripts/parse-vs-clickhouse.sh, each corpus CORPUS_REPEAT
// times over (default 5): demo.jsonl (the events), demo.clickhouse.jsonl (the same events for
// 18.16) and wikipedia_edits.jsonl; demo.sql and wikipedia_edits.sql (CREATE TABLE with {table});
// and demo.columns and wikipedia_edits.columns, the tables the converters are built from, as the
// server lists them (columnList).
func TestCorpusFiles(t *testing.T) {
	dir := os.Getenv("CORPUS_DIR")
	demo, forCH, wiki := loadCorpus(t, "demo"), loadCorpus(t, "demo_stringified"), loadCorpus(t, "wikipedia_edits")
	conv, err := convert.New(demo.table)
	if err != nil {
		t.Fatal(err)
	}
	var demoLines, chLines bytes.Buffer
	var row, chRow []byte
	for i, msg := range demo.msgs {
		ch := forCH.msgs[i]
		if row, err = conv.Convert(row[:0], msg); err != nil {
			t.Fatalf("demo event %d: %v", i, err)
		}
		if chRow, err = conv.Convert(chRow[:0], ch); err != nil {
			t.Fatalf("demo event %d for ClickHouse: %v", i, err)
		}
		if !bytes.Equal(row, chRow) {
			t.Fatalf("demo event %d: the form for ClickHouse gives another row\n%s\n%s", i, msg, ch)
		}
		demoLines.Write(msg)
		demoLines.WriteByte('\n')
		chLines.Write(ch)
		chLines.WriteByte('\n')
	}
	if conv, err = convert.New(wiki.table); err != nil {
		t.Fatal(err)
	}
	var edits bytes.Buffer
	for i, msg := range wiki.msgs {
		if row, err = conv.Convert(row[:0], msg); err != nil {
			t.Fatalf("wikipedia edit %d: %v", i, err)
		}
		edits.Write(msg)
		edits.WriteByte('\n')
	}
	if dir == "" {
		return
	}
	repeat := 5
	if s := os.Getenv("CORPUS_REPEAT"); s != "" {
		if repeat, err = strconv.Atoi(s); err != nil || repeat < 1 {
			t.Fatalf("CORPUS_REPEAT=%q, want a positive number", s)
		}
	}
	wikiDDL, err := os.ReadFile(filepath.Join(shared.Dir(t), "data", "wikipedia_edits.sql"))
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{
		"demo.columns":            columnList(demo.table),
		"wikipedia_edits.columns": columnList(wiki.table),
		"demo.jsonl":              bytes.Repeat(demoLines.Bytes(), repeat),
		"demo.clickhouse.jsonl":   bytes.Repeat(chLines.Bytes(), repeat),
		"wikipedia_edits.jsonl":   bytes.Repeat(edits.Bytes(), repeat),
		"demo.sql":                []byte(events.DDL + "\n"),
		"wikipedia_edits.sql":     wikiDDL,
	}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// columnList returns a table's columns as lines of name, type and default kind, separated by tabs:
// what SELECT name, type, default_kind FROM system.columns prints in TabSeparatedRaw.
func columnList(t *schema.Table) []byte {
	var b bytes.Buffer
	for _, c := range t.Columns {
		fmt.Fprintf(&b, "%s\t%s\t%s\n", c.Name, c.TypeName, c.DefaultKind)
	}
	return b.Bytes()
}

// TestConvertFileCPU is the product's side of scripts/parse-vs-clickhouse.sh; it is skipped
// unless CONVERT_FILE names a JSON-lines file and CONVERT_CORPUS its corpus ("demo" or
// "wikipedia_edits"). It converts each line as one message, once, and prints
// "rows=<lines> cpu_seconds=<user+system CPU of the process during the conversions>".
func TestConvertFileCPU(t *testing.T) {
	path, name := os.Getenv("CONVERT_FILE"), os.Getenv("CONVERT_CORPUS")
	if path == "" {
		t.Skip("set CONVERT_FILE and CONVERT_CORPUS to time the conversion of a file")
	}
	msgs, err := readLines(path)
	if err != nil {
		t.Fatal(err)
	}
	conv, err := convert.New(corpusTable(t, name))
	if err != nil {
		t.Fatal(err)
	}
	var row []byte
	runtime.GC() // no collection of the file's garbage in the measured time
	cpu0 := cpuSeconds(t)
	for i, msg := range msgs {
		if row, err = conv.Convert(row[:0], msg); err != nil {
			t.Fatalf("line %d: %v", i+1, err)
		}
	}
	cpu := cpuSeconds(t) - cpu0
	fmt.Printf("rows=%d cpu_seconds=%.6f\n", len(msgs), cpu)
}

// TestConvertCheckedIsConvertMessage: ConvertChecked gives the rows and errors of ConvertMessage
// for every message of the corpora and for payloads that fail in each way but one, and leaves
// out only the UTF-8 check, which the write stage's rows have passed in the parse stage.
func TestConvertCheckedIsConvertMessage(t *testing.T) {
	for _, name := range []string{"demo", "demo_stringified", "wikipedia_edits"} {
		c := loadCorpus(t, name)
		conv, err := convert.New(c.table)
		if err != nil {
			t.Fatal(err)
		}
		msgs := append([][]byte{nil, []byte(""), []byte("[1]"), []byte(`{"a":`), []byte(`{} {}`),
			[]byte(`{"` + c.table.Columns[0].Name + `":{"x":[1,2]}}`)}, c.msgs...)
		for i, m := range msgs {
			want, wantErr := conv.ConvertMessage(nil, m, nil)
			got, gotErr := conv.ConvertChecked(nil, m, nil)
			if !bytes.Equal(got, want) || fmt.Sprint(gotErr) != fmt.Sprint(wantErr) {
				t.Fatalf("%s message %d %q: ConvertChecked gave % x, %v; ConvertMessage % x, %v", name, i, m, got, gotErr, want, wantErr)
			}
		}
	}
	conv, err := convert.New(loadCorpus(t, "demo").table)
	if err != nil {
		t.Fatal(err)
	}
	bad := []byte("{\"page\":\"\xff\"}")
	if _, err := conv.ConvertMessage(nil, bad, nil); err == nil || !strings.Contains(err.Error(), "not valid UTF-8") {
		t.Errorf("ConvertMessage of invalid UTF-8: %v, want the UTF-8 rule", err)
	}
	if _, err := conv.ConvertChecked(nil, bad, nil); err != nil && strings.Contains(err.Error(), "UTF-8") {
		t.Errorf("ConvertChecked checked UTF-8: %v", err)
	}
}
