package chclient

import (
	"bytes"
	"compress/gzip"
	"compress/zlib"
	"context"
	"encoding/pem"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/andybalholm/brotli"
	"github.com/klauspost/compress/zstd"

	"github.com/ch-beam/pubsub-to-clickhouse/transforms/secret"
)

// TestAnswersOfOKChecked: the round tripper that an http:// URL's options give clickhouse-go
// turns each 200 OK that carries a failure into status 500, the body kept (or, when there is
// none, a text with the exception's code), and passes every other answer unchanged.
func TestAnswersOfOKChecked(t *testing.T) {
	for _, tc := range []struct {
		name       string
		query      string // the URL parameter query, as clickhouse-go's batch sends an INSERT
		body       string // the request's body
		code, text string // the server's X-ClickHouse-Exception-Code and body, with status 200
		encoding   string // the Content-Encoding the server sends text in
		status     int    // the status the client gets
		wantText   string // a part of the body the client reads
	}{
		{name: "an INSERT stored", query: "INSERT INTO `d`.`t` (`a`) FORMAT Native", body: "\x01\x01", status: 200},
		{name: "an INSERT answered with white space", query: "INSERT INTO `d`.`t` (`a`) FORMAT Native", text: "\r\n", status: 200},
		{name: "an INSERT whose read timed out (issue 65117)", query: "INSERT INTO `d`.`t` (`a`) FORMAT Native", code: "209",
			status: 500, wantText: "Code: 209. The server answered HTTP 200 OK with X-ClickHouse-Exception-Code: 209 and no text"},
		{name: "an INSERT refused after a progress header", query: "INSERT INTO `d`.`t` (`a`) FORMAT Native",
			text: "Code: 395. DB::Exception: Value passed to 'throwIf' function is non-zero", status: 500, wantText: "Code: 395. DB::Exception"},
		{name: "an INSERT answered by a proxy's page", query: "insert into t format Native", text: "<html>Welcome</html>",
			status: 500, wantText: "<html>"},
		{name: "an INSERT ... SELECT by Exec, failed", body: "INSERT INTO `d`.`t` (`c`) SELECT throwIf(1)", text: "Code: 395. DB::Exception: x",
			status: 500, wantText: "Code: 395."},
		{name: "an ALTER by Exec, done", body: "ALTER TABLE `d`.`t` ADD COLUMN IF NOT EXISTS `n` UInt8", status: 200},
		{name: "an ALTER ON CLUSTER by Exec, with each host's status", body: "ALTER TABLE `d`.`t` ON CLUSTER `c` ADD COLUMN IF NOT EXISTS `n` UInt8",
			text: "ch-1\t9000\t0\t\t1\t0\nch-2\t9000\t0\t\t0\t0\n", status: 200, wantText: "ch-2"},
		{name: "an INSERT stored, its empty answer in gzip", query: "INSERT INTO t FORMAT Native", encoding: "gzip", status: 200},
		{name: "an INSERT stored, its empty answer in deflate", query: "INSERT INTO t FORMAT Native", encoding: "deflate", status: 200},
		{name: "an INSERT stored, its empty answer in br", query: "INSERT INTO t FORMAT Native", encoding: "br", status: 200},
		{name: "an INSERT stored, its empty answer in zstd", query: "INSERT INTO t FORMAT Native", encoding: "zstd", status: 200},
		{name: "an INSERT refused, in gzip", query: "INSERT INTO t FORMAT Native", encoding: "gzip", text: "Code: 395. DB::Exception: z",
			status: 500},
		{name: "an INSERT answered with what is not gzip", query: "INSERT INTO t FORMAT Native", encoding: "gzip", text: "<html>", status: 500},
		{name: "an ALTER by Exec, failed after its status", body: " ALTER TABLE `d`.`t` ADD COLUMN `n` UInt8", code: "517", text: "Code: 517. DB::Exception: y",
			status: 500, wantText: "Code: 517."},
		{name: "a SELECT's result", body: "SELECT name, type FROM system.columns", text: "Code: 1. looks like an error, but is data", status: 200,
			wantText: "Code: 1."},
		{name: "a SELECT that failed after its status", body: "SELECT 1", code: "241", text: "partial data", status: 500, wantText: "partial data"},
		{name: "code 0", query: "INSERT INTO t FORMAT Native", code: "0", status: 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				io.Copy(io.Discard, r.Body)
				if tc.code != "" {
					w.Header().Set("X-ClickHouse-Exception-Code", tc.code)
				}
				if tc.encoding == "" || strings.HasPrefix(tc.text, "<") {
					if tc.encoding != "" {
						w.Header().Set("Content-Encoding", tc.encoding)
					}
					io.WriteString(w, tc.text)
					return
				}
				w.Header().Set("Content-Encoding", tc.encoding)
				w.Write(encoded(t, tc.encoding, tc.text))
			}))
			defer srv.Close()
			o, err := Config{URL: srv.URL, Username: "u"}.Options()
			if err != nil {
				t.Fatal(err)
			}
			if o.TransportFunc == nil {
				t.Fatal("no TransportFunc for an http:// URL")
			}
			rt, err := o.TransportFunc(&http.Transport{})
			if err != nil {
				t.Fatal(err)
			}
			u := srv.URL + "/?database=d"
			if tc.query != "" {
				u += "&query=" + url.QueryEscape(tc.query)
			}
			req, err := http.NewRequest(http.MethodPost, u, strings.NewReader(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			if tc.query != "" {
				req.Header.Set("Content-Type", "application/octet-stream")
			}
			if tc.encoding != "" {
				req.Header.Set("Accept-Encoding", tc.encoding) // as clickhouse-go does: Go's client then decodes nothing itself
			}
			resp, err := (&http.Client{Transport: rt}).Do(req)
			if err != nil {
				t.Fatal(err)
			}
			got, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != tc.status || !strings.Contains(string(got), tc.wantText) {
				t.Errorf("status %d, body %q; want %d and a body holding %q", resp.StatusCode, got, tc.status, tc.wantText)
			}
		})
	}
}

