package chclient

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"sync/atomic"
	"testing"

	"github.com/ClickHouse/clickhouse-go/v2"

	"github.com/ch-beam/pubsub-to-clickhouse/internal/certtest"
	"github.com/ch-beam/pubsub-to-clickhouse/internal/gcptest"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/secret"
)

// TestAuthorityRenewed: a server whose certificate is replaced by one of another authority while
// the job runs, and clickHouseCaCertificate's file replaced by that authority's certificate, is
// reached by the next Open of the same Resolved, which reads the authority again when the
// server's certificate does not verify; before, it kept the authority read in Setup until the
// stage started again (on prism: never, the run ended).
func TestAuthorityRenewed(t *testing.T) {
	old, renewed := certtest.NewCA(t, "old CA"), certtest.NewCA(t, "new CA")
	server := renewed.Issue(t, certtest.Options{Hosts: []string{"127.0.0.1"}})
	pair, err := tls.X509KeyPair(server.CertPEM, server.KeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	var requests atomic.Int32 // requests that got through TLS
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		w.Header().Set("X-ClickHouse-Exception-Code", "516")
		w.WriteHeader(http.StatusForbidden)
		io.WriteString(w, "Code: 516. DB::Exception: ingest: Authentication failed. (AUTHENTICATION_FAILED)\n")
	}))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{pair}}
	srv.StartTLS()
	defer srv.Close()
	caFile := old.WriteFile(t, t.TempDir(), "ca")
	ctx := context.Background()
	r, err := Config{URL: srv.URL + "?dial_timeout=5s", Username: "ingest", Password: "Renew-pw-3", CACertificate: caFile}.Resolve(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var ce *ConfigError
	if _, err := r.Open(ctx); !errors.As(err, &ce) || ce.Field != FieldCACertificate || requests.Load() != 0 {
		t.Fatalf("Open with the old authority: %v (%d requests); want the CA certificate's error, no request", err, requests.Load())
	}
	if err := os.WriteFile(caFile, renewed.PEM, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = r.Open(ctx)
	if requests.Load() == 0 {
		t.Fatalf("Open after the authority's file was replaced: %v; want the server reached over TLS", err)
	}
	if !errors.As(err, &ce) || ce.Field != FieldPassword {
		t.Errorf("Open after the authority's file was replaced: %v; want the server's refusal of the password", err)
	}
}

// TestRenewOnlyWhatARefusalAsks: Renew reads a password of Secret Manager again after the
// server refused it, and nothing after another error; a version that can no longer be read
// (disabled, destroyed, access revoked) keeps the password read before, and says why.
func TestRenewOnlyWhatARefusalAsks(t *testing.T) {
	const version = "projects/p/secrets/clickhouse-password/versions/latest"
	sm := gcptest.StartSecretManager(t)
	sm.Add(version, []byte("first-Pw-1"))
	ctx := context.Background()
	r, err := Config{URL: "clickhouse://127.0.0.1:9", Username: "ingest", Password: secret.String(version)}.Resolve(ctx)
	if err != nil {
		t.Fatal(err)
	}
	password := func() string {
		o, err := r.options()
		if err != nil {
			t.Fatal(err)
		}
		return o.Auth.Password
	}
	sm.Add(version, []byte("second-Pw-2"))
	for _, err := range []error{&clickhouse.Exception{Code: 60, Message: "Table db.t doesn't exist"}, errors.New("read: connection reset by peer"),
		&clickhouse.Exception{Code: 192, Message: "Unknown user ingest"}} {
		if changed, rerr := r.Renew(ctx, err); changed || rerr != nil || password() != "first-Pw-1" {
			t.Errorf("Renew after %v: %t, %v; want nothing read", err, changed, rerr)
		}
	}
	if n := len(sm.Accesses()); n != 1 {
		t.Errorf("%d accesses, want 1 (Resolve's)", n)
	}
	if changed, err := r.Renew(ctx, &clickhouse.Exception{Code: 193, Message: "Wrong password for user ingest"}); !changed || err != nil || password() != "second-Pw-2" {
		t.Errorf("Renew after code 193: %t, %v; want the new password", changed, err)
	}
	sm.Deny(version)
	changed, err := r.Renew(ctx, &clickhouse.Exception{Code: 516, Message: "Authentication failed"})
	var ce *ConfigError
	if changed || !errors.As(err, &ce) || ce.Field != FieldPassword || password() != "second-Pw-2" {
		t.Errorf("Renew of a version denied: %t, %v; want the password's error, and the password read before kept", changed, err)
	}
}
