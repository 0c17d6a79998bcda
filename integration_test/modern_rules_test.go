package integration_test

// The ClickHouse 26 engine's own rules for the rows it is sent, through the built binary as a
// user runs it (--clickHouseUrl=http://..., the Pub/Sub emulator): the DEFAULTs it computes, the
// rows it rejects, and the INSERTs it deduplicates. The engine is served by the HTTP stand-in
// (chtest.StartModern); see its package comment, and docs/delivery.md, for what this cannot show
// about a real server's HTTP handler.

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"github.com/google/go-cmp/cmp"

	"github.com/ch-beam/pubsub-to-clickhouse/internal/certtest"
	"github.com/ch-beam/pubsub-to-clickhouse/internal/chtest"
	"github.com/ch-beam/pubsub-to-clickhouse/internal/pubsubtest"
	"github.com/ch-beam/pubsub-to-clickhouse/pipeline"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/chclient"
)

// runBinary runs the built binary on the local runner with e's pipeline options as flags, the
// ClickHouse URL replaced by url when it is not empty, and the flags extra, until stopAfterIdle
// ends it; it fails the test when the binary fails.
func (e *e2e) runBinary(t *testing.T, url string, extra ...string) string {
	t.Helper()
	bin, _ := launchBinary(t)
	out, err := runLaunch(t, bin, nil, e.binaryArgs(url, extra...))
	if err != nil {
		t.Fatalf("the binary: %v\n%s", err, out)
	}
	return out
}

// binaryArgs are the binary's arguments of runBinary.
func (e *e2e) binaryArgs(url string, extra ...string) []string {
	o := e.opts
	if url == "" {
		url = o.ClickHouseURL
	}
	args := []string{"--runner=prism"}
	for _, kv := range [][2]string{
		{"inputSubscription", o.InputSubscription}, {"clickHouseUrl", url}, {"clickHouseDatabase", o.ClickHouseDatabase},
		{"clickHouseTable", o.ClickHouseTable}, {"clickHouseUsername", o.ClickHouseUsername}, {"clickHousePassword", ""},
		{"clickHouseDeadLetterTable", o.ClickHouseDeadLetterTable}, {"deadLetterTopic", o.DeadLetterTopic},
		{"batchRowCount", o.BatchRowCount.String()}, {"windowSeconds", o.WindowSeconds.String()},
		{"stopAfterIdle", o.StopAfterIdle.String()},
		{"retryInitialBackoffMillis", strconv.Itoa(o.RetryInitialBackoffMillis)}, {"retryMaxBackoffMillis", strconv.Itoa(o.RetryMaxBackoffMillis)},
	} {
		if kv[1] != "" {
			args = append(args, "--"+kv[0]+"="+kv[1])
		}
	}
	return append(args, extra...)
}

// modernRulesDDL is a table whose DEFAULTs, constraint and JSON column the engine evaluates: at
// takes the time of the INSERT, label is computed from two other columns, checked throws for
// x > 5 when the message does not give it, a row with id 1000 or more violates id_small, and doc
// is a JSON column with a DEFAULT of its own.
const modernRulesDDL = `CREATE TABLE {table} (
	id UInt32,
	x UInt8,
	at DateTime64(3, 'UTC') DEFAULT now64(3),
	label String DEFAULT concat('n', toString(id), '-', toString(x)),
	checked UInt8 DEFAULT throwIf(x > 5, 'too big'),
	doc JSON DEFAULT '{"from":"default"}',
	CONSTRAINT id_small CHECK id < 1000
) ENGINE = MergeTree ORDER BY id`

// modernRule is one kind of message of TestModernServerRules, published several times (ids
// base+0, base+1, ...).
type modernRule struct {
	name string
	base int
	// msg is the message of id i.
	msg func(i int) string
	// row is what the engine stores, as the test reads it back (id, x, at or "now" when the engine
	// computed it, label, checked, doc); "" for a message the engine rejects.
	row func(i int) string
	// code and text are the engine's error code and a part of its text, for a rejected message.
	code int
	text string
}

