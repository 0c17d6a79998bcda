package integration_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/ch-beam/pubsub-to-clickhouse/internal/chtest"
	"github.com/ch-beam/pubsub-to-clickhouse/internal/flowtest"
	"github.com/ch-beam/pubsub-to-clickhouse/internal/pubsubtest"
	"github.com/ch-beam/pubsub-to-clickhouse/pipeline"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/batch"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/chclient"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/deadletter"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/flow"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/parse"
)

// wideTable has 30 Int8 columns, so that a message failing all of them has an error message
// longer than Pub/Sub's 1024-byte attribute limit.
func wideTable() string {
	var cols []string
	for i := range 30 {
		cols = append(cols, fmt.Sprintf("c%02d Int8", i))
	}
	return "CREATE TABLE {table} (" + strings.Join(cols, ", ") + ") ENGINE = MergeTree ORDER BY tuple()"
}

func wideBadPayload() string {
	var fields []string
	for i := range 30 {
		fields = append(fields, fmt.Sprintf(`"c%02d":"%s"`, i, strings.Repeat("ü", 60)))
	}
	return "{" + strings.Join(fields, ",") + "}"
}

// TestDeadLetterDestinations sends bad messages through parse and the dead-letter stage to the
// table, the topic, and both, and reads them back: all four columns from the table, the payload
// bytes and both attributes from a subscription to the topic.
func TestDeadLetterDestinations(t *testing.T) {
	// Every payload is bad: the first lacks 29 columns without DEFAULT.
	payloads := []string{`{"c00":1}`, `not json`, "{\"c00\":\"\xff\"}", wideBadPayload(), ``}
	for _, dest := range []string{"table", "topic", "both"} {
		t.Run(dest, func(t *testing.T) {
			srv := chtest.New(t)
			ps := pubsubtest.Start(t)
			srv.CreateTable(t, wideTable(), "events")
			cfg := deadletter.Config{
				ClickHouse: srv.Config(),
				Settings:   chclient.Settings{Deduplicate: true, DistributedSync: true, MaxInsertBlockSize: 1000},
				Retry:      chclient.Retry{MaxRetries: 1, InitialBackoff: time.Millisecond, MaxBackoff: time.Millisecond},
			}
			var sub string
			if dest != "topic" {
				srv.MustExec(t, deadletter.CreateTable(srv.Database, "dead_letters"))
				cfg.Table = "dead_letters"
			}
			if dest != "table" {
				cfg.Topic = ps.Topic(t, "dead-letters")
				sub = ps.Subscription(t, cfg.Topic, "dead-letters-check", 60*time.Second)
			}
			var msgs []flow.Message
			for i, p := range payloads {
				msgs = append(msgs, flow.Message{ID: fmt.Sprint("m", i), Data: []byte(p)})
			}
			start := time.Now().Add(-time.Second).Truncate(time.Second)
			p, s := beam.NewPipelineWithRoot()
			_, dls := parse.Parse(s, parse.Config{ClickHouse: srv.Config(), Table: "events"}, beam.CreateList(s, flowtest.OneEach(msgs)))
			deadletter.Write(s, cfg, batch.DeadLetters(s, batch.Config{Mode: batch.Mode{Rows: 2}, Shards: 1}, dls))
			res, err := flowtest.RunWithMetrics(p)
			if err != nil {
				t.Fatal(err)
			}
			c := counters(res)
			wantTable, wantTopic := int64(0), int64(0)
			if cfg.Table != "" {
				wantTable = int64(len(payloads))
			}
			if cfg.Topic != "" {
				wantTopic = int64(len(payloads))
			}
			if c["dead-letter-rows-clickhouse"] != wantTable || c["dead-letter-rows-pubsub"] != wantTopic || c["rows-parse-failed"] != int64(len(payloads)) {
				t.Errorf("counters %v, want dead-letter-rows-clickhouse %d, dead-letter-rows-pubsub %d, rows-parse-failed %d", c, wantTable, wantTopic, len(payloads))
			}
			bad := payloads
			if cfg.Table != "" {
				got := srv.MustQuery(t, "SELECT raw_message, error_message, stack_trace, toUnixTimestamp(failed_at) FROM dead_letters ORDER BY raw_message FORMAT JSONEachRow")
				var lines []string
				for _, l := range strings.Split(got, "\n") {
					lines = append(lines, l)
				}
				if len(lines) != len(bad) {
					t.Fatalf("dead-letter table has %d rows, want %d:\n%s", len(lines), len(bad), got)
				}
				for _, l := range lines {
					if !strings.Contains(l, "stage: parse") || !strings.Contains(l, "error: ") {
						t.Errorf("row without a stack trace: %s", l)
					}
				}
				// The raw bytes round-trip exactly, invalid UTF-8 included.
				raw := strings.Split(srv.MustQuery(t, "SELECT hex(raw_message) FROM dead_letters ORDER BY raw_message"), "\n")
				var want []string
				for _, b := range bad {
					want = append(want, fmt.Sprintf("%X", b))
				}
				sort.Strings(want)
				sort.Strings(raw)
				if strings.Join(raw, ",") != strings.Join(want, ",") {
					t.Errorf("raw_message bytes: got %v, want %v", raw, want)
				}
				if n := srv.MustQuery(t, fmt.Sprintf("SELECT countIf(failed_at >= toDateTime(%d) AND failed_at <= now()) FROM dead_letters", start.Unix())); n != fmt.Sprint(len(bad)) {
					t.Errorf("%s rows have a failed_at within the run, want %d", n, len(bad))
				}
				if got := srv.MustQuery(t, `SELECT error_message FROM dead_letters WHERE raw_message = 'not json'`); !strings.HasPrefix(got, "payload: invalid JSON at byte 0") {
					t.Errorf("error_message of 'not json' = %q", got)
				}
			}
			if cfg.Topic != "" {
				got := ps.PullAll(t, sub)
				if len(got) != len(bad) {
					t.Fatalf("dead-letter topic has %d messages, want %d", len(got), len(bad))
				}
				seen := map[string]bool{}
				for _, m := range got {
					seen[string(m.Data)] = true
					em := m.Attributes["errorMessage"]
					if em == "" || len(em) > 1024 || !utf8.ValidString(em) {
						t.Errorf("errorMessage attribute of %q: %d bytes, valid UTF-8 %v", m.Data, len(em), utf8.ValidString(em))
					}
					at, err := time.Parse("2006-01-02T15:04:05.000Z", m.Attributes["failedAt"])
					if err != nil || at.Before(start) || at.After(time.Now()) {
						t.Errorf("failedAt attribute %q: %v", m.Attributes["failedAt"], err)
					}
					if string(m.Data) == wideBadPayload() && (len(em) < 1000 || !strings.HasSuffix(em, "…")) {
						t.Errorf("the long error is not cut to the limit: %d bytes", len(em))
					}
				}
				for _, b := range bad {
					if !seen[b] {
						t.Errorf("payload %q is not on the topic", b)
					}
				}
			}
		})
	}
}

