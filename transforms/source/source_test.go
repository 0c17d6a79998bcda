package source

import (
	"context"
	"fmt"
	"hash/fnv"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"cloud.google.com/go/pubsub/v2"
	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"cloud.google.com/go/pubsub/v2/pstest"
	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/window"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/window/trigger"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/runtime/graphx"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"
	pb "google.golang.org/genproto/googleapis/pubsub/v1"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/ch-beam/pubsub-to-clickhouse/internal/flowtest"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/flow"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/psclient"
)

// TestMain runs the pipelines of these tests on prism, with its bundle splits off
// (flowtest.Main).
func TestMain(m *testing.M) { os.Exit(flowtest.Main(m)) }

func init() {
	register.DoFn3x1[context.Context, beam.EventTime, flow.Message, error](&ackFn{})
	register.DoFn3x1[context.Context, int, func(*flow.Message) bool, error](&ackGroupFn{})
	register.Function1x2(shardOf)
	register.Iter1[flow.Message]()
	register.Function3x0(explode)
	register.Emitter2[beam.EventTime, flow.Message]()
	register.DoFn1x0[flow.Messages](&elementSizeFn{})
}

// elementSizeFn records the number of messages of each source element under its test's name.
type elementSizeFn struct{ Test string }

var elementSizes sync.Map // test name -> *sizes

type sizes struct {
	mu sync.Mutex
	n  []int
}

func (f *elementSizeFn) ProcessElement(ms flow.Messages) {
	v, _ := elementSizes.LoadOrStore(f.Test, &sizes{})
	sz := v.(*sizes)
	sz.mu.Lock()
	sz.n = append(sz.n, len(ms.Messages))
	sz.mu.Unlock()
}

// pullSizes is a pstest reactor that records the MaxMessages and ReturnImmediately of every Pull
// and lets it through, the second and third after a delay of slow (the server leases the
// messages after it: a client that gave up on the Pull meanwhile would not see them).
type pullSizes struct {
	slow  time.Duration
	mu    sync.Mutex
	max   []int32
	atNow []bool
}

func (r *pullSizes) React(req any) (bool, any, error) {
	if pr, ok := req.(*pubsubpb.PullRequest); ok {
		r.mu.Lock()
		r.max = append(r.max, pr.GetMaxMessages())
		r.atNow = append(r.atNow, pr.GetReturnImmediately())
		n := len(r.max)
		r.mu.Unlock()
		if n == 2 || n == 3 {
			time.Sleep(r.slow)
		}
	}
	return false, nil, nil
}

// explode emits the messages of a source element one by one, with the element's timestamp.
func explode(et beam.EventTime, ms flow.Messages, emit func(beam.EventTime, flow.Message)) {
	for _, m := range ms.Messages {
		emit(et, m)
	}
}

const (
	testProject = "projects/test-project"
	testTopic   = testProject + "/topics/topic"
	testSub     = testProject + "/subscriptions/sub"
	runTimeout  = 60 * time.Second
)

var messagesCounter = beam.NewCounter("source_test", "messages")

// collector records what the pipeline's last DoFn saw; DoFns find it by name (prism runs the
// worker in the test process).
type collector struct {
	mu        sync.Mutex
	seen      map[string]int // message id → times seen
	msgs      map[string]flow.Message
	first     time.Time
	last      time.Time
	bundles   []int           // elements per bundle (or per group)
	latencies []time.Duration // arrival downstream − publish time
	live      []time.Duration // the same, of the messages published while the pipeline ran
	held      []string        // ack ids the DoFn did not acknowledge (hold mode)
	badTime   int             // elements whose timestamp precedes their publish time
}

var (
	collectorsMu sync.Mutex
	collectors   = map[string]*collector{}
)

func newCollector(t *testing.T) *collector {
	c := &collector{seen: map[string]int{}, msgs: map[string]flow.Message{}}
	collectorsMu.Lock()
	collectors[t.Name()] = c
	collectorsMu.Unlock()
	t.Cleanup(func() {
		collectorsMu.Lock()
		delete(collectors, t.Name())
		collectorsMu.Unlock()
	})
	return c
}

func collectorOf(name string) *collector {
	collectorsMu.Lock()
	defer collectorsMu.Unlock()
	return collectors[name]
}

func (c *collector) add(et beam.EventTime, msgs ...flow.Message) {
	now := time.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.first.IsZero() {
		c.first = now
	}
	c.last = now
	c.bundles = append(c.bundles, len(msgs))
	for _, m := range msgs {
		c.seen[m.ID]++
		c.msgs[m.ID] = m
		lat := now.Sub(time.UnixMilli(m.PublishTimeMillis))
		c.latencies = append(c.latencies, lat)
		if m.Attributes["kind"] == "live" {
			c.live = append(c.live, lat)
		}
		if et != 0 && et.Milliseconds() < m.PublishTimeMillis {
			c.badTime++
		}
	}
}

func (c *collector) hold(ids []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.held = append(c.held, ids...)
}

// takeHeld returns the held ack ids and forgets them.
func (c *collector) takeHeld() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	ids := c.held
	c.held = nil
	return ids
}

func (c *collector) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, k := range c.seen {
		n += k
	}
	return n
}

// ackFn simulates the write stage: it records each message and acknowledges the bundle's
// messages in FinishBundle (or, with Hold, hands their ack ids to the collector).
type ackFn struct {
	Subscription string
	Collector    string
	Hold         bool

	acks psclient.Manager
	col  *collector
	ids  []string
	msgs []flow.Message
	et   beam.EventTime
}

func (f *ackFn) Setup(ctx context.Context) error {
	var err error
	f.acks, err = psclient.ForSubscription(ctx, f.Subscription)
	f.col = collectorOf(f.Collector)
	return err
}

func (f *ackFn) StartBundle() {
	f.ids, f.msgs = f.ids[:0], f.msgs[:0]
}

func (f *ackFn) ProcessElement(ctx context.Context, et beam.EventTime, m flow.Message) error {
	messagesCounter.Inc(ctx, 1)
	f.ids = append(f.ids, m.AckID)
	f.msgs = append(f.msgs, m)
	f.et = et
	if et.Milliseconds() < m.PublishTimeMillis {
		return fmt.Errorf("message %s: timestamp %v before its publish time %d", m.ID, et, m.PublishTimeMillis)
	}
	return nil
}

