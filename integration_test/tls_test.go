package integration_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ch-beam/pubsub-to-clickhouse/internal/certtest"
	"github.com/ch-beam/pubsub-to-clickhouse/internal/chtest"
	"github.com/ch-beam/pubsub-to-clickhouse/internal/pubsubtest"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/chclient"
)

// tlsFixture is what the TLS tests share: an authority and the certificates it signed, as files,
// and three ClickHouse servers of their own that serve the native protocol and HTTP over TLS
// (tcp_port_secure, https_port: ClickHouse 18.16's openSSL.server) with a certificate for
// "localhost" only: one that asks for no client certificate, one that requires a client
// certificate of the authority (mutual TLS, verificationMode strict), and one whose certificate
// has expired.
type tlsFixture struct {
	ca, otherCA          string // the authority's certificate, and another authority's
	clientCert           string // a client certificate of the authority
	clientKey            string
	strangeCert          string // a client certificate of the other authority
	strangeKey           string
	plain, mutual, stale *chtest.OwnServer
}

func newTLSFixture(t *testing.T) *tlsFixture {
	t.Helper()
	dir := t.TempDir()
	ca := certtest.NewCA(t, "pubsub-to-clickhouse test CA")
	other := certtest.NewCA(t, "another CA")
	f := &tlsFixture{ca: ca.WriteFile(t, dir, "ca"), otherCA: other.WriteFile(t, dir, "other-ca")}
	serverCert, serverKey := ca.Issue(t, certtest.Options{Hosts: []string{"localhost"}}).WriteFiles(t, dir, "server")
	expiredCert, expiredKey := ca.Issue(t, certtest.Options{Hosts: []string{"localhost"},
		NotBefore: time.Now().Add(-48 * time.Hour), NotAfter: time.Now().Add(-24 * time.Hour)}).WriteFiles(t, dir, "expired")
	client := ca.Issue(t, certtest.Options{Hosts: []string{"ingest"}, Client: true})
	strange := other.Issue(t, certtest.Options{Hosts: []string{"ingest"}, Client: true})
	addSecret(keyBody(client.KeyPEM))
	addSecret(keyBody(strange.KeyPEM))
	f.clientCert, f.clientKey = client.WriteFiles(t, dir, "client")
	f.strangeCert, f.strangeKey = strange.WriteFiles(t, dir, "strange")

	f.plain = chtest.StartOwnWith(t, chtest.Own{TLS: &chtest.TLS{CertFile: serverCert, KeyFile: serverKey}})
	f.mutual = chtest.StartOwnWith(t, chtest.Own{TLS: &chtest.TLS{CertFile: serverCert, KeyFile: serverKey,
		CAFile: f.ca, Verification: "strict"}})
	f.stale = chtest.StartOwnWith(t, chtest.Own{TLS: &chtest.TLS{CertFile: expiredCert, KeyFile: expiredKey}})
	return f
}

// nativeTLS returns the native protocol's TLS URL of s, by host.
func nativeTLS(s *chtest.OwnServer, host string) string {
	return fmt.Sprintf("clickhouse://%s:%d?secure=true", host, s.SecurePort)
}

// keyBody returns the first line of a PEM key's base64 text, which no output may show.
func keyBody(keyPEM []byte) string { return strings.Split(string(keyPEM), "\n")[1] }

