package deadletter

import (
	"context"
	"strings"
	"testing"

	"github.com/ch-beam/pubsub-to-clickhouse/internal/chtest"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/chclient"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/flow"
)

// TestBufferDestinationGone: a dead-letter table of the engine Buffer whose destination is
// dropped while the job runs took the INSERT, and ClickHouse discarded the dead letters at the
// flush ("Destination table ... doesn't exist. Block of data is discarded."), their messages
// acknowledged. Now the destination is checked before each INSERT: the batch fails after its
// retries, its records unacknowledged, and lands once the destination is back.
func TestBufferDestinationGone(t *testing.T) {
	srv := chtest.New(t)
	srv.MustExec(t, CreateTable(srv.Database, "dl_dest"))
	srv.MustExec(t, "CREATE TABLE "+srv.Database+".dl AS "+srv.Database+".dl_dest ENGINE = Buffer("+srv.Database+", dl_dest, 1, 0, 1, 1, 1, 1, 1)")
	ctx := context.Background()
	f := setUpTable(t, srv, "dl")
	srv.MustExec(t, "DROP TABLE "+srv.Database+".dl_dest")
	recs := []*flow.DeadLetter{{Payload: []byte("not json"), ErrorMessage: "payload: invalid JSON", StackTrace: "stage: parse", FailedAtMillis: 1700000000000, MessageID: "m1"}}
	err := f.insert(ctx, recs)
	want := "passes its rows on to " + srv.Database + ".dl_dest, which does not exist"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("dead letters into a Buffer table whose destination is gone: %v, want an error holding %q", err, want)
	}
	srv.MustExec(t, CreateTable(srv.Database, "dl_dest"))
	if err := f.insert(ctx, recs); err != nil {
		t.Fatalf("with the destination back: %v", err)
	}
	srv.MustExec(t, "OPTIMIZE TABLE "+srv.Database+".dl") // a Buffer's OPTIMIZE flushes it
	if got := srv.MustQuery(t, "SELECT raw_message FROM "+srv.Database+".dl_dest"); got != "not json" {
		t.Errorf("dead letters in the destination: %q, want the one", got)
	}
}

// TestNullTableLosesNoDeadLetter: the dead-letter table dropped and created again as a Null table
// while the job runs (or its materialized views dropped). ClickHouse takes every INSERT into it
// and stores nothing, so the dead letters were acknowledged and lost. Now, as the only
// destination, the INSERT is refused (retried, then the bundle fails, nothing acknowledged)
// until a materialized view stores what the table takes; beside the topic it goes on, warned of.
func TestNullTableLosesNoDeadLetter(t *testing.T) {
	srv := chtest.New(t)
	db := srv.Database
	srv.MustExec(t, CreateTable(db, "dl"))
	ctx := context.Background()
	f := setUpTable(t, srv, "dl")
	srv.MustExec(t, "DROP TABLE "+db+".dl")
	srv.MustExec(t, "CREATE TABLE "+db+".dl (raw_message String, error_message String, stack_trace String, failed_at DateTime, "+
		"message_id String, attributes String, ordering_key String) ENGINE = Null")
	batch := flow.DeadLetters{Letters: []flow.DeadLetter{{Payload: []byte("not json"), ErrorMessage: "payload: invalid JSON", StackTrace: "stage: parse",
		FailedAtMillis: 1700000000000, MessageID: "m1", AckID: "a1"}}}
	var acked []string
	emit := func(ids []string) { acked = append(acked, ids...) }
	err := f.ProcessElement(ctx, 0, batch, emit)
	want := "the dead-letter table " + db + ".dl stores nothing: it has the engine Null, and no materialized view reads it"
	if err == nil || !strings.Contains(err.Error(), want) || len(acked) > 0 {
		t.Fatalf("dead letters into a Null table: acknowledged %v, error %v; want none and an error holding %q", acked, err, want)
	}
	// A materialized view that stores what the Null table takes: the dead letter lands there.
	srv.MustExec(t, CreateTable(db, "dl_stored"))
	srv.MustExec(t, "CREATE MATERIALIZED VIEW "+db+".dl_view TO "+db+".dl_stored AS SELECT * FROM "+db+".dl")
	if err := f.ProcessElement(ctx, 0, batch, emit); err != nil || len(acked) != 1 {
		t.Fatalf("with a materialized view: acknowledged %v, %v; want a1", acked, err)
	}
	if got := srv.MustQuery(t, "SELECT raw_message FROM "+db+".dl_stored"); got != "not json" {
		t.Errorf("dead letters stored through the view: %q, want the one", got)
	}
}

// setUpTable returns a dead-letter stage of the table of srv, set up, with one retry; torn down
// when the test ends.
func setUpTable(t *testing.T, srv *chtest.Server, table string) *writeFn {
	t.Helper()
	f := &writeFn{Config: Config{ClickHouse: srv.Config(), Table: table, Retry: chclient.Retry{MaxRetries: 1},
		Settings: chclient.Settings{MaxInsertBlockSize: 1000}}}
	if err := f.Setup(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Teardown() })
	return f
}
