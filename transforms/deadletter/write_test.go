package deadletter

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/column"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
	"github.com/google/go-cmp/cmp"

	"github.com/ch-beam/pubsub-to-clickhouse/internal/schemafake"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/chclient"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/flow"
)

func TestCreateTable(t *testing.T) {
	want := "CREATE TABLE `db`.`dead_letters` (raw_message String, error_message String, stack_trace String, failed_at DateTime, " +
		"message_id String DEFAULT '', attributes String DEFAULT '{}', ordering_key String DEFAULT '') " +
		"ENGINE = MergeTree PARTITION BY toYYYYMM(failed_at) ORDER BY failed_at"
	if got := CreateTable("db", "dead_letters"); got != want {
		t.Errorf("CreateTable = %s, want %s", got, want)
	}
	if got := CreateTable("d`b", `t\x`); !strings.HasPrefix(got, "CREATE TABLE `d\\`b`.`t\\\\x` (") {
		t.Errorf("CreateTable of names to escape = %s", got)
	}
}

// fakeConn records the dead-letter INSERTs; each Send returns the next of sendErrs (nil when
// they are spent). It answers the queries that read the table from schemafake.Conn; the INSERT's
// header gives the server's types of the columns named as the table there has them.
type fakeConn struct {
	schemafake.Conn // a call other than PrepareBatch and reading the table panics
	sendErrs        []error
	// sendRows, when set, answers each Send after sendErrs are spent, given the INSERT's records.
	sendRows func(records int) error
	queries  []string
	appended [][]any // per attempt, the columns appended
	named    []string
}

func (c *fakeConn) PrepareBatch(_ context.Context, query string, _ ...driver.PrepareBatchOption) (driver.Batch, error) {
	c.queries = append(c.queries, query)
	c.appended = append(c.appended, nil)
	c.named = nil
	for _, m := range regexp.MustCompile("`([a-z_]+)`").FindAllStringSubmatch(query[strings.Index(query, "("):], -1) {
		c.named = append(c.named, m[1])
	}
	return &fakeBatch{c: c}, nil
}

// Columns are the driver's columns of the INSERT's header: the table's types of the columns named.
func (b *fakeBatch) Columns() []column.Interface {
	var cols []column.Interface
	for _, name := range b.c.named {
		for _, c := range b.c.Conn.Columns {
			if c[0] == name {
				col, err := column.Type(c[1]).Column(name, &column.ServerContext{})
				if err != nil {
					panic(err)
				}
				cols = append(cols, col)
			}
		}
	}
	return cols
}

type fakeBatch struct {
	driver.Batch
	c *fakeConn
}

func (b *fakeBatch) Column(int) driver.BatchColumn { return fakeColumn{b.c} }
func (b *fakeBatch) Abort() error                  { return nil }
func (b *fakeBatch) Send() error {
	if len(b.c.sendErrs) == 0 {
		if b.c.sendRows != nil {
			cols := b.c.appended[len(b.c.appended)-1]
			return b.c.sendRows(len(cols[0].([]string)))
		}
		return nil
	}
	err := b.c.sendErrs[0]
	b.c.sendErrs = b.c.sendErrs[1:]
	return err
}

type fakeColumn struct{ c *fakeConn }

func (c fakeColumn) Append(v any) error {
	c.c.appended[len(c.c.appended)-1] = append(c.c.appended[len(c.c.appended)-1], v)
	return nil
}
func (c fakeColumn) AppendRow(any) error { panic("AppendRow") }