// TestTLS runs the native protocol over TLS against the real server (ClickHouse 18.16 here):
// verified connections insert rows, with and without a client certificate; a wrong authority,
// an expired certificate, a wrong host name, a plain connection to the TLS port and the reverse,
// a missing or foreign client certificate each stop the launch at start-up with a sentence that
// names the parameter to fix. https:// against the server's https_port is verified as the
// native protocol is (one TLS configuration); past TLS, clickhouse-go's HTTP transport needs a
// newer server than 18.16, which the launch says.
func TestTLS(t *testing.T) {
	f := newTLSFixture(t)
	ctx := context.Background()

	t.Run("verified connections insert rows", func(t *testing.T) {
		for _, tc := range []struct {
			name string
			srv  *chtest.OwnServer
			cfg  chclient.Config
		}{
			{"the authority's certificate", f.plain, chclient.Config{URL: nativeTLS(f.plain, "localhost"), CACertificate: f.ca}},
			{"tls_server_name, by address", f.plain, chclient.Config{URL: nativeTLS(f.plain, "127.0.0.1") + "&tls_server_name=localhost", CACertificate: f.ca}},
			{"mutual TLS", f.mutual, chclient.Config{URL: nativeTLS(f.mutual, "localhost"), CACertificate: f.ca,
				ClientCertificate: f.clientCert, ClientKey: f.clientKey}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				srv := tc.srv.Server
				table := strings.NewReplacer(" ", "_", ",", "", "'", "").Replace(tc.name)
				srv.CreateTable(t, "CREATE TABLE {table} (id UInt32, name String) ENGINE = MergeTree ORDER BY id", table)
				cfg := tc.cfg
				cfg.Database, cfg.Username = srv.Database, "default"
				conn, err := chclient.Open(ctx, cfg)
				if err != nil {
					t.Fatalf("connecting over TLS: %v", err)
				}
				defer conn.Close()
				batch, err := conn.PrepareBatch(ctx, "INSERT INTO "+chclient.QuoteIdent(table)+" (id, name)")
				if err != nil {
					t.Fatal(err)
				}
				for i := range 100 {
					if err := batch.Append(uint32(i), fmt.Sprint("row ", i)); err != nil {
						t.Fatal(err)
					}
				}
				if err := batch.Send(); err != nil {
					t.Fatalf("inserting over TLS: %v", err)
				}
				if got := srv.MustQuery(t, "SELECT count(), sum(id) FROM "+table); got != "100\t4950" {
					t.Errorf("the table holds %s rows and ids, want 100 and 4950", got)
				}
			})
		}
	})

	t.Run("start-up failures", func(t *testing.T) {
		bin, _ := launchBinary(t)
		ps := pubsubtest.Start(t)
		sub := ps.Subscription(t, ps.Topic(t, "tls-events"), "tls-sub", 10*time.Second)
		https := func(s *chtest.OwnServer, host string) string { return fmt.Sprintf("https://%s:%d", host, s.HTTPSPort) }
		base := connectionFlags(sub, nativeTLS(f.plain, "localhost"), f.plain.Database)
		base["clickHouseCaCertificate"] = f.ca
		checkStartupFailures(t, bin, base, []startupFailure{
			{"a wrong authority", map[string]string{"clickHouseCaCertificate": f.otherCA},
				"pubsub-to-clickhouse: clickHouseCaCertificate: the certificate of the server at " + nativeTLS(f.plain, "localhost") +
					" is not signed by the authority of clickHouseCaCertificate " + f.otherCA},
			{"the system's roots", map[string]string{"clickHouseCaCertificate": ""},
				"pubsub-to-clickhouse: clickHouseCaCertificate: the certificate of the server at " + nativeTLS(f.plain, "localhost") +
					" is not signed by an authority this machine trusts"},
			{"an expired certificate", map[string]string{"clickHouseUrl": nativeTLS(f.stale, "localhost")},
				"pubsub-to-clickhouse: clickHouseUrl: the certificate of the server at " + nativeTLS(f.stale, "localhost") +
					", or of an authority that signed it, has expired or is not yet valid"},
			{"a wrong host name", map[string]string{"clickHouseUrl": nativeTLS(f.plain, "127.0.0.1")},
				"pubsub-to-clickhouse: clickHouseUrl: the certificate of the server at " + nativeTLS(f.plain, "127.0.0.1") +
					` is not valid for the host "127.0.0.1" (it is valid for localhost)`},
			{"a plain connection to the TLS port", map[string]string{"clickHouseCaCertificate": "",
				"clickHouseUrl": fmt.Sprintf("clickhouse://localhost:%d", f.plain.SecurePort)},
				fmt.Sprintf("pubsub-to-clickhouse: clickHouseUrl: the server at clickhouse://localhost:%d did not complete the native protocol's handshake: "+
					"is this the native protocol's TLS port (9440)? Add ?secure=true", f.plain.SecurePort)},
			{"TLS to the plain port", map[string]string{"clickHouseUrl": fmt.Sprintf("clickhouse://localhost:%d?secure=true", f.plain.TCPPort)},
				fmt.Sprintf("pubsub-to-clickhouse: clickHouseUrl: clickhouse://localhost:%d?secure=true asks for TLS (secure=true), "+
					"but the server answers without TLS on that port", f.plain.TCPPort)},
			{"mutual TLS without a client certificate", map[string]string{"clickHouseUrl": nativeTLS(f.mutual, "localhost"), "clickHouseDatabase": f.mutual.Database},
				"pubsub-to-clickhouse: clickHouseClientCertificate: the server at " + nativeTLS(f.mutual, "localhost") +
					" requires a client certificate (mutual TLS): give it in clickHouseClientCertificate, and its key in clickHouseClientKey"},
			{"mutual TLS with another authority's client certificate", map[string]string{"clickHouseUrl": nativeTLS(f.mutual, "localhost"),
				"clickHouseDatabase": f.mutual.Database, "clickHouseClientCertificate": f.strangeCert, "clickHouseClientKey": f.strangeKey},
				"pubsub-to-clickhouse: clickHouseClientCertificate: the server at " + nativeTLS(f.mutual, "localhost") +
					" refused the client certificate " + f.strangeCert},
			{"a client key of another certificate", map[string]string{"clickHouseUrl": nativeTLS(f.mutual, "localhost"),
				"clickHouseClientCertificate": f.clientCert, "clickHouseClientKey": f.strangeKey},
				"pubsub-to-clickhouse: clickHouseClientKey: is not the private key of clickHouseClientCertificate"},
			{"https, verified, to a server too old for the HTTP transport", map[string]string{"clickHouseUrl": https(f.plain, "localhost")},
				"pubsub-to-clickhouse: clickHouseUrl: the server at " + https(f.plain, "localhost") + " is too old for clickhouse-go's HTTP protocol"},
			{"https, a wrong authority", map[string]string{"clickHouseUrl": https(f.plain, "localhost"), "clickHouseCaCertificate": f.otherCA},
				"pubsub-to-clickhouse: clickHouseCaCertificate: the certificate of the server at " + https(f.plain, "localhost") +
					" is not signed by the authority of clickHouseCaCertificate"},
			{"https, a wrong host name", map[string]string{"clickHouseUrl": https(f.plain, "127.0.0.1")},
				"pubsub-to-clickhouse: clickHouseUrl: the certificate of the server at " + https(f.plain, "127.0.0.1") +
					` is not valid for the host "127.0.0.1"`},
			{"https, an expired certificate", map[string]string{"clickHouseUrl": https(f.stale, "localhost")},
				"pubsub-to-clickhouse: clickHouseUrl: the certificate of the server at " + https(f.stale, "localhost") + ", or of an authority that signed it, has expired"},
			// The wrong scheme for a TLS port.
			{"https to the native protocol's TLS port", map[string]string{"clickHouseUrl": fmt.Sprintf("https://localhost:%d", f.plain.SecurePort)},
				fmt.Sprintf("pubsub-to-clickhouse: clickHouseUrl: https://localhost:%d uses https://, but that port speaks ClickHouse's native protocol with TLS: "+
					"use clickhouse://...?secure=true with it", f.plain.SecurePort)},
			{"http to the HTTPS port", map[string]string{"clickHouseUrl": fmt.Sprintf("http://localhost:%d", f.plain.HTTPSPort), "clickHouseCaCertificate": ""},
				fmt.Sprintf("pubsub-to-clickhouse: clickHouseUrl: the server at http://localhost:%d closed the connection on a plain HTTP request: is this a TLS port?", f.plain.HTTPSPort)},
			{"http to the native protocol's TLS port", map[string]string{"clickHouseUrl": fmt.Sprintf("http://localhost:%d", f.plain.SecurePort), "clickHouseCaCertificate": ""},
				fmt.Sprintf("pubsub-to-clickhouse: clickHouseUrl: the server at http://localhost:%d closed the connection on a plain HTTP request: is this a TLS port?", f.plain.SecurePort)},
		})
		checkUsageFailures(t, bin, base, []startupFailure{
			{"verification off", map[string]string{"clickHouseUrl": nativeTLS(f.plain, "localhost") + "&skip_verify=true"},
				`clickHouseUrl "` + nativeTLS(f.plain, "localhost") + `&skip_verify=true": option "skip_verify" turns certificate verification off, which the template never does`},
			{"an authority for a plain URL", map[string]string{"clickHouseUrl": fmt.Sprintf("clickhouse://localhost:%d", f.plain.TCPPort)},
				`clickHouseCaCertificate "` + f.ca + `": is set, but clickHouseUrl does not use TLS`},
		})
	})
}