var modernRules = []modernRule{
	{name: "every DEFAULT computed by the engine", base: 0,
		msg: func(i int) string { return fmt.Sprintf(`{"id":%d,"x":%d}`, i, i%6) },
		row: func(i int) string {
			return fmt.Sprintf("%d\t%d\tnow\tn%d-%d\t0\t{\"from\":\"default\"}", i, i%6, i, i%6)
		}},
	{name: "the fields given, no DEFAULT computed", base: 100,
		msg: func(i int) string {
			return fmt.Sprintf(`{"id":%d,"x":9,"at":"2024-03-10T12:00:00.123Z","label":"given","checked":1,"doc":{"k":%d,"s":["a"]}}`, i, i)
		},
		row: func(i int) string {
			return fmt.Sprintf("%d\t9\t2024-03-10 12:00:00.123\tgiven\t1\t{\"k\":%d,\"s\":[\"a\"]}", i, i)
		}},
	{name: "a DEFAULT over another column given", base: 200,
		msg: func(i int) string { return fmt.Sprintf(`{"id":%d,"x":%d,"checked":7,"doc":{}}`, i, 200+i%50) },
		row: func(i int) string { return fmt.Sprintf("%d\t%d\tnow\tn%d-%d\t7\t{}", i, 200+i%50, i, 200+i%50) }},
	{name: "a DEFAULT that throws (throwIf)", base: 300,
		msg:  func(i int) string { return fmt.Sprintf(`{"id":%d,"x":6}`, i) },
		code: 395, text: "too big"},
	{name: "a CHECK constraint violated", base: 1000,
		msg:  func(i int) string { return fmt.Sprintf(`{"id":%d,"x":1,"checked":0}`, i) },
		code: 469, text: "Constraint `id_small`"},
	{name: "a number the JSON type refuses", base: 400,
		msg:  func(i int) string { return fmt.Sprintf(`{"id":%d,"x":1,"doc":{"n":18446744073709551616}}`, i) },
		code: 117, text: "Cannot parse JSON object"},
}

// TestModernServerRules publishes messages of each modernRules kind, interleaved, and runs the
// built binary over the http:// path into the ClickHouse 26 engine in batches that mix them: the
// engine computes every DEFAULT of a field the message omits (now64(3) between the run's start
// and end, an expression over two other columns, a JSON DEFAULT); the rows it rejects (a DEFAULT
// that throws, a CHECK constraint, a JSON value its type refuses) are isolated and dead-lettered,
// in the table and on the topic, with the engine's code and text; every other row is inserted and
// every message acknowledged.
func TestModernServerRules(t *testing.T) {
	srv := chtest.StartModern(t)
	e := newE2EOn(t, srv.Server, modernRulesDDL)
	const each = 6
	var msgs []*pubsubpb.PubsubMessage
	var wantRows []string
	wantDead := map[string]string{}
	for i := range each {
		for _, r := range modernRules {
			id := r.base + i
			m := r.msg(id)
			msgs = append(msgs, &pubsubpb.PubsubMessage{Data: []byte(m)})
			if r.row != nil {
				wantRows = append(wantRows, r.row(id))
			} else {
				wantDead[m] = fmt.Sprintf("code: %d (%s)", r.code, r.text)
			}
		}
	}
	ids := e.ps.Publish(t, e.topic, msgs...)
	e.opts.BatchRowCount = pipeline.GivenInt(1000)
	e.opts.WindowSeconds = pipeline.GivenInt(2)
	before := srv.MustQuery(t, "SELECT now64(3)")
	e.runBinary(t, "")
	after := srv.MustQuery(t, "SELECT now64(3)")

	got := srv.MustQuery(t, fmt.Sprintf("SELECT id, x, if(at BETWEEN toDateTime64('%s', 3) AND toDateTime64('%s', 3), 'now', toString(at)), "+
		"label, checked, toString(doc) FROM events ORDER BY id FORMAT TabSeparatedRaw", before, after))
	slices.SortFunc(wantRows, func(a, b string) int { return idOf(a) - idOf(b) })
	if diff := cmp.Diff(wantRows, strings.Split(got, "\n")); diff != "" {
		t.Errorf("rows read back from the engine (-want +got), at read as \"now\" between %s and %s:\n%s", before, after, diff)
	}
	gotDead := map[string]string{}
	for _, l := range strings.Split(srv.MustQuery(t, "SELECT raw_message, error_message FROM dead_letters FORMAT TabSeparatedRaw"), "\n") {
		raw, msg, _ := strings.Cut(l, "\t")
		gotDead[raw] = engineCode(msg, wantDead[raw])
	}
	if diff := cmp.Diff(wantDead, gotDead); diff != "" {
		t.Errorf("the dead-letter table's messages and the engine's code in their errors (-want +got):\n%s", diff)
	}
	fromTopic := map[string]string{}
	for _, m := range e.ps.PullAll(t, e.dlqCheck) {
		fromTopic[string(m.Data)] = engineCode(m.Attributes["errorMessage"], wantDead[string(m.Data)])
	}
	if diff := cmp.Diff(wantDead, fromTopic); diff != "" {
		t.Errorf("the dead-letter topic's messages and the engine's code in their errors (-want +got):\n%s", diff)
	}
	e.checkAllAcked(t, ids)
}