// TestDeadLetterTableCheck shows the message a missing or wrong dead-letter table gives.
func TestDeadLetterTableCheck(t *testing.T) {
	srv := chtest.New(t)
	conn := srv.Conn(t)
	ctx := context.Background()
	err := deadletter.CheckTable(ctx, conn, srv.Database, "nope")
	if err == nil || !strings.Contains(err.Error(), "CREATE TABLE `"+srv.Database+"`.`nope` (raw_message String") {
		t.Errorf("missing table: %v", err)
	}
	srv.MustExec(t, "CREATE TABLE wrong (raw_message String, error_message String, failed_at Date) ENGINE = MergeTree ORDER BY tuple()")
	err = deadletter.CheckTable(ctx, conn, srv.Database, "wrong")
	for _, want := range []string{"no writable column stack_trace String", "column failed_at is Date, not DateTime", "CREATE TABLE"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("wrong table: %v, want it to contain %q", err, want)
		}
	}
	srv.MustExec(t, deadletter.CreateTable(srv.Database, "right"))
	if cols, err := deadletter.Columns(ctx, conn, srv.Database, "right"); err != nil || strings.Join(cols, ",") != "raw_message,error_message,stack_trace,failed_at,message_id,attributes,ordering_key" {
		t.Errorf("right table: %v, %v", cols, err)
	}
	// The optional columns are optional, each on its own; one that is not a String is refused.
	srv.MustExec(t, "CREATE TABLE minimal (raw_message String, error_message String, stack_trace String, failed_at DateTime, attributes String) ENGINE = MergeTree ORDER BY tuple()")
	if cols, err := deadletter.Columns(ctx, conn, srv.Database, "minimal"); err != nil || strings.Join(cols, ",") != "raw_message,error_message,stack_trace,failed_at,attributes" {
		t.Errorf("a table with attributes alone: %v, %v", cols, err)
	}
	srv.MustExec(t, "CREATE TABLE badopt (raw_message String, error_message String, stack_trace String, failed_at DateTime, ordering_key UInt8) ENGINE = MergeTree ORDER BY tuple()")
	if err := deadletter.CheckTable(ctx, conn, srv.Database, "badopt"); err == nil || !strings.Contains(err.Error(), "column ordering_key is UInt8, not String (an optional column: make it String, or drop it)") {
		t.Errorf("an optional column not a String: %v", err)
	}
}

