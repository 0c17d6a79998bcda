// Package chtest gives tests a real ClickHouse server: a database of their own, DDL and queries
// through the HTTP interface (results as TabSeparated text, as clickhouse-client prints them), and
// the connection parameters the pipeline uses (the native protocol).
//
// Environment: CLICKHOUSE_URL (default clickhouse://127.0.0.1:9000, what the pipeline gets) and
// CLICKHOUSE_HTTP (default http://127.0.0.1:8123, for test queries). scripts/clickhouse.sh start
// runs such a server; `make test` and .ci/run start it. StartOwn starts a server of a test's own;
// StartModern, the stand-in of ClickHouse's HTTP interface over the ClickHouse 26 engine
// (integration_test/chmodern), whose http:// URL serves the pipeline and the test queries alike.
package chtest

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/ch-beam/pubsub-to-clickhouse/transforms/chclient"
)

// Server is a test's view of the ClickHouse server, with a database of its own.
type Server struct {
	Database string
	URL      string // native-protocol URL for the pipeline
	HTTP     string // HTTP interface for test queries
	// modern is true for the ClickHouse 26 engine (StartModern), which knows no
	// allow_experimental_low_cardinality_type (LowCardinality is a normal type there).
	modern bool
}

var seq atomic.Int64

// New creates a fresh database for the test and drops it when the test ends (unless the test
// failed, so its tables can be inspected). It fails the test when no server answers.
func New(t testing.TB) *Server {
	t.Helper()
	s := &Server{
		URL:  env("CLICKHOUSE_URL", "clickhouse://127.0.0.1:9000"),
		HTTP: env("CLICKHOUSE_HTTP", "http://127.0.0.1:8123"),
	}
	name := regexp.MustCompile(`[^A-Za-z0-9_]`).ReplaceAllString(t.Name(), "_")
	if len(name) > 40 {
		name = name[:40]
	}
	if _, err := s.Query("SELECT 1"); err != nil {
		t.Fatalf("no ClickHouse server answers at %s (start one with scripts/clickhouse.sh start): %v", s.HTTP, err)
	}
	db := fmt.Sprintf("t_%s_%d_%d", strings.ToLower(name), os.Getpid(), seq.Add(1))
	s.MustExec(t, "CREATE DATABASE "+db)
	s.Database = db
	t.Cleanup(func() {
		if !t.Failed() {
			s.Exec("DROP DATABASE IF EXISTS " + s.Database)
		}
	})
	return s
}

func env(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

// Config returns the pipeline's connection parameters for the test database (user default, no
// password).
func (s *Server) Config() chclient.Config {
	return chclient.Config{URL: s.URL, Database: s.Database, Username: "default"}
}

// Conn opens a clickhouse-go connection to the test database, closed when the test ends.
func (s *Server) Conn(t testing.TB) driver.Conn {
	t.Helper()
	conn, err := chclient.Open(context.Background(), s.Config())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// Query runs q over HTTP in the test database and returns the TabSeparated output without its
// final newline. Settings may be given as "name=value" strings.
func (s *Server) Query(q string, settings ...string) (string, error) {
	return s.Post(q, nil, settings...)
}

// Post is Query with a body: an INSERT's data, after the query of the URL.
func (s *Server) Post(q string, body []byte, settings ...string) (string, error) {
	params := url.Values{"query": {q}}
	if s.Database != "" {
		params.Set("database", s.Database)
	}
	for _, kv := range settings {
		k, v, _ := strings.Cut(kv, "=")
		params.Set(k, v)
	}
	client := http.Client{Timeout: 60 * time.Second}
	resp, err := client.Post(s.HTTP+"/?"+params.Encode(), "text/plain", bytes.NewReader(body))
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("clickhouse: %s: %s", q, strings.TrimSpace(string(out)))
	}
	return strings.TrimSuffix(string(out), "\n"), nil
}

// Exec runs a statement and returns its error.
func (s *Server) Exec(q string, settings ...string) error {
	_, err := s.Query(q, settings...)
	return err
}

// MustExec runs a statement and fails the test on error.
func (s *Server) MustExec(t testing.TB, q string, settings ...string) {
	t.Helper()
	if err := s.Exec(q, settings...); err != nil {
		t.Fatal(err)
	}
}

// MustQuery runs a query and fails the test on error.
func (s *Server) MustQuery(t testing.TB, q string, settings ...string) string {
	t.Helper()
	out, err := s.Query(q, settings...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// CreateTable runs a CREATE TABLE whose table name is written {table}, with the settings the
// server on these machines (18.16) needs for LowCardinality columns.
func (s *Server) CreateTable(t testing.TB, ddl, table string) {
	t.Helper()
	ddl = strings.ReplaceAll(ddl, "{table}", table)
	if s.modern {
		s.MustExec(t, ddl)
		return
	}
	s.MustExec(t, ddl, "allow_experimental_low_cardinality_type=1")
}
