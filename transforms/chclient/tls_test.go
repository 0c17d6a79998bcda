package chclient

import (
	"context"
	"crypto/tls"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ch-beam/pubsub-to-clickhouse/internal/certtest"
	"github.com/ch-beam/pubsub-to-clickhouse/internal/gcptest"
)

// TestTLSConfig: the one TLS configuration of both protocols always verifies (the CA's
// certificates alone when given, else the system's roots), leaves the server name to each host
// unless tls_server_name gives one, presents a client certificate, and refuses what cannot work
// naming the parameter to fix.
func TestTLSConfig(t *testing.T) {
	ca := certtest.NewCA(t, "test CA")
	client := ca.Issue(t, certtest.Options{Hosts: []string{"ingest"}, Client: true})
	other := ca.Issue(t, certtest.Options{Hosts: []string{"other"}, Client: true})
	server := ca.Issue(t, certtest.Options{Hosts: []string{"ch.internal"}})
	expired := ca.Issue(t, certtest.Options{Hosts: []string{"ingest"}, Client: true,
		NotBefore: time.Now().Add(-48 * time.Hour), NotAfter: time.Now().Add(-24 * time.Hour)})

	c, asked, err := tlsConfig(&tls.Config{}, nil, nil, nil)
	if err != nil || c.RootCAs != nil || c.InsecureSkipVerify || c.ServerName != "" || c.MinVersion != tls.VersionTLS12 {
		t.Fatalf("no TLS parameters: %+v, %v; want the system's roots, verified, TLS 1.2+, the server name of each host", c, err)
	}
	if got, _ := c.GetClientCertificate(&tls.CertificateRequestInfo{}); len(got.Certificate) != 0 || !asked.Load() {
		t.Errorf("asked for a client certificate without one: %d certificates, asked %v; want none, and asked", len(got.Certificate), asked.Load())
	}
	c, asked, err = tlsConfig(&tls.Config{ServerName: "ch.internal"}, ca.PEM, client.CertPEM, client.KeyPEM)
	if err != nil || c.RootCAs == nil || c.InsecureSkipVerify || c.ServerName != "ch.internal" || asked.Load() {
		t.Fatalf("CA and client certificate: %+v, %v; want the CA's pool, verified, tls_server_name", c, err)
	}
	if got, _ := c.GetClientCertificate(&tls.CertificateRequestInfo{}); got.Leaf == nil || got.Leaf.Subject.CommonName != "ingest" {
		t.Errorf("asked for a client certificate: %+v, want the client certificate", got)
	}
	for _, tc := range []struct {
		name          string
		ca, cert, key []byte
		field         Field
		message       string
	}{
		{"CA without PEM", []byte("not a certificate"), nil, nil, FieldCACertificate, "holds no PEM certificate"},
		{"CA given a key", client.KeyPEM, nil, nil, FieldCACertificate, "holds no PEM certificate"},
		{"key of another certificate", nil, client.CertPEM, other.KeyPEM, FieldClientKey, "is not the private key of ClickHouse client certificate"},
		{"key not PEM", nil, client.CertPEM, []byte("not a key"), FieldClientKey, "holds no PEM private key"},
		{"certificate not PEM", nil, []byte("not a certificate"), client.KeyPEM, FieldClientCertificate, "holds no PEM certificate"},
		{"expired client certificate", nil, expired.CertPEM, expired.KeyPEM, FieldClientCertificate, "not now"},
		{"server certificate as the client's", nil, server.CertPEM, server.KeyPEM, FieldClientCertificate,
			"is a certificate for server authentication (serverAuth), not for TLS clients (its extended key usage does not list clientAuth)"},
		{"certificate without key", nil, client.CertPEM, nil, FieldClientKey, "give both"},
		{"key without certificate", nil, nil, client.KeyPEM, FieldClientCertificate, "give both"},
	} {
		_, _, err := tlsConfig(&tls.Config{}, tc.ca, tc.cert, tc.key)
		var ce *ConfigError
		if !errors.As(err, &ce) || ce.Field != tc.field || !strings.Contains(err.Error(), tc.message) {
			t.Errorf("%s: %v, want a ConfigError of %s saying %q", tc.name, err, tc.field, tc.message)
		}
		if err != nil && strings.Contains(err.Error(), keyBody(client.KeyPEM)) {
			t.Errorf("%s: the error quotes the key: %v", tc.name, err)
		}
	}
}