func TestInsert(t *testing.T) {
	recs := []*flow.DeadLetter{
		{Payload: []byte("not json"), ErrorMessage: "payload: invalid JSON", StackTrace: "stage: parse", FailedAtMillis: 1700000000123, MessageID: "m1"},
		{Payload: []byte{0xff}, ErrorMessage: "e2", StackTrace: "s2", FailedAtMillis: 1700000001000, MessageID: "m2"},
	}
	wantStmt := "INSERT INTO `db`.`dead_letters` (`raw_message`, `error_message`, `stack_trace`, `failed_at`)"
	wantValues := []any{
		[]string{"not json", "\xff"},
		[]string{"payload: invalid JSON", "e2"},
		[]string{"stage: parse", "s2"},
		[]time.Time{time.UnixMilli(1700000000123).UTC(), time.UnixMilli(1700000001000).UTC()},
	}
	newFn := func(conn *fakeConn) *writeFn {
		return &writeFn{
			Config: Config{ClickHouse: chclient.Config{Database: "db"}, Table: "dead_letters", Retry: chclient.Retry{MaxRetries: 2}},
			conn:   conn,
		}
	}

	// A transient failure is retried, and the retry sends the same rows.
	conn := &fakeConn{sendErrs: []error{errors.New("connection reset by peer")}}
	if err := newFn(conn).insert(context.Background(), recs); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{wantStmt, wantStmt}, conn.queries); diff != "" {
		t.Errorf("statements (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([][]any{wantValues, wantValues}, conn.appended); diff != "" {
		t.Errorf("columns appended (-want +got):\n%s", diff)
	}

	// A data error is retried like any other and, once the retries are spent, returned: the
	// bundle fails and the records stay unacknowledged; none is dropped.
	ex := &clickhouse.Exception{Code: 53, Message: "Type mismatch"}
	conn = &fakeConn{sendErrs: []error{ex, ex, ex}}
	err := newFn(conn).insert(context.Background(), recs)
	if !errors.Is(err, ex) || len(conn.queries) != 3 {
		t.Fatalf("data error: %v after %d attempts, want the exception after 3", err, len(conn.queries))
	}
	for _, want := range []string{"2 dead letters", "db.dead_letters", "3 attempts", "class data", "unacknowledged"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not contain %q", err, want)
		}
	}
}

// TestInsertCutByBytes: a batch of records above MaxBytes goes to the table in several INSERTs
// of at most MaxBytes, in message id order, a record larger than MaxBytes alone; every record is
// inserted once, and each one's ack id is emitted once.
func TestInsertCutByBytes(t *testing.T) {
	var recs []flow.DeadLetter
	for i, size := range []int{100, 100, 100, 500, 100, 100} {
		recs = append(recs, flow.DeadLetter{Payload: bytes.Repeat([]byte("x"), size), MessageID: fmt.Sprintf("m%d", 5-i), AckID: fmt.Sprintf("a%d", 5-i)})
	}
	// Each record is its payload and a message id of 2 bytes: 102 or 502 bytes.
	conn := &fakeConn{}
	f := &writeFn{
		Config: Config{ClickHouse: chclient.Config{Database: "db"}, Table: "dead_letters", MaxBytes: 250},
		conn:   conn,
	}
	var acked []string
	if err := f.ProcessElement(context.Background(), 0, flow.DeadLetters{Letters: recs}, func(ids []string) { acked = append(acked, ids...) }); err != nil {
		t.Fatal(err)
	}
	// Sorted by message id: m0 m1 (100 each), m2 (500), m3 m4 m5 (100 each).
	var got [][]int
	for _, cols := range conn.appended {
		var sizes []int
		for _, raw := range cols[0].([]string) {
			sizes = append(sizes, len(raw))
		}
		got = append(got, sizes)
	}
	want := [][]int{{100, 100}, {500}, {100, 100}, {100}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("payload sizes of each INSERT (-want +got):\n%s", diff)
	}
	slices.Sort(acked)
	if diff := cmp.Diff([]string{"a0", "a1", "a2", "a3", "a4", "a5"}, acked); diff != "" {
		t.Errorf("ack ids emitted (-want +got):\n%s", diff)
	}
}