// TestDeadLetterOrderingKey runs the pipeline on messages with ordering keys that become dead
// letters at each place one is built (the JavaScript UDF throws; the parse stage cannot convert;
// the server rejects the row, code 153) and one without a key, reads the dead-letter topic back
// (each dead letter with its message's ordering key), then replays the topic's subscription to
// the input topic and reads the replayed messages back, each with its key again.
func TestDeadLetterOrderingKey(t *testing.T) {
	e := newE2E(t, `CREATE TABLE {table} (id UInt32, a Int32, b Int32, q Int32 DEFAULT intDiv(a, b)) ENGINE = MergeTree ORDER BY id`)
	e.opts.WindowSeconds = pipeline1s
	e.opts.JavascriptTextTransformGcsPath = writeTestFile(t, "udf.js", `function f(p) { if (p.indexOf("boom") >= 0) throw new Error("boom"); return p; }`)
	e.opts.JavascriptTextTransformFunctionName = "f"
	dlRead := e.ps.Subscription(t, e.opts.DeadLetterTopic, "dead-letters-read", time.Minute)
	ids := e.ps.Publish(t, e.topic,
		&pubsubpb.PubsubMessage{Data: []byte(`{"id":1,"a":1,"b":1}`), OrderingKey: "k-row"},
		&pubsubpb.PubsubMessage{Data: []byte(`{"id":2,"boom":1}`), OrderingKey: "k-udf"},
		&pubsubpb.PubsubMessage{Data: []byte(`{"id":"x"}`), OrderingKey: "k-parse", Attributes: map[string]string{"src": "p"}},
		&pubsubpb.PubsubMessage{Data: []byte(`{"id":4,"a":1,"b":0}`), OrderingKey: "k-server"},
		&pubsubpb.PubsubMessage{Data: []byte(`not json`)},
	)
	e.run(t)
	if got := e.srv.MustQuery(t, "SELECT id, q FROM events"); got != "1\t1" {
		t.Errorf("rows %q, want 1\t1", got)
	}
	type keyed struct{ Data, OrderingKey string }
	keys := func(ms []pulled) []keyed {
		var out []keyed
		for _, m := range ms {
			out = append(out, keyed{m.Data, m.OrderingKey})
		}
		return out
	}
	want := []keyed{{`{"id":2,"boom":1}`, "k-udf"}, {`{"id":"x"}`, "k-parse"}, {`{"id":4,"a":1,"b":0}`, "k-server"}, {`not json`, ""}}
	sorted := cmpopts.SortSlices(func(a, b keyed) bool { return a.Data < b.Data })
	if diff := cmp.Diff(want, keys(pullAll(t, e.ps, dlRead)), sorted); diff != "" {
		t.Errorf("the dead-letter topic (-want +got):\n%s", diff)
	}
	e.checkAllAcked(t, ids)

	replayed := e.ps.Subscription(t, e.topic, "replayed", time.Minute)
	out, errOut, code := runCommand(t, "", "replay", "--topic="+e.topic, "--fromSubscription="+e.dlqCheck, "--replayId=r-keys")
	if code != 0 || !strings.Contains(out, "replayed 4 dead letters") {
		t.Fatalf("replay: exit %d\n%s%s", code, out, errOut)
	}
	got := pullAll(t, e.ps, replayed)
	if diff := cmp.Diff(want, keys(got), sorted); diff != "" {
		t.Errorf("replayed (-want +got):\n%s", diff)
	}
	for _, m := range got {
		if m.Attributes["replay_id"] != "r-keys" || (m.Data == `{"id":"x"}`) != (m.Attributes["src"] == "p") {
			t.Errorf("replayed %q with attributes %v", m.Data, m.Attributes)
		}
	}
}

