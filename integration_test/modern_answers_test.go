package integration_test

// Answers of HTTP 200 OK that carry a failure, as ClickHouse servers before 25.x give them, in
// front of the ClickHouse 26 engine's HTTP stand-in (which answers every failure with its
// status): the built binary must not take them for stored rows (transforms/chclient/answers.go).

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"

	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"github.com/google/go-cmp/cmp"

	"github.com/ch-beam/pubsub-to-clickhouse/internal/chtest"
	"github.com/ch-beam/pubsub-to-clickhouse/pipeline"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/chclient"
)

// okFailures is an HTTP proxy in front of the stand-in that answers INSERTs into table as a
// server before 25.x may:
//
//   - timedOut: the first timedOut of them are not passed on; each is answered 200 OK with
//     X-ClickHouse-Exception-Code: 209 and no body (ClickHouse issue 65117: the server's read
//     of the INSERT's body timed out, and it stored nothing);
//   - progress: every INSERT the engine refuses is answered 200 OK with a progress header and the
//     engine's exception as the body, without X-ClickHouse-Exception-Code (a server under
//     send_progress_in_http_headers, whose status line has gone out before the failure: ClickHouse
//     issue 33205).
//
// Every other request, and answer, passes unchanged.
type okFailures struct {
	target, table string
	progress      bool
	client        *http.Client

	mu       sync.Mutex
	timedOut int
	answered int // INSERTs answered 200 OK with a failure
}

func (p *okFailures) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query().Get("query")
	insert := strings.HasPrefix(q, "INSERT INTO") && strings.Contains(q, chclient.QuoteIdent(p.table))
	p.mu.Lock()
	timeOut := insert && p.timedOut > 0
	if timeOut {
		p.timedOut--
		p.answered++
	}
	p.mu.Unlock()
	if timeOut {
		io.Copy(io.Discard, io.LimitReader(r.Body, 100)) // part of the body, then the "time-out"
		w.Header().Set("X-ClickHouse-Exception-Code", "209")
		w.WriteHeader(http.StatusOK)
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	req, err := http.NewRequestWithContext(r.Context(), r.Method, p.target+r.URL.RequestURI(), bytes.NewReader(body))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	req.Header = r.Header.Clone()
	resp, err := p.client.Do(req)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	answer, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	status := resp.StatusCode
	for k, v := range resp.Header {
		w.Header()[k] = v
	}
	if insert && p.progress && status != http.StatusOK {
		w.Header().Del("X-ClickHouse-Exception-Code")
		w.Header().Set("X-ClickHouse-Progress", `{"read_rows":"0","read_bytes":"0","written_rows":"0"}`)
		status = http.StatusOK
		p.mu.Lock()
		p.answered++
		p.mu.Unlock()
	}
	w.WriteHeader(status)
	w.Write(answer)
}

// startOKFailures starts p in front of srv for the rest of the test and returns its http:// URL.
func startOKFailures(t *testing.T, srv *chtest.ModernServer, p *okFailures) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p.target = srv.URL
	p.client = &http.Client{Transport: &http.Transport{DisableCompression: true}}
	hs := &http.Server{Handler: p}
	go hs.Serve(l)
	t.Cleanup(func() { hs.Close() })
	return "http://" + l.Addr().String()
}

// TestModernInsertTimedOutAfterOK: the first two INSERTs of rows are answered 200 OK with
// X-ClickHouse-Exception-Code 209 and nothing stored, as a server of 23.x to 24.8 answers an
// INSERT whose body it stopped reading. The built binary retries them: every message is a row,
// none is dead-lettered, every message is acknowledged.
func TestModernInsertTimedOutAfterOK(t *testing.T) {
	const n = 300
	srv := chtest.StartModern(t)
	e := newE2EOn(t, srv.Server, `CREATE TABLE {table} (id UInt32, s String) ENGINE = MergeTree ORDER BY id`)
	proxy := &okFailures{table: "events", timedOut: 2}
	url := startOKFailures(t, srv, proxy)
	var msgs []*pubsubpb.PubsubMessage
	for i := range n {
		msgs = append(msgs, &pubsubpb.PubsubMessage{Data: []byte(fmt.Sprintf(`{"id":%d,"s":"m%d"}`, i, i))})
	}
	ids := e.ps.Publish(t, e.topic, msgs...)
	e.opts.BatchRowCount = pipeline.GivenInt(100)
	e.opts.WindowSeconds = pipeline.GivenInt(1)
	e.runBinary(t, url)

	rows, dls := e.checkAccounted(t, n, "id")
	if rows != n || dls != 0 {
		t.Errorf("%d rows and %d dead letters, want %d rows and none", rows, dls, n)
	}
	if proxy.answered != 2 {
		t.Errorf("%d INSERTs answered 200 OK with code 209, want 2", proxy.answered)
	}
	e.checkAllAcked(t, ids)
}

