package write

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/ClickHouse/clickhouse-go/v2"
	chcolumn "github.com/ClickHouse/clickhouse-go/v2/lib/column"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
	"github.com/google/go-cmp/cmp"

	"github.com/ch-beam/pubsub-to-clickhouse/transforms/chclient"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/convert"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/flow"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/schema"
)

// fakeConn is a ClickHouse connection whose INSERTs go to send, which gets the message ids of
// the rows of each INSERT (the table's column id) and returns the server's answer; every other
// method of driver.Conn is absent.
type fakeConn struct {
	driver.Conn
	send    func(ids []string) error
	inserts [][]string // the ids of each INSERT sent, failed or not
}

func (c *fakeConn) PrepareBatch(ctx context.Context, query string, _ ...driver.PrepareBatchOption) (driver.Batch, error) {
	if !strings.HasPrefix(query, "INSERT INTO `db`.`events` (`id`, `n`)") {
		return nil, fmt.Errorf("unexpected statement %q", query)
	}
	// The driver's own columns of the table (id String, n UInt8), which the write stage fills
	// by Append or, for the types that have one, from the Native format (Decode).
	var cols []chcolumn.Interface
	for _, c := range [][2]string{{"id", "String"}, {"n", "UInt8"}} {
		col, err := chcolumn.Type(c[1]).Column(c[0], nil)
		if err != nil {
			return nil, err
		}
		cols = append(cols, col)
	}
	return &fakeBatch{conn: c, columns: cols}, nil
}

func (c *fakeConn) Close() error { return nil }

type fakeBatch struct {
	driver.Batch
	conn    *fakeConn
	columns []chcolumn.Interface
}

func (b *fakeBatch) Columns() []chcolumn.Interface   { return b.columns }
func (b *fakeBatch) Column(i int) driver.BatchColumn { return fakeColumn{b, i} }
func (b *fakeBatch) Abort() error                    { return nil }

func (b *fakeBatch) Send() error {
	ids := make([]string, b.columns[0].Rows())
	for i := range ids {
		ids[i] = b.columns[0].Row(i, false).(string)
	}
	b.conn.inserts = append(b.conn.inserts, ids)
	return b.conn.send(ids)
}

type fakeColumn struct {
	b *fakeBatch
	i int
}

func (c fakeColumn) Append(v any) error    { _, err := c.b.columns[c.i].Append(v); return err }
func (c fakeColumn) AppendRow(v any) error { return errors.New("AppendRow is not used") }

// newInsertFn returns the write stage's DoFn as Setup would leave it, for the table
// db.events (id String, n UInt8), inserting through conn.
func newInsertFn(t *testing.T, conn *fakeConn, maxRows, retries int) *insertFn {
	t.Helper()
	tab := &schema.Table{Database: "db", Name: "events", ServerTimeZone: "UTC",
		Columns: []schema.Column{column(t, "id", "String", ""), column(t, "n", "UInt8", "")}}
	f := &insertFn{Config: Config{
		ClickHouse: chclient.Config{URL: "clickhouse://127.0.0.1:9000", Database: "db", Username: "writer"},
		Table:      "events",
		Settings:   chclient.Settings{MaxInsertBlockSize: 1000},
		Retry:      chclient.Retry{MaxRetries: retries}, // no backoff: the retries follow at once
		MaxRows:    maxRows,
	}}
	f.tracker = &convert.Tracker{Stage: "write", Database: "db", Table: "events"}
	if err := f.tracker.Set(tab); err != nil {
		t.Fatal(err)
	}
	f.columns, f.conv, f.conn = f.tracker.Schema().Writable(), f.tracker.Converter(), conn
	return f
}

// batchOf returns the rows of messages m-1 … m-n, each with the ack id a-i, as the parse stage
// emits them.
func batchOf(f *insertFn, n int) flow.Rows {
	var b flow.Rows
	for i := 1; i <= n; i++ {
		id := fmt.Sprintf("m-%d", i)
		b.Rows = append(b.Rows, flow.Row{
			Payload:   fmt.Appendf(nil, `{"id":%q,"n":%d}`, id, i),
			Schema:    f.conv.SchemaHash(),
			MessageID: id,
			AckID:     fmt.Sprintf("a-%d", i),
		})
	}
	return b
}