var codeInError = regexp.MustCompile(`^ClickHouse rejected the row: code: (\d+), message: `)

// engineCode returns "code: N (text)" when msg is the write stage's error for a row the server
// rejected with code N (the exception's own text, as over the native protocol: nothing of the
// HTTP transport) and holds text, the text of want ("code: N (text)"); else msg itself.
func engineCode(msg, want string) string {
	m := codeInError.FindStringSubmatch(msg)
	_, text, _ := strings.Cut(want, " (")
	text = strings.TrimSuffix(text, ")")
	if m == nil || text == "" || !strings.Contains(msg, text) {
		return msg
	}
	return fmt.Sprintf("code: %s (%s)", m[1], text)
}

// idOf is the id of a row as TestModernServerRules reads it back (its first field).
func idOf(row string) int {
	n, _ := strconv.Atoi(row[:strings.IndexByte(row, '\t')])
	return n
}

// lostAnswers is an HTTP proxy in front of the stand-in: the first n INSERTs into table it passes
// to the engine, reads the engine's answer in full (the INSERT is then committed) and, when it is
// a success, closes the client's connection instead of answering, so that the client sees the
// connection end and retries an INSERT the server has already stored. It records every INSERT
// into table: its insert_deduplication_token and the engine's status.
type lostAnswers struct {
	target, table string
	client        *http.Client

	mu      sync.Mutex
	left    int
	inserts []proxiedInsert
}

// proxiedInsert is one INSERT that lostAnswers passed on.
type proxiedInsert struct {
	Token  string
	Status int
	Lost   bool // the answer was not passed back
}

func (p *lostAnswers) ServeHTTP(w http.ResponseWriter, r *http.Request) {
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
	q := r.URL.Query()
	if strings.HasPrefix(q.Get("query"), "INSERT INTO") && strings.Contains(q.Get("query"), chclient.QuoteIdent(p.table)) {
		p.mu.Lock()
		lose := p.left > 0 && resp.StatusCode == http.StatusOK
		if lose {
			p.left--
		}
		p.inserts = append(p.inserts, proxiedInsert{Token: q.Get(chclient.TokenSetting), Status: resp.StatusCode, Lost: lose})
		p.mu.Unlock()
		if lose {
			conn, _, err := http.NewResponseController(w).Hijack()
			if err == nil {
				conn.Close()
			}
			return
		}
	}
	for k, v := range resp.Header {
		w.Header()[k] = v
	}
	w.WriteHeader(resp.StatusCode)
	w.Write(answer)
}

