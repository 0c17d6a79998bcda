//go:build chdb

package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"math/big"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/ClickHouse/ch-go/compress"
	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/google/go-cmp/cmp"
)

// srv is the stand-in of these tests, over the process's one engine.
var srv *httptest.Server

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "chmodern-test-")
	if err != nil {
		panic(err)
	}
	e, err := openEngine(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	srv = httptest.NewServer(&server{engine: e})
	code := m.Run()
	srv.Close()
	e.close()
	os.RemoveAll(dir)
	os.Exit(code)
}

// post sends a request as curl would and returns the status, the headers and the body.
func post(t *testing.T, method, query string, params url.Values, body []byte, header ...string) (int, http.Header, string) {
	t.Helper()
	params = maps.Clone(params)
	if params == nil {
		params = url.Values{}
	}
	if query != "" {
		params.Set("query", query)
	}
	req, err := http.NewRequest(method, srv.URL+"/?"+params.Encode(), bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, string(out)
}

// mustPost is post that fails the test unless the status is 200.
func mustPost(t *testing.T, query string, params url.Values, body []byte) string {
	t.Helper()
	status, _, out := post(t, http.MethodPost, query, params, body)
	if status != http.StatusOK {
		t.Fatalf("%s: HTTP %d: %s", query, status, out)
	}
	return out
}

func TestClickHouseGo(t *testing.T) {
	for _, method := range []clickhouse.CompressionMethod{clickhouse.CompressionNone, clickhouse.CompressionLZ4, clickhouse.CompressionZSTD, clickhouse.CompressionGZIP} {
		t.Run(method.String(), func(t *testing.T) {
			ctx := context.Background()
			db := "go_" + method.String()
			mustPost(t, "CREATE DATABASE IF NOT EXISTS "+db, nil, nil)
			conn, err := clickhouse.Open(&clickhouse.Options{
				Addr:        []string{strings.TrimPrefix(srv.URL, "http://")},
				Protocol:    clickhouse.HTTP,
				Auth:        clickhouse.Auth{Database: db, Username: "default"},
				Compression: &clickhouse.Compression{Method: method},
			})
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			if err := conn.Ping(ctx); err != nil {
				t.Fatalf("Ping: %v", err)
			}
			v, err := conn.ServerVersion()
			if err != nil || v.Version.Major != 26 {
				t.Fatalf("ServerVersion: %v, %v; want 26.x", v, err)
			}
			if err := conn.Exec(ctx, `CREATE OR REPLACE TABLE events (
				id UInt32, ts DateTime64(3, 'UTC'), attrs Map(String, UInt64), note Nullable(String),
				kind LowCardinality(String), big Int256, ok Bool
			) ENGINE = MergeTree ORDER BY id`); err != nil {
				t.Fatal(err)
			}

			// The schema, as the pipeline reads it.
			rows, err := conn.Query(ctx, "SELECT name, type FROM system.columns WHERE database = currentDatabase() AND table = 'events' ORDER BY position")
			if err != nil {
				t.Fatal(err)
			}
			var columns []string
			for rows.Next() {
				var name, typ string
				if err := rows.Scan(&name, &typ); err != nil {
					t.Fatal(err)
				}
				columns = append(columns, name+" "+typ)
			}
			if err := rows.Err(); err != nil {
				t.Fatal(err)
			}
			wantColumns := []string{"id UInt32", "ts DateTime64(3, 'UTC')", "attrs Map(String, UInt64)", "note Nullable(String)", "kind LowCardinality(String)", "big Int256", "ok Bool"}
			if diff := cmp.Diff(wantColumns, columns); diff != "" {
				t.Errorf("system.columns (-want +got):\n%s", diff)
			}

			// A batch, with the whole range of each type's values, read back.
			ts := time.Date(2026, 12, 2, 8, 30, 15, 123_000_000, time.UTC)
			note := "a note"
			batch, err := conn.PrepareBatch(ctx, "INSERT INTO events")
			if err != nil {
				t.Fatal(err)
			}
			const n = 1000
			for i := range n {
				var p *string
				if i%3 == 0 {
					p = &note
				}
				attrs := map[string]uint64{"k": uint64(i)}
				if i%2 == 0 {
					attrs = map[string]uint64{}
				}
				if err := batch.Append(uint32(i), ts.Add(time.Duration(i)*time.Millisecond), attrs, p, fmt.Sprintf("kind%d", i%5), bigOf(i), i%2 == 1); err != nil {
					t.Fatal(err)
				}
			}
			if err := batch.Send(); err != nil {
				t.Fatalf("Send: %v", err)
			}
			got := map[uint32]string{}
			rows, err = conn.Query(ctx, "SELECT id, ts, attrs, note, kind, big, ok FROM events")
			if err != nil {
				t.Fatal(err)
			}
			for rows.Next() {
				var (
					id    uint32
					rts   time.Time
					attrs map[string]uint64
					rnote *string
					kind  string
					b256  = new(big.Int)
					ok    bool
				)
				if err := rows.Scan(&id, &rts, &attrs, &rnote, &kind, b256, &ok); err != nil {
					t.Fatal(err)
				}
				got[id] = fmt.Sprint(rts.UTC().Format(time.RFC3339Nano), attrs, deref(rnote), kind, b256, ok)
			}
			if err := rows.Err(); err != nil {
				t.Fatal(err)
			}
			if len(got) != n {
				t.Fatalf("%d rows read back, want %d", len(got), n)
			}
			for i := range n {
				attrs := map[string]uint64{"k": uint64(i)}
				if i%2 == 0 {
					attrs = map[string]uint64{}
				}
				var p *string
				if i%3 == 0 {
					p = &note
				}
				want := fmt.Sprint(ts.Add(time.Duration(i)*time.Millisecond).Format(time.RFC3339Nano), attrs, deref(p), fmt.Sprintf("kind%d", i%5), bigOf(i), i%2 == 1)
				if got[uint32(i)] != want {
					t.Errorf("row %d:\n got  %s\n want %s", i, got[uint32(i)], want)
				}
			}
			// The engine's own view of what it stored.
			want := fmt.Sprintf("1000\t666\t5\t%s\t2026-12-02 08:30:16.122\n", bigOf(n-1))
			if out := mustPost(t, "SELECT count(), countIf(note IS NULL), uniqExact(kind), max(big), toString(max(ts)) FROM events", url.Values{"database": {db}}, nil); out != want {
				t.Errorf("the engine's count, NULLs, kinds, max(big), max(ts) = %q", out)
			}

			// A server's exception arrives as clickhouse-go's *Exception with its code.
			err = conn.Exec(ctx, "SELECT * FROM no_such_table")
			var ex *clickhouse.Exception
			if !errors.As(err, &ex) || ex.Code != 60 {
				t.Errorf("a query of a missing table: %v, want a *clickhouse.Exception of code 60", err)
			}
		})
	}
}

// int256Min is the least Int256.
var int256Min, _ = new(big.Int).SetString("-57896044618658097711785492504343953926634992332820282019728792003956564819968", 10)

// bigOf returns the Int256 value of row i: Int256's least value plus i.
func bigOf(i int) *big.Int { return new(big.Int).Add(int256Min, big.NewInt(int64(i))) }

func deref(p *string) string {
	if p == nil {
		return "NULL"
	}
	return *p
}

// TestCurl sends what curl users send and checks what a server answers.
func TestCurl(t *testing.T) {
	mustPost(t, "CREATE DATABASE IF NOT EXISTS curl", nil, nil)
	db := url.Values{"database": {"curl"}}
	mustPost(t, "CREATE OR REPLACE TABLE t (a UInt8, s String DEFAULT concat('x', toString(a)), CONSTRAINT small CHECK a < 100) ENGINE = MergeTree ORDER BY a", db, nil)
	mustPost(t, "INSERT INTO t FORMAT JSONEachRow", db, []byte(`{"a":1}`+"\n"+`{"a":2,"s":"two"}`))
	mustPost(t, "", db, []byte("INSERT INTO t FORMAT JSONEachRow\n"+`{"a":3}`))
	mustPost(t, "INSERT INTO t (a) VALUES", db, []byte("(4)"))
	mustPost(t, "", db, []byte("INSERT INTO t SETTINGS insert_deduplication_token = 'x' FORMAT CSV\n5,five\n"))

	gz := func(s string) []byte {
		var b bytes.Buffer
		w := gzip.NewWriter(&b)
		io.WriteString(w, s)
		w.Close()
		return b.Bytes()
	}
	if status, _, out := post(t, http.MethodPost, "INSERT INTO t FORMAT TabSeparated", db, gz("6\tsix\n"), "Content-Encoding", "gzip"); status != http.StatusOK {
		t.Fatalf("a gzip body: HTTP %d: %s", status, out)
	}
	compressed := compress.NewWriter(compress.LevelZero, compress.ZSTD)
	if err := compressed.Compress([]byte("7\tseven\n")); err != nil {
		t.Fatal(err)
	}
	if out := mustPost(t, "INSERT INTO t FORMAT TabSeparated", url.Values{"database": {"curl"}, "decompress": {"1"}}, compressed.Data); out != "" {
		t.Errorf("INSERT answered %q", out)
	}

	for _, c := range []struct {
		name    string
		method  string
		query   string
		params  url.Values
		body    string
		header  []string
		status  int
		code    string // X-ClickHouse-Exception-Code
		want    string // the body, or its beginning for an error
		format  string // X-ClickHouse-Format
		decoded func([]byte) (string, error)
	}{
		{name: "the rows and their DEFAULTs", query: "SELECT a, s FROM t ORDER BY a FORMAT JSONEachRow", params: db, status: 200,
			want: `{"a":1,"s":"x1"}` + "\n" + `{"a":2,"s":"two"}` + "\n" + `{"a":3,"s":"x3"}` + "\n" + `{"a":4,"s":"x4"}` + "\n" + `{"a":5,"s":"five"}` + "\n" + `{"a":6,"s":"six"}` + "\n" + `{"a":7,"s":"seven"}` + "\n", format: "JSONEachRow"},
		{name: "GET, TabSeparated by default", method: http.MethodGet, query: "SELECT 1, 'a\\tb'", status: 200, want: "1\ta\\tb\n", format: "TabSeparated"},
		{name: "the query in the body", body: "SELECT count() FROM curl.t", status: 200, want: "7\n"},
		{name: "the query in the URL and the body", query: "SELECT count() ", body: "FROM curl.t", status: 200, want: "7\n"},
		{name: "default_format", query: "SELECT 1 AS x", params: url.Values{"default_format": {"JSONCompact"}}, status: 200, want: "{\n\t\"meta\":", format: "JSONCompact"},
		{name: "X-ClickHouse-Format", query: "SELECT 1 AS x", header: []string{"X-ClickHouse-Format", "CSVWithNames"}, status: 200, want: "\"x\"\n1\n", format: "CSVWithNames"},
		{name: "X-ClickHouse-Database", query: "SELECT currentDatabase()", header: []string{"X-ClickHouse-Database", "curl"}, status: 200, want: "curl\n"},
		{name: "query parameters", query: "SELECT {n:UInt8} + 1, {s:String}", params: url.Values{"param_n": {"41"}, "param_s": {"it's"}}, status: 200, want: "42\tit\\'s\n"},
		{name: "a setting", query: "SELECT getSetting('max_block_size')", params: url.Values{"max_block_size": {"1234"}}, status: 200, want: "1234\n"},
		{name: "the setting is not left to the next request", query: "SELECT getSetting('max_block_size')", status: 200, want: "65409\n"},
		{name: "SET is not left to the next request", body: "SET max_block_size = 99", status: 200, want: ""},
		{name: "after SET", query: "SELECT getSetting('max_block_size')", status: 200, want: "65409\n"},
		{name: "USE is not left to the next request", body: "USE curl", status: 200, want: ""},
		{name: "after USE", query: "SELECT currentDatabase()", status: 200, want: "default\n"},
		{name: "a temporary table", body: "CREATE TEMPORARY TABLE tmp (a UInt8)", status: 200, want: ""},
		{name: "is not left to the next request", query: "SELECT count() FROM system.tables WHERE is_temporary", status: 200, want: "0\n"},
		{name: "RowBinary", query: "SELECT toUInt16(258) FORMAT RowBinary", status: 200, want: "\x02\x01", format: "RowBinary"},
		{name: "Native", query: "SELECT 1 FORMAT Native", status: 200, want: "\x01\x01\x011\x05UInt8\x01", format: "Native"},
		{name: "compress=1", query: "SELECT 'compressed'", params: url.Values{"compress": {"1"}}, status: 200, decoded: func(b []byte) (string, error) {
			out, err := io.ReadAll(compress.NewReader(bytes.NewReader(b)))
			if errors.Is(err, io.EOF) {
				err = nil
			}
			return string(out), err
		}, want: "compressed\n"},
		{name: "gzip when enable_http_compression=1", query: "SELECT 'zipped'", params: url.Values{"enable_http_compression": {"1"}}, header: []string{"Accept-Encoding", "gzip"}, status: 200, decoded: func(b []byte) (string, error) {
			r, err := gzip.NewReader(bytes.NewReader(b))
			if err != nil {
				return "", err
			}
			out, err := io.ReadAll(r)
			return string(out), err
		}, want: "zipped\n"},
		{name: "no gzip without enable_http_compression", query: "SELECT 'plain'", header: []string{"Accept-Encoding", "gzip"}, status: 200, want: "plain\n"},
		{name: "a missing table", query: "SELECT * FROM nope", status: 404, code: "60", want: "Code: 60. DB::Exception: Unknown table expression identifier 'nope'"},
		{name: "a syntax error", query: "SELEC 1", status: 400, code: "62", want: "Code: 62. DB::Exception: Syntax error"},
		{name: "an unknown setting", query: "SELECT 1", params: url.Values{"no_such_setting": {"1"}}, status: 404, code: "115", want: "Code: 115. DB::Exception: Unknown setting 'no_such_setting'"},
		{name: "a CHECK constraint", query: "INSERT INTO curl.t (a) VALUES (200)", status: 500, code: "469", want: "Code: 469. DB::Exception: Constraint `small` for table curl.t"},
		{name: "a value that does not parse", query: "INSERT INTO curl.t FORMAT JSONEachRow", body: `{"a":"x"}`, status: 400, code: "27", want: "Code: 27. DB::Exception: Cannot parse input: expected '\"' before: 'x\"}': (while reading the value of key a): (at row 1)\n: While executing ParallelParsingBlockInputFormat. (CANNOT"},
		{name: "an INSERT without data", query: "INSERT INTO curl.t FORMAT TabSeparated", status: 500, code: "108", want: "Code: 108. DB::Exception: No data to insert"},
		{name: "GET is read-only", method: http.MethodGet, query: "CREATE TABLE curl.u (a UInt8) ENGINE = Memory", status: 500, code: "164", want: "Code: 164. DB::Exception: Cannot execute query in readonly mode."},
		{name: "an empty query", status: 400, code: "62", body: " ", want: "Code: 62. DB::Exception: Empty query"},
		{name: "sessions are refused", query: "SELECT 1", params: url.Values{"session_id": {"s"}}, status: 501, code: "48", want: "Code: 48. DB::Exception: HTTP sessions (session_id) are not served by this stand-in"},
	} {
		t.Run(c.name, func(t *testing.T) {
			method := c.method
			if method == "" {
				method = http.MethodPost
			}
			status, h, out := post(t, method, c.query, c.params, []byte(c.body), c.header...)
			if c.decoded != nil {
				var err error
				if out, err = c.decoded([]byte(out)); err != nil {
					t.Fatalf("decoding the answer: %v", err)
				}
			}
			if status != c.status {
				t.Errorf("HTTP %d, want %d: %s", status, c.status, out)
			}
			if got := h.Get("X-ClickHouse-Exception-Code"); got != c.code {
				t.Errorf("X-ClickHouse-Exception-Code %q, want %q", got, c.code)
			}
			if c.code != "" || strings.HasSuffix(c.want, ":") || strings.HasPrefix(c.want, "{\n") {
				if !strings.HasPrefix(out, c.want) {
					t.Errorf("answer\n got  %q\n want it to begin with %q", out, c.want)
				}
			} else if out != c.want {
				t.Errorf("answer\n got  %q\n want %q", out, c.want)
			}
			if c.format != "" && h.Get("X-ClickHouse-Format") != c.format {
				t.Errorf("X-ClickHouse-Format %q, want %q", h.Get("X-ClickHouse-Format"), c.format)
			}
		})
	}
}

// TestPing checks the health checks a load balancer or a client's ping sends.
func TestPing(t *testing.T) {
	for _, path := range []string{"/ping", "/"} {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		out, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || string(out) != "Ok.\n" {
			t.Errorf("GET %s: HTTP %d %q, want 200 \"Ok.\\n\"", path, resp.StatusCode, out)
		}
	}
}
