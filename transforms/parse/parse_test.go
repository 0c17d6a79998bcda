package parse

import (
	"context"
	"errors"
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/passert"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"
	"github.com/google/go-cmp/cmp"

	"github.com/ch-beam/pubsub-to-clickhouse/internal/chtest"
	"github.com/ch-beam/pubsub-to-clickhouse/internal/flowtest"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/chclient"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/chtype"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/convert"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/flow"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/schema"
)

// TestMain runs the pipelines on prism, unless -args --runner=... says otherwise (the parse stage
// is stateless, so it also runs on the direct runner).
// TestMain runs the pipelines of these tests on prism, with its bundle splits off
// (flowtest.Main).
func TestMain(m *testing.M) { os.Exit(flowtest.Main(m)) }

func init() {
	register.DoFn3x1[context.Context, flow.Rows, func(string), error](&rowTextFn{})
	register.Emitter1[string]()
	register.Function1x1(deadLetterText)
}

// rowTextFn renders each row of a group as "v1|v2|...", with DEFAULT for a column the server
// computes: the row the write stage makes of it, converting its payload against the table as
// Check reads it.
type rowTextFn struct {
	ClickHouse chclient.Config
	Table      string
	Types      []string
}

func (f *rowTextFn) ProcessElement(ctx context.Context, rs flow.Rows, emit func(string)) error {
	conn, err := chclient.Open(ctx, f.ClickHouse)
	if err != nil {
		return err
	}
	defer conn.Close()
	_, conv, err := Check(ctx, conn, f.ClickHouse.Database, f.Table)
	if err != nil {
		return err
	}
	for _, r := range rs.Rows {
		if r.Schema != conv.SchemaHash() {
			return fmt.Errorf("row of message %s has schema %x, want %x", r.MessageID, r.Schema, conv.SchemaHash())
		}
		data, err := conv.Convert(nil, r.Payload)
		if err != nil {
			return err
		}
		text, err := f.rowText(data)
		if err != nil {
			return err
		}
		emit(text + " ack=" + r.AckID)
	}
	return nil
}

func (f *rowTextFn) rowText(data []byte) (string, error) {
	types := make([]*chtype.Type, len(f.Types))
	for i, s := range f.Types {
		var err error
		if types[i], err = chtype.Parse(s); err != nil {
			return "", err
		}
	}
	spans, err := convert.Split(types, data, nil)
	if err != nil {
		return "", err
	}
	parts := make([]string, len(spans))
	for i, s := range spans {
		if s == nil {
			parts[i] = "DEFAULT"
			continue
		}
		col, err := convert.NewColumn(types[i])
		if err != nil {
			return "", err
		}
		if err := col.Append(s); err != nil {
			return "", err
		}
		v := reflect.ValueOf(col.Values()).Index(0)
		switch {
		case v.Kind() == reflect.Pointer && v.IsNil():
			parts[i] = "NULL"
		case v.Kind() == reflect.Pointer:
			parts[i] = fmt.Sprint(v.Elem().Interface())
		default:
			parts[i] = fmt.Sprint(v.Interface())
		}
	}
	return strings.Join(parts, "|"), nil
}

func deadLetterText(r flow.DeadLetter) string {
	return fmt.Sprintf("%s => %s [stage=%v column=%v id=%s ack=%s]", r.Payload, r.ErrorMessage,
		strings.Contains(r.StackTrace, "stage: parse"), columnLine(r.StackTrace), r.MessageID, r.AckID)
}

func columnLine(trace string) string {
	for _, l := range strings.Split(trace, "\n") {
		if c, ok := strings.CutPrefix(l, "column: "); ok {
			return c
		}
	}
	return ""
}