func (f *ackFn) FinishBundle(ctx context.Context) error {
	if len(f.msgs) == 0 {
		return nil
	}
	f.col.add(f.et, f.msgs...)
	if f.Hold {
		f.col.hold(slices.Clone(f.ids))
		return nil
	}
	return f.acks.Ack(ctx, f.ids)
}

// ackGroupFn records and acknowledges a grouped pane, as the write stage does after windowing.
type ackGroupFn struct {
	Subscription string
	Collector    string

	acks psclient.Manager
	col  *collector
}

func (f *ackGroupFn) Setup(ctx context.Context) error {
	var err error
	f.acks, err = psclient.ForSubscription(ctx, f.Subscription)
	f.col = collectorOf(f.Collector)
	return err
}

func (f *ackGroupFn) ProcessElement(ctx context.Context, _ int, iter func(*flow.Message) bool) error {
	var msgs []flow.Message
	var ids []string
	var m flow.Message
	for iter(&m) {
		msgs = append(msgs, m)
		ids = append(ids, m.AckID)
	}
	f.col.add(0, msgs...)
	return f.acks.Ack(ctx, ids)
}

func shardOf(m flow.Message) (int, flow.Message) {
	h := fnv.New32a()
	h.Write([]byte(m.ID))
	return int(h.Sum32() % 4), m
}

// emulator is an in-process pstest with testTopic and testSub.
type emulator struct {
	srv    *pstest.Server
	client *pubsub.Client
}

func newEmulator(t *testing.T, opts ...pstest.ServerReactorOption) *emulator {
	t.Helper()
	return newEmulatorAckDeadline(t, 10, opts...)
}

// newEmulatorAckDeadline is newEmulator with a subscription whose ack deadline is ackDeadline
// seconds (below 10 only after pstest.SetMinAckDeadline).
func newEmulatorAckDeadline(t *testing.T, ackDeadline int32, opts ...pstest.ServerReactorOption) *emulator {
	t.Helper()
	srv := pstest.NewServer(opts...)
	t.Setenv("PUBSUB_EMULATOR_HOST", srv.Addr)
	ctx := context.Background()
	client, err := pubsub.NewClient(ctx, "test-project")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := psclient.CloseAckers(); err != nil {
			t.Error(err)
		}
		client.Close()
		srv.Close()
	})
	if _, err := client.TopicAdminClient.CreateTopic(ctx, &pubsubpb.Topic{Name: testTopic}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.SubscriptionAdminClient.CreateSubscription(ctx, &pubsubpb.Subscription{
		Name: testSub, Topic: testTopic, AckDeadlineSeconds: ackDeadline,
	}); err != nil {
		t.Fatal(err)
	}
	return &emulator{srv: srv, client: client}
}

// publish publishes n messages from first on, with attribute kind, and returns them by message
// id.
func (e *emulator) publish(first, n int, kind string) map[string]flow.Message {
	out := make(map[string]flow.Message, n)
	for i := first; i < first+n; i++ {
		data := fmt.Appendf(nil, `{"n":%d,"s":"message %d"}`, i, i)
		attrs := map[string]string{"i": strconv.Itoa(i), "kind": kind}
		id := e.srv.Publish(testTopic, data, attrs)
		out[id] = flow.Message{ID: id, Data: data, Attributes: attrs}
	}
	return out
}

// publishLarge publishes n messages of size bytes each from first on, with attribute kind
// "large", and returns them by message id.
func (e *emulator) publishLarge(first, n, size int) map[string]flow.Message {
	out := make(map[string]flow.Message, n)
	for i := first; i < first+n; i++ {
		data := fmt.Appendf(nil, `{"n":%d,"s":"`, i)
		data = append(data, strings.Repeat("x", size-len(data)-2)...)
		data = append(data, `"}`...)
		attrs := map[string]string{"i": strconv.Itoa(i), "kind": "large"}
		id := e.srv.Publish(testTopic, data, attrs)
		out[id] = flow.Message{ID: id, Data: data, Attributes: attrs}
	}
	return out
}

