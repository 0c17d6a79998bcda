package deadletter

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
	"github.com/google/go-cmp/cmp"

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
// they are spent).
type fakeConn struct {
	driver.Conn // not implemented: a call other than PrepareBatch panics
	sendErrs    []error
	queries     []string
	appended    [][]any // per attempt, the columns appended
}

func (c *fakeConn) PrepareBatch(_ context.Context, query string, _ ...driver.PrepareBatchOption) (driver.Batch, error) {
	c.queries = append(c.queries, query)
	c.appended = append(c.appended, nil)
	return &fakeBatch{c: c}, nil
}

type fakeBatch struct {
	driver.Batch
	c *fakeConn
}

func (b *fakeBatch) Column(int) driver.BatchColumn { return fakeColumn{b.c} }
func (b *fakeBatch) Abort() error                  { return nil }
func (b *fakeBatch) Send() error {
	if len(b.c.sendErrs) == 0 {
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
