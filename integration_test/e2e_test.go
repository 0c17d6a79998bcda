package integration_test

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"github.com/apache/beam/sdks/v2/go/pkg/beam"

	"github.com/ch-beam/pubsub-to-clickhouse/internal/chtest"
	"github.com/ch-beam/pubsub-to-clickhouse/internal/events"
	"github.com/ch-beam/pubsub-to-clickhouse/internal/pubsubtest"
	"github.com/ch-beam/pubsub-to-clickhouse/pipeline"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/deadletter"
)

// e2e is one end-to-end setup: the emulator with an input topic and subscription and a
// dead-letter topic with a subscription to check it, and ClickHouse with a target table and a
// dead-letter table.
type e2e struct {
	srv      *chtest.Server
	ps       *pubsubtest.Emulator
	topic    string
	dlqCheck string
	opts     pipeline.Options
}

func newE2E(t *testing.T, ddl string) *e2e {
	return newE2EOn(t, chtest.New(t), ddl)
}

// newE2EOn is newE2E on a given server.
func newE2EOn(t *testing.T, srv *chtest.Server, ddl string) *e2e {
	return newE2EWith(t, srv, pubsubtest.Start(t), "", ddl)
}

// newE2EWith is newE2E on a given server and emulator, its topics' and subscriptions' ids ending
// in suffix.
func newE2EWith(t *testing.T, srv *chtest.Server, ps *pubsubtest.Emulator, suffix, ddl string) *e2e {
	e := &e2e{srv: srv, ps: ps}
	e.srv.CreateTable(t, ddl, "events")
	e.srv.MustExec(t, deadletter.CreateTable(e.srv.Database, "dead_letters"))
	e.topic = e.ps.Topic(t, "events"+suffix)
	dlq := e.ps.Topic(t, "dead-letters"+suffix)
	e.dlqCheck = e.ps.Subscription(t, dlq, "dead-letters-check"+suffix, 60*time.Second)
	o := pipeline.Defaults()
	o.InputSubscription = e.ps.Subscription(t, e.topic, "events-sub"+suffix, 10*time.Second)
	o.ClickHouseURL = e.srv.URL
	o.ClickHouseDatabase = e.srv.Database
	o.ClickHouseTable = "events"
	o.ClickHouseUsername = "default"
	o.ClickHouseDeadLetterTable = "dead_letters"
	o.DeadLetterTopic = dlq
	o.StopAfterIdle = pipeline.GivenInt(3)
	o.RetryInitialBackoffMillis = 100
	o.RetryMaxBackoffMillis = 1000
	e.opts = o
	return e
}

// parallelCases is what the cases of one test that run at once (t.Parallel) share: one emulator.
// The process has one PUBSUB_EMULATOR_HOST, which the pipelines' DoFns read (pubsubtest.Start
// sets it), so cases at once cannot each have an emulator of their own; each has topics and
// subscriptions of its own on it, and a database of its own.
type parallelCases struct {
	ps *pubsubtest.Emulator
	n  atomic.Int64
}

// newParallelCases starts the emulator of t's cases; call it in the test, before its t.Run.
func newParallelCases(t *testing.T) *parallelCases {
	return &parallelCases{ps: pubsubtest.Start(t)}
}

// newE2E marks the case t parallel (it runs with the test's other such cases, up to -parallel of
// them; see parallelWidth) and returns its e2e on the shared server and the cases' emulator.
func (c *parallelCases) newE2E(t *testing.T, ddl string) *e2e {
	t.Parallel()
	return newE2EWith(t, chtest.New(t), c.ps, fmt.Sprintf("-%d", c.n.Add(1)), ddl)
}

// newE2EApart is newE2E for a test that runs at once with others (t.Parallel, which it calls):
// its emulator is not the process's PUBSUB_EMULATOR_HOST (pubsubtest.StartApart), so its
// pipelines run in processes of the binary that the test starts with PUBSUB_EMULATOR_HOST=e.ps.Addr,
// not in the test's own (e.run, e.start).
func newE2EApart(t *testing.T, ddl string) *e2e {
	t.Parallel()
	return newE2EWith(t, chtest.New(t), pubsubtest.StartApart(t), "", ddl)
}

// run builds the pipeline on the local source and runs it on prism until stopAfterIdle ends it.
func (e *e2e) run(t *testing.T) beam.PipelineResult {
	t.Helper()
	p, s := beam.NewPipelineWithRoot()
	pipeline.Build(s, pipeline.MustCheck(e.opts), pipeline.LocalSource)
	start := time.Now()
	// A pipeline that never stops fails its own test rather than the whole package's timeout.
	res := startPipeline(p).wait(t, 5*time.Minute)
	t.Logf("pipeline ended by itself after %v", time.Since(start).Round(time.Millisecond))
	return res
}

// checkAllAcked checks that the emulator saw an ack for every message id.
func (e *e2e) checkAllAcked(t *testing.T, ids []string) {
	t.Helper()
	want := map[string]bool{}
	for _, id := range ids {
		want[id] = true
	}
	unacked := 0
	for _, m := range e.ps.Server.Messages() {
		if want[m.ID] && m.Acks == 0 {
			unacked++
		}
	}
	if unacked > 0 {
		t.Errorf("%d of %d messages were never acknowledged", unacked, len(ids))
	}
}