// TestParsePipeline sends good and bad messages through the parse DoFn against a real table and
// checks both outputs and all four metrics.
func TestParsePipeline(t *testing.T) {
	srv := chtest.New(t)
	srv.CreateTable(t, `CREATE TABLE {table} (id UInt32, name String DEFAULT 'anon', ts DateTime('UTC'), tags Array(String), score Nullable(Float64)) ENGINE = MergeTree ORDER BY id`, "events")

	in := []flow.Message{
		{ID: "m1", AckID: "a1", Data: []byte(`{"id":1,"name":"Zoë","ts":"2024-05-01T10:00:00+02:00","tags":["x","y"],"score":0.5}`)},
		{ID: "m2", AckID: "a2", Data: []byte(`{"id":"2","ts":"2024-05-01 10:00:00","extra":{"a":1}}`)},
		{ID: "m3", AckID: "a3", Data: []byte(`{"id":-3,"ts":"2024-05-01T10:00:00Z","extra":1}`)}, // a dead letter: not counted as a row with dropped fields
		{ID: "m4", AckID: "a4", Data: []byte(`{"id":4,"ts":"yesterday"}`)},
		{ID: "m5", AckID: "a5", Data: []byte(`not json`)},
	}
	p, s := beam.NewPipelineWithRoot()
	// One source element, as a Pull response gives them.
	rows, deadLetters := Parse(s, Config{ClickHouse: srv.Config(), Table: "events"}, beam.Create(s, flow.Messages{Messages: in}))
	passert.Equals(s, beam.ParDo(s, &rowTextFn{ClickHouse: srv.Config(), Table: "events", Types: []string{"UInt32", "String", "DateTime('UTC')", "Array(String)", "Nullable(Float64)"}}, rows),
		"1|Zoë|2024-05-01 08:00:00 +0000 UTC|[x y]|0.5 ack=a1",
		"2|DEFAULT|2024-05-01 10:00:00 +0000 UTC|[]|NULL ack=a2",
	)
	passert.Equals(s, beam.ParDo(s, deadLetterText, deadLetters),
		`{"id":-3,"ts":"2024-05-01T10:00:00Z","extra":1} => column "id" (UInt32): -3 is out of range for UInt32 (0 to 4294967295) [stage=true column=id id=m3 ack=a3]`,
		`{"id":4,"ts":"yesterday"} => column "ts" (DateTime('UTC')): "yesterday" is not an ISO-8601 date-time (YYYY-MM-DD or YYYY-MM-DD[T ]hh:mm:ss[.fraction][Z|±hh:mm|±hhmm|±hh]) [stage=true column=ts id=m4 ack=a4]`,
		`not json => payload: invalid JSON at byte 0: unexpected character 'n', expected a value [stage=true column= id=m5 ack=a5]`,
	)
	res, err := ptest.RunWithMetrics(p)
	if err != nil {
		t.Fatal(err)
	}
	counters := map[string]int64{}
	for _, c := range res.Metrics().AllMetrics().Counters() {
		if c.Key.Namespace == flow.Namespace {
			counters[c.Key.Name] += c.Committed
		}
	}
	// m2's "extra" is no column's: its row is counted as one with dropped fields.
	want := map[string]int64{"messages-received": 5, "rows-parsed-ok": 2, "rows-parse-failed": 3, "rows-with-dropped-fields": 1}
	for name, n := range want {
		if counters[name] != n {
			t.Errorf("counter %s = %d, want %d (all: %v)", name, counters[name], n, counters)
		}
	}
	var dist []int64
	for _, d := range res.Metrics().AllMetrics().Distributions() {
		if d.Key.Namespace == flow.Namespace && d.Key.Name == "message-payload-bytes" {
			dist = append(dist, d.Committed.Count, d.Committed.Sum, d.Committed.Min, d.Committed.Max)
		}
	}
	total := 0
	for _, m := range in {
		total += len(m.Data)
	}
	if fmt.Sprint(dist) != fmt.Sprint([]int64{5, int64(total), 8, int64(len(in[0].Data))}) {
		t.Errorf("message-payload-bytes (count, sum, min, max) = %v, want [5 %d 8 %d]", dist, total, len(in[0].Data))
	}
}

// check connects as the launcher does and runs Check.
func check(ctx context.Context, c chclient.Config, table string) error {
	conn, err := chclient.Open(ctx, c)
	if err != nil {
		return err
	}
	defer conn.Close()
	_, _, err = Check(ctx, conn, c.Database, table)
	return err
}

// TestCheck shows what a launch reports when the table cannot be converted into.
func TestCheck(t *testing.T) {
	srv := chtest.New(t)
	srv.CreateTable(t, `CREATE TABLE {table} (a UInt8, agg AggregateFunction(uniq, String)) ENGINE = AggregatingMergeTree ORDER BY a`, "agg")
	srv.CreateTable(t, `CREATE TABLE {table} (a UInt8) ENGINE = MergeTree ORDER BY a`, "ok")
	ctx := context.Background()
	cfg := srv.Config()
	if err := check(ctx, cfg, "ok"); err != nil {
		t.Errorf("Check(ok): %v", err)
	}
	for _, tc := range []struct {
		name  string
		cfg   func(c *chclient.Config)
		table string
		want  string
	}{
		{"unsupported type", nil, "agg", `column "agg": unsupported type AggregateFunction(uniq, String)`},
		{"missing table", nil, "nope", `table ` + cfg.Database + `.nope does not exist`},
		{"missing database", func(c *chclient.Config) { c.Database = "no_such_db" }, "ok", `no_such_db`},
		{"wrong user", func(c *chclient.Config) { c.Username = "nobody"; c.Password = "s3cr3t-PW" }, "ok", `as user "nobody"`},
		{"unreachable host", func(c *chclient.Config) { c.URL = "clickhouse://127.0.0.1:1" }, "ok", `clickhouse://127.0.0.1:1`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := cfg
			if tc.cfg != nil {
				tc.cfg(&c)
			}
			err := check(ctx, c, tc.table)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Check: %v, want an error containing %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "s3cr3t-PW") {
				t.Fatalf("the error shows the password: %v", err)
			}
			t.Log(err)
		})
	}
}