// TestDeadLetterServerErrorNotUTF8: ClickHouse 18.16 quotes what it parsed of a value in its
// error, cut at a byte count: toDateTime of "2024-01-01 00:00:0é" says "parsed just
// '2024-01-01 00:00:0\xc3'", half of the é. Pub/Sub takes only UTF-8 attributes, so the dead
// letter of that row, whose errorMessage attribute carried the server's bytes, failed every
// publish and the job with it. The attribute shows such a byte as \xXX; the table keeps the
// server's text as it was.
func TestDeadLetterServerErrorNotUTF8(t *testing.T) {
	e := newE2E(t, `CREATE TABLE {table} (id UInt32, s String, d DateTime MATERIALIZED toDateTime(s)) ENGINE = MergeTree ORDER BY id`)
	e.opts.WindowSeconds = pipeline1s
	bad := `{"id":2,"s":"2024-01-01 00:00:0é"}`
	ids := e.ps.Publish(t, e.topic,
		&pubsubpb.PubsubMessage{Data: []byte(`{"id":1,"s":"2024-01-01 00:00:01"}`)},
		&pubsubpb.PubsubMessage{Data: []byte(bad), OrderingKey: "k", Attributes: map[string]string{"src": "x"}},
	)
	e.run(t)
	if got := e.srv.MustQuery(t, "SELECT id FROM events"); got != "1" {
		t.Errorf("rows %q, want 1", got)
	}
	if got := e.srv.MustQuery(t, "SELECT raw_message, position(error_message, '00:00:0\\xC3\\'') > 0 FROM dead_letters"); got != bad+"\t1" {
		t.Errorf("dead-letter table: %q, want the payload and the server's error as it was", got)
	}
	got := pullAll(t, e.ps, e.dlqCheck)
	if len(got) != 1 || got[0].Data != bad || got[0].OrderingKey != "k" || got[0].Attributes["src"] != "x" ||
		!strings.Contains(got[0].Attributes["errorMessage"], `parsed just '2024-01-01 00:00:0\xc3'`) {
		t.Errorf("the dead-letter topic holds %+v, want the bad payload with its key and attributes, the byte shown as \\xc3", got)
	}
	e.checkAllAcked(t, ids)
}

// TestDeadLetterTableErrorNotUTF8: a dead letter the dead-letter table itself refuses fails the
// bundle with the server's error, which can hold a value cut inside a character (18.16's
// toDateTime: "parsed just '2024-01-01 00:00:0\xc3'"). The SDK harness sends a bundle's error to
// the runner as protobuf text, which must be UTF-8: it could not, the worker was taken for
// disconnected, and the job failed without the cause ("SDK worker disconnected ... context
// canceled"). The error now shows such a byte as \xXX.
func TestDeadLetterTableErrorNotUTF8(t *testing.T) {
	e := newE2E(t, `CREATE TABLE {table} (id UInt32) ENGINE = MergeTree ORDER BY id`)
	e.srv.MustExec(t, "ALTER TABLE dead_letters ADD COLUMN chk DateTime MATERIALIZED toDateTime(raw_message)")
	e.opts.WindowSeconds = pipeline1s
	e.opts.DeadLetterTopic = ""
	e.opts.MaxRetries = 0
	e.ps.Publish(t, e.topic, &pubsubpb.PubsubMessage{Data: []byte("2024-01-01 00:00:0é")})
	p, s := beam.NewPipelineWithRoot()
	pipeline.Build(s, pipeline.MustCheck(e.opts), pipeline.LocalSource)
	r := startPipeline(p)
	select {
	case <-r.done:
	case <-time.After(3 * time.Minute):
		t.Fatal("the pipeline did not end within 3m")
	}
	if r.err == nil || !strings.Contains(r.err.Error(), `parsed just '2024-01-01 00:00:0\xc3'`) {
		t.Errorf("pipeline error %v, want the dead-letter INSERT's, the byte shown as \\xc3", r.err)
	}
	if got := e.srv.MustQuery(t, "SELECT count() FROM dead_letters"); got != "0" {
		t.Errorf("the dead-letter table holds %s rows, want 0", got)
	}
}