// TestResolve reads the password of a Secret Manager secret version (the stand-in) and the TLS
// material from a file, a Cloud Storage object and a secret version, and builds options that
// hold them; nothing printed of the result shows the password.
func TestResolve(t *testing.T) {
	const (
		pwVersion  = "projects/p/secrets/ch-password/versions/latest"
		keyVersion = "projects/p/secrets/ch-key/versions/1"
		password   = "Resolved-pw-93c1"
	)
	ca := certtest.NewCA(t, "test CA")
	client := ca.Issue(t, certtest.Options{Hosts: []string{"ingest"}, Client: true})
	sm := gcptest.StartSecretManager(t)
	sm.Add(pwVersion, []byte(password+"\n"))
	sm.Add(keyVersion, client.KeyPEM)
	sm.Deny("projects/p/secrets/ch-password/versions/2")
	gcs := gcptest.StartGCS(t, "certs")
	t.Setenv("STORAGE_EMULATOR_HOST", gcs.Host())
	gcs.Put("certs", "client.crt", client.CertPEM)
	caFile := ca.WriteFile(t, t.TempDir(), "ca")
	ctx := context.Background()

	c := Config{URL: "clickhouse://h:9440?secure=true", Database: "db", Username: "ingest", Password: pwVersion,
		CACertificate: caFile, ClientCertificate: "gs://certs/client.crt", ClientKey: keyVersion}
	if c.PasswordAsText() {
		t.Error("PasswordAsText() = true for a secret version")
	}
	if o, err := c.Options(); err != nil || o.Auth.Password != "" {
		t.Errorf("Options() = %+v, %v: want no password before Resolve", o, err)
	}
	r, err := c.Resolve(ctx)
	if err != nil {
		t.Fatalf("Resolve: %v", err)
	}
	o, err := r.options()
	if err != nil {
		t.Fatal(err)
	}
	if o.Auth.Password != password || o.TLS == nil || o.TLS.RootCAs == nil || o.TLS.GetClientCertificate == nil || o.TLS.InsecureSkipVerify {
		t.Errorf("resolved options: password %t, TLS %+v; want the secret's password (without its newline), the CA, the client certificate",
			o.Auth.Password == password, o.TLS)
	}
	if got := sm.Accesses(); len(got) != 2 {
		t.Errorf("Secret Manager saw %q, want one access to each version", got)
	}
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x"} {
		for _, v := range []any{r, *r, c} {
			if s := fmt.Sprintf(verb, v); strings.Contains(s, password) || strings.Contains(s, keyBody(client.KeyPEM)) {
				t.Errorf("%s of %T shows the password or the key: %s", verb, v, s)
			}
		}
	}

	for _, tc := range []struct {
		name    string
		change  func(c *Config)
		field   Field
		message string
	}{
		{"denied password", func(c *Config) { c.Password = "projects/p/secrets/ch-password/versions/2" },
			FieldPassword, "projects/p/secrets/ch-password/versions/2: the permission secretmanager.versions.access is denied"},
		{"missing key", func(c *Config) { c.ClientKey = "projects/p/secrets/none/versions/1" },
			FieldClientKey, "projects/p/secrets/none/versions/1 does not exist"},
		{"missing CA file", func(c *Config) { c.CACertificate = filepath.Join(t.TempDir(), "none.crt") },
			FieldCACertificate, "cannot read the file"},
		{"missing certificate object", func(c *Config) { c.ClientCertificate = "gs://certs/none.crt" },
			FieldClientCertificate, "gs://certs/none.crt does not exist"},
		{"TLS parameters, plain URL", func(c *Config) { c.URL = "clickhouse://h:9000" },
			FieldCACertificate, "does not use TLS"},
	} {
		cc := c
		tc.change(&cc)
		_, err := cc.Resolve(ctx)
		var ce *ConfigError
		if !errors.As(err, &ce) || ce.Field != tc.field || !strings.Contains(err.Error(), tc.message) {
			t.Errorf("%s: %v, want a ConfigError of %s saying %q", tc.name, err, tc.field, tc.message)
		}
		if err != nil && (strings.Contains(err.Error(), password) || strings.Contains(err.Error(), keyBody(client.KeyPEM))) {
			t.Errorf("%s: the error shows the password or the key: %v", tc.name, err)
		}
	}

	// A password in the URL would be in the graph: refused beside a secret version.
	if rule := URLRule("clickhouse://ingest:"+password+"@h:9000", "ingest", pwVersion, "db", Field.String); !strings.Contains(rule, "remove the password from the URL") {
		t.Errorf("URL password with a secret version: rule %q", rule)
	}
	if !(Config{URL: "clickhouse://ingest:" + password + "@h:9000"}).PasswordAsText() || !(Config{URL: "clickhouse://h", Password: password}).PasswordAsText() {
		t.Error("PasswordAsText() = false for a password in the URL or in clickHousePassword")
	}
}

