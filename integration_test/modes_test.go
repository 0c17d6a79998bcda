package integration_test

import (
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"github.com/apache/beam/sdks/v2/go/pkg/beam"

	"github.com/ch-beam/pubsub-to-clickhouse/internal/events"
	"github.com/ch-beam/pubsub-to-clickhouse/internal/flowtest"
	"github.com/ch-beam/pubsub-to-clickhouse/pipeline"
)

// running is a pipeline running in the background while the test publishes and watches the table.
type running struct {
	done chan struct{}
	res  beam.PipelineResult
	err  error
}

func (e *e2e) start(t *testing.T) *running {
	t.Helper()
	p, s := beam.NewPipelineWithRoot()
	pipeline.Build(s, pipeline.MustCheck(e.opts), pipeline.LocalSource)
	return startPipeline(p)
}

// startPipeline runs p on prism in the background.
func startPipeline(p *beam.Pipeline) *running {
	r := &running{done: make(chan struct{})}
	go func() {
		defer close(r.done)
		r.res, r.err = flowtest.RunWithMetrics(p)
	}()
	return r
}

// wait waits for the pipeline to end by stopAfterIdle, at most limit.
func (r *running) wait(t *testing.T, limit time.Duration) beam.PipelineResult {
	t.Helper()
	select {
	case <-r.done:
	case <-time.After(limit):
		t.Fatalf("the pipeline did not end within %v", limit)
	}
	if r.err != nil {
		t.Fatalf("pipeline: %v", r.err)
	}
	return r.res
}

// publishEvents publishes n generated events.
func (e *e2e) publishEvents(t *testing.T, gen *events.Generator, n int) {
	t.Helper()
	var msgs []*pubsubpb.PubsubMessage
	for range n {
		_, data := gen.Next()
		msgs = append(msgs, &pubsubpb.PubsubMessage{Data: data})
	}
	e.ps.Publish(t, e.topic, msgs...)
}

// sample is the row count of the table at a time.
type sample struct {
	at    time.Time
	count int
}

// watch samples the table's row count every 100 ms until it reaches want or limit passes.
func (e *e2e) watch(t *testing.T, want int, limit time.Duration) []sample {
	t.Helper()
	var out []sample
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		n, err := strconv.Atoi(e.srv.MustQuery(t, "SELECT count() FROM events"))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, sample{time.Now(), n})
		if n >= want {
			return out
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("the table did not reach %d rows within %v; samples: %v", want, limit, out)
	return nil
}

func firstAt(samples []sample, atLeast int) time.Time {
	for _, s := range samples {
		if s.count >= atLeast {
			return s.at
		}
	}
	return time.Time{}
}

// TestFixedWindowMode: with windowSeconds only, no row is visible before its window closes, and
// the window's rows all arrive together when it does. The rows go through the GroupByKey
// compressed with zstd (shuffleCompression=zstd; TestEndToEnd has s2, every other test the
// default, minlz).
func TestFixedWindowMode(t *testing.T) {
	const window = 4 * time.Second
	e := newE2E(t, events.DDL)
	e.opts.WindowSeconds = pipeline.GivenInt(int(window / time.Second))
	e.opts.ShuffleCompression = "zstd"
	e.opts.StopAfterIdle = pipeline.GivenInt(10) // longer than the wait for a window boundary below
	r := e.start(t)
	time.Sleep(time.Second) // let the reader start
	// Publish just after a window boundary (fixed windows are aligned to the epoch), so that
	// every message falls into one window.
	for now := time.Now(); now.Sub(now.Truncate(window)) > 300*time.Millisecond; now = time.Now() {
		time.Sleep(20 * time.Millisecond)
	}
	published := time.Now()
	windowEnd := published.Truncate(window).Add(window)
	e.publishEvents(t, events.NewGenerator(1, published), 200)
	samples := e.watch(t, 200, 30*time.Second)
	for _, s := range samples {
		if s.at.Before(windowEnd) && s.count != 0 {
			t.Errorf("%d rows visible at %v, before the window closed at %v", s.count, s.at.Format("15:04:05.000"), windowEnd.Format("15:04:05.000"))
		}
	}
	t.Logf("published at %v, window closed at %v, rows visible at %v", published.Format("15:04:05.000"), windowEnd.Format("15:04:05.000"), firstAt(samples, 200).Format("15:04:05.000"))
	// One pane: one INSERT per set of given columns (events omit the DEFAULT column source at
	// times), whatever the window's size.
	c := counters(r.wait(t, 60*time.Second))
	if c["insert-batches"] != 2 || c["rows-inserted"] != 200 {
		t.Errorf("counters %v, want 200 rows in 2 INSERTs (rows with and without source)", c)
	}
}

