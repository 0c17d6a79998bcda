package write

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ch-beam/pubsub-to-clickhouse/internal/chtest"
	"github.com/ch-beam/pubsub-to-clickhouse/internal/gcptest"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/chclient"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/flow"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/secret"
)

// TestPasswordRotatedInSecretManager: the password of clickHousePassword's Secret Manager secret
// version rotated while the stage runs (a new version, which versions/latest names, then the
// user's new password on the server) reaches the next attempt of the INSERT that the server
// refuses: the rows are inserted, with nothing dead-lettered, where the stage kept the password
// it read in Setup for every new connection and failed the bundle with code 193 after its
// retries (on prism, the end of the run). The secret is read again only after a refusal.
func TestPasswordRotatedInSecretManager(t *testing.T) {
	const version = "projects/p/secrets/clickhouse-password/versions/latest"
	srv := ingestServer(t, "first-Pw-1")
	sm := gcptest.StartSecretManager(t)
	sm.Add(version, []byte("first-Pw-1\n"))
	cfg := srv.Config()
	cfg.Username, cfg.Password = "ingest", secret.String(version)
	ctx := context.Background()
	f := setUpInsert(t, cfg, 2)
	insert := func(from, to int) error {
		var b flow.Rows
		for i := from; i <= to; i++ {
			b.Rows = append(b.Rows, flow.Row{Payload: fmt.Appendf(nil, `{"id":"m-%d","n":%d}`, i, i), Schema: f.conv.SchemaHash(), MessageID: fmt.Sprintf("m-%d", i)})
		}
		return f.ProcessElement(ctx, 0, b, func(d flow.DeadLetter) { t.Errorf("dead letter: %s", d.ErrorMessage) }, func([]string) {})
	}
	if err := insert(1, 2); err != nil {
		t.Fatal(err)
	}
	read := len(sm.Accesses())

	sm.Add(version, []byte("second-Pw-2\n"))
	srv.AddUser(t, "ingest", "second-Pw-2", srv.Database)
	if err := insert(3, 4); err != nil {
		t.Fatalf("after the rotation: %v", err)
	}
	if got := srv.MustQuery(t, "SELECT groupArray(id) FROM (SELECT id FROM events ORDER BY id)"); got != `['m-1','m-2','m-3','m-4']` {
		t.Errorf("rows %s, want m-1 to m-4", got)
	}
	if n := len(sm.Accesses()) - read; n != 1 {
		t.Errorf("the secret was read %d times after the rotation, want once (after the refusal)", n)
	}
}

// TestDatabaseRevokedExplained: a user whose database is taken away while the job runs
// (ClickHouse 18.16's allow_databases), which that server tells a new connection by closing it in
// the native protocol's handshake, fails the bundle with the sentence that names the database
// and allow_databases, as at start-up; before, it said only "(transient error): handshake: failed
// to read packet ...: read: EOF".
func TestDatabaseRevokedExplained(t *testing.T) {
	srv := ingestServer(t, "Revoked-pw-5")
	srv.MustExec(t, "CREATE DATABASE elsewhere")
	cfg := srv.Config()
	cfg.Username, cfg.Password = "ingest", "Revoked-pw-5"
	ctx := context.Background()
	f := setUpInsert(t, cfg, 1)
	srv.AddUser(t, "ingest", "Revoked-pw-5", "elsewhere")
	// AddUser returns once the user logs in, which it did before: wait until the server has read
	// the change (users.d files are read again every few seconds).
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		if _, err := srv.Query("SELECT 1", "user=ingest", "password=Revoked-pw-5"); err != nil && strings.Contains(err.Error(), "Access denied to database") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the server still lets user ingest use the test's database 30 s after allow_databases took it away")
		}
	}
	b := flow.Rows{Rows: []flow.Row{{Payload: []byte(`{"id":"m-1","n":1}`), Schema: f.conv.SchemaHash(), MessageID: "m-1"}}}
	err := f.ProcessElement(ctx, 0, b, func(d flow.DeadLetter) { t.Errorf("dead letter: %s", d.ErrorMessage) }, func([]string) {})
	want := fmt.Sprintf(`a new connection fails too: ClickHouse database: the server at %s closed the connection when user "ingest" asked for database %q, `+
		`and let the same user in to database system: the database does not exist, or the user may not use it (allow_databases`, f.ClickHouse.URL, srv.Database)
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("the bundle's error: %v\nwant one containing %s", err, want)
	}
	if err != nil && strings.Contains(err.Error(), "Revoked-pw-5") {
		t.Errorf("the error holds the password: %v", err)
	}
}