// TestDeadLetterTableTypeChanged: a column of the dead-letter table changes while the job runs.
// failed_at made a Date would keep only the day of a failure, so the dead-letter INSERT refuses
// it, naming the column, and retries with the table read again; the dead letter waits,
// unacknowledged. Once failed_at is DateTime('UTC') (a time zone: the stage can fill it), the
// INSERT takes the new type and the dead letter lands with its time of day. An optional column
// made MATERIALIZED (code 44 on 18.16, not a Schema error) is read again and left out. An
// optional column added is filled once schemaRefreshSeconds have passed.
func TestDeadLetterTableTypeChanged(t *testing.T) {
	cases := newParallelCases(t)
	const dlq = "raw_message String, error_message String, stack_trace String, failed_at DateTime"
	for _, tc := range []struct {
		name, columns, alter string
		heldBack             bool   // the dead letter waits until fix
		fix                  string // the ALTER that lets it land
		query, want          string // about the second dead letter, with %d the Unix time before it failed
		refresh              int    // schemaRefreshSeconds; 0 for the default (60)
	}{
		{"failed_at made a Date", dlq, "MODIFY COLUMN failed_at Date", true, "MODIFY COLUMN failed_at DateTime('UTC')",
			"SELECT failed_at >= toDateTime(%d) FROM dead_letters WHERE raw_message = '{\"id\":\"b\"}'", "1", 0},
		{"message_id made MATERIALIZED", dlq + ", message_id String", "MODIFY COLUMN message_id String MATERIALIZED 'materialized'", false, "",
			"SELECT message_id, failed_at >= toDateTime(%d) FROM dead_letters WHERE raw_message = '{\"id\":\"b\"}'", "materialized\t1", 0},
		{"message_id added", dlq, "ADD COLUMN message_id String", false, "",
			"SELECT message_id != '', failed_at >= toDateTime(%d) FROM dead_letters WHERE raw_message = '{\"id\":\"b\"}'", "1\t1", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := cases.newE2E(t, `CREATE TABLE {table} (id UInt32) ENGINE = MergeTree ORDER BY id`)
			// The table of newE2E has failed_at in its key, which no ALTER may change.
			e.srv.MustExec(t, "DROP TABLE dead_letters")
			e.srv.MustExec(t, "CREATE TABLE dead_letters ("+tc.columns+") ENGINE = MergeTree ORDER BY tuple()")
			e.opts.WindowSeconds = pipeline1s
			e.opts.StopAfterIdle = pipeline.GivenInt(8)
			e.opts.MaxRetries = 100 // 100 attempts of at most 300 ms outlast the 4 s below
			e.opts.RetryInitialBackoffMillis = 50
			e.opts.RetryMaxBackoffMillis = 300
			if tc.refresh > 0 {
				e.opts.SchemaRefreshSeconds = tc.refresh
			}
			deadLetters := func() string { return e.srv.MustQuery(t, "SELECT count() FROM dead_letters") }
			waitFor := func(want string) {
				t.Helper()
				for deadline := time.Now().Add(30 * time.Second); deadLetters() != want; time.Sleep(100 * time.Millisecond) {
					if time.Now().After(deadline) {
						t.Fatalf("the dead-letter table has %s rows after 30 s, want %s", deadLetters(), want)
					}
				}
			}
			r := e.start(t)
			time.Sleep(time.Second)
			ids := e.ps.Publish(t, e.topic, &pubsubpb.PubsubMessage{Data: []byte(`{"id":"a"}`)})
			waitFor("1")

			e.srv.MustExec(t, "ALTER TABLE dead_letters "+tc.alter)
			if tc.refresh > 0 {
				time.Sleep(time.Duration(tc.refresh)*time.Second + 100*time.Millisecond) // the stage read the table at most this long ago
			}
			before := time.Now().Unix()
			ids = append(ids, e.ps.Publish(t, e.topic, &pubsubpb.PubsubMessage{Data: []byte(`{"id":"b"}`)})...)
			if tc.heldBack {
				time.Sleep(4 * time.Second) // the window, the INSERT refused and retried
				if got := deadLetters(); got != "1" {
					t.Errorf("after %s, the dead-letter table has %s rows, want 1 (the second refused, not stored changed)", tc.alter, got)
				}
				e.srv.MustExec(t, "ALTER TABLE dead_letters "+tc.fix)
			}
			waitFor("2")
			r.wait(t, 60*time.Second)
			if got := e.srv.MustQuery(t, fmt.Sprintf(tc.query, before)); got != tc.want {
				t.Errorf("the second dead letter: %q, want %q; it is %s", got, tc.want,
					e.srv.MustQuery(t, `SELECT * FROM dead_letters WHERE raw_message = '{"id":"b"}'`))
			}
			e.checkAllAcked(t, ids)
		})
	}
}