// TestRedirectsNotFollowed: a server in front of ClickHouse that answers an https:// connection's
// requests with a redirect to another host, over plain HTTP: the pipeline does not follow it, so
// that host never gets a request (which carried the password in X-ClickHouse-Key), and Open
// fails with a *RedirectError that names the status and holds no password.
func TestRedirectsNotFollowed(t *testing.T) {
	const pw = "p@ss:w/rd%#"
	for _, status := range []int{http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther, http.StatusTemporaryRedirect, http.StatusPermanentRedirect} {
		t.Run(http.StatusText(status), func(t *testing.T) {
			var reached []string
			other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				reached = append(reached, r.Method+" key="+r.Header.Get("X-ClickHouse-Key"))
			}))
			defer other.Close()
			front := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				http.Redirect(w, r, other.URL+"/?password=token-in-location", status)
			}))
			defer front.Close()
			caFile := filepath.Join(t.TempDir(), "ca.crt")
			if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: front.Certificate().Raw}), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := Open(context.Background(), Config{URL: "https://" + front.Listener.Addr().String(), Database: "d", Username: "u",
				Password: secret.String(pw), CACertificate: caFile})
			var re *RedirectError
			if !errors.As(err, &re) || !strings.Contains(err.Error(), strconv.Itoa(status)) {
				t.Errorf("Open: %v; want a *RedirectError naming status %d", err, status)
			}
			if err != nil && (strings.Contains(err.Error(), pw) || strings.Contains(err.Error(), "token-in-location")) {
				t.Errorf("the error holds a secret: %v", err)
			}
			if len(reached) > 0 {
				t.Errorf("the redirect was followed: %v", reached)
			}
		})
	}
}

// encoded returns text in the Content-Encoding enc.
func encoded(t *testing.T, enc, text string) []byte {
	var b bytes.Buffer
	var w io.WriteCloser
	switch enc {
	case "gzip":
		w = gzip.NewWriter(&b)
	case "deflate":
		w = zlib.NewWriter(&b)
	case "br":
		w = brotli.NewWriter(&b)
	case "zstd":
		zw, err := zstd.NewWriter(&b)
		if err != nil {
			t.Fatal(err)
		}
		w = zw
	}
	if _, err := io.WriteString(w, text); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}