// startLostAnswers starts a lostAnswers proxy to srv for the rest of the test and returns its
// http:// URL.
func startLostAnswers(t *testing.T, srv *chtest.ModernServer, table string, n int) (*lostAnswers, string) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &lostAnswers{target: srv.URL, table: table, left: n,
		client: &http.Client{Transport: &http.Transport{DisableCompression: true}}}
	hs := &http.Server{Handler: p}
	go hs.Serve(l)
	t.Cleanup(func() { hs.Close() })
	return p, "http://" + l.Addr().String()
}

// TestModernDeduplicatedRetry: the answers to the write stage's first two INSERTs are lost after
// the engine committed them (lostAnswers), so the built binary retries each; on a MergeTree with
// non_replicated_deduplication_window the engine stores each INSERT once, because the retry
// carries the same insert_deduplication_token: every message is one row, none twice, nothing is
// dead-lettered.
func TestModernDeduplicatedRetry(t *testing.T) {
	const n = 300
	srv := chtest.StartModern(t)
	e := newE2EOn(t, srv.Server, `CREATE TABLE {table} (id UInt32, s String) ENGINE = MergeTree ORDER BY id SETTINGS non_replicated_deduplication_window = 100`)
	proxy, url := startLostAnswers(t, srv, "events", 2)
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
	// Each lost INSERT was sent again with its token, and the engine answered both.
	proxy.mu.Lock()
	inserts := slices.Clone(proxy.inserts)
	proxy.mu.Unlock()
	sent := map[string]int{}
	for _, in := range inserts {
		if in.Token == "" || in.Status != http.StatusOK {
			t.Errorf("an INSERT into events without a token or refused: %+v", in)
		}
		sent[in.Token]++
	}
	lost := 0
	for _, in := range inserts {
		if in.Lost {
			lost++
			if sent[in.Token] < 2 {
				t.Errorf("the INSERT with token %s, whose answer was lost, was not sent again", in.Token)
			}
		}
	}
	if lost != 2 {
		t.Errorf("%d answers lost, want 2; the INSERTs: %+v", lost, inserts)
	}
	t.Logf("%d INSERTs into events through the proxy, %d distinct tokens, %d answers lost", len(inserts), len(sent), lost)
	e.checkAllAcked(t, ids)
}

// TestModernDeduplicationRepeatedIDs: two runs of the built binary, each against an emulator of
// its own (which numbers its messages from the start again, as after a restart), insert one
// message each into a deduplicating MergeTree: the messages share their id and differ in their
// data, and both rows are stored. A token of the columns and ids alone (tried, and taken back in
// review) made the engine drop the second INSERT without a word.
func TestModernDeduplicationRepeatedIDs(t *testing.T) {
	srv := chtest.StartModern(t)
	first := newE2EOn(t, srv.Server, `CREATE TABLE {table} (id UInt32, s String) ENGINE = MergeTree ORDER BY id SETTINGS non_replicated_deduplication_window = 100`)
	first.opts.BatchRowCount = pipeline.GivenInt(100)
	first.opts.WindowSeconds = pipeline.GivenInt(1)
	ids1 := first.ps.Publish(t, first.topic, &pubsubpb.PubsubMessage{Data: []byte(`{"id":1,"s":"first run"}`)})
	first.runBinary(t, "")

	second := &e2e{srv: srv.Server, ps: pubsubtest.Start(t), opts: first.opts}
	second.topic = second.ps.Topic(t, "events")
	second.opts.InputSubscription = second.ps.Subscription(t, second.topic, "events-sub", 10*time.Second)
	second.opts.DeadLetterTopic = second.ps.Topic(t, "dead-letters")
	ids2 := second.ps.Publish(t, second.topic, &pubsubpb.PubsubMessage{Data: []byte(`{"id":2,"s":"second run"}`)})
	if !slices.Equal(ids1, ids2) {
		t.Fatalf("the emulators gave the ids %v and %v: the test needs one id twice", ids1, ids2)
	}
	second.runBinary(t, "")
	if got := srv.MustQuery(t, "SELECT groupArray(s) FROM (SELECT s FROM events ORDER BY id)"); got != "['first run','second run']" {
		t.Errorf("rows %s, want both runs' (message id %v twice); dead letters: %s", got, ids1,
			srv.MustQuery(t, "SELECT count() FROM dead_letters"))
	}
}