// TestInsertSplitsOnMemoryLimit: a batch of dead letters that the server refuses for memory
// (code 241) is split in halves, as the rows' INSERTs are, until the parts fit; every record is
// inserted once and acknowledged. Before, the batch was retried whole and failed the bundle at
// every attempt of the runner: on the local runner each run failed on it, and no dead letter of
// the batch was ever stored. A single record the server still refuses fails the bundle after its
// retries.
func TestInsertSplitsOnMemoryLimit(t *testing.T) {
	var recs []flow.DeadLetter
	for i := range 10 {
		recs = append(recs, flow.DeadLetter{Payload: []byte(fmt.Sprintf("m%d", i)), MessageID: fmt.Sprintf("m%d", i), AckID: fmt.Sprintf("a%d", i)})
	}
	memory := &clickhouse.Exception{Code: 241, Message: "Memory limit (for query) exceeded"}
	conn := &fakeConn{sendRows: func(n int) error {
		if n > 3 {
			return memory
		}
		return nil
	}}
	f := &writeFn{
		Config: Config{ClickHouse: chclient.Config{Database: "db"}, Table: "dead_letters", Retry: chclient.Retry{MaxRetries: 2}},
		conn:   conn,
	}
	var logs bytes.Buffer
	defer slog.SetDefault(slog.Default())
	slog.SetDefault(slog.New(slog.NewTextHandler(&logs, nil)))
	var acked []string
	if err := f.ProcessElement(context.Background(), 0, flow.DeadLetters{Letters: recs}, func(ids []string) { acked = append(acked, ids...) }); err != nil {
		t.Fatalf("a batch the server takes in parts: %v", err)
	}
	// The split's log line gives the server's error, not the words of a failed bundle: the
	// bundle goes on.
	if !strings.Contains(logs.String(), "splitting it in halves") || strings.Contains(logs.String(), "the bundle fails") {
		t.Errorf("the log of a split says the bundle fails, or says nothing:\n%s", logs.String())
	}
	var stored []string
	for _, cols := range conn.appended {
		if raw := cols[0].([]string); len(raw) <= 3 {
			stored = append(stored, raw...)
		}
	}
	slices.Sort(stored)
	slices.Sort(acked)
	want := []string{"m0", "m1", "m2", "m3", "m4", "m5", "m6", "m7", "m8", "m9"}
	if diff := cmp.Diff(want, stored); diff != "" {
		t.Errorf("records inserted (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"a0", "a1", "a2", "a3", "a4", "a5", "a6", "a7", "a8", "a9"}, acked); diff != "" {
		t.Errorf("ack ids emitted (-want +got):\n%s", diff)
	}

	// One record the server refuses for memory whatever else is in the INSERT: the records
	// before it are inserted, and it fails the bundle after its retries, with the server's error
	// (the records after it wait for the runner's retry of the bundle).
	conn = &fakeConn{}
	conn.sendRows = func(n int) error {
		for _, raw := range conn.appended[len(conn.appended)-1][0].([]string) {
			if raw == "m6" {
				return memory
			}
		}
		return nil
	}
	f.conn = conn
	err := f.ProcessElement(context.Background(), 0, flow.DeadLetters{Letters: recs}, func([]string) {})
	if !errors.Is(err, memory) || !strings.Contains(err.Error(), "INSERT of 1 dead letters") || !strings.Contains(err.Error(), "3 attempts") {
		t.Fatalf("a record the server refuses alone: %v, want the memory error of 1 dead letter after 3 attempts", err)
	}
	stored = nil
	for _, cols := range conn.appended {
		if raw := cols[0].([]string); !slices.Contains(raw, "m6") {
			stored = append(stored, raw...)
		}
	}
	slices.Sort(stored)
	if diff := cmp.Diff([]string{"m0", "m1", "m2", "m3", "m4", "m5"}, stored); diff != "" {
		t.Errorf("records inserted beside the one refused (-want +got):\n%s", diff)
	}
}

// TestInsertOptionalColumns: a table with the optional columns gets the message id, the
// attributes as one JSON object (keys sorted, {} for none) and the ordering key.
func TestInsertOptionalColumns(t *testing.T) {
	recs := []*flow.DeadLetter{
		{Payload: []byte("{}"), ErrorMessage: "e1", StackTrace: "s1", FailedAtMillis: 1700000000000, MessageID: "m1",
			Attributes: map[string]string{"z": "1", "event_type": "click", "q": `"quoted"`}, OrderingKey: "k1"},
		{Payload: []byte("x"), ErrorMessage: "e2", StackTrace: "s2", FailedAtMillis: 1700000001000, MessageID: "m2"},
	}
	conn := &fakeConn{}
	f := &writeFn{Config: Config{ClickHouse: chclient.Config{Database: "db"}, Table: "dl", Retry: chclient.Retry{}}, conn: conn,
		columns: []string{"raw_message", "error_message", "stack_trace", "failed_at", "message_id", "attributes", "ordering_key"}}
	if err := f.insert(context.Background(), recs); err != nil {
		t.Fatal(err)
	}
	want := [][]any{{
		[]string{"{}", "x"}, []string{"e1", "e2"}, []string{"s1", "s2"},
		[]time.Time{time.UnixMilli(1700000000000).UTC(), time.UnixMilli(1700000001000).UTC()},
		[]string{"m1", "m2"}, []string{`{"event_type":"click","q":"\"quoted\"","z":"1"}`, "{}"}, []string{"k1", ""},
	}}
	if diff := cmp.Diff(want, conn.appended); diff != "" {
		t.Errorf("columns appended (-want +got):\n%s", diff)
	}
	if want := "INSERT INTO `db`.`dl` (`raw_message`, `error_message`, `stack_trace`, `failed_at`, `message_id`, `attributes`, `ordering_key`)"; len(conn.queries) != 1 || conn.queries[0] != want {
		t.Errorf("statements %q, want %q", conn.queries, want)
	}
}

// TestTableHint: the CREATE TABLE statement comes with a dead-letter table that is missing or does
// not fit, not with a failure to read the table (the server unreachable, say), which says nothing
// of the table.
func TestTableHint(t *testing.T) {
	good := [][4]string{{"raw_message", "String", "", ""}, {"error_message", "String", "", ""}, {"stack_trace", "String", "", ""}, {"failed_at", "DateTime", "", ""}}
	for _, tc := range []struct {
		name string
		conn schemafake.Conn
		want string // "" for no error
		hint bool
	}{
		{"fits", schemafake.Conn{Columns: good}, "", false},
		{"missing", schemafake.Conn{}, "table db.dl does not exist", true},
		{"a column wrong", schemafake.Conn{Columns: append(good[:3:3], [4]string{"failed_at", "Date", "", ""})}, "column failed_at is Date, not DateTime", true},
		{"nothing writable", schemafake.Conn{Columns: [][4]string{{"raw_message", "String", "MATERIALIZED", "''"}}}, "has no column an INSERT may write", true},
		// An EPHEMERAL column is stored nowhere: the dead letter's bytes would be lost.
		{"an EPHEMERAL column", schemafake.Conn{Columns: append([][4]string{{"raw_message", "String", "EPHEMERAL", "defaultValueOfTypeName('String')"}}, good[1:]...)},
			"no writable column raw_message String", true},
		// Another table given for it: the target table, say.
		{"none of its columns", schemafake.Conn{Columns: [][4]string{{"id", "UInt32", "", ""}, {"name", "String", "", ""}}},
			"table db.dl: has none of the columns of a dead-letter table (raw_message, error_message, stack_trace, failed_at): is it one?", true},
		{"unreadable", schemafake.Conn{Fail: errors.New("dial tcp 127.0.0.1:9000: connect: connection refused")}, "connection refused", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Columns(context.Background(), &tc.conn, "db", "dl")
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Columns: %v, want an error containing %q", err, tc.want)
			}
			if got := strings.Contains(err.Error(), "CREATE TABLE `db`.`dl` (raw_message String"); got != tc.hint {
				t.Errorf("error %q: has the CREATE TABLE statement %v, want %v", err, got, tc.hint)
			}
		})
	}
}

