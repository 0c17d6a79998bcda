package chclient

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/ClickHouse/clickhouse-go/v2"

	"github.com/ch-beam/pubsub-to-clickhouse/internal/gcptest"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/secret"
)

// TestHTTPRefusalExplained: a refusal of the credentials over http:// is said as over the native
// protocol, naming the fields to check, whatever the server's form of it: ClickHouse 18.16's
// (HTTP 401, "Code: 193, e.displayText() = ..."), a later server's (HTTP 403,
// X-ClickHouse-Exception-Code 516, "Code: 516. DB::Exception: ... (AUTHENTICATION_FAILED)"), or a
// 401 with no ClickHouse code (a proxy's). The password is never in the text.
func TestHTTPRefusalExplained(t *testing.T) {
	for _, tc := range []struct {
		name   string
		status int
		header map[string]string
		body   string
		want   string
	}{
		{"18.16, wrong password", http.StatusUnauthorized, map[string]string{"WWW-Authenticate": `Basic realm="ClickHouse server HTTP API"`},
			"Code: 193, e.displayText() = DB::Exception: Wrong password for user default, e.what() = DB::Exception\n",
			`ClickHouse password: ClickHouse refused the password of user "default" at http://HOST: check ClickHouse user and ClickHouse password`},
		{"18.16, no such user", http.StatusUnauthorized, nil,
			"Code: 192, e.displayText() = DB::Exception: Unknown user default, e.what() = DB::Exception\n",
			`ClickHouse user: ClickHouse at http://HOST has no user "default": check ClickHouse user`},
		{"26, authentication failed", http.StatusForbidden, map[string]string{"X-ClickHouse-Exception-Code": "516"},
			"Code: 516. DB::Exception: default: Authentication failed: password is incorrect, or there is no user with such name. (AUTHENTICATION_FAILED) (version 26.7.3.1)\n",
			`ClickHouse password: ClickHouse refused the password of user "default" at http://HOST: check ClickHouse user and ClickHouse password`},
		{"a proxy's 401", http.StatusUnauthorized, nil, "Unauthorized\n",
			`ClickHouse password: the server at http://HOST refused user "default" (HTTP 401 Unauthorized) without a ClickHouse error code, ` +
				`which ClickHouse gives with each of its refusals: a proxy, load balancer or firewall in front of ClickHouse may refuse this machine, ` +
				`or the user name or the password is wrong, or the user may not log in from here: check ClickHouse user and ClickHouse password`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				io.Copy(io.Discard, r.Body)
				for k, v := range tc.header {
					w.Header().Set(k, v)
				}
				w.Header().Set("Content-Type", "text/plain; charset=UTF-8")
				w.WriteHeader(tc.status)
				io.WriteString(w, tc.body)
			}))
			defer srv.Close()
			host := strings.TrimPrefix(srv.URL, "http://")
			openRefused(t, Config{URL: srv.URL, Username: "default", Password: "s3cret-pw", Compression: "none"},
				strings.ReplaceAll(tc.want, "HOST", host)+" (", "s3cret-pw")
			if tc.name == "26, authentication failed" {
				// The password given in the URL alone: the URL is what to check.
				openRefused(t, Config{URL: "http://default:s3cret-pw@" + host, Username: "default", Compression: "none"},
					`ClickHouse URL: ClickHouse refused the password of user "default" at http://default:xxxxx@`+host+
						`, which the URL holds (ClickHouse password is not set): check ClickHouse user and the password in ClickHouse URL (`, "s3cret-pw")
			}
		})
	}
}

// TestHTTPSControlCharacterPassword: over https:// a password with a line break or another
// control character cannot be sent (clickhouse-go puts it in a header), and Open says so naming
// the field that holds it, before anything is dialled; the password is not in the text.
func TestHTTPSControlCharacterPassword(t *testing.T) {
	for _, pw := range []string{"line\nbreak", "cr\rlf", "nul\x00byte", "del\x7f"} {
		t.Run(strconv.Quote(pw), func(t *testing.T) {
			openRefused(t, Config{URL: "https://127.0.0.1:1", Username: "default", Password: secret.String(pw)},
				"ClickHouse password: the password holds a line break or another control character, which https:// cannot send", pw)
			openRefused(t, Config{URL: "https://default:" + url.PathEscape(pw) + "@127.0.0.1:1", Username: "default"},
				"ClickHouse URL: the password holds a line break or another control character, which https:// cannot send", pw, url.PathEscape(pw))
		})
	}
}