// pullNow returns how many messages the subscription delivers right now.
func (e *emulator) pullNow(t *testing.T) int {
	t.Helper()
	resp, err := e.client.SubscriptionAdminClient.Pull(context.Background(), &pubsubpb.PullRequest{
		Subscription: testSub, MaxMessages: 1000, ReturnImmediately: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	return len(resp.ReceivedMessages)
}

// checkAllAcknowledged checks that every message was delivered once and acknowledged once, and
// that the subscription has nothing left.
func (e *emulator) checkAllAcknowledged(t *testing.T, n int) {
	t.Helper()
	msgs := e.srv.Messages()
	if len(msgs) != n {
		t.Errorf("the emulator holds %d messages, want %d", len(msgs), n)
	}
	for _, m := range msgs {
		if m.Deliveries != 1 || m.Acks != 1 {
			t.Errorf("message %s: %d deliveries, %d acks; want 1 and 1", m.ID, m.Deliveries, m.Acks)
			break
		}
	}
	if got := e.pullNow(t); got != 0 {
		t.Errorf("the subscription still delivers %d messages", got)
	}
}

// checkSeen checks that the collector saw every published message exactly once, intact.
func checkSeen(t *testing.T, c *collector, want map[string]flow.Message) {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.seen) != len(want) {
		t.Errorf("saw %d distinct messages, want %d", len(c.seen), len(want))
	}
	bad := 0
	for id, w := range want {
		got, ok := c.msgs[id]
		switch {
		case c.seen[id] != 1:
			t.Errorf("message %s seen %d times", id, c.seen[id])
		case !ok || string(got.Data) != string(w.Data) || !mapsEqual(got.Attributes, w.Attributes) ||
			got.PublishTimeMillis == 0 || got.AckID == "":
			t.Errorf("message %s: got %+v, want data %q, attributes %v, a publish time and an ack id", id, got, w.Data, w.Attributes)
		default:
			continue
		}
		if bad++; bad >= 5 {
			t.Fatal("too many errors")
		}
	}
	if c.badTime != 0 {
		t.Errorf("%d elements have a timestamp before their publish time", c.badTime)
	}
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// runPipeline runs p and fails the test if it does not end within runTimeout.
func runPipeline(t *testing.T, p *beam.Pipeline) beam.PipelineResult {
	t.Helper()
	type result struct {
		pr  beam.PipelineResult
		err error
	}
	done := make(chan result, 1)
	go func() {
		pr, err := ptest.RunWithMetrics(p)
		done <- result{pr, err}
	}()
	select {
	case r := <-done:
		if r.err != nil {
			t.Fatalf("pipeline failed: %v", r.err)
		}
		return r.pr
	case <-time.After(runTimeout):
		t.Fatalf("the pipeline did not end within %v", runTimeout)
		return nil
	}
}

func counter(pr beam.PipelineResult, name string) int64 {
	var n int64
	for _, c := range pr.Metrics().AllMetrics().Counters() {
		if c.Name() == name {
			n += c.Result()
		}
	}
	return n
}

func summarize(c *collector) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	lat := slices.Clone(c.latencies)
	slices.Sort(lat)
	live := slices.Clone(c.live)
	slices.Sort(live)
	bundles := slices.Clone(c.bundles)
	slices.Sort(bundles)
	pct := func(lat []time.Duration, p float64) time.Duration {
		if len(lat) == 0 {
			return 0
		}
		return lat[int(p*float64(len(lat)-1))].Round(time.Millisecond)
	}
	span := c.last.Sub(c.first)
	rate := 0.0
	if span > 0 {
		rate = float64(len(c.seen)) / span.Seconds()
	}
	med, maxB := 0, 0
	if len(bundles) > 0 {
		med, maxB = bundles[len(bundles)/2], bundles[len(bundles)-1]
	}
	out := fmt.Sprintf("%d messages in %d bundles (median %d, max %d); first→last downstream %v (%.0f msg/s); publish→downstream latency p50 %v p90 %v max %v",
		len(c.seen), len(bundles), med, maxB, span.Round(time.Millisecond), rate, pct(lat, 0.5), pct(lat, 0.9), pct(lat, 1))
	if len(live) > 0 {
		out += fmt.Sprintf("; of the %d live messages p50 %v p90 %v max %v", len(live), pct(live, 0.5), pct(live, 0.9), pct(live, 1))
	}
	return out
}

// readAndAck runs Read → ackFn over a backlog of n messages and checks that the pipeline ends by
// itself, every message was seen once, intact, and acknowledged.
func readAndAck(t *testing.T, n int, opts Config) {
	em := newEmulator(t)
	want := em.publish(0, n, "backlog")
	col := newCollector(t)

	p, s := beam.NewPipelineWithRoot()
	opts.Subscription = testSub
	msgs := beam.ParDo(s, explode, Read(s, opts))
	beam.ParDo0(s, &ackFn{Subscription: testSub, Collector: t.Name()}, msgs)

	start := time.Now()
	pr := runPipeline(t, p)
	took := time.Since(start)

	checkSeen(t, col, want)
	if got := counter(pr, "messages"); got != int64(n) {
		t.Errorf("counter messages = %d, want %d", got, n)
	}
	em.checkAllAcknowledged(t, n)
	if a, ok := psclient.LookupAcker(testSub); !ok || a.Outstanding() != 0 {
		t.Errorf("the ack manager is missing or has outstanding messages")
	} else {
		t.Logf("ack manager: %+v", a.Stats())
	}
	t.Logf("pipeline ran %v (build, start, StopAfterIdle %v included); first element downstream after %v",
		took.Round(time.Millisecond), opts.StopAfterIdle, col.first.Sub(start).Round(time.Millisecond))
	t.Logf("%s", summarize(col))
}

// A backlog of 2000 messages is read once, acknowledged, and the pipeline ends by itself.
func TestReadAcknowledgesAllAndStops(t *testing.T) {
	readAndAck(t, 2000, Config{StopAfterIdle: 2 * time.Second})
}

// A backlog of 2,500 messages becomes one element of 2,500 messages (PullBatch's default is
// 5,000), though no Pull asks for more than the 1,000 that Pub/Sub returns at most: the reader
// pulls again while Pulls come back full, with ReturnImmediately and the Pull's usual deadline,
// so follow-up Pulls slower than a short deadline lose nothing.
func TestReadElementOfSeveralPulls(t *testing.T) {
	elementSizes.Delete(t.Name()) // those of a run of this test before (-count=2)
	pulls := &pullSizes{slow: 300 * time.Millisecond}
	em := newEmulator(t, pstest.ServerReactorOption{FuncName: "Pull", Reactor: pulls})
	want := em.publish(0, 2500, "backlog")
	col := newCollector(t)

	p, s := beam.NewPipelineWithRoot()
	elements := Read(s, Config{Subscription: testSub, StopAfterIdle: time.Second})
	beam.ParDo0(s, &elementSizeFn{Test: t.Name()}, elements)
	beam.ParDo0(s, &ackFn{Subscription: testSub, Collector: t.Name()}, beam.ParDo(s, explode, elements))
	runPipeline(t, p)

	checkSeen(t, col, want)
	em.checkAllAcknowledged(t, 2500)
	v, _ := elementSizes.Load(t.Name())
	if v == nil {
		t.Fatal("no element recorded")
	}
	var largest, total int
	for _, n := range v.(*sizes).n {
		largest, total = max(largest, n), total+n
	}
	if largest != 2500 || total != 2500 {
		t.Errorf("elements of %v messages; want one of 2500 (and heartbeats of 0)", v.(*sizes).n)
	}
	pulls.mu.Lock()
	defer pulls.mu.Unlock()
	if len(pulls.max) < 3 {
		t.Fatalf("%d Pulls (MaxMessages %v); want at least 3 for 2,500 messages", len(pulls.max), pulls.max)
	}
	if pulls.atNow[0] || !pulls.atNow[1] || !pulls.atNow[2] {
		t.Errorf("ReturnImmediately of the Pulls: %v; want false for the first, true for the two follow-ups", pulls.atNow)
	}
	for _, m := range pulls.max {
		if m > 1000 || m < 1 {
			t.Errorf("a Pull asked for %d messages (all: %v); want 1 to 1000", m, pulls.max)
			break
		}
	}
}

// lowAckDeadline lets the emulator's subscriptions have ack deadlines from 1 s, for this test.
func lowAckDeadline(t *testing.T) {
	pstest.SetMinAckDeadline(time.Second)
	t.Cleanup(pstest.ResetMinAckDeadline)
}

// largeMessageBytes is the size of the tests' large messages: 80 of them, the backlog of those
// tests, make a response over maxPullResponseBytes.
const largeMessageBytes = 1_000_000

// A follow-up Pull whose response is too large for the client loses it: pullMore keeps the
// messages already pulled, the reader pulls fitPullMessages at a time, and once the lost
// messages come back (after their ack deadline) it doubles its MaxMessages while twice the last
// response stays within growPullBytes: 6, 12, 24, 48 for 1 MB messages.
func TestPullMoreShrinksOnResponseTooLargeAndGrowsBack(t *testing.T) {
	lowAckDeadline(t)
	em := newEmulatorAckDeadline(t, 3)
	ctx := context.Background()
	fn := &readFn{Subscription: testSub, PullBatch: defaultPullBatch, client: em.client, ackDeadline: 3 * time.Second}
	fn.pullBatch = fn.maxBatch()
	ack := func(msgs []*pubsubpb.ReceivedMessage) {
		t.Helper()
		ids := make([]string, len(msgs))
		for i, m := range msgs {
			ids[i] = m.GetAckId()
		}
		if err := em.client.SubscriptionAdminClient.Acknowledge(ctx, &pubsubpb.AcknowledgeRequest{Subscription: testSub, AckIds: ids}); err != nil {
			t.Fatal(err)
		}
	}

	em.publish(0, maxPullMessages, "small")
	msgs, lost, err := fn.pullSized(ctx, fn.pullBatch, false)
	if err != nil || lost || len(msgs) != maxPullMessages || fn.pullBatch != maxPullMessages {
		t.Fatalf("first Pull: %d messages, lost %v, error %v, next MaxMessages %d; want %d, false, nil, %d",
			len(msgs), lost, err, fn.pullBatch, maxPullMessages, maxPullMessages)
	}
	large := em.publishLarge(maxPullMessages, 80, largeMessageBytes)
	msgs, lost = fn.pullMore(ctx, msgs, maxPullMessages, defaultPullBatch)
	if len(msgs) != maxPullMessages || !lost || fn.pullBatch != fitPullMessages {
		t.Fatalf("pullMore: %d messages, lost %v, next MaxMessages %d; want the %d of the first Pull, true, %d",
			len(msgs), lost, fn.pullBatch, maxPullMessages, fitPullMessages)
	}
	ack(msgs)
	for id := range large {
		if d := em.srv.Message(id).Deliveries; d != 1 {
			t.Fatalf("large message %s: %d deliveries before its ack deadline, want 1 (the lost response)", id, d)
		}
	}

	// The lost messages come back after their ack deadline.
	var asked []int
	seen := map[string]int{}
	for deadline := time.Now().Add(runTimeout); len(seen) < len(large); {
		if time.Now().After(deadline) {
			t.Fatalf("got %d of the %d lost messages back within %v (Pulls of %v)", len(seen), len(large), runTimeout, asked)
		}
		n := fn.pullBatch
		got, lost, err := fn.pullSized(ctx, n, false)
		if err != nil || lost {
			t.Fatalf("Pull of %d after %v: lost %v, error %v", n, asked, lost, err)
		}
		if len(got) == 0 {
			continue
		}
		asked = append(asked, n)
		for _, m := range got {
			seen[m.GetMessage().GetMessageId()]++
		}
		ack(got)
	}
	if want := []int{6, 12, 24, 48}; !slices.Equal(asked, want) {
		t.Errorf("the Pulls that returned the lost messages asked for %v; want %v", asked, want)
	}
	for id := range large {
		if seen[id] != 1 || em.srv.Message(id).Deliveries != 2 {
			t.Errorf("large message %s: got back %d times, %d deliveries; want 1 and 2", id, seen[id], em.srv.Message(id).Deliveries)
		}
	}
}

// readLargeBacklog runs the reader with cfg on testSub, a backlog of 80 messages of 1 MB with
// an ack deadline of 3 s, acknowledging what it emits, and checks that every message was
// emitted. It returns the emulator and the MaxMessages of the reader's Pulls.
func readLargeBacklog(t *testing.T, cfg Config) (*emulator, []int32) {
	t.Helper()
	lowAckDeadline(t)
	pulls := &pullSizes{}
	em := newEmulatorAckDeadline(t, 3, pstest.ServerReactorOption{FuncName: "Pull", Reactor: pulls})
	want := em.publishLarge(0, 80, largeMessageBytes)
	col := newCollector(t)

	cfg.Subscription = testSub
	p, s := beam.NewPipelineWithRoot()
	msgs := beam.ParDo(s, explode, Read(s, cfg))
	beam.ParDo0(s, &ackFn{Subscription: testSub, Collector: t.Name()}, msgs)
	runPipeline(t, p)
	pulls.mu.Lock()
	asked := slices.Clone(pulls.max) // the reader's Pulls, before any the test makes
	pulls.mu.Unlock()
	checkSeen(t, col, want)
	return em, asked
}

// A backlog of 80 messages of 1 MB, and a reader whose first Pull asks for 1,000 messages (as
// one did before it started at fitPullMessages, and as a Pull does once small messages grew the
// batch): the response is over maxPullResponseBytes, and lost until the messages' ack deadline
// (3 s). StopAfterIdle (1 s) does not stop the reader meanwhile; it pulls 6 at a time, then
// more, and emits every message once, in a second delivery.
func TestReadWaitsOutLostResponse(t *testing.T) {
	em, asked := readLargeBacklog(t, Config{StopAfterIdle: time.Second, firstPull: maxPullMessages})
	for _, m := range em.srv.Messages() {
		if m.Deliveries != 2 || m.Acks != 1 {
			t.Errorf("message %s: %d deliveries, %d acks; want 2 (the lost response, then the redelivery) and 1", m.ID, m.Deliveries, m.Acks)
			break
		}
	}
	if got := em.pullNow(t); got != 0 {
		t.Errorf("the subscription still delivers %d messages", got)
	}
	if len(asked) < 3 || asked[0] != maxPullMessages || asked[1] != fitPullMessages {
		t.Fatalf("Pulls of %v MaxMessages; want %d, then %d, then more", asked, maxPullMessages, fitPullMessages)
	}
	after := asked[1:]
	if !slices.IsSorted(after) || slices.Max(after) != 48 {
		t.Errorf("after the lost response, Pulls of %v MaxMessages; want them to grow from %d to 48 and no further",
			after, fitPullMessages)
	}
}

// A backlog of 80 messages of 1 MB, more than one Pull response may hold: the reader's first Pull
// asks for fitPullMessages and it grows from there, so no response is lost: every message is
// delivered once, and the reader ends after StopAfterIdle without waiting out an ack deadline.
// (Asking for 1,000 at first lost the whole backlog until its ack deadline, 60 s with the
// emulator's default: TestReadWaitsOutLostResponse.)
func TestReadBacklogOfLargeMessages(t *testing.T) {
	em, asked := readLargeBacklog(t, Config{StopAfterIdle: time.Second})
	for _, m := range em.srv.Messages() {
		if m.Deliveries != 1 || m.Acks != 1 {
			t.Errorf("message %s: %d deliveries, %d acks; want 1 and 1 (no response lost)", m.ID, m.Deliveries, m.Acks)
			break
		}
	}
	if len(asked) == 0 || asked[0] != fitPullMessages || slices.Max(asked) != 48 {
		t.Errorf("Pulls of %v MaxMessages; want them to start at %d and grow to 48, no further", asked, fitPullMessages)
	}
}

// Set SOURCE_THROUGHPUT_N (e.g. 20000) to measure the reader on a larger backlog.
func TestReadThroughput(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("SOURCE_THROUGHPUT_N"))
	if n <= 0 {
		t.Skip("set SOURCE_THROUGHPUT_N to run")
	}
	readAndAck(t, n, Config{StopAfterIdle: 2 * time.Second})
}