// outcome is what one call of ProcessElement gave.
type outcome struct {
	Inserts     [][]string // the ids of each INSERT sent
	Stored      [][]string // the ack ids emitted for the acknowledging stage
	DeadLetters []string   // "<message id> <ack id>: <error message>" of each dead letter
	Err         string
}

func process(f *insertFn, conn *fakeConn, b flow.Rows) outcome {
	var o outcome
	err := f.ProcessElement(context.Background(), 0, b,
		func(d flow.DeadLetter) {
			o.DeadLetters = append(o.DeadLetters, d.MessageID+" "+d.AckID+": "+d.ErrorMessage)
		},
		func(ids []string) { o.Stored = append(o.Stored, ids) })
	if err != nil {
		o.Err = err.Error()
	}
	o.Inserts = conn.inserts
	return o
}

func serverError(code int32, msg string) error {
	return &clickhouse.Exception{Code: code, Name: chclient.CodeName(code), Message: msg}
}

// TestProcessElement holds the write stage's split, retry and acknowledgement to what each answer
// of the server must give: which INSERTs are sent, which ack ids are emitted, which rows are dead
// letters and when the bundle fails.
func TestProcessElement(t *testing.T) {
	all := []string{"a-1", "a-2", "a-3", "a-4"}
	ids := func(ids ...string) []string { return ids }
	tests := []struct {
		name    string
		rows    int
		maxRows int
		retries int
		send    func(calls int, ids []string) error
		want    outcome
	}{
		{
			name: "inserted at the first attempt: one INSERT, every ack id emitted",
			rows: 4, retries: 3,
			send: func(int, []string) error { return nil },
			want: outcome{Inserts: [][]string{ids("m-1", "m-2", "m-3", "m-4")}, Stored: [][]string{all}},
		},
		{
			name: "MaxRows cuts the batch into INSERTs of at most that many rows",
			rows: 5, maxRows: 2, retries: 3,
			send: func(int, []string) error { return nil },
			want: outcome{
				Inserts: [][]string{ids("m-1", "m-2"), ids("m-3", "m-4"), ids("m-5")},
				Stored:  [][]string{ids("a-1", "a-2", "a-3", "a-4", "a-5")},
			},
		},
		{
			name: "a transient failure is retried with the same rows",
			rows: 4, retries: 3,
			send: func(calls int, _ []string) error {
				if calls == 1 {
					return errors.New("read: connection reset by peer")
				}
				return nil
			},
			want: outcome{Inserts: [][]string{ids("m-1", "m-2", "m-3", "m-4"), ids("m-1", "m-2", "m-3", "m-4")}, Stored: [][]string{all}},
		},
		{
			name: "transient failures beyond the retries fail the bundle: nothing acknowledged or dead-lettered",
			rows: 2, retries: 2,
			send: func(int, []string) error { return serverError(159, "Timeout exceeded") },
			want: outcome{
				Inserts: [][]string{ids("m-1", "m-2"), ids("m-1", "m-2"), ids("m-1", "m-2")},
				Err:     "INSERT of 2 rows into db.events failed after 3 attempts",
			},
		},
		{
			name: "a data error splits the INSERT until the rejected row is alone, which becomes a dead letter",
			rows: 4, retries: 3,
			send: func(_ int, ids []string) error {
				if slices.Contains(ids, "m-3") {
					return serverError(53, "Type mismatch in VALUES section")
				}
				return nil
			},
			want: outcome{
				Inserts:     [][]string{ids("m-1", "m-2", "m-3", "m-4"), ids("m-1", "m-2"), ids("m-3", "m-4"), ids("m-3"), ids("m-4")},
				Stored:      [][]string{ids("a-1", "a-2", "a-4")},
				DeadLetters: []string{"m-3 a-3: ClickHouse rejected the row: code: 53, message: Type mismatch in VALUES section"},
			},
		},
		{
			name: "a memory error splits the INSERT without dead letters",
			rows: 4, retries: 3,
			send: func(_ int, ids []string) error {
				if len(ids) > 2 {
					return serverError(241, "Memory limit exceeded")
				}
				return nil
			},
			want: outcome{
				Inserts: [][]string{ids("m-1", "m-2", "m-3", "m-4"), ids("m-1", "m-2"), ids("m-3", "m-4")},
				Stored:  [][]string{all},
			},
		},
		{
			name: "an unknown code that persists is taken to be about the rows, once per batch",
			rows: 2, retries: 5,
			send: func(_ int, ids []string) error {
				if slices.Contains(ids, "m-2") {
					return serverError(99999, "something new")
				}
				return nil
			},
			want: outcome{
				// PresumedDataAttempts attempts of the whole, then the halves: m-2 alone fails once
				// more and is rejected without further retries.
				Inserts:     [][]string{ids("m-1", "m-2"), ids("m-1", "m-2"), ids("m-1"), ids("m-2")},
				Stored:      [][]string{ids("a-1")},
				DeadLetters: []string{"m-2 a-2: ClickHouse rejected the row: code: 99999, message: something new"},
			},
		},
		{
			name: "a refusal is retried, then fails the bundle naming the user; no split, no dead letter",
			rows: 2, retries: 1,
			send: func(int, []string) error { return serverError(497, "Not enough privileges") },
			want: outcome{
				Inserts: [][]string{ids("m-1", "m-2"), ids("m-1", "m-2")},
				Err: `ClickHouse refuses every INSERT into db.events, whatever the rows (code 497 ACCESS_DENIED), after 2 attempts: ` +
					`code: 497, message: Not enough privileges; no split can fix this, so nothing was dead-lettered and the messages stay ` +
					`unacknowledged: check that the table exists and that ClickHouse user "writer" may insert into it`,
			},
		},
		{
			name: "a password refused while the job runs fails the bundle naming the user and the password, not the table",
			rows: 2, retries: 1,
			send: func(int, []string) error { return serverError(193, "Wrong password for user writer") },
			want: outcome{
				Inserts: [][]string{ids("m-1", "m-2"), ids("m-1", "m-2")},
				Err: `ClickHouse refuses every INSERT into db.events, whatever the rows (code 193 WRONG_PASSWORD), after 2 attempts: ` +
					`code: 193, message: Wrong password for user writer; no split can fix this, so nothing was dead-lettered and the messages stay ` +
					`unacknowledged: the server no longer lets ClickHouse user "writer" log in (the user dropped, its password changed, or its allowed ` +
					`addresses narrowed): check ClickHouse user and ClickHouse password`,
			},
		},
		{
			name: "a settings constraint that refuses a setting every INSERT carries is retried, then fails the bundle naming it; no split, no dead letter",
			rows: 2, retries: 1,
			send: func(int, []string) error {
				return serverError(452, "Setting max_insert_block_size shouldn't be greater than 100000")
			},
			want: outcome{
				Inserts: [][]string{ids("m-1", "m-2"), ids("m-1", "m-2")},
				Err: `ClickHouse refuses every INSERT into db.events, whatever the rows (code 452 SETTING_CONSTRAINT_VIOLATION), after 2 attempts: ` +
					`code: 452, message: Setting max_insert_block_size shouldn't be greater than 100000; no split can fix this, so nothing was ` +
					`dead-lettered and the messages stay unacknowledged: a constraint of ClickHouse user "writer"'s settings profile refuses a ` +
					`setting that every INSERT carries`,
			},
		},
		{
			name: "a table lock that timed out (an ALTER, TRUNCATE or DROP waiting behind a long query) is retried with the same rows, never split or dead-lettered",
			rows: 2, retries: 3,
			send: func(calls int, _ []string) error {
				if calls <= 3 {
					return serverError(473, `READ locking attempt on "db.events" has timed out! (120000ms) Possible deadlock avoided. Client should retry.`)
				}
				return nil
			},
			want: outcome{
				Inserts: [][]string{ids("m-1", "m-2"), ids("m-1", "m-2"), ids("m-1", "m-2"), ids("m-1", "m-2")},
				Stored:  [][]string{ids("a-1", "a-2")},
			},
		},
		{
			name: "an empty batch sends nothing",
			rows: 0, retries: 3,
			send: func(int, []string) error { return errors.New("no INSERT expected") },
			want: outcome{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			calls := 0
			conn := &fakeConn{}
			conn.send = func(ids []string) error { calls++; return tt.send(calls, ids) }
			f := newInsertFn(t, conn, tt.maxRows, tt.retries)
			got := process(f, conn, batchOf(f, tt.rows))
			if tt.want.Err != "" {
				if !strings.Contains(got.Err, tt.want.Err) {
					t.Errorf("error %q, want one containing %q", got.Err, tt.want.Err)
				}
				got.Err = tt.want.Err
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("outcome (-want +got):\n%s", diff)
			}
		})
	}
}