// TestInsertTableReadAgainLogsHintOnce: while the table's failed_at is a Date, every attempt
// fails, and the table read again after each does not fit; the CREATE TABLE statement is logged
// once, not with each retry, and the final error has it.
func TestInsertTableReadAgainLogsHintOnce(t *testing.T) {
	var logs bytes.Buffer
	defer slog.SetDefault(slog.Default())
	slog.SetDefault(slog.New(slog.NewTextHandler(&logs, nil)))

	ex := &clickhouse.Exception{Code: 53, Message: "Type mismatch"}
	conn := &fakeConn{sendErrs: []error{ex, ex, ex, ex}, Conn: schemafake.Conn{Columns: [][4]string{
		{"raw_message", "String", "", ""}, {"error_message", "String", "", ""}, {"stack_trace", "String", "", ""}, {"failed_at", "Date", "", ""}}}}
	f := &writeFn{
		Config:  Config{ClickHouse: chclient.Config{Database: "db"}, Table: "dl", Retry: chclient.Retry{MaxRetries: 3}},
		conn:    conn,
		columns: columnNames,
		types:   []string{"String", "String", "String", "Date"}, // the stage's view: the INSERT is sent, and fails
	}
	recs := []*flow.DeadLetter{{Payload: []byte("x"), ErrorMessage: "e", StackTrace: "s", FailedAtMillis: 1700000000000, MessageID: "m1"}}
	err := f.insert(context.Background(), recs)
	if err == nil {
		t.Fatal("insert: no error")
	}
	for _, want := range []string{"4 attempts", "column failed_at is Date, not DateTime", "a dead-letter table has the columns of: CREATE TABLE `db`.`dl`"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not contain %q", err, want)
		}
	}
	if n := strings.Count(logs.String(), "CREATE TABLE"); n != 1 {
		t.Errorf("the CREATE TABLE statement is logged %d times, want once:\n%s", n, logs.String())
	}
	if n := strings.Count(logs.String(), "dead-letter INSERT failed; retrying"); n != 3 {
		t.Errorf("%d retries logged, want 3:\n%s", n, logs.String())
	}
	if !strings.Contains(logs.String(), "column failed_at is Date, not DateTime") {
		t.Errorf("the log does not name the column:\n%s", logs.String())
	}
}