// TestPasswordRotatedFirstOpenFails: the password rotated (a new secret version, then the user's
// new password on the server), and the first connection the stage opens with it, after the
// server refused the old one, lost in its handshake (a network blip, a server restarting): the
// next attempt opens a pool with the new password and the rows are inserted. Before, the
// Resolved had taken up the new password while the stage kept its pool of the old one, and each
// later Renew, finding the password read unchanged, left it so: every attempt was refused (code
// 193) and the bundle failed.
func TestPasswordRotatedFirstOpenFails(t *testing.T) {
	const version = "projects/p/secrets/clickhouse-password/versions/latest"
	srv := ingestServer(t, "first-Pw-1")
	sm := gcptest.StartSecretManager(t)
	sm.Add(version, []byte("first-Pw-1\n"))
	proxy := srv.Proxy(t)
	cfg := srv.Config()
	cfg.URL = proxy.URL()
	cfg.Username, cfg.Password = "ingest", secret.String(version)
	ctx := context.Background()
	f := setUpInsert(t, cfg, 3)
	sm.Add(version, []byte("second-Pw-2\n"))
	srv.AddUser(t, "ingest", "second-Pw-2", srv.Database)
	// The first connection that logs in with the new password (its handshake holds it) loses
	// the server's answer.
	proxy.LoseAnswer([]byte("second-Pw-2"))
	b := flow.Rows{Rows: []flow.Row{{Payload: []byte(`{"id":"m-1","n":1}`), Schema: f.conv.SchemaHash(), MessageID: "m-1"}}}
	if err := f.ProcessElement(ctx, 0, b, func(d flow.DeadLetter) { t.Errorf("dead letter: %s", d.ErrorMessage) }, func([]string) {}); err != nil {
		t.Fatalf("after the rotation: %v", err)
	}
	if got := srv.MustQuery(t, "SELECT groupArray(id) FROM events"); got != `['m-1']` {
		t.Errorf("rows %s, want m-1", got)
	}
}

// ingestServer starts a server of the test's own with the table events (id String, n UInt8) and
// the user ingest of password, allowed the test's database alone.
func ingestServer(t *testing.T, password string) *chtest.OwnServer {
	srv := chtest.StartOwn(t)
	srv.CreateTable(t, `CREATE TABLE {table} (id String, n UInt8) ENGINE = MergeTree ORDER BY id`, "events")
	srv.AddUser(t, "ingest", password, srv.Database)
	return srv
}

// setUpInsert returns the stage inserting into events with cfg (its connections closed once
// used, conn_max_lifetime=10ms, so that each INSERT logs in anew, as the pool's connections do
// once their lifetime has passed or the server restarted) and maxRetries, set up, torn down when
// the test ends.
func setUpInsert(t *testing.T, cfg chclient.Config, maxRetries int) *insertFn {
	cfg.URL += "?conn_max_lifetime=10ms"
	f := &insertFn{Config: Config{ClickHouse: cfg, Table: "events", Settings: chclient.Settings{MaxInsertBlockSize: 1000},
		Retry: chclient.Retry{MaxRetries: maxRetries}}}
	if err := f.Setup(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Teardown() })
	return f
}
