package main

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ch-beam/pubsub-to-clickhouse/internal/chtest"
	"github.com/ch-beam/pubsub-to-clickhouse/internal/pubsubtest"
	"github.com/ch-beam/pubsub-to-clickhouse/pipeline"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/secret"
)

// TestPreflightInsertRefused: a user whose settings profile is readonly (code 164, "Cannot insert
// into table in readonly mode"; a missing grant, 497, and a constraint on an insert setting,
// 452, are refused the same way on newer servers) fails the launch, naming the table, the user
// and what to do. Before, the launch passed (the checks only read), and every INSERT was refused
// and retried, holding every message. The INSERT tried has no rows: nothing is inserted.
func TestPreflightInsertRefused(t *testing.T) {
	const user, password = "reader", "Reader-pw-6c1e"
	srv := chtest.StartOwn(t)
	srv.MustExec(t, "CREATE TABLE "+srv.Database+".events (id UInt32) ENGINE = MergeTree ORDER BY id")
	if err := os.MkdirAll(filepath.Join(srv.Dir, "users.d"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(srv.Dir, "users.d", user+".xml"), []byte(`<yandex>
  <profiles><readonly_profile><readonly>1</readonly></readonly_profile></profiles>
  <users>
    <`+user+`>
      <password>`+password+`</password>
      <networks><ip>127.0.0.1</ip><ip>::1</ip></networks>
      <profile>readonly_profile</profile>
      <quota>default</quota>
    </`+user+`>
  </users>
</yandex>
`), 0o644); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		if _, err := srv.Query("SELECT 1", "user="+user, "password="+password); err == nil {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("user %s: %v", user, err)
		}
	}
	o := preflightOptions(t, srv.Server)
	o.ClickHouseUsername = user
	o.ClickHousePassword = secret.String(password)
	err := preflight(context.Background(), o)
	for _, want := range []string{"clickHouseUsername: the server refuses an INSERT into " + srv.Database + `.events by ClickHouse user "reader" (an INSERT of no rows, tried at launch)`,
		"Cannot insert into table in readonly mode", "the user's settings profile is readonly (readonly=1 or 2), which refuses every INSERT"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("preflight: %v\nwant it to hold %q", err, want)
		}
	}
	if err != nil && strings.Contains(err.Error(), password) {
		t.Errorf("the error shows the password: %v", err)
	}
	// The user default, who may insert, passes, and the INSERT of no rows inserted none.
	o.ClickHouseUsername, o.ClickHousePassword = "default", ""
	if err := preflight(context.Background(), o); err != nil {
		t.Errorf("preflight as default: %v", err)
	}
	if got := srv.MustQuery(t, "SELECT count() FROM "+srv.Database+".events"); got != "0" {
		t.Errorf("%s rows in the table after the launch's checks, want 0", got)
	}
}

// TestPreflightDeadLetterTableMissing: a dead-letter table that does not exist stops the launch
// with the sentence of the dead-letter table's check alone. Before, the INSERT of no rows into it
// was tried first, failed (code 60) and logged "an INSERT of no rows into the table failed at
// launch; the job starts all the same", just before the launch stopped.
func TestPreflightDeadLetterTableMissing(t *testing.T) {
	srv := chtest.StartOwn(t)
	srv.MustExec(t, "CREATE TABLE "+srv.Database+".events (id UInt32) ENGINE = MergeTree ORDER BY id")
	o := preflightOptions(t, srv.Server)
	o.ClickHouseDeadLetterTable = "no_such_dead_letters"
	var logs bytes.Buffer
	defer slog.SetDefault(slog.Default())
	slog.SetDefault(slog.New(slog.NewTextHandler(&logs, nil)))
	err := preflight(context.Background(), o)
	if err == nil || !strings.Contains(err.Error(), "clickHouseDeadLetterTable") || !strings.Contains(err.Error(), "CREATE TABLE") {
		t.Errorf("preflight: %v; want the dead-letter table's error, with the CREATE TABLE to run", err)
	}
	if strings.Contains(logs.String(), "INSERT of no rows") {
		t.Errorf("the launch logged its INSERT of no rows into a table it then finds missing:\n%s", logs.String())
	}
}

// preflightOptions returns the parameters of a job that reads a subscription of an emulator of
// the test's own into the table events of srv's database, as the user default.
func preflightOptions(t *testing.T, srv *chtest.Server) pipeline.Options {
	e := pubsubtest.Start(t)
	o := pipeline.Defaults()
	o.InputSubscription = e.Subscription(t, e.Topic(t, "events"), "events-sub", 10*time.Second)
	o.ClickHouseURL = srv.URL
	o.ClickHouseDatabase = srv.Database
	o.ClickHouseTable = "events"
	o.ClickHouseUsername = "default"
	return o
}

// TestPreflightNullDeadLetterTable: a dead-letter table of the engine Null that no materialized
// view reads takes every dead letter and stores none. As the only destination the launch refuses
// it (before, it passed without a word and every dead letter was acknowledged and lost); with a
// materialized view that stores what it takes, it passes.
func TestPreflightNullDeadLetterTable(t *testing.T) {
	srv := chtest.New(t)
	db := srv.Database
	srv.MustExec(t, "CREATE TABLE "+db+".events (id UInt32) ENGINE = MergeTree ORDER BY id")
	srv.MustExec(t, "CREATE TABLE "+db+".dl (raw_message String, error_message String, stack_trace String, failed_at DateTime) ENGINE = Null")
	o := preflightOptions(t, srv)
	o.ClickHouseDeadLetterTable = "dl"
	err := preflight(context.Background(), o)
	want := "clickHouseDeadLetterTable: the table " + db + ".dl stores nothing: it has the engine Null, and no materialized view reads it"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("preflight: %v\nwant it to hold %q", err, want)
	}
	srv.MustExec(t, "CREATE TABLE "+db+".dl_stored (raw_message String, error_message String, stack_trace String, failed_at DateTime) ENGINE = MergeTree ORDER BY failed_at")
	srv.MustExec(t, "CREATE MATERIALIZED VIEW "+db+".dl_view TO "+db+".dl_stored AS SELECT * FROM "+db+".dl")
	if err := preflight(context.Background(), o); err != nil {
		t.Errorf("preflight with a materialized view storing the dead letters: %v", err)
	}
}