// TestModernDeduplicationToken: chclient.Insert sends the same rows with the same identity twice.
// The engine takes insert_deduplication_token (ResolveSettings finds it), and stores them once on a
// MergeTree with non_replicated_deduplication_window, twice on one without; the same rows of
// other messages (another identity) are stored again. The INSERTs say wait_for_async_insert=1, so
// that one a current server queues (async_insert, on by default from 26.2) is answered once its
// rows are in the table, whatever a user's profile says; the engine here runs every INSERT at
// once, so only that the setting is sent and taken is shown.
func TestModernDeduplicationToken(t *testing.T) {
	srv := chtest.StartModern(t)
	conn := srv.Conn(t)
	ctx := context.Background()
	settings, withToken, _, err := chclient.ResolveSettings(ctx, conn, pipeline.Defaults().InsertSettings())
	if err != nil {
		t.Fatal(err)
	}
	if !withToken {
		t.Fatalf("ResolveSettings: the engine takes no %s", chclient.TokenSetting)
	}
	if got := fmt.Sprint(settings["wait_for_async_insert"]); got != "1" {
		t.Errorf("wait_for_async_insert sent as %s, want 1 (settings sent: %v)", got, settings)
	}
	columns := []string{"id", "s"}
	values := []any{[]uint32{1, 2, 3}, []string{"a", "b", "c"}}
	first := chclient.Identity{IDs: []string{"1", "2", "3"}, Data: [][]byte{[]byte("a"), []byte("b"), []byte("c")}}
	other := chclient.Identity{IDs: []string{"4", "5", "6"}, Data: first.Data}
	got := map[string][]string{}
	for _, table := range []string{"window", "no_window"} {
		setting := map[string]string{"window": " SETTINGS non_replicated_deduplication_window = 100"}[table]
		srv.MustExec(t, "CREATE TABLE "+table+" (id UInt32, s String) ENGINE = MergeTree ORDER BY id"+setting)
		for _, id := range []chclient.Identity{first, first, other} {
			if err := chclient.Insert(ctx, conn, srv.Database, table, columns, values, settings, withToken, id); err != nil {
				t.Fatalf("INSERT into %s: %v", table, err)
			}
			got[table] = append(got[table], srv.MustQuery(t, "SELECT count() FROM "+table))
		}
	}
	want := map[string][]string{"window": {"3", "3", "6"}, "no_window": {"3", "6", "9"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("rows after each INSERT (first, the same again, other messages) (-want +got):\n%s", diff)
	}
}

// TestModernDeduplicateOff: with insertDeduplicate=false, chclient.Insert sends the same rows with
// the same identity twice into a MergeTree with non_replicated_deduplication_window, and both are
// stored. From 26.2 the engine's deduplicate_insert (default enable) overrides insert_deduplicate,
// so that insert_deduplicate=0 alone left the second INSERT dropped.
func TestModernDeduplicateOff(t *testing.T) {
	srv := chtest.StartModern(t)
	conn := srv.Conn(t)
	ctx := context.Background()
	opts := pipeline.Defaults()
	opts.InsertDeduplicate = false
	settings, withToken, _, err := chclient.ResolveSettings(ctx, conn, opts.InsertSettings())
	if err != nil {
		t.Fatal(err)
	}
	srv.MustExec(t, "CREATE TABLE events (id UInt32, s String) ENGINE = MergeTree ORDER BY id SETTINGS non_replicated_deduplication_window = 100")
	id := chclient.Identity{IDs: []string{"1", "2"}, Data: [][]byte{[]byte("a"), []byte("b")}}
	for range 2 {
		if err := chclient.Insert(ctx, conn, srv.Database, "events", []string{"id", "s"}, []any{[]uint32{1, 2}, []string{"a", "b"}}, settings, withToken, id); err != nil {
			t.Fatal(err)
		}
	}
	if got := srv.MustQuery(t, "SELECT count() FROM events"); got != "4" {
		t.Errorf("%s rows after the same INSERT twice with insertDeduplicate=false, want 4 (settings sent: %v)", got, settings)
	}
}

// certificateAuth is an HTTPS proxy in front of the stand-in (which checks no user) that
// authenticates as a ClickHouse server does (authenticateUserByHTTP.cpp): a request with the
// header X-ClickHouse-SSL-Certificate-Auth: on asks for the user to be authenticated by the TLS
// client certificate, and without one is refused, 403 with code 516 AUTHENTICATION_FAILED.
// Every other request is passed on.
type certificateAuth struct {
	proxy *httputil.ReverseProxy

	mu      sync.Mutex
	refused int
}

func (p *certificateAuth) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("X-ClickHouse-SSL-Certificate-Auth") == "on" && len(r.TLS.PeerCertificates) == 0 {
		p.mu.Lock()
		p.refused++
		p.mu.Unlock()
		w.Header().Set("X-ClickHouse-Exception-Code", "516")
		w.WriteHeader(http.StatusForbidden)
		io.WriteString(w, "Code: 516. DB::Exception: Invalid authentication: SSL certificate authentication requires nonempty certificate's "+
			"Common Name or Subject Alternative Name. (AUTHENTICATION_FAILED) (version 26.7.2.1)\n")
		return
	}
	p.proxy.ServeHTTP(w, r)
}