// TestEndToEnd publishes realistic events, about 2% of them malformed, runs the whole pipeline on
// the local runner and checks every message: each good one is a row with the right values, each
// bad one a dead-letter row and a dead-letter topic message; the metrics equal the counts; every
// message was acknowledged; the job ended by stopAfterIdle.
func TestEndToEnd(t *testing.T) {
	const n = 3000
	e := newE2E(t, events.DDL)
	e.opts.BatchRowCount = pipeline.GivenInt(500)
	e.opts.WindowSeconds = pipeline.GivenInt(2)
	// The rows through the GroupByKey compressed with S2, the default before MinLZ (every other
	// test but two has MinLZ, the default, and TestFixedWindowMode and TestCombinedMode zstd).
	e.opts.ShuffleCompression = "s2"

	gen := events.NewGenerator(42, time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC))
	var msgs []*pubsubpb.PubsubMessage
	good := map[string]events.Event{}
	var bad []string
	totalBytes, withDebug := 0, 0
	for i := range n {
		var data []byte
		if i%50 == 7 {
			_, data = gen.Malformed()
			bad = append(bad, string(data))
		} else {
			var ev events.Event
			ev, data = gen.Next()
			good[ev.EventID] = ev
			var fields map[string]json.RawMessage
			if err := json.Unmarshal(data, &fields); err != nil {
				t.Fatal(err)
			}
			if _, ok := fields["debug"]; ok { // the one field of the events without a column
				withDebug++
			}
		}
		totalBytes += len(data)
		msgs = append(msgs, &pubsubpb.PubsubMessage{Data: data, Attributes: map[string]string{"n": strconv.Itoa(i)}})
	}
	ids := e.ps.Publish(t, e.topic, msgs...)

	res := e.run(t)

	// Every good message is a row with its values.
	out := e.srv.MustQuery(t, "SELECT event_id, user_id, seq, toUnixTimestamp(ts), duration_ms, revenue, is_logged_in, source FROM events")
	rows := strings.Split(out, "\n")
	if len(rows) != len(good) {
		t.Errorf("%d rows in the table, want %d", len(rows), len(good))
	}
	seen := map[string]bool{}
	for _, r := range rows {
		f := strings.Split(r, "\t")
		ev, ok := good[f[0]]
		if !ok {
			t.Errorf("row for unknown or bad event: %s", r)
			continue
		}
		if seen[f[0]] {
			t.Errorf("duplicate row: %s", r)
		}
		seen[f[0]] = true
		rev := `\N`
		if ev.Revenue != nil {
			rev = strconv.FormatFloat(*ev.Revenue, 'f', -1, 64)
		}
		src := ev.Source
		if src == "" {
			src = "unknown" // the column's DEFAULT
		}
		logged := "0"
		if ev.LoggedIn {
			logged = "1"
		}
		want := strings.Join([]string{ev.EventID, fmt.Sprint(ev.UserID), fmt.Sprint(ev.Seq), fmt.Sprint(ev.TS.Unix()), fmt.Sprint(ev.DurationMS), rev, logged, src}, "\t")
		if r != want {
			t.Errorf("row\n got  %s\n want %s", r, want)
		}
	}

	// Every bad message is a dead-letter row and a dead-letter topic message, with its bytes.
	sort.Strings(bad)
	dlRows := e.srv.MustQuery(t, "SELECT count(), countIf(error_message != '' AND stack_trace LIKE 'stage: parse%') FROM dead_letters")
	if want := fmt.Sprintf("%d\t%d", len(bad), len(bad)); dlRows != want {
		t.Errorf("dead-letter table: count and explained = %s, want %s", dlRows, want)
	}
	var fromTopic []string
	for _, m := range e.ps.PullAll(t, e.dlqCheck) {
		fromTopic = append(fromTopic, string(m.Data))
		if m.Attributes["errorMessage"] == "" || m.Attributes["failedAt"] == "" || m.Attributes["n"] == "" {
			t.Errorf("dead-letter message without its attributes (errorMessage, failedAt, the original n): %v", m.Attributes)
		}
	}
	sort.Strings(fromTopic)
	if strings.Join(fromTopic, "\n") != strings.Join(bad, "\n") {
		t.Errorf("dead-letter topic holds %d messages, want the %d bad payloads", len(fromTopic), len(bad))
	}

	// The metrics equal the counts.
	c := counters(res)
	for name, want := range map[string]int64{
		"messages-received": n, "rows-parsed-ok": int64(len(good)), "rows-parse-failed": int64(len(bad)),
		"rows-inserted": int64(len(good)), "dead-letter-rows-clickhouse": int64(len(bad)), "dead-letter-rows-pubsub": int64(len(bad)),
		"insert-failures": 0, "rows-with-dropped-fields": int64(withDebug),
	} {
		if c[name] != want {
			t.Errorf("counter %s = %d, want %d", name, c[name], want)
		}
	}
	count, sum := payloadBytes(res)
	if count != n || sum != int64(totalBytes) {
		t.Errorf("message-payload-bytes count %d sum %d, want %d and %d", count, sum, n, totalBytes)
	}
	t.Logf("counters: %v", c)
	e.checkAllAcked(t, ids)
}

func payloadBytes(res beam.PipelineResult) (count, sum int64) {
	for _, d := range res.Metrics().AllMetrics().Distributions() {
		if d.Key.Name == "message-payload-bytes" {
			count += d.Committed.Count
			sum += d.Committed.Sum
		}
	}
	return count, sum
}