// TestCombinedMode: with batchRowCount and windowSeconds, a batch goes out when it has
// batchRowCount rows, or windowSeconds after its first row, whichever comes first. The rows wait
// in the batcher's state compressed with zstd (shuffleCompression=zstd).
func TestCombinedMode(t *testing.T) {
	const window = 8 * time.Second
	e := newE2E(t, events.DDL)
	e.opts.WindowSeconds = pipeline.GivenInt(int(window / time.Second))
	e.opts.BatchRowCount = pipeline.GivenInt(100)
	e.opts.ShuffleCompression = "zstd"
	r := e.start(t)
	gen := events.NewGenerator(2, time.Now())
	time.Sleep(time.Second)

	// Fewer rows than batchRowCount: they wait for the time trigger.
	published := time.Now()
	e.publishEvents(t, gen, 30)
	samples := e.watch(t, 30, 30*time.Second)
	visible := firstAt(samples, 30)
	if visible.Sub(published) < window-time.Second {
		t.Errorf("30 rows visible %v after publishing, before the %v time trigger", visible.Sub(published), window)
	}
	t.Logf("30 rows: visible %v after publishing", visible.Sub(published).Round(time.Millisecond))

	// More than batchRowCount: two batches of 100 go out on the count trigger, without waiting;
	// the remaining 50 wait for the time trigger.
	published = time.Now()
	e.publishEvents(t, gen, 250)
	samples = e.watch(t, 280, 30*time.Second)
	counted, timed := firstAt(samples, 230), firstAt(samples, 280)
	if counted.Sub(published) >= window-time.Second {
		t.Errorf("200 of 250 rows visible %v after publishing: the count trigger of 100 did not fire before the %v time trigger", counted.Sub(published), window)
	}
	if timed.Sub(published) < window-time.Second {
		t.Errorf("the last 50 rows visible %v after publishing, before the %v time trigger", timed.Sub(published), window)
	}
	t.Logf("250 rows: 200 visible %v after publishing, the other 50 after %v", counted.Sub(published).Round(time.Millisecond), timed.Sub(published).Round(time.Millisecond))
	res := r.wait(t, 60*time.Second)
	if c := counters(res); c["rows-inserted"] != 280 {
		t.Errorf("counters %v, want 280 rows inserted", c)
	}
	// zstd: under the default's 0.32–0.41 of the payload for groups of 30 to 250 demo rows.
	checkShuffleBytes(t, res, 0.30)
}

// TestDefaultMode: without windowSeconds and batchRowCount, the combined mode with 1000 rows and
// 30 seconds: 2500 rows go out at once in INSERTs of at most 1000 rows.
func TestDefaultMode(t *testing.T) {
	e := newE2E(t, events.DDL)
	if m := e.opts.Mode(); m.Rows != 1000 || m.Window != 30*time.Second {
		t.Fatalf("default mode %+v, want 1000 rows / 30 s", m)
	}
	r := e.start(t)
	time.Sleep(time.Second)
	published := time.Now()
	e.publishEvents(t, events.NewGenerator(3, published), 2500)
	samples := e.watch(t, 2000, 60*time.Second)
	if d := firstAt(samples, 2000).Sub(published); d >= 25*time.Second {
		t.Errorf("2000 of 2500 rows took %v: the count trigger of 1000 did not fire", d)
	}
	e.watch(t, 2500, 60*time.Second)
	res := r.wait(t, 90*time.Second)
	for _, d := range res.Metrics().AllMetrics().Distributions() {
		if d.Key.Name == "insert-batch-rows" && d.Committed.Max > 1000 {
			t.Errorf("an INSERT of %d rows, more than the default 1000", d.Committed.Max)
		}
	}
	checkShuffleBytes(t, res, 0.45)
}

// checkShuffleBytes fails t unless the metric shuffle-bytes (the packed groups that cross the
// batch stage's GroupByKey) is positive and at most most times the payload bytes the parse
// stage counted (message-payload-bytes), and logs the ratio.
func checkShuffleBytes(t *testing.T, res beam.PipelineResult, most float64) {
	t.Helper()
	var payload int64
	for _, d := range res.Metrics().AllMetrics().Distributions() {
		if d.Key.Name == "message-payload-bytes" {
			payload += d.Committed.Sum
		}
	}
	shuffled := counters(res)["shuffle-bytes"]
	if payload == 0 || shuffled == 0 || float64(shuffled) > most*float64(payload) {
		t.Errorf("shuffle-bytes %d for %d payload bytes, want more than none and at most %.2f of them", shuffled, payload, most)
	}
	t.Logf("shuffle-bytes %d for %d payload bytes: %.3f", shuffled, payload, float64(shuffled)/float64(payload))
}

// TestServerUnreachable: with ClickHouse unreachable for a few seconds mid-stream, the INSERTs
// are retried and every row lands once the server is back; insert-retries counts the attempts.
func TestServerUnreachable(t *testing.T) {
	e := newE2E(t, events.DDL)
	proxy := e.srv.Proxy(t)
	e.opts.ClickHouseURL = proxy.URL()
	e.opts.BatchRowCount = pipeline.GivenInt(50)
	e.opts.WindowSeconds = pipeline.GivenInt(1)
	e.opts.MaxRetries = 40
	e.opts.RetryInitialBackoffMillis = 100
	e.opts.RetryMaxBackoffMillis = 500
	r := e.start(t)
	gen := events.NewGenerator(4, time.Now())
	time.Sleep(time.Second)
	e.publishEvents(t, gen, 100)
	e.watch(t, 100, 30*time.Second)

	proxy.Down()
	e.publishEvents(t, gen, 300)
	var once sync.Once
	time.AfterFunc(4*time.Second, func() { once.Do(proxy.Up) })
	e.watch(t, 400, 60*time.Second)
	c := counters(r.wait(t, 60*time.Second))
	if got := e.srv.MustQuery(t, "SELECT count(), uniqExact(event_id) FROM events"); got != "400\t400" {
		t.Errorf("rows and distinct events = %q, want 400 and 400", got)
	}
	if c["insert-retries"] == 0 || c["insert-failures"] != 0 {
		t.Errorf("counters %v: want insert-retries > 0 and no insert failure", c)
	}
	t.Logf("counters: %v", c)
	_ = fmt.Sprint
}