// TestPubSubOutageWithDeadLetterTopic: Pub/Sub unreachable (for the pipeline) for 12 s while
// messages come and dead letters are on their way to the dead-letter topic: the run waits for it and goes on once it is back, instead
// of failing a minute later, when Pub/Sub has been back for most of that minute. Every message
// is then a row or a dead letter on the topic.
func TestPubSubOutageWithDeadLetterTopic(t *testing.T) {
	e := newE2EApart(t, `CREATE TABLE {table} (id UInt32, n UInt8) ENGINE = MergeTree ORDER BY id`)
	proxy := chtest.NewProxy(t, e.ps.Addr)
	dlRead := e.ps.Subscription(t, e.opts.DeadLetterTopic, "dead-letters-read", time.Minute)
	// A deadline longer than the outage: a message is delivered again only when the pipeline
	// failed to acknowledge it (newE2E's subscription has 10 s).
	e.opts.InputSubscription = e.ps.Subscription(t, e.topic, "events-sub-60s", time.Minute)
	bin, _ := launchBinary(t)
	o := e.opts
	cmd := exec.Command(bin, "--runner=prism", "--inputSubscription="+o.InputSubscription, "--clickHouseUrl="+o.ClickHouseURL,
		"--clickHouseDatabase="+o.ClickHouseDatabase, "--clickHouseTable=events", "--clickHouseUsername=default",
		"--clickHousePassword=", "--deadLetterTopic="+o.DeadLetterTopic, "--windowSeconds=1", "--stopAfterIdle=25")
	cmd.Env = append(os.Environ(), "PUBSUB_EMULATOR_HOST="+proxy.Addr())
	var log bytes.Buffer
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	// 20 messages every 100 ms for 10 s, half of them dead letters, with Pub/Sub (for the
	// pipeline) down from the 2nd second to the 14th: dead letters are on their way when it goes.
	const total = 2000
	published := make(chan error, 1)
	go func() {
		defer close(published)
		for from := 0; from < total; from += 20 {
			msgs := make([]*pubsubpb.PubsubMessage, 0, 20)
			for i := from; i < from+20; i++ {
				n := 1
				if i%2 == 1 {
					n = 300 // beyond UInt8: a dead letter
				}
				msgs = append(msgs, &pubsubpb.PubsubMessage{Data: fmt.Appendf(nil, `{"id":%d,"n":%d}`, i, n)})
			}
			if _, err := e.ps.Client.TopicAdminClient.Publish(context.Background(), &pubsubpb.PublishRequest{Topic: e.topic, Messages: msgs}); err != nil {
				published <- err
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
	}()
	time.Sleep(2 * time.Second)
	proxy.Down()
	time.Sleep(12 * time.Second)
	proxy.Up()
	if err := <-published; err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-time.After(3 * time.Minute):
		cmd.Process.Kill()
		t.Fatalf("the run did not end within 3 minutes\n%s", log.String())
	}
	if code := cmd.ProcessState.ExitCode(); code != 0 {
		t.Fatalf("the run exited %d, want 0\n%s", code, log.String())
	}
	if got, want := e.srv.MustQuery(t, "SELECT count(), uniqExact(id), countIf(id % 2 = 0) FROM events"), fmt.Sprintf("%d\t%[1]d\t%[1]d", total/2); got != want {
		t.Errorf("rows, distinct ids and even ids = %q, want %d each", got, total/2)
	}
	ids := map[string]bool{}
	letters := e.ps.PullAll(t, dlRead)
	for _, m := range letters {
		ids[string(m.Data)] = true
	}
	if len(ids) != total/2 {
		t.Errorf("the dead-letter topic holds %d distinct messages, want the %d with n = 300", len(ids), total/2)
	}
	// The topic is at least once: a publish whose answer was lost in the outage goes again.
	t.Logf("%d dead letters on the topic for %d distinct", len(letters), len(ids))
}

// TestPubSubResourcesDeletedWhileRunning: the dead-letter topic, then the input subscription,
// deleted while the run reads: each ends the run (exit 1) with an error that says the resource
// is gone since the start and what to do, and no message is lost: re-created, the next run
// delivers every dead letter.
func TestPubSubResourcesDeletedWhileRunning(t *testing.T) {
	e := newE2E(t, `CREATE TABLE {table} (id UInt32, n UInt8) ENGINE = MergeTree ORDER BY id`)
	dlRead := e.ps.Subscription(t, e.opts.DeadLetterTopic, "dead-letters-read", time.Minute)
	bin, _ := launchBinary(t)
	o := e.opts
	run := func() *exec.Cmd {
		cmd := exec.Command(bin, "--runner=prism", "--inputSubscription="+o.InputSubscription, "--clickHouseUrl="+o.ClickHouseURL,
			"--clickHouseDatabase="+o.ClickHouseDatabase, "--clickHouseTable=events", "--clickHouseUsername=default",
			"--clickHousePassword=", "--deadLetterTopic="+o.DeadLetterTopic, "--windowSeconds=1", "--stopAfterIdle=30")
		cmd.Env = append(os.Environ(), "PUBSUB_EMULATOR_HOST="+e.ps.Addr)
		return cmd
	}
	bad := func(from, n int) {
		var payloads []string
		for i := from; i < from+n; i++ {
			payloads = append(payloads, fmt.Sprintf(`{"id":%d,"n":300}`, i))
		}
		e.publishJSON(t, payloads...)
	}
	ctx := context.Background()
	admin := e.ps.Client

	cmd := run()
	out := make(chan []byte, 1)
	go func() { b, _ := cmd.CombinedOutput(); out <- b }()
	bad(0, 10)
	for len(e.ps.PullAll(t, dlRead)) == 0 {
		time.Sleep(200 * time.Millisecond)
	}
	if err := admin.TopicAdminClient.DeleteTopic(ctx, &pubsubpb.DeleteTopicRequest{Topic: o.DeadLetterTopic}); err != nil {
		t.Fatal(err)
	}
	bad(10, 10)
	log := string(<-out)
	if code := cmd.ProcessState.ExitCode(); code != 1 || !strings.Contains(log, "to "+o.DeadLetterTopic+": the topic does not exist any more (it was there when the run started: deleted since?); re-create it") {
		t.Fatalf("dead-letter topic deleted: exit %d, want 1 and the reason\n%s", code, log)
	}
	if again := e.ps.Topic(t, "dead-letters"); again != o.DeadLetterTopic { // the same name again
		t.Fatalf("re-created %s, not %s", again, o.DeadLetterTopic)
	}
	dlRead = e.ps.Subscription(t, o.DeadLetterTopic, "dead-letters-read-2", time.Minute)

	cmd = run()
	go func() { b, _ := cmd.CombinedOutput(); out <- b }()
	got := map[string]bool{}
	for deadline := time.Now().Add(60 * time.Second); len(got) < 10 && time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		for _, m := range e.ps.PullAll(t, dlRead) {
			got[string(m.Data)] = true
		}
	}
	if len(got) < 10 {
		t.Errorf("the re-created topic got %d of the 10 dead letters left by the failed run", len(got))
	}
	if err := admin.SubscriptionAdminClient.DeleteSubscription(ctx, &pubsubpb.DeleteSubscriptionRequest{Subscription: o.InputSubscription}); err != nil {
		t.Fatal(err)
	}
	log = string(<-out)
	if code := cmd.ProcessState.ExitCode(); code != 1 || !strings.Contains(log, "pull: the subscription does not exist any more (it was there when the run started: deleted since?); re-create it") {
		t.Fatalf("input subscription deleted: exit %d, want 1 and the reason\n%s", code, log)
	}
}