// Messages published while the pipeline runs reach the downstream DoFn, directly or through
// fixed windows, which lose none of them: the element timestamps are pull times and the watermark
// follows.
func TestReadLive(t *testing.T) {
	t.Run("direct", func(t *testing.T) { readLive(t, false) })
	t.Run("fixed windows", func(t *testing.T) { readLive(t, true) })
}

func readLive(t *testing.T, windowed bool) {
	em := newEmulator(t)
	want := em.publish(0, 1000, "backlog") // a backlog first
	col := newCollector(t)

	p, s := beam.NewPipelineWithRoot()
	msgs := beam.ParDo(s, explode, Read(s, Config{Subscription: testSub, StopAfterIdle: 2 * time.Second}))
	if windowed {
		msgs = beam.WindowInto(s, window.NewFixedWindows(time.Second), msgs)
		grouped := beam.GroupByKey(s, beam.ParDo(s, shardOf, msgs))
		beam.ParDo0(s, &ackGroupFn{Subscription: testSub, Collector: t.Name()}, grouped)
	} else {
		beam.ParDo0(s, &ackFn{Subscription: testSub, Collector: t.Name()}, msgs)
	}

	// Publish 20 waves of 50 messages, 100 ms apart, once the reader is running.
	var pubMu sync.Mutex
	go func() {
		deadline := time.Now().Add(runTimeout)
		for time.Now().Before(deadline) {
			if a, ok := psclient.LookupAcker(testSub); ok && a.Stats().Tracked > 0 {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		for w := range 20 {
			got := em.publish(1000+50*w, 50, "live")
			pubMu.Lock()
			for id, m := range got {
				want[id] = m
			}
			pubMu.Unlock()
			time.Sleep(100 * time.Millisecond)
		}
	}()

	start := time.Now()
	runPipeline(t, p)
	took := time.Since(start)
	pubMu.Lock()
	defer pubMu.Unlock()
	if len(want) != 2000 {
		t.Fatalf("published %d messages, want 2000 (the pipeline ended before the publisher)", len(want))
	}
	checkSeen(t, col, want)
	em.checkAllAcknowledged(t, 2000)
	unit := "bundles"
	if windowed {
		unit = "bundles (groups per window and shard)"
	}
	t.Logf("pipeline ran %v; %s; counted in %s", took.Round(time.Millisecond), summarize(col), unit)
}

// Behind a global window with a count-only trigger the last partial batch is flushed only when
// the reader stops: with StopWithOutstanding the reader stops while it is outstanding, and the
// pipeline still delivers and acknowledges it before it ends.
func TestReadStopWithOutstandingFlushesCountTrigger(t *testing.T) {
	em := newEmulator(t)
	want := em.publish(0, 6000, "backlog") // ~1500 per shard: a count pane and a tail each
	col := newCollector(t)

	p, s := beam.NewPipelineWithRoot()
	msgs := beam.ParDo(s, explode, Read(s, Config{Subscription: testSub, StopAfterIdle: time.Second, StopWithOutstanding: true}))
	windowed := beam.WindowInto(s, window.NewGlobalWindows(), msgs,
		beam.Trigger(trigger.Repeat(trigger.AfterCount(1000))), beam.PanesDiscard(), beam.AllowedLateness(0))
	grouped := beam.GroupByKey(s, beam.ParDo(s, shardOf, windowed))
	beam.ParDo0(s, &ackGroupFn{Subscription: testSub, Collector: t.Name()}, grouped)

	start := time.Now()
	runPipeline(t, p)
	checkSeen(t, col, want)
	em.checkAllAcknowledged(t, 6000)
	t.Logf("pipeline ran %v; %s; counted in panes", time.Since(start).Round(time.Millisecond), summarize(col))
}

// With MaxOutstanding 100 and a downstream that does not acknowledge, the reader stops pulling at
// 100 messages; it does not stop on idleness while messages are outstanding; it ends once they are
// acknowledged.
func TestReadMaxOutstanding(t *testing.T) {
	em := newEmulator(t)
	want := em.publish(0, 150, "backlog")
	col := newCollector(t)

	p, s := beam.NewPipelineWithRoot()
	msgs := beam.ParDo(s, explode, Read(s, Config{Subscription: testSub, StopAfterIdle: time.Second, MaxOutstanding: 100, PullBatch: 30}))
	beam.ParDo0(s, &ackFn{Subscription: testSub, Collector: t.Name(), Hold: true}, msgs)

	done := make(chan error, 1)
	start := time.Now()
	go func() { done <- ptest.Run(p) }()
	deadline := time.After(runTimeout)

	// Sample the ack manager's outstanding count.
	var maxOutstanding int
	var sampleMu sync.Mutex
	stopSampling := make(chan struct{})
	defer close(stopSampling)
	go func() {
		for {
			select {
			case <-stopSampling:
				return
			case <-time.After(5 * time.Millisecond):
			}
			if a, ok := psclient.LookupAcker(testSub); ok {
				sampleMu.Lock()
				maxOutstanding = max(maxOutstanding, a.Outstanding())
				sampleMu.Unlock()
			}
		}
	}()

	waitFor := func(what string, cond func() bool) {
		t.Helper()
		for !cond() {
			select {
			case err := <-done:
				t.Fatalf("the pipeline ended (%v) while waiting for %s", err, what)
			case <-deadline:
				t.Fatalf("timed out waiting for %s", what)
			case <-time.After(20 * time.Millisecond):
			}
		}
	}
	delivered := func() int {
		n := 0
		for _, m := range em.srv.Messages() {
			n += m.Deliveries
		}
		return n
	}
	acker := func() *psclient.Acker {
		a, _ := psclient.LookupAcker(testSub)
		return a
	}

	waitFor("100 messages downstream", func() bool { return col.count() >= 100 })
	t.Logf("100 messages downstream after %v", time.Since(start).Round(time.Millisecond))
	time.Sleep(2 * time.Second) // the reader would have pulled the rest by now
	if n, d, o := col.count(), delivered(), acker().Outstanding(); n != 100 || d != 100 || o != 100 {
		t.Fatalf("at the limit: %d seen, %d delivered, %d outstanding; want 100 each", n, d, o)
	}

	// Acknowledge them: the reader reads the last 50 and holds them outstanding past
	// StopAfterIdle without stopping.
	if err := acker().Ack(context.Background(), col.takeHeld()); err != nil {
		t.Fatal(err)
	}
	waitFor("150 messages downstream", func() bool { return col.count() >= 150 })
	time.Sleep(2 * time.Second)
	select {
	case err := <-done:
		t.Fatalf("the pipeline ended (%v) with 50 messages outstanding", err)
	default:
	}
	if o := acker().Outstanding(); o != 50 {
		t.Fatalf("%d outstanding, want 50", o)
	}

	if err := acker().Ack(context.Background(), col.takeHeld()); err != nil {
		t.Fatal(err)
	}
	ackedAt := time.Now()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("pipeline failed: %v", err)
		}
	case <-deadline:
		t.Fatal("the pipeline did not end after the last acknowledgement")
	}
	t.Logf("ended %v after the last acknowledgement; ran %v", time.Since(ackedAt).Round(time.Millisecond),
		time.Since(start).Round(time.Millisecond))
	sampleMu.Lock()
	if maxOutstanding > 100 {
		t.Errorf("up to %d messages outstanding, want at most 100", maxOutstanding)
	}
	sampleMu.Unlock()
	checkSeen(t, col, want)
	em.checkAllAcknowledged(t, 150)
}

