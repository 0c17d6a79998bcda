package integration_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"

	"github.com/ch-beam/pubsub-to-clickhouse/internal/certtest"
	"github.com/ch-beam/pubsub-to-clickhouse/internal/chtest"
	"github.com/ch-beam/pubsub-to-clickhouse/internal/events"
	"github.com/ch-beam/pubsub-to-clickhouse/internal/gcptest"
)

// The secure run's user and secrets.
const (
	secureUser      = "ingest"
	securePassword  = "Secure-pw-41d8e2" // never printed: checkOutput holds every run to it
	passwordVersion = "projects/p/secrets/clickhouse-password/versions/latest"
	keyVersion      = "projects/p/secrets/clickhouse-client-key/versions/3"
)

func init() { addSecret(securePassword) }

// TestSecureEndToEnd runs the whole pipeline, the binary on the local runner, as a security
// review asks for it: the ClickHouse user is a least-privilege one (ClickHouse 18.16's users.xml:
// a password, the test's database alone through allow_databases, a profile that may insert);
// the native protocol runs over TLS to a server that requires a client certificate (mutual TLS,
// verificationMode strict); the password and the client key are Secret Manager secret versions
// (the stand-in), the authority's certificate a Cloud Storage object (the stand-in), the client
// certificate a file. The launcher reads the secrets for its start-up checks and every stage
// again in its Setup; every good message becomes a row and every bad one a dead letter, written
// by that user; nothing the binary prints holds the password or the key.
func TestSecureEndToEnd(t *testing.T) {
	const good, bad = 600, 12
	bin, _ := launchBinary(t)

	dir := t.TempDir()
	ca := certtest.NewCA(t, "pubsub-to-clickhouse test CA")
	serverCert, serverKey := ca.Issue(t, certtest.Options{Hosts: []string{"localhost"}}).WriteFiles(t, dir, "server")
	client := ca.Issue(t, certtest.Options{Hosts: []string{secureUser}, Client: true})
	clientCert, _ := client.WriteFiles(t, dir, "client")
	addSecret(keyBody(client.KeyPEM))

	srv := chtest.StartOwnWith(t, chtest.Own{TLS: &chtest.TLS{CertFile: serverCert, KeyFile: serverKey,
		CAFile: ca.WriteFile(t, dir, "ca"), Verification: "strict"}})
	e := newE2EOn(t, srv.Server, events.DDL)
	srv.AddUser(t, secureUser, securePassword, srv.Database)
	// The user's reach: its database and system, nothing else (the server is the test's own).
	srv.MustExec(t, "CREATE DATABASE elsewhere")
	srv.MustExec(t, "CREATE TABLE elsewhere.t (a UInt8) ENGINE = Memory")
	for _, q := range []string{"SELECT count() FROM elsewhere.t", "INSERT INTO elsewhere.t VALUES (1)"} {
		if _, err := srv.Query(q, "user="+secureUser, "password="+securePassword); err == nil || !strings.Contains(err.Error(), "Access denied to database elsewhere") {
			t.Fatalf("%s as the least-privilege user: %v, want access denied", q, err)
		}
	}

	sm := gcptest.StartSecretManager(t)
	sm.Add(passwordVersion, []byte(securePassword+"\n"))
	sm.Add(keyVersion, client.KeyPEM)
	gcs := gcptest.StartGCS(t, "certs")
	gcs.Put("certs", "clickhouse/ca.pem", ca.PEM)

	gen := events.NewGenerator(15, time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC))
	var msgs []*pubsubpb.PubsubMessage
	for i := range good + bad {
		var data []byte
		if i%(good/bad+1) == 3 {
			_, data = gen.Malformed()
		} else {
			_, data = gen.Next()
		}
		msgs = append(msgs, &pubsubpb.PubsubMessage{Data: data})
	}
	ids := e.ps.Publish(t, e.topic, msgs...)

	o := e.opts
	args := []string{
		"--runner=prism",
		"--inputSubscription=" + o.InputSubscription,
		fmt.Sprintf("--clickHouseUrl=clickhouse://localhost:%d?secure=true", srv.SecurePort),
		"--clickHouseDatabase=" + o.ClickHouseDatabase, "--clickHouseTable=events",
		"--clickHouseUsername=" + secureUser, "--clickHousePassword=" + passwordVersion,
		"--clickHouseCaCertificate=gs://certs/clickhouse/ca.pem",
		"--clickHouseClientCertificate=" + clientCert, "--clickHouseClientKey=" + keyVersion,
		"--clickHouseDeadLetterTable=dead_letters", "--deadLetterTopic=" + o.DeadLetterTopic,
		"--batchRowCount=200", "--windowSeconds=1", "--stopAfterIdle=3",
		"--retryInitialBackoffMillis=100", "--retryMaxBackoffMillis=1000",
	}
	start := time.Now()
	tmp := t.TempDir()
	out, err := runLaunch(t, bin, []string{gcs.Env(), "TMPDIR=" + tmp}, args)
	t.Logf("the pipeline ended after %v: %v", time.Since(start).Round(time.Millisecond), err)
	if err != nil {
		t.Fatalf("the pipeline: %v\n%s", err, out)
	}
	checkNothingLeft(t, tmp)
	if strings.Contains(out, "a password is given as text") {
		t.Error("the run warns about a password given as text, but it is in Secret Manager")
	}

	// Every message is a row or a dead letter, inserted as the least-privilege user over TLS.
	rows, deadLetters := e.checkAccounted(t, len(msgs), "event_id")
	if deadLetters != bad {
		t.Errorf("%d dead letters, want %d (rows %d)", deadLetters, bad, rows)
	}
	e.checkAllAcked(t, ids)

	// The launcher read each secret once, and every stage read it again in its Setup: parse,
	// write and dead letter, at least once each.
	accesses := sm.Accesses()
	for _, v := range []string{passwordVersion, keyVersion} {
		if n := countOf(accesses, v); n < 4 {
			t.Errorf("%s was read %d times, want at least 4 (the launcher, and the Setup of parse, write and dead letter)", v, n)
		}
	}
	t.Logf("Secret Manager accesses: %d of the password, %d of the key", countOf(accesses, passwordVersion), countOf(accesses, keyVersion))
}

func countOf(s []string, v string) int {
	return len(slices.DeleteFunc(slices.Clone(s), func(x string) bool { return x != v }))
}
