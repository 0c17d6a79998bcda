package main

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

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