// The Dataflow reader's graph constructs (it runs only on Dataflow).
func TestReadDataflowBuilds(t *testing.T) {
	p, s := beam.NewPipelineWithRoot()
	out := ReadDataflow(s, Config{Subscription: testSub})
	if !out.IsValid() {
		t.Fatal("invalid PCollection")
	}
	edges, _, err := p.Build()
	if err != nil {
		t.Fatal(err)
	}
	pipe, err := graphx.Marshal(edges, &graphx.Options{Environment: &pipepb.Environment{Urn: "beam:env:docker:v1"}})
	if err != nil {
		t.Fatal(err)
	}
	var urns []string
	for _, tr := range pipe.GetComponents().GetTransforms() {
		if u := tr.GetSpec().GetUrn(); u != "" {
			urns = append(urns, u)
		}
	}
	if !slices.Contains(urns, "beam:transform:pubsub_read:v1") {
		t.Errorf("no pubsub_read transform among %v", urns)
	}
}

// fromPubsub runs fromPubsubFn on m with element timestamp et and returns what it emits.
func fromPubsub(t *testing.T, fn *fromPubsubFn, et beam.EventTime, m *pb.PubsubMessage) (beam.EventTime, flow.Message) {
	t.Helper()
	var ets []beam.EventTime
	var got []flow.Message
	fn.ProcessElement(context.Background(), et, m, func(et beam.EventTime, ms flow.Messages) {
		for _, m := range ms.Messages {
			ets, got = append(ets, et), append(got, m)
		}
	})
	if len(got) != 1 {
		t.Fatalf("emitted %d messages, want 1", len(got))
	}
	return ets[0], got[0]
}