// TestInsertRefreshesColumns: with SchemaRefresh passed, the INSERT reads the table first and
// fills an optional column added since; without, it names the columns read before; a table that
// cannot be read keeps them.
func TestInsertRefreshesColumns(t *testing.T) {
	four := [][4]string{{"raw_message", "String", "", ""}, {"error_message", "String", "", ""}, {"stack_trace", "String", "", ""}, {"failed_at", "DateTime", "", ""}}
	added := append(four[:4:4], [4]string{"message_id", "String", "DEFAULT", "''"})
	recs := []*flow.DeadLetter{{Payload: []byte("x"), ErrorMessage: "e", StackTrace: "s", FailedAtMillis: 1700000000000, MessageID: "m1"}}
	for _, tc := range []struct {
		name    string
		refresh time.Duration
		conn    schemafake.Conn
		want    string
	}{
		{"refreshed", time.Nanosecond, schemafake.Conn{Columns: added}, "INSERT INTO `db`.`dl` (`raw_message`, `error_message`, `stack_trace`, `failed_at`, `message_id`)"},
		{"not yet", time.Hour, schemafake.Conn{Columns: added}, "INSERT INTO `db`.`dl` (`raw_message`, `error_message`, `stack_trace`, `failed_at`)"},
		{"never", 0, schemafake.Conn{Columns: added}, "INSERT INTO `db`.`dl` (`raw_message`, `error_message`, `stack_trace`, `failed_at`)"},
		{"unreadable", time.Nanosecond, schemafake.Conn{Columns: four, Fail: errors.New("connection refused")}, "INSERT INTO `db`.`dl` (`raw_message`, `error_message`, `stack_trace`, `failed_at`)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			conn := &fakeConn{Conn: tc.conn}
			f := &writeFn{
				Config:  Config{ClickHouse: chclient.Config{Database: "db"}, Table: "dl", SchemaRefresh: tc.refresh},
				conn:    conn,
				columns: columnNames,
				types:   []string{"String", "String", "String", "DateTime"},
				readAt:  time.Now(),
			}
			time.Sleep(time.Millisecond)
			if err := f.insert(context.Background(), recs); err != nil {
				t.Fatal(err)
			}
			if len(conn.queries) != 1 || conn.queries[0] != tc.want {
				t.Errorf("statements %q, want %q", conn.queries, tc.want)
			}
		})
	}
}