// TestInOrder: the rows of a batch, in any order, come out in the order of their message ids,
// and rows without an id in the order of their payloads, each row once.
func TestInOrder(t *testing.T) {
	batch := []flow.Row{
		{MessageID: "12", Payload: []byte(`{"n":12}`)},
		{MessageID: "", Payload: []byte(`{"n":"b"}`)},
		{MessageID: "100", Payload: []byte(`{"n":100}`)},
		{MessageID: "", Payload: []byte(`{"n":"a"}`)},
		{MessageID: "9", Payload: []byte(`{"n":9}`)},
		{MessageID: "", Payload: []byte(`{"n":"c"}`)},
	}
	// Rows without an id and the same payload go by what else they convert from.
	same := []byte(`{"n":"same"}`)
	batch = append(batch,
		flow.Row{Payload: same, PublishTimeMillis: 2000},
		flow.Row{Payload: same, PublishTimeMillis: 1000},
		flow.Row{Payload: same, PublishTimeMillis: 1000, OrderingKey: "k"},
		flow.Row{Payload: same, PublishTimeMillis: 1000, OrderingKey: "k", Attributes: map[string]string{"a": "2"}},
		flow.Row{Payload: same, PublishTimeMillis: 1000, OrderingKey: "k", Attributes: map[string]string{"a": "1", "b": "1"}},
		flow.Row{Payload: same, PublishTimeMillis: 1000, OrderingKey: "k", Attributes: map[string]string{"a": "1"}},
		flow.Row{Payload: same, PublishTimeMillis: 1000, OrderingKey: "k", Attributes: map[string]string{"a": "1"}, Transformed: true, Original: []byte("y")},
		flow.Row{Payload: same, PublishTimeMillis: 1000, OrderingKey: "k", Attributes: map[string]string{"a": "1"}, Transformed: true, Original: []byte("x")},
	)
	want := []string{`:{"n":"a"}`, `:{"n":"b"}`, `:{"n":"c"}`,
		`:{"n":"same"} 1000  map[] `, `:{"n":"same"} 1000 k map[] `, `:{"n":"same"} 1000 k map[a:1] `,
		`:{"n":"same"} 1000 k map[a:1] x`, `:{"n":"same"} 1000 k map[a:1] y`,
		`:{"n":"same"} 1000 k map[a:1 b:1] `, `:{"n":"same"} 1000 k map[a:2] `, `:{"n":"same"} 2000  map[] `,
		`100:{"n":100}`, `12:{"n":12}`, `9:{"n":9}`}
	describe := func(r *Row) string {
		if !bytes.Equal(r.Payload, same) {
			return r.MessageID + ":" + string(r.Payload)
		}
		return fmt.Sprintf("%s:%s %d %s %v %s", r.MessageID, r.Payload, r.PublishTimeMillis, r.OrderingKey, r.Attributes, r.Original)
	}
	for round := range 20 {
		shuffled := slices.Clone(batch)
		for i := range shuffled { // a fixed permutation of each round's own
			j := (i*7 + round*13) % len(shuffled)
			shuffled[i], shuffled[j] = shuffled[j], shuffled[i]
		}
		var got []string
		for _, r := range inOrder(shuffled) {
			got = append(got, describe(r))
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("round %d, from %v (-want +got):\n%s", round, shuffled, diff)
		}
	}
}