// TestDeadLetterTableDownHoldsUpNoRows: the dead-letter table detached while messages for two
// routed tables, and messages that fail to parse, arrive over more windows than prism runs
// bundles at once (8). Every row lands in its table while the dead-letter table is away, and the
// dead letters once it is back, each once. The dead-letter stage ran a bundle for each pane of
// dead letters, each retrying its INSERT (and the stage's Setup of each new instance, which reads
// the table), until they took every bundle and no table's rows were inserted (the stage is now
// stateful on the local runner: one bundle a shard).
func TestDeadLetterTableDownHoldsUpNoRows(t *testing.T) {
	const windows = 14
	e := newE2E(t, `CREATE TABLE {table} (id UInt32) ENGINE = MergeTree ORDER BY id`)
	for _, table := range []string{"ta", "tb"} {
		e.srv.CreateTable(t, `CREATE TABLE {table} (id UInt32, n UInt8) ENGINE = MergeTree ORDER BY id`, table)
	}
	e.opts.RouteBy = "attribute:r"
	e.opts.RouteTables = "a=ta,b=tb"
	e.opts.WindowSeconds = pipeline.GivenInt(1)
	e.opts.MaxRetries = 200
	e.opts.RetryInitialBackoffMillis = 200
	e.opts.RetryMaxBackoffMillis = 1000
	e.opts.StopAfterIdle = pipeline.GivenInt(5)
	r := e.start(t)
	time.Sleep(2 * time.Second) // the launch checks the dead-letter table
	e.srv.MustExec(t, "DETACH TABLE dead_letters")
	var ids []string
	for w := range windows {
		msgs := []*pubsubpb.PubsubMessage{
			{Data: []byte(fmt.Sprintf(`{"id":%d,"n":1}`, w)), Attributes: map[string]string{"r": "a"}},
			{Data: []byte(fmt.Sprintf(`{"id":%d,"n":2}`, w)), Attributes: map[string]string{"r": "b"}},
			{Data: []byte(fmt.Sprintf(`{"id":%d,"n":300}`, w)), Attributes: map[string]string{"r": []string{"a", "b"}[w%2]}},
		}
		ids = append(ids, e.ps.Publish(t, e.topic, msgs...)...)
		time.Sleep(1200 * time.Millisecond)
	}
	want := fmt.Sprint(windows)
	got := ""
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(250 * time.Millisecond) {
		if got = e.srv.MustQuery(t, "SELECT toString(count()) || '+' || toString((SELECT count() FROM tb)) FROM ta"); got == want+"+"+want {
			break
		}
	}
	if got != want+"+"+want {
		t.Fatalf("with the dead-letter table detached over %d windows, ta+tb hold %s rows, want %s+%s: the dead letters hold the rows up", windows, got, want, want)
	}
	e.srv.MustExec(t, "ATTACH TABLE dead_letters")
	r.wait(t, 180*time.Second)
	if got := e.srv.MustQuery(t, "SELECT count(), uniqExact(raw_message) FROM dead_letters"); got != want+"\t"+want {
		t.Errorf("dead_letters holds %s (count, distinct messages) after ATTACH, want %s of each", got, want)
	}
	if got := e.srv.MustQuery(t, "SELECT count(), uniqExact(id) FROM ta"); got != want+"\t"+want {
		t.Errorf("ta holds %s rows (count, distinct ids), want %s of each", got, want)
	}
	// On the topic, which has no stack trace, errorMessage names each one's table.
	for _, m := range e.ps.PullAll(t, e.dlqCheck) {
		if table := map[string]string{"a": "ta", "b": "tb"}[m.Attributes["r"]]; !strings.HasPrefix(m.Attributes["errorMessage"], "table "+table+": ") {
			t.Errorf("dead letter %s (r=%s) on the topic: errorMessage %q does not name its table %s", m.Data, m.Attributes["r"], m.Attributes["errorMessage"], table)
		}
	}
	e.checkAllAcked(t, ids)
}