// TestTextSecrets: every secret a Config holds as text, decoded and as written, whatever part of
// the URL holds it; none for a secret version.
func TestTextSecrets(t *testing.T) {
	for _, tc := range []struct {
		c    Config
		want []string
	}{
		{Config{URL: "clickhouse://h:9000", Password: "projects/p/secrets/s/versions/1"}, nil},
		{Config{URL: "clickhouse://h:9000", Password: "pw"}, []string{"pw"}},
		{Config{URL: "clickhouse://u:p%40w@h:9000"}, []string{"p@w", "p%40w"}},
		{Config{URL: "http://h:8123?password=a%26b&x=1"}, []string{"a&b", "a%26b"}},
		{Config{URL: "http://h:8123?Token=t1&max_open_conns=2"}, []string{"t1"}},
		{Config{URL: "http://h:8123?http_proxy=" + url.QueryEscape("http://pu:Proxy-pw@proxy:3128")}, []string{"Proxy-pw"}},
		{Config{URL: "http://h:8123?http_proxy=http%3A%2F%2Fproxy%3A3128"}, nil},
		{Config{URL: "clickhouse://u:same@h", Password: "same"}, []string{"same"}},
	} {
		if got := tc.c.TextSecrets(); !slices.Equal(got, tc.want) {
			t.Errorf("%s: TextSecrets() = %q, want %q", tc.c.URL, got, tc.want)
		}
		if got := tc.c.PasswordAsText(); got != (len(tc.want) > 0) {
			t.Errorf("%s: PasswordAsText() = %v", tc.c.URL, got)
		}
	}
}

// keyBody returns the first line of a PEM key's base64 text, which no output may show.
func keyBody(keyPEM []byte) string {
	return strings.Split(string(keyPEM), "\n")[1]
}

// TestNativeTLSToHTTPSPort: clickhouse://...?secure=true to ClickHouse's HTTPS port (8443, as a
// ClickHouse Cloud user may give it for the native protocol's 9440) completes TLS, and the HTTPS
// interface then waits for an HTTP request that the native handshake never sends. As for the
// plain HTTP port, Open asks the port for GET /ping, over the same verified TLS, and says at once
// that it is the HTTPS interface, rather than after the handshake's timeout, as a slow server.
func TestNativeTLSToHTTPSPort(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/ping" {
			io.WriteString(w, "Ok.\n")
			return
		}
		w.WriteHeader(http.StatusNotFound)
	}))
	defer srv.Close()
	caFile := filepath.Join(t.TempDir(), "ca.crt")
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o644); err != nil {
		t.Fatal(err)
	}
	addr := strings.TrimPrefix(srv.URL, "https://")
	c := Config{URL: "clickhouse://" + addr + "?secure=true", Username: "default", CACertificate: caFile, Compression: "none"}
	start := time.Now()
	openRefused(t, c, "ClickHouse URL: "+c.URL+" uses the native protocol over TLS (clickhouse://...?secure=true), but "+addr+
		" is ClickHouse's HTTPS interface (it answers GET /ping over TLS): use https://"+addr+", or the native protocol's TLS port (9440) with clickhouse://...?secure=true")
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("Open took %v, want the HTTPS interface told within seconds", took)
	}
}

