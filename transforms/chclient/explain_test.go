package chclient

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
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
			`ClickHouse password: the server at http://HOST refused user "default" (HTTP 401 Unauthorized) without a ClickHouse error code: ` +
				`the user name or the password is wrong, or the user may not log in from here: check ClickHouse user and ClickHouse password`},
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
			conn, err := Open(context.Background(), Config{URL: srv.URL, Username: "default", Password: "s3cret-pw", Compression: "none"})
			if err == nil {
				conn.Close()
				t.Fatal("Open succeeded")
			}
			var ce *ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("Open: %v, want a *ConfigError", err)
			}
			want := strings.ReplaceAll(tc.want, "HOST", host)
			if !strings.HasPrefix(err.Error(), want+" (") {
				t.Errorf("Open:\n%v\nwant it to start\n%s", err, want)
			}
			if strings.Contains(err.Error(), "s3cret-pw") {
				t.Errorf("the error shows the password: %v", err)
			}
		})
	}
}