// TestModernRejectionAfterOK: the engine's rejections of INSERTs (a DEFAULT that throws, code
// 395) reach the built binary as a server under send_progress_in_http_headers sends them, 200 OK
// and then the exception in the body. The rows it rejects are dead-lettered with its code and
// text, as when the status says so, and every other row is stored.
func TestModernRejectionAfterOK(t *testing.T) {
	srv := chtest.StartModern(t)
	e := newE2EOn(t, srv.Server, `CREATE TABLE {table} (id UInt32, x UInt8, checked UInt8 DEFAULT throwIf(x > 5, 'too big')) ENGINE = MergeTree ORDER BY id`)
	proxy := &okFailures{table: "events", progress: true}
	url := startOKFailures(t, srv, proxy)
	var msgs []*pubsubpb.PubsubMessage
	var wantRows []string
	wantDead := map[string]string{}
	for i := range 60 {
		m := fmt.Sprintf(`{"id":%d,"x":%d}`, i, i%8)
		msgs = append(msgs, &pubsubpb.PubsubMessage{Data: []byte(m)})
		if i%8 > 5 {
			wantDead[m] = "code: 395 (too big)"
		} else {
			wantRows = append(wantRows, fmt.Sprintf("%d\t%d", i, i%8))
		}
	}
	ids := e.ps.Publish(t, e.topic, msgs...)
	e.opts.BatchRowCount = pipeline.GivenInt(1000)
	e.opts.WindowSeconds = pipeline.GivenInt(2)
	e.runBinary(t, url)

	got := srv.MustQuery(t, "SELECT id, x FROM events ORDER BY id FORMAT TabSeparatedRaw")
	if diff := cmp.Diff(wantRows, strings.Split(got, "\n")); diff != "" {
		t.Errorf("rows read back from the engine (-want +got):\n%s", diff)
	}
	gotDead := map[string]string{}
	for _, l := range strings.Split(srv.MustQuery(t, "SELECT raw_message, error_message FROM dead_letters FORMAT TabSeparatedRaw"), "\n") {
		if raw, msg, ok := strings.Cut(l, "\t"); ok {
			gotDead[raw] = engineCode(msg, wantDead[raw])
		}
	}
	if diff := cmp.Diff(wantDead, gotDead); diff != "" {
		t.Errorf("the dead-letter table's messages and the engine's code in their errors (-want +got):\n%s", diff)
	}
	if proxy.answered == 0 {
		t.Error("no INSERT was answered 200 OK with a failure: the test shows nothing")
	}
	e.checkAllAcked(t, ids)
}

// bodyLimit is an HTTP proxy in front of the stand-in that refuses, as nginx's
// client_max_body_size does, every INSERT into table whose body is larger than limit bytes: it
// reads the body up to the limit and answers 413 with a page of its own. (Only into table: a
// dead letter holds its message, and one over the limit could not be written either.)
type bodyLimit struct {
	target, table string
	limit         int64
	client        *http.Client

	mu      sync.Mutex
	refused int
}

func (p *bodyLimit) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, p.limit+1))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	if int64(len(body)) > p.limit && strings.Contains(r.URL.Query().Get("query"), chclient.QuoteIdent(p.table)) {
		p.mu.Lock()
		p.refused++
		p.mu.Unlock()
		w.Header().Set("Content-Type", "text/html")
		w.Header().Set("Connection", "close")
		w.WriteHeader(http.StatusRequestEntityTooLarge)
		io.WriteString(w, "<html><head><title>413 Request Entity Too Large</title></head><body><center><h1>413 Request Entity Too Large</h1></center></body></html>\n")
		return
	}
	rest, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	body = append(body, rest...)
	req, err := http.NewRequestWithContext(r.Context(), r.Method, p.target+r.URL.RequestURI(), bytes.NewReader(body))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	req.Header = r.Header.Clone()
	resp, err := p.client.Do(req)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	for k, v := range resp.Header {
		w.Header()[k] = v
	}
	w.WriteHeader(resp.StatusCode)
	io.Copy(w, resp.Body)
}

// TestModernProxyBodyLimit: a proxy in front of the server takes no INSERT into the table over
// 8 KiB (nginx's client_max_body_size) and answers 413 with a page of its own. The built binary splits
// the INSERTs it refuses until they pass, as it does those the server finds too large: every
// row is stored but the one whose row alone is larger than the limit, which is dead-lettered
// once its retries are spent; every message is acknowledged.
func TestModernProxyBodyLimit(t *testing.T) {
	const n = 200
	srv := chtest.StartModern(t)
	e := newE2EOn(t, srv.Server, `CREATE TABLE {table} (id UInt32, s String) ENGINE = MergeTree ORDER BY id`)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	proxy := &bodyLimit{target: srv.URL, table: "events", limit: 8 << 10, client: &http.Client{Transport: &http.Transport{DisableCompression: true}}}
	hs := &http.Server{Handler: proxy}
	go hs.Serve(l)
	t.Cleanup(func() { hs.Close() })
	var msgs []*pubsubpb.PubsubMessage
	for i := range n {
		s := fmt.Sprintf("m%d-%s", i, strings.Repeat("x", 200))
		if i == 77 {
			s = strings.Repeat("y", 10<<10) // alone over the limit
		}
		msgs = append(msgs, &pubsubpb.PubsubMessage{Data: []byte(fmt.Sprintf(`{"id":%d,"s":"%s"}`, i, s))})
	}
	ids := e.ps.Publish(t, e.topic, msgs...)
	e.opts.BatchRowCount = pipeline.GivenInt(n)
	e.opts.WindowSeconds = pipeline.GivenInt(2)
	e.runBinary(t, "http://"+l.Addr().String(), "--clickHouseCompression=none", "--maxRetries=2")

	rows, dls := e.checkAccounted(t, n, "id")
	if rows != n-1 || dls != 1 {
		t.Errorf("%d rows and %d dead letters, want %d rows and 1", rows, dls, n-1)
	}
	if got := srv.MustQuery(t, "SELECT count() FROM events WHERE id = 77"); got != "0" {
		t.Errorf("the row over the limit was stored (%s)", got)
	}
	if got := srv.MustQuery(t, "SELECT raw_message LIKE '{\"id\":77,%', error_message LIKE '%413%' FROM dead_letters FORMAT TabSeparatedRaw"); got != "1\t1" {
		t.Errorf("the dead letter: %q, want message 77 with an error naming the 413", got)
	}
	proxy.mu.Lock()
	defer proxy.mu.Unlock()
	if proxy.refused == 0 {
		t.Error("the proxy refused no request: the test shows nothing")
	}
	e.checkAllAcked(t, ids)
}