// TestProxyRefusalExplained: through an http_proxy, the proxy's own answers name the proxy, not
// the password, whether it answers an http:// request or refuses an https:// CONNECT (which
// net/http says in the status text alone): 407 asks for the proxy's credentials, 502 says it
// could not reach ClickHouse, 403 to a CONNECT that it refused the connection. Neither password
// is in the text.
func TestProxyRefusalExplained(t *testing.T) {
	for _, tc := range []struct {
		scheme string
		status int
		want   string
	}{
		{"http", http.StatusProxyAuthRequired, `ClickHouse URL: the proxy of ADDR (its http_proxy option) asks for credentials (HTTP 407 Proxy Authentication Required), ` +
			`so ClickHouse was not reached: give the proxy's user and password in http_proxy (http_proxy=http://user:password@host:port)`},
		{"https", http.StatusProxyAuthRequired, `ClickHouse URL: the proxy of ADDR (its http_proxy option) asks for credentials (HTTP 407`},
		{"http", http.StatusBadGateway, `ClickHouse URL: the proxy of ADDR (its http_proxy option), or a gateway behind it, could not reach ClickHouse (HTTP 502 Bad Gateway): ` +
			`check the host and port of ClickHouse URL, that the server runs, and that the proxy may reach it`},
		{"https", http.StatusGatewayTimeout, `ClickHouse URL: the proxy of ADDR (its http_proxy option), or a gateway behind it, could not reach ClickHouse (HTTP 504 Gateway Timeout)`},
		{"https", http.StatusForbidden, `ClickHouse URL: the proxy of ADDR (its http_proxy option) refused to connect to ClickHouse (HTTP 403 Forbidden): ` +
			`check that the proxy allows connections to that host and port`},
		{"http", http.StatusForbidden, `ClickHouse password: the server at ADDR or the proxy of its http_proxy option refused user "default" (HTTP 403 Forbidden) ` +
			`without a ClickHouse error code`},
	} {
		t.Run(fmt.Sprintf("%s %d", tc.scheme, tc.status), func(t *testing.T) {
			proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				io.Copy(io.Discard, r.Body)
				w.WriteHeader(tc.status)
				io.WriteString(w, "refused by the proxy\n")
			}))
			defer proxy.Close()
			host := strings.TrimPrefix(proxy.URL, "http://")
			c := Config{URL: tc.scheme + "://ch.example:8443/?http_proxy=http://proxy-user:Proxy-pw-3e8a@" + host,
				Username: "default", Password: "S3cret-pw-e7", Compression: "none"}
			openRefused(t, c, strings.ReplaceAll(tc.want, "ADDR", RedactURL(c.URL)), "S3cret-pw-e7", "Proxy-pw-3e8a")
		})
	}
}

// TestEmptySecretPasswordExplained: a Secret Manager secret version whose payload is empty (or
// only the newline that `echo | gcloud secrets versions add --data-file=-` stores) gives the
// connection no password. A server that requires one must then not be told as "none was given:
// set clickHousePassword", which was set: the error names the secret version and says that it
// holds an empty password.
func TestEmptySecretPasswordExplained(t *testing.T) {
	const version = "projects/p/secrets/ch-password/versions/3"
	sm := gcptest.StartSecretManager(t)
	sm.Add(version, []byte("\n"))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/plain; charset=UTF-8")
		w.WriteHeader(http.StatusUnauthorized)
		io.WriteString(w, "Code: 194, e.displayText() = DB::Exception: Password required for user ingest, e.what() = DB::Exception\n")
	}))
	defer srv.Close()
	openRefused(t, Config{URL: srv.URL, Username: "ingest", Password: version, Compression: "none"},
		`ClickHouse password: ClickHouse at `+srv.URL+` requires a password of user "ingest", and the Secret Manager secret version `+version+
			` that ClickHouse password names holds an empty one (a trailing newline is dropped): add a version that holds the password`)
}

// openRefused opens c, which must fail with a *ConfigError whose text starts with want and holds
// none of the passwords.
func openRefused(t *testing.T, c Config, want string, passwords ...string) {
	t.Helper()
	conn, err := Open(context.Background(), c)
	if err == nil {
		conn.Close()
		t.Fatal("Open succeeded")
	}
	var ce *ConfigError
	if !errors.As(err, &ce) {
		t.Fatalf("Open: %v, want a *ConfigError", err)
	}
	if !strings.HasPrefix(err.Error(), want) {
		t.Errorf("Open:\n%v\nwant it to start\n%s", err, want)
	}
	for _, pw := range passwords {
		if strings.Contains(err.Error(), pw) {
			t.Errorf("the error shows a password: %v", err)
		}
	}
}

// TestProxyAnswerThroughTunnel: over https:// an error response came through the proxy's
// CONNECT tunnel, from the far end (ClickHouse, or a load balancer in front of it), so it is not
// taken for the proxy's; over http:// it may be the proxy's; without http_proxy it is never.
func TestProxyAnswerThroughTunnel(t *testing.T) {
	unauthorized := fmt.Errorf("sendQuery: %w", &clickhouse.HTTPError{StatusCode: http.StatusUnauthorized, Err: errors.New(`response body: "Unauthorized"`)})
	for _, tc := range []struct {
		url  string
		err  error
		want int
	}{
		{"https://ch.example:8443/?http_proxy=http://proxy:3128", unauthorized, 0},
		{"http://ch.example:8123/?http_proxy=http://proxy:3128", unauthorized, http.StatusUnauthorized},
		{"http://ch.example:8123/", unauthorized, 0},
		{"https://ch.example:8443/?http_proxy=http://proxy:3128", errors.New(`Post "https://ch.example:8443": Proxy Authentication Required`), http.StatusProxyAuthRequired},
		{"http://ch.example:8123/?http_proxy=http://proxy:3128", errors.New(`Post "http://ch.example:8123": Proxy Authentication Required`), 0},
	} {
		scheme, _, _ := strings.Cut(tc.url, "://")
		if got := proxyAnswer(tc.err, Config{URL: tc.url, Username: "default"}, scheme, false); got != tc.want {
			t.Errorf("%s, %v: %d, want %d", tc.url, tc.err, got, tc.want)
		}
	}
}

// TestSilentServerExplained: over http:// and https:// a server that takes the connection and
// never answers (a firewall or load balancer in front of a stopped server, the wrong host) ends
// the first query at the dial timeout, which clickhouse-go says as a full pool ("increase the
// number of max open conn"); Open says that the server did not answer and what to check.
func TestSilentServerExplained(t *testing.T) {
	silent, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	go func() {
		for {
			c, err := silent.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	for _, scheme := range []string{"http", "https"} {
		t.Run(scheme, func(t *testing.T) {
			c := Config{URL: scheme + "://" + silent.Addr().String() + "?dial_timeout=1s", Username: "default", Password: "S3cret-pw-51"}
			openRefused(t, c, "ClickHouse URL: the server at "+c.URL+" did not answer within the dial timeout", "S3cret-pw-51")
		})
	}
}
