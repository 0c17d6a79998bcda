package main

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
	"github.com/ClickHouse/clickhouse-go/v2/lib/proto"

	"github.com/ch-beam/pubsub-to-clickhouse/internal/chtest"
	"github.com/ch-beam/pubsub-to-clickhouse/internal/pubsubtest"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/deadletter"
)

// TestReplayFromViewAndMerge: replay reads the dead letters of a View of a dead-letter table, or
// of a Merge table over several, as of the table itself (it only reads them); --delete from one
// is refused, as ClickHouse deletes rows from a MergeTree table alone. Before, both were refused
// as tables that "cannot be inserted into", the write stage's rule.
func TestReplayFromViewAndMerge(t *testing.T) {
	srv := chtest.New(t)
	e := pubsubtest.Start(t)
	events := e.Topic(t, "events")
	sub := e.Subscription(t, events, "events-sub", 10*time.Second)
	srv.MustExec(t, deadletter.CreateTable(srv.Database, "dl"))
	srv.MustExec(t, "INSERT INTO "+srv.Database+".dl (raw_message, error_message, stack_trace, failed_at, attributes) VALUES "+
		`('{"a":1}', 'e', '', now(), '{"k":"v"}'), ('{"a":2}', 'e', '', now(), '{}')`)
	srv.MustExec(t, "CREATE VIEW "+srv.Database+".dl_view AS SELECT * FROM "+srv.Database+".dl")
	srv.MustExec(t, "CREATE TABLE "+srv.Database+".dl_all AS "+srv.Database+".dl ENGINE = Merge("+srv.Database+", '^dl$')")
	flags := []string{"--topic=" + events, "--clickHouseUrl=" + srv.URL, "--clickHouseDatabase=" + srv.Database,
		"--clickHouseUsername=default", "--clickHousePassword=", "--since=1h"}
	for _, from := range []string{"dl_view", "dl_all"} {
		var out, errOut strings.Builder
		code := runReplay(context.Background(), newCmdIO(strings.NewReader(""), &out, &errOut), append(flags, "--fromTable="+from))
		if code != exitOK || !strings.Contains(out.String(), "replayed 2 dead letters") {
			t.Fatalf("--fromTable=%s: exit %d, standard output\n%s\nstandard error\n%s", from, code, out.String(), errOut.String())
		}
		var got []string
		for _, m := range e.PullAll(t, sub) {
			got = append(got, string(m.Data)+" k="+m.Attributes["k"])
		}
		slices.Sort(got)
		if want := []string{`{"a":1} k=v`, `{"a":2} k=`}; !slices.Equal(got, want) {
			t.Errorf("--fromTable=%s published %q, want %q", from, got, want)
		}
	}
	var out, errOut strings.Builder
	code := runReplay(context.Background(), newCmdIO(strings.NewReader(""), &out, &errOut), append(flags, "--fromTable=dl_view", "--delete"))
	if want := "has engine View, and ClickHouse deletes rows (ALTER TABLE ... DELETE, a mutation) from a MergeTree engine's tables alone"; code != exitFailed || !strings.Contains(errOut.String(), want) {
		t.Errorf("--delete from a View: exit %d, standard error\n%s\nwant %d and %q", code, errOut.String(), exitFailed, want)
	}
	if n := len(e.PullAll(t, sub)); n != 0 {
		t.Errorf("--delete from a View published %d messages, want none", n)
	}
	if got := srv.MustQuery(t, "SELECT count() FROM "+srv.Database+".dl"); got != "2" {
		t.Errorf("%s rows left in the dead-letter table, want 2", got)
	}
}

// failingAlter is a connection whose ALTER number fail (from 1) fails with the server's error
// for a query over its memory limit, before it reaches the server.
type failingAlter struct {
	driver.Conn
	fail, alters int
}

func (c *failingAlter) Exec(ctx context.Context, query string, args ...any) error {
	if strings.HasPrefix(query, "ALTER TABLE") {
		if c.alters++; c.alters == c.fail {
			return &proto.Exception{Code: 241, Name: "DB::Exception", Message: "Memory limit (for query) exceeded"}
		}
	}
	return c.Conn.Exec(ctx, query, args...)
}

// TestReplayDeleteSecondAlterFails: --delete of more than 10,000 rows submits a DELETE per 10,000
// hashes; when the second fails, the first goes on in ClickHouse, and the error says which rows
// go and which stay. Before, it said only "delete them by hand", as if none were deleted.
func TestReplayDeleteSecondAlterFails(t *testing.T) {
	srv := chtest.New(t)
	srv.MustExec(t, deadletter.CreateTable(srv.Database, "dl"))
	srv.MustExec(t, "INSERT INTO "+srv.Database+".dl (raw_message, error_message, stack_trace, failed_at) VALUES "+
		"('first', 'e', '', now()), ('second', 'e', '', now())")
	hash := rowHash([]string{"message_id", "attributes", "ordering_key"})
	var first, second uint64
	conn := srv.Conn(t)
	for text, h := range map[string]*uint64{"first": &first, "second": &second} {
		if err := conn.QueryRow(context.Background(), "SELECT "+hash+" FROM "+srv.Database+".dl WHERE raw_message = ?", text).Scan(h); err != nil {
			t.Fatal(err)
		}
	}
	// The first row's hash in the first DELETE, the second's in the second.
	hashes := make([]uint64, 10_001)
	for i := range hashes {
		hashes[i] = uint64(i) + 1
	}
	hashes[0], hashes[10_000] = first, second
	var errOut strings.Builder
	_, err := deleteRows(context.Background(), newCmdIO(strings.NewReader(""), &errOut, &errOut), &failingAlter{Conn: conn, fail: 2},
		srv.Database, "dl", hash, hashes, time.Minute)
	var submitted deleteSubmitted
	if want := "DELETE 2 of 2 failed: code: 241, message: Memory limit (for query) exceeded; the 1 before it, of the first 10000 replayed rows' hashes, were submitted"; !errors.As(err, &submitted) ||
		!strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "the rows of the other 1 of the 10001 hashes were replayed and are kept") {
		t.Fatalf("deleteRows: %v\nwant a deleteSubmitted holding %q", err, want)
	}
	// The first DELETE goes on: the first row goes, the second stays.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		left := srv.MustQuery(t, "SELECT groupArray(raw_message) FROM "+srv.Database+".dl")
		if left == "['second']" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("rows left %s, want ['second'] once the first DELETE is done", left)
		}
	}
}