// TestSecretPassword: one trailing "\n" or "\r\n" of a Secret Manager payload is dropped, no more.
func TestSecretPassword(t *testing.T) {
	for in, want := range map[string]string{"pw\n": "pw", "pw\r\n": "pw", "pw": "pw", "pw\r": "pw\r", "pw\n\n": "pw\n", "\n": "", "": "", " pw \n": " pw "} {
		if got := secretPassword([]byte(in)); got != want {
			t.Errorf("secretPassword(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestHTTPSCertificateAuthHeader: over https:// clickhouse-go asks the server to authenticate
// the user by a TLS client certificate (X-ClickHouse-SSL-Certificate-Auth: on) whenever the
// password is empty, which a server refuses when no certificate is presented (code 516): without
// a password and without a certificate the header is not sent, so that the empty password
// authenticates the user, as over http://. With a client certificate it stays on (a user
// IDENTIFIED WITH ssl_certificate), and with a password clickhouse-go sends it off.
func TestHTTPSCertificateAuthHeader(t *testing.T) {
	ca := certtest.NewCA(t, "test CA")
	server := ca.Issue(t, certtest.Options{Hosts: []string{"127.0.0.1"}})
	client := ca.Issue(t, certtest.Options{Hosts: []string{"ingest"}, Client: true})
	pair, err := tls.X509KeyPair(server.CertPEM, server.KeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var seen []string // the header of each request, "(none)" when absent
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := "(none)"
		if v := r.Header.Values("X-ClickHouse-SSL-Certificate-Auth"); len(v) > 0 {
			h = strings.Join(v, ",")
		}
		mu.Lock()
		seen = append(seen, h)
		mu.Unlock()
		w.Header().Set("X-ClickHouse-Exception-Code", "516")
		w.WriteHeader(http.StatusForbidden)
		io.WriteString(w, "Code: 516. DB::Exception: default: Authentication failed. (AUTHENTICATION_FAILED)\n")
	}))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{pair}, ClientAuth: tls.RequestClientCert}
	srv.StartTLS()
	defer srv.Close()
	dir := t.TempDir()
	caFile := ca.WriteFile(t, dir, "ca")
	certFile, keyFile := client.WriteFiles(t, dir, "client")
	for _, tc := range []struct {
		name  string
		query string // after the URL's "?dial_timeout=5s"
		c     Config
		want  string
	}{
		{"no password, no certificate", "", Config{}, "(none)"},
		{"a password", "", Config{Password: "Header-pw-71"}, "off"},
		{"a password in the URL", "&password=Header-pw-71", Config{}, "off"},
		{"a client certificate, no password", "", Config{ClientCertificate: certFile, ClientKey: keyFile}, "on"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mu.Lock()
			seen = nil
			mu.Unlock()
			c := tc.c
			c.URL, c.Username, c.CACertificate = srv.URL+"?dial_timeout=5s"+tc.query, "default", caFile
			if conn, err := Open(context.Background(), c); err == nil {
				conn.Close()
				t.Fatal("Open succeeded against a server that refuses every request")
			}
			mu.Lock()
			defer mu.Unlock()
			if len(seen) == 0 {
				t.Fatal("no request reached the server")
			}
			for _, h := range seen {
				if h != tc.want {
					t.Errorf("X-ClickHouse-SSL-Certificate-Auth %s, want %s (all requests: %v)", h, tc.want, seen)
					break
				}
			}
		})
	}
}