func TestFromPubsubMessage(t *testing.T) {
	pt := time.UnixMilli(1700000000123)
	before := mtime.Now()
	et, got := fromPubsub(t, &fromPubsubFn{}, mtime.FromTime(pt), &pb.PubsubMessage{
		MessageId: "42", Data: []byte("x"), Attributes: map[string]string{"a": "b"}, PublishTime: timestamppb.New(pt), OrderingKey: "user-7",
	})
	if got.ID != "42" || string(got.Data) != "x" || got.Attributes["a"] != "b" || got.PublishTimeMillis != pt.UnixMilli() || got.AckID != "" || got.OrderingKey != "user-7" {
		t.Errorf("got %+v", got)
	}
	// Restamped at receipt: never the (old) publish time.
	if et < before || et > mtime.Now() {
		t.Errorf("element timestamp %v, want the time of receipt (after %v)", et, before)
	}

	// No publish time in the proto: the element's timestamp is the publish time.
	_, got = fromPubsub(t, &fromPubsubFn{}, mtime.FromTime(pt), &pb.PubsubMessage{MessageId: "1", Data: []byte("y")})
	if got.Attributes != nil || got.PublishTimeMillis != pt.UnixMilli() {
		t.Errorf("got %+v, want publish time %d from the element timestamp", got, pt.UnixMilli())
	}
}