// TestModernHTTPSWithoutPassword: over https://, a user without a password (ClickHouse's default
// user) and no client certificate. clickhouse-go asks for authentication by the client
// certificate whenever the password is empty, which a server refuses when none is presented
// (code 516): the built binary could not start. It now authenticates by the empty password, as
// over http://, and every message is a row, acknowledged.
func TestModernHTTPSWithoutPassword(t *testing.T) {
	const n = 50
	srv := chtest.StartModern(t)
	e := newE2EOn(t, srv.Server, `CREATE TABLE {table} (id UInt32, s String) ENGINE = MergeTree ORDER BY id`)
	ca := certtest.NewCA(t, "test CA")
	pair := ca.Issue(t, certtest.Options{Hosts: []string{"127.0.0.1"}})
	cert, err := tls.X509KeyPair(pair.CertPEM, pair.KeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	target, err := url.Parse(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	proxy := &certificateAuth{proxy: httputil.NewSingleHostReverseProxy(target)}
	hs := httptest.NewUnstartedServer(proxy)
	hs.TLS = &tls.Config{Certificates: []tls.Certificate{cert}, ClientAuth: tls.RequestClientCert}
	hs.StartTLS()
	t.Cleanup(hs.Close)
	var msgs []*pubsubpb.PubsubMessage
	for i := range n {
		msgs = append(msgs, &pubsubpb.PubsubMessage{Data: []byte(fmt.Sprintf(`{"id":%d,"s":"m%d"}`, i, i))})
	}
	ids := e.ps.Publish(t, e.topic, msgs...)
	e.opts.BatchRowCount = pipeline.GivenInt(1000)
	e.opts.WindowSeconds = pipeline.GivenInt(1)
	e.runBinary(t, hs.URL, "--clickHouseCaCertificate="+ca.WriteFile(t, t.TempDir(), "ca"))

	if rows, dls := e.checkAccounted(t, n, "id"); rows != n || dls != 0 {
		t.Errorf("%d rows and %d dead letters, want %d rows and none", rows, dls, n)
	}
	proxy.mu.Lock()
	defer proxy.mu.Unlock()
	if proxy.refused != 0 {
		t.Errorf("%d requests asked for authentication by a client certificate without one", proxy.refused)
	}
	e.checkAllAcked(t, ids)
}