// TestRoutedSetupOfTablesAway: the parse stages of routed tables set up one after another in the
// routing's stage, so a table the server says does not exist (detached, never created) is read
// once at Setup, not retried, and its stage goes on unchecked: with its three retries (about
// 3.5 s) each such table held up every table's messages, 30 detached tables of 300 for 90 s.
func TestRoutedSetupOfTablesAway(t *testing.T) {
	srv := chtest.New(t)
	srv.CreateTable(t, `CREATE TABLE {table} (id UInt32) ENGINE = MergeTree ORDER BY id`, "detached")
	srv.MustExec(t, "DETACH TABLE detached")
	// Attached again before the test's database is dropped (cleanups run last first): 18.16
	// drops no database that holds a detached table's files, and left it behind.
	t.Cleanup(func() { srv.MustExec(t, "ATTACH TABLE detached") })
	ctx := context.Background()
	for _, table := range []string{"detached", "nope1", "nope2", "nope3"} {
		f := &parseFn{Config: Config{ClickHouse: srv.Config(), Table: table, Routed: true}}
		start := time.Now()
		if err := f.Setup(ctx); err != nil {
			t.Fatalf("Setup of %s: %v", table, err)
		}
		took := time.Since(start)
		f.Teardown()
		if !errors.Is(f.unread, schema.ErrNotFound) {
			t.Errorf("%s: the stage's unread error is %v, want one of a table that does not exist", table, f.unread)
		}
		// The retries waited at least 1.75 s (half of each backoff: 0.25, 0.5 and 1 s).
		if took > time.Second {
			t.Errorf("Setup of %s, which does not exist, took %v; want one read, well under a second", table, took)
		}
	}
}

// TestCheckRefusesWhatCannotBeInserted: a View, a Merge table, and column names clickhouse-go cannot put in an
// INSERT, stop the launch instead of failing every INSERT.
func TestCheckRefusesWhatCannotBeInserted(t *testing.T) {
	srv := chtest.New(t)
	srv.CreateTable(t, "CREATE TABLE {table} (a UInt8) ENGINE = MergeTree ORDER BY a", "base")
	srv.MustExec(t, "CREATE VIEW v AS SELECT a FROM base")
	srv.MustExec(t, "CREATE TABLE m AS base ENGINE = Merge(currentDatabase(), '^base$')")
	srv.CreateTable(t, "CREATE TABLE {table} (`back``tick` UInt8) ENGINE = MergeTree ORDER BY tuple()", "odd")
	srv.CreateTable(t, "CREATE TABLE {table} (id UInt8, `note settings max_threads=2` String DEFAULT '') ENGINE = MergeTree ORDER BY id", "settings")
	srv.CreateTable(t, "CREATE TABLE {table} (id UInt8, `sum (x)` UInt64 DEFAULT 0) ENGINE = MergeTree ORDER BY id", "parens")
	for table, want := range map[string]string{
		"v":        "is a View, which cannot be inserted into",
		"m":        "has the engine Merge, which cannot be inserted into",
		"odd":      "column \"back`tick\": the name holds a backtick or a backslash, which clickhouse-go cannot name in an INSERT",
		"settings": "column \"note settings max_threads=2\": the name holds \"settings max_threads=\" after whitespace",
		"parens":   "column \"sum (x)\": the name holds whitespace before a '(', which clickhouse-go cannot read around",
	} {
		if err := check(context.Background(), srv.Config(), table); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Check(%s): %v, want an error containing %q", table, err, want)
		}
	}
}