func TestFromPubsubMessageWithoutID(t *testing.T) {
	pt := time.UnixMilli(1700000000123)
	msg := func(data string, attrs map[string]string, ms int64) *pb.PubsubMessage {
		return &pb.PubsubMessage{Data: []byte(data), Attributes: attrs, PublishTime: timestamppb.New(time.UnixMilli(ms))}
	}
	fn := &fromPubsubFn{}
	id := func(m *pb.PubsubMessage) string {
		_, got := fromPubsub(t, fn, mtime.FromTime(pt), m)
		return got.ID
	}
	a := id(msg(`{"id":1}`, map[string]string{"k": "v", "x": "y"}, pt.UnixMilli()))
	if !strings.HasPrefix(a, "derived-") || len(a) != len("derived-")+32 {
		t.Fatalf("derived id %q, want derived-<32 hex digits>", a)
	}
	if !fn.loggedNoID {
		t.Error("the first message without an id was not logged")
	}
	// The same message again (a redelivery) gets the same id, whatever the map order.
	if b := id(msg(`{"id":1}`, map[string]string{"x": "y", "k": "v"}, pt.UnixMilli())); b != a {
		t.Errorf("redelivery got id %q, want %q", b, a)
	}
	// A change in payload, attributes or publish time changes it, and so does moving bytes
	// between an attribute's key and value.
	for name, m := range map[string]*pb.PubsubMessage{
		"payload":      msg(`{"id":2}`, map[string]string{"k": "v", "x": "y"}, pt.UnixMilli()),
		"attribute":    msg(`{"id":1}`, map[string]string{"k": "v", "x": "z"}, pt.UnixMilli()),
		"no attribute": msg(`{"id":1}`, map[string]string{"k": "v"}, pt.UnixMilli()),
		"key/value":    msg(`{"id":1}`, map[string]string{"kv": "", "x": "y"}, pt.UnixMilli()),
		"publish time": msg(`{"id":1}`, map[string]string{"k": "v", "x": "y"}, pt.UnixMilli()+1),
	} {
		if b := id(m); b == a {
			t.Errorf("%s changed, the id did not: %q", name, b)
		}
	}
	// The ids were computed apart from this code (Python's hashlib over the bytes DerivedID's
	// comment lays out): without an ordering key, the id of the releases before the key counted.
	if want := "derived-dbbe9b9e0731cd3c278543efb2892ebd"; a != want {
		t.Errorf("derived id %q, want %q", a, want)
	}
	keyed := msg(`{"id":1}`, map[string]string{"k": "v", "x": "y"}, pt.UnixMilli())
	keyed.OrderingKey = "key-1"
	k1 := id(keyed)
	if want := "derived-9757c5f85ad3af87568800da2fa904fd"; k1 != want {
		t.Errorf("derived id with an ordering key %q, want %q", k1, want)
	}
	keyed.OrderingKey = "key-2"
	if k2 := id(keyed); k2 == k1 || k2 == a {
		t.Errorf("another ordering key got id %q (key-1: %q, none: %q)", k2, k1, a)
	}
	keyed.OrderingKey = "key-1"
	if again := id(keyed); again != k1 {
		t.Errorf("redelivery with its ordering key got id %q, want %q", again, k1)
	}
	// A message with an id keeps it.
	if b := id(&pb.PubsubMessage{MessageId: "7", Data: []byte("{}")}); b != "7" {
		t.Errorf("id %q, want 7", b)
	}
}

func TestTrackerNeverSplitsButCheckpoints(t *testing.T) {
	tr := newTracker(Restriction{Next: 5, StartMillis: 1, LastMillis: 2})
	if !tr.TryClaim(int64(5)) || !tr.TryClaim(int64(6)) {
		t.Fatal("claims failed")
	}
	if tr.TryClaim(int64(8)) || tr.GetError() == nil {
		t.Fatal("a claim that skips a position succeeded")
	}
	tr = newTracker(Restriction{Next: 5})
	tr.TryClaim(int64(5))
	if _, r, _ := tr.TrySplit(0.5); r != nil {
		t.Errorf("split at 0.5 gave residual %v", r)
	}
	tr.busy = true
	if _, r, _ := tr.TrySplit(0); r != nil || tr.IsDone() {
		t.Errorf("split at 0 while busy gave residual %v", r)
	}
	tr.busy = false
	p, r, err := tr.TrySplit(0)
	if err != nil || r == nil || !tr.IsDone() || !p.(Restriction).Done || r.(Restriction).Done || r.(Restriction).Next != 6 {
		t.Errorf("checkpoint: primary %v residual %v err %v done %v", p, r, err, tr.IsDone())
	}
	if tr.TryClaim(int64(6)) {
		t.Error("claim after checkpoint succeeded")
	}
	tr = newTracker(Restriction{})
	if tr.TryClaim(int64(endPosition)) || !tr.IsDone() || tr.GetError() != nil {
		t.Error("claiming the end did not finish the restriction")
	}
	b, err := encodeRestriction(Restriction{Next: 7, StartMillis: 8, LastMillis: 9, LostMillis: 10, Done: true})
	if err != nil {
		t.Fatal(err)
	}
	if d, err := decodeRestriction(b); err != nil || d != (Restriction{Next: 7, StartMillis: 8, LastMillis: 9, LostMillis: 10, Done: true}) {
		t.Errorf("round trip: %v %v", d, err)
	}
}