// TestLeaveOutWarnsOnce: an optional column left out is warned of once for each type, not at
// each reading of the table.
func TestLeaveOutWarnsOnce(t *testing.T) {
	var logs bytes.Buffer
	defer slog.SetDefault(slog.Default())
	slog.SetDefault(slog.New(slog.NewTextHandler(&logs, nil)))
	conn := &fakeConn{Conn: schemafake.Conn{Columns: [][4]string{{"raw_message", "String", "", ""}, {"error_message", "String", "", ""},
		{"stack_trace", "String", "", ""}, {"failed_at", "DateTime", "", ""}, {"message_id", "UInt64", "", ""}}}}
	f := &writeFn{Config: Config{ClickHouse: chclient.Config{Database: "db"}, Table: "dl"}, conn: conn}
	for range 3 {
		columns, _, err := columnTypes(context.Background(), conn, "db", "dl", f.leaveOut)
		if err != nil || len(columns) != 4 {
			t.Fatalf("columnTypes = %v, %v; want the four columns", columns, err)
		}
	}
	conn.Conn.Columns[4][1] = "Int64"
	if _, _, err := columnTypes(context.Background(), conn, "db", "dl", f.leaveOut); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(logs.String(), "no longer a String"); n != 2 {
		t.Errorf("%d warnings, want 2 (UInt64 once, then Int64):\n%s", n, logs.String())
	}
}

// TestCut: a batch of records goes in parts of at most maxRows records and maxBytes bytes, in
// order, a record larger than maxBytes alone; a bound of 0 is none.
func TestCut(t *testing.T) {
	recs := make([]*flow.DeadLetter, 7)
	for i := range recs {
		recs[i] = &flow.DeadLetter{MessageID: fmt.Sprint(i), Payload: make([]byte, 100)}
	}
	recs[4].Payload = make([]byte, 1000)
	one := recs[0].Bytes()
	sizes := func(parts [][]*flow.DeadLetter) []int {
		var out []int
		for _, p := range parts {
			out = append(out, len(p))
		}
		return out
	}
	for _, tc := range []struct {
		name     string
		maxRows  int
		maxBytes int64
		want     []int
	}{
		{"no bound", 0, 0, []int{7}},
		{"rows", 3, 0, []int{3, 3, 1}},
		{"rows, exactly", 7, 0, []int{7}},
		{"bytes: three small, the large one alone", 0, 3 * one, []int{3, 1, 1, 2}},
		{"rows and bytes", 2, 3 * one, []int{2, 2, 1, 2}},
	} {
		parts := cut(recs, tc.maxRows, tc.maxBytes)
		if diff := cmp.Diff(tc.want, sizes(parts)); diff != "" {
			t.Errorf("%s: part sizes (-want +got):\n%s", tc.name, diff)
		}
		var ids []string
		for _, p := range parts {
			for _, r := range p {
				ids = append(ids, r.MessageID)
			}
		}
		if diff := cmp.Diff([]string{"0", "1", "2", "3", "4", "5", "6"}, ids); diff != "" {
			t.Errorf("%s: records in order (-want +got):\n%s", tc.name, diff)
		}
	}
}