// TestNewDeadLetterOfTransformedMessage checks the dead letter of a message whose JavaScript UDF
// output does not convert: the payload as published, an error that says the output failed, and
// a stack trace that ends with the output.
func TestNewDeadLetterOfTransformedMessage(t *testing.T) {
	err := errors.New(`column "n" (UInt8): 300 is out of range for UInt8 (0 to 255)`)
	m := flow.Message{ID: "m-1", Data: []byte(`{"n":300}`), Original: []byte(`{"count":300}`), Transformed: true, AckID: "a", Attributes: map[string]string{"k": "v"}}
	d := NewDeadLetter(m, err)
	want := flow.DeadLetter{
		Payload:      []byte(`{"count":300}`),
		ErrorMessage: `converting the output of the javascript UDF: column "n" (UInt8): 300 is out of range for UInt8 (0 to 255)`,
		StackTrace: "stage: parse (the output of the javascript UDF)\n" +
			`error: column "n" (UInt8): 300 is out of range for UInt8 (0 to 255) (*errors.errorString)` + "\n" +
			`udf output: {"n":300}`,
		FailedAtMillis: d.FailedAtMillis, MessageID: "m-1", Attributes: map[string]string{"k": "v"}, AckID: "a",
	}
	if diff := cmp.Diff(want, d); diff != "" {
		t.Errorf("dead letter mismatch (-want +got):\n%s", diff)
	}
	// Untransformed, the same error is the conversion's alone.
	m = flow.Message{ID: "m-2", Data: []byte(`{"n":300}`)}
	if d := NewDeadLetter(m, err); string(d.Payload) != `{"n":300}` || d.ErrorMessage != err.Error() || !strings.HasPrefix(d.StackTrace, "stage: parse\n") {
		t.Errorf("dead letter of an untransformed message: %+v", d)
	}
	// An output that starts with a byte order mark is the function's doing, not the publisher's.
	out := []byte("\xef\xbb\xbf{\"n\":1}")
	err = convert.TopLevelFields(out, func(string, []byte) error { return nil })
	m = flow.Message{ID: "m-3", Data: out, Original: []byte(`{"n":1}`), Transformed: true}
	if d := NewDeadLetter(m, err); !strings.HasPrefix(d.ErrorMessage, "converting the output of the javascript UDF: payload: the function's output starts "+
		"with a UTF-8 byte order mark") || strings.Contains(d.ErrorMessage, "publisher") {
		t.Errorf("dead letter of an output with a byte order mark: %s (conversion: %v)", d.ErrorMessage, err)
	}
}

// TestNewDeadLetterOfMetadataAfterUDF checks that a metadata value that does not convert, in a
// message the JavaScript UDF transformed, is not blamed on the UDF's output, whose fields all
// converted; a field of the output that fails beside it still is.
func TestNewDeadLetterOfMetadataAfterUDF(t *testing.T) {
	tb := tableOf(t, [][2]string{{"x", "UInt8"}, {"n", "UInt8"}})
	conv, err := convert.NewWith(tb, convert.Options{Metadata: []convert.MetadataColumn{{Key: "attribute.n", Column: "n"}}})
	if err != nil {
		t.Fatal(err)
	}
	meta := &convert.Meta{ID: "m-1", Attributes: map[string]string{"n": "300"}}
	for _, tt := range []struct{ output, want string }{
		{`{"x":1}`, `column "n" (UInt8, from metadataColumns attribute.n=n): "300" is out of range for UInt8 (0 to 255)`},
		{`{"x":-1}`, `converting the output of the javascript UDF: column "x" (UInt8): -1 is out of range`},
	} {
		_, err := conv.ConvertMessage(nil, []byte(tt.output), meta)
		if err == nil {
			t.Fatalf("%s: converted", tt.output)
		}
		m := flow.Message{ID: "m-1", Data: []byte(tt.output), Original: []byte(`{"orig":1}`), Transformed: true, Attributes: meta.Attributes}
		d := NewDeadLetter(m, err)
		if !strings.HasPrefix(d.ErrorMessage, tt.want) || string(d.Payload) != `{"orig":1}` {
			t.Errorf("%s: dead letter %q of %s; want it to start %q, of the original payload", tt.output, d.ErrorMessage, d.Payload, tt.want)
		}
		if udf := strings.HasPrefix(tt.want, "converting"); strings.HasPrefix(d.StackTrace, "stage: parse (the output of the javascript UDF)") != udf {
			t.Errorf("%s: stack trace %q", tt.output, d.StackTrace)
		}
	}
}

// tableOf returns the table db.t of the columns given as {name, type} pairs.
func tableOf(t *testing.T, columns [][2]string) *schema.Table {
	t.Helper()
	tb := &schema.Table{Database: "db", Name: "t", ServerTimeZone: "Etc/UTC"}
	for _, c := range columns {
		ct, err := chtype.Parse(c[1])
		if err != nil {
			t.Fatal(err)
		}
		tb.Columns = append(tb.Columns, schema.Column{Name: c[0], TypeName: c[1], Type: ct})
	}
	return tb
}