// With MaxOutstandingBytes of 20 messages and a downstream that does not acknowledge, the reader
// stops pulling once the messages it holds reach the cap (above it by one element at most); it
// pulls again as they are acknowledged, and every message arrives once.
func TestReadMaxOutstandingBytes(t *testing.T) {
	const n, size, pullBatch = 60, 10_000, 5
	em := newEmulator(t)
	want := em.publishLarge(0, n, size)
	// What the cap counts of one message: its payload and attributes ("i" and 1 or 2 digits,
	// "kind" and "large").
	const least, most = size + 11, size + 12
	maxBytes := int64(20 * size)
	col := newCollector(t)

	p, s := beam.NewPipelineWithRoot()
	msgs := beam.ParDo(s, explode, Read(s, Config{Subscription: testSub, StopAfterIdle: time.Second, MaxOutstandingBytes: maxBytes, PullBatch: pullBatch}))
	beam.ParDo0(s, &ackFn{Subscription: testSub, Collector: t.Name(), Hold: true}, msgs)

	done := make(chan error, 1)
	go func() { done <- ptest.Run(p) }()
	deadline := time.After(runTimeout)
	acker := func() *psclient.Acker {
		a, _ := psclient.LookupAcker(testSub)
		return a
	}
	for rounds := 0; ; rounds++ {
		// Wait until the reader stops pulling: the count stays the same for a second.
		last, stableSince := -1, time.Now()
		for time.Since(stableSince) < time.Second {
			select {
			case err := <-done:
				t.Fatalf("the pipeline ended (%v) with messages held", err)
			case <-deadline:
				t.Fatal("timed out")
			case <-time.After(50 * time.Millisecond):
			}
			if c := col.count(); c != last {
				last, stableSince = c, time.Now()
			}
		}
		if rounds == 0 && last == n {
			t.Fatalf("the reader pulled all %d messages (%d bytes) with none acknowledged; want it stopped at %d bytes", n, n*least, maxBytes)
		}
		held := col.takeHeld()
		a := acker()
		b := a.OutstandingBytes()
		if b < int64(len(held)*least) || b > int64(len(held)*most) {
			t.Fatalf("round %d: %d bytes outstanding, want the %d held messages' (%d to %d)", rounds, b, len(held), len(held)*least, len(held)*most)
		}
		if last < n {
			// Stopped by the cap, not the end of the backlog: at or above the cap, and above it
			// by less than one element of pullBatch messages.
			if b < maxBytes || b >= maxBytes+int64(pullBatch*most) {
				t.Fatalf("round %d: the reader stopped with %d messages (%d bytes) held; want at least %d bytes and less than %d more",
					rounds, len(held), b, maxBytes, pullBatch*most)
			}
		}
		if err := a.Ack(context.Background(), held); err != nil {
			t.Fatal(err)
		}
		if last == n {
			break
		}
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("pipeline failed: %v", err)
		}
	case <-deadline:
		t.Fatal("the pipeline did not end after the last acknowledgement")
	}
	checkSeen(t, col, want)
	em.checkAllAcknowledged(t, n)
}

// TestReadCountsRedeliveries: on a subscription with a dead-letter policy Pub/Sub gives each
// delivery its attempt number (ReceivedMessage.delivery_attempt), and forwards a message to the
// policy's topic once its attempts are spent, with no word of this pipeline about it. The reader
// counts the messages it receives again (metric messages-redelivered) and logs the highest
// attempt beside the policy's limit. Before, the attempt was decoded and dropped: a message
// given back run after run (a run that fails gives back what it has not stored) left no trace
// until it was gone to the policy's topic.
func TestReadCountsRedeliveries(t *testing.T) {
	em := newEmulator(t)
	ctx := context.Background()
	const policed = testProject + "/subscriptions/policed"
	dead := testProject + "/topics/policy-dead"
	if _, err := em.client.TopicAdminClient.CreateTopic(ctx, &pubsubpb.Topic{Name: dead}); err != nil {
		t.Fatal(err)
	}
	if _, err := em.client.SubscriptionAdminClient.CreateSubscription(ctx, &pubsubpb.Subscription{
		Name: policed, Topic: testTopic, AckDeadlineSeconds: 10,
		DeadLetterPolicy: &pubsubpb.DeadLetterPolicy{DeadLetterTopic: dead, MaxDeliveryAttempts: 5},
	}); err != nil {
		t.Fatal(err)
	}
	em.publish(0, 5, "again")
	// Delivered once and given back, as a failed run gives back what it has not stored.
	resp, err := em.client.SubscriptionAdminClient.Pull(ctx, &pubsubpb.PullRequest{Subscription: policed, MaxMessages: 3})
	if err != nil || len(resp.ReceivedMessages) != 3 {
		t.Fatalf("pull: %d messages, %v; want 3", len(resp.GetReceivedMessages()), err)
	}
	var ids []string
	for _, m := range resp.ReceivedMessages {
		ids = append(ids, m.AckId)
	}
	if err := em.client.SubscriptionAdminClient.ModifyAckDeadline(ctx, &pubsubpb.ModifyAckDeadlineRequest{Subscription: policed, AckIds: ids}); err != nil {
		t.Fatal(err)
	}

	col := newCollector(t)
	p, s := beam.NewPipelineWithRoot()
	msgs := beam.ParDo(s, explode, Read(s, Config{Subscription: policed, StopAfterIdle: time.Second}))
	beam.ParDo0(s, &ackFn{Subscription: policed, Collector: t.Name()}, msgs)
	pr := runPipeline(t, p)
	if got := col.count(); got != 5 {
		t.Errorf("%d messages read, want 5", got)
	}
	if got := counter(pr, "messages-redelivered"); got != 3 {
		t.Errorf("messages-redelivered = %d, want 3 (the messages given back once)", got)
	}
}

// detachedPulls answers every Pull after the first with FAILED_PRECONDITION, as Pub/Sub answers
// the Pulls of a subscription detached from its topic.
type detachedPulls struct{ n atomic.Int32 }

func (r *detachedPulls) React(_ any) (bool, any, error) {
	if r.n.Add(1) > 1 {
		return true, nil, status.Error(codes.FailedPrecondition, "Subscription is detached.")
	}
	return false, nil, nil
}

// TestReadDetachedMidRun: a subscription detached while the run reads it (its Pulls refused with
// FAILED_PRECONDITION) stops the run with a sentence saying so and what to do. Before, the error
// was the bare code.
func TestReadDetachedMidRun(t *testing.T) {
	em := newEmulator(t, pstest.ServerReactorOption{FuncName: "Pull", Reactor: &detachedPulls{}})
	em.publish(0, 5, "before")
	p, s := beam.NewPipelineWithRoot()
	beam.ParDo0(s, &ackFn{Subscription: testSub, Collector: t.Name()}, beam.ParDo(s, explode, Read(s, Config{Subscription: testSub, StopAfterIdle: time.Minute})))
	newCollector(t)
	done := make(chan error, 1)
	go func() { done <- ptest.Run(p) }()
	select {
	case err := <-done:
		if want := "pull: Pub/Sub refuses to deliver from the subscription (FAILED_PRECONDITION, its answer for one detached from its topic"; err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("the run ended with %v, want an error holding %q", err, want)
		}
	case <-time.After(runTimeout):
		t.Fatal("the run did not end on the refused Pulls")
	}
}
