//go:build chdb

// Command chmodern serves ClickHouse's HTTP interface on loopback, every statement executed by
// the ClickHouse 26 engine as a library (chDB's libchdb.so, which github.com/chdb-io/chdb-go loads
// from CHDB_LIB_PATH; scripts/chdb.sh installs it). It is a stand-in of the interface, not of the
// database: what the tests of the pipeline's http:// path check is the engine's own parsing,
// defaults, constraints, deduplication, type names and error codes, as a current server has them.
//
//	go build -tags chdb -o bin/chmodern ./integration_test/chmodern
//	CHDB_LIB_PATH=$(scripts/chdb.sh path) bin/chmodern -listen 127.0.0.1:18123 -path /tmp/chmodern
//
// It prints "chmodern: serving ClickHouse <version> on http://<address> (tables in <path>)" when it
// answers. `make clickhouse-modern` builds and starts it in the background.
//
// What it takes, as a server does: POST and GET on /, the query in the query parameter, the body,
// or both (the parameter first); database, default_format, settings and param_<name> as URL
// parameters (X-ClickHouse-Database and X-ClickHouse-Format as headers); an INSERT's data after
// its FORMAT clause in the body, or as the whole body when the query parameter ends with the
// format's name; bodies in gzip, deflate, br or zstd (Content-Encoding) and in ClickHouse's own
// compressed blocks (decompress=1); results in any format the engine writes, in ClickHouse's
// compressed blocks when compress=1 (network_compression_method LZ4, ZSTD or NONE) and in the
// Accept-Encoding the client names when enable_http_compression=1; errors with the status of
// ClickHouse's exceptionCodeToHTTPStatus, X-ClickHouse-Exception-Code and the text
// "Code: N. DB::Exception: ...". /ping and a GET of / answer "Ok.".
//
// Limits: it checks no user or password (every request runs as the engine's default user) and
// has no TLS; one statement runs at a time (the engine has one session, shared by every
// request: between requests the stand-in resets the settings a request changed, the current
// database and temporary tables, but a query parameter stays set once given); HTTP sessions
// (session_id) and external tables (multipart/form-data) are refused with NOT_IMPLEMENTED (48);
// the whole result is built before the answer starts, so an error never arrives mid-stream, no
// progress headers are sent and X-ClickHouse-Summary is absent; clickhouse-go's handshake is
// answered with revision() 0 (see handshake), so its client reads every result as Native of
// revision 0, not at the revision a 26.x server would write. It shows nothing of a real
// server's HTTP handler itself: its buffering (wait_end_of_query), keep-alive, limits on request
// size, or its compression code. So the tests of the pipeline's http:// path over it
// (integration_test: TestModernServerRules, TestModernDeduplicatedRetry) show the engine's
// DEFAULTs, rejections with their codes and deduplication, but never an exception that arrives
// in the body after a 200 status (a server's answer under send_progress_in_http_headers, or one
// larger than its buffer), a connection a server breaks before it commits, nor deduplication on
// Replicated or Shared MergeTree, async inserts or Distributed tables; docs/delivery.md ("What the
// tests on the HTTP stand-in cannot show") has the list.
package main

import (
	"errors"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:18123", "address to serve on (port 0: any free port; the address is printed)")
	path := flag.String("path", "/tmp/pubsub-to-clickhouse-chmodern/data", "directory of the engine's tables, kept between runs (INSERT data passes through <path>.insert)")
	version := flag.Bool("version", false, "print the engine's version and exit (checks that the library loads and the engine starts)")
	verbose := flag.Bool("v", false, "log every statement (its first 200 characters) and its outcome")
	flag.Parse()

	e, err := openEngine(*path)
	if err != nil {
		log.Fatalf("chmodern: %v", err)
	}
	defer e.close()
	if *version {
		fmt.Println(e.version)
		return
	}
	l, err := net.Listen("tcp", *listen)
	if err != nil {
		log.Fatalf("chmodern: -listen %s: %v", *listen, err)
	}
	s := &server{engine: e}
	if *verbose {
		s.logf = log.New(os.Stderr, "chmodern: ", log.Lmicroseconds).Printf
	}
	go func() {
		stop := make(chan os.Signal, 1)
		signal.Notify(stop, syscall.SIGTERM, os.Interrupt)
		<-stop
		l.Close()
	}()
	fmt.Printf("chmodern: serving ClickHouse %s on http://%s (tables in %s)\n", e.version, l.Addr(), e.dir)
	if err := http.Serve(l, s); err != nil && !errors.Is(err, net.ErrClosed) {
		log.Fatalf("chmodern: %v", err)
	}
}