// TestDeadLetterTopicWithSchema: a dead-letter topic with a Pub/Sub schema would refuse the dead
// letters that do not conform to it (a dead letter's data is the message as it came in), at every
// attempt: the launch warns of it. The emulator does not validate against schemas, so the warning
// is what can be shown here.
func TestDeadLetterTopicWithSchema(t *testing.T) {
	bin, _ := launchBinary(t)
	e := newE2E(t, `CREATE TABLE {table} (id UInt32) ENGINE = MergeTree ORDER BY id`)
	topic := "projects/" + pubsubtest.Project + "/topics/dead-letters-with-schema"
	const schema = "projects/" + pubsubtest.Project + "/schemas/events"
	if _, err := e.ps.Client.TopicAdminClient.CreateTopic(context.Background(), &pubsubpb.Topic{Name: topic,
		SchemaSettings: &pubsubpb.SchemaSettings{Schema: schema, Encoding: pubsubpb.Encoding_JSON}}); err != nil {
		t.Fatal(err)
	}
	o := e.opts
	flags := connectionFlags(o.InputSubscription, o.ClickHouseURL, o.ClickHouseDatabase)
	flags["deadLetterTopic"] = topic
	flags["stopAfterIdle"] = "1"
	out, err := launchOnPrism(t, bin, flags)
	if err != nil {
		t.Fatalf("the launch: %v\n%s", err, out)
	}
	want := `msg="deadLetterTopic has a schema, and Pub/Sub refuses a message whose data does not conform to it: a dead letter's data is the message as it came in`
	if !strings.Contains(out, want) || !strings.Contains(out, "schema="+schema+" encoding=JSON") {
		t.Errorf("the launch does not warn of the dead-letter topic's schema %s:\n%s", schema, out)
	}
}

// TestDeadLetterTopicWithoutSubscription: Pub/Sub delivers a message only to the subscriptions
// that exist when it is published, so the dead letters published to a topic without one were
// lost without a word. As the only dead-letter destination such a topic stops the launch, naming
// the command that makes a subscription; beside the dead-letter table it is warned of.
func TestDeadLetterTopicWithoutSubscription(t *testing.T) {
	bin, _ := launchBinary(t)
	e := newE2E(t, `CREATE TABLE {table} (id UInt32) ENGINE = MergeTree ORDER BY id`)
	lonely := e.ps.Topic(t, "dead-letters-unread")
	o := e.opts
	flags := connectionFlags(o.InputSubscription, o.ClickHouseURL, o.ClickHouseDatabase)
	flags["deadLetterTopic"] = lonely
	flags["stopAfterIdle"] = "1"
	const warning = `msg="deadLetterTopic has no subscription, and Pub/Sub delivers a message only to the subscriptions that exist when it is published: ` +
		`the dead letters published there reach no one, and are kept in the dead-letter table alone; create a subscription on it to read them"`
	out, err := launchOnPrism(t, bin, flags)
	if err != nil || !strings.Contains(out, warning) || !strings.Contains(out, "topic="+lonely) {
		t.Errorf("the launch beside a dead-letter table: %v, want it to run and to warn that the topic has no subscription:\n%s", err, out)
	}
	flags["clickHouseDeadLetterTable"] = ""
	checkStartupFailures(t, bin, flags, []startupFailure{{"the topic as the only destination", nil,
		"deadLetterTopic " + lonely + " has no subscription, and Pub/Sub delivers a message only to the subscriptions that exist when it is published: " +
			"every dead letter published there would reach no one and be lost; create a subscription on it first " +
			"(pubsub-to-clickhouse publish --create --topic=" + lonely + " --subscription=projects/" + pubsubtest.Project + "/subscriptions/<name>)"}})
	// With a subscription it passes without a word.
	e.ps.Subscription(t, lonely, "dead-letters-read", time.Minute)
	if out, err := launchOnPrism(t, bin, flags); err != nil || strings.Contains(out, "has no subscription") {
		t.Errorf("the launch with a subscription on the topic: %v\n%s", err, out)
	}
}
