// Package source reads the Pub/Sub subscription into a PCollection<flow.Messages>: one element per
// Pull response on the local runner, one element per message on Dataflow.
//
// Read is the reader for every runner except Dataflow (prism, the tests, the demo): a splittable
// DoFn that pulls with the unary Pull RPC (the emulator's StreamingPull serves about 100 messages
// per second), hands each ack id to the subscription's psclient.Manager before emitting the message
// and never acknowledges: the write and dead-letter stages do, once the row is stored. It can
// stop after an idle period so that a local run ends.
//
// ReadDataflow is the reader for Dataflow: the SDK's pubsubio.Read, which only the Dataflow
// service executes.
package source

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"log/slog"
	"reflect"
	"sort"
	"time"

	"cloud.google.com/go/pubsub/v2"
	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/sdf"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/io/pubsubio"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/googleapis/gax-go/v2"
	pb "google.golang.org/genproto/googleapis/pubsub/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/ch-beam/pubsub-to-clickhouse/transforms/flow"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/psclient"
)

func init() {
	register.DoFn5x2[context.Context, *watermarkEstimator, *sdf.LockRTracker, []byte,
		func(beam.EventTime, flow.Messages), sdf.ProcessContinuation, error](&readFn{})
	register.Emitter2[beam.EventTime, flow.Messages]()
	register.DoFn4x0[context.Context, beam.EventTime, *pb.PubsubMessage, func(beam.EventTime, flow.Messages)](&fromPubsubFn{})
	beam.RegisterType(reflect.TypeOf((*flow.Messages)(nil)).Elem())
	restT := reflect.TypeOf((*Restriction)(nil)).Elem()
	beam.RegisterType(restT)
	beam.RegisterCoder(restT, encodeRestriction, decodeRestriction)
}

// Config is what the source stage needs. ReadDataflow uses only Subscription.
type Config struct {
	// Subscription is the subscription to read, projects/<project>/subscriptions/<name>.
	Subscription string
	// StopAfterIdle stops the reader once no message has arrived for this long and every message
	// it pulled has been acknowledged; the pipeline then drains and ends. 0 reads forever.
	StopAfterIdle time.Duration
	// StopWithOutstanding lets StopAfterIdle stop the reader while messages are still
	// outstanding. Set it when a downstream stage only flushes at the end of its input: a global
	// window whose only trigger is a row count holds the last partial batch until the reader
	// stops (the watermark then jumps to the end of time), so the reader would otherwise wait
	// for acknowledgements that never come. The pipeline still writes and acknowledges those
	// messages before it ends.
	StopWithOutstanding bool
	// MaxOutstanding caps the messages pulled but not yet acknowledged: the reader stops pulling
	// while at the cap. Default 10000.
	MaxOutstanding int
	// PullBatch is the most messages of one element. Default 5000: on the local runner an element
	// costs far more to move than its bytes, so fewer, larger elements cost less per message
	// (docs/operations.md, "Cost per message"). A Pull asks for at most maxPullMessages; while
	// Pulls come back full, the reader pulls again at once, up to PullBatch messages or
	// maxElementBytes of payload.
	PullBatch int
}

const (
	defaultMaxOutstanding = 10000
	defaultPullBatch      = 5000
	// maxPullMessages is the MaxMessages of one Pull: Pub/Sub returns at most 1,000 messages a
	// Pull (google/go-cloud#1643 describes the limit of the Pull RPC).
	maxPullMessages = 1000
	// maxElementBytes stops the follow-up Pulls of an element once its payloads reach it.
	maxElementBytes = 16 << 20

	assumedLag  = time.Second            // the watermark trails the pull time by this much
	idleDelay   = 200 * time.Millisecond // resume delay after an empty pull
	fullDelay   = 100 * time.Millisecond // resume delay while MaxOutstanding messages are outstanding
	errorDelay  = time.Second            // resume delay after a transient Pull error
	pullTimeout = 5 * time.Second        // a Pull that returns nothing in this time counts as empty
	logEvery    = 10 * time.Second
	// heartbeatEvery is how often the reader emits an empty flow.Messages, a heartbeat: the
	// batch stage's time bound (the combined mode's windowSeconds after the first row of a
	// batch) is checked whenever an element arrives, because prism (Beam 2.77.0) does not fire
	// the processing-time timers of a stateful DoFn. The bound is then met within this interval,
	// or within pullTimeout while a Pull waits on an idle subscription.
	heartbeatEvery = 200 * time.Millisecond

	// maxPullResponseBytes is the largest Pull response the client takes (gRPC's default is
	// 4 MiB: a thousand 5 KB messages would not fit). A larger response makes the reader halve
	// its MaxMessages, down to one message, which always fits: Pub/Sub messages are at most
	// 10 MB.
	maxPullResponseBytes = 64 << 20
)

// Read reads cfg.Subscription and returns an unbounded
// PCollection<flow.Messages> in the global window, one element per Pull response. An element's timestamp is the time it was
// pulled (processing time), not its publish time, so a backlog is never late data downstream;
// the watermark trails the pull time by a second. The elements carry their AckID: acknowledge
// them (the acknowledging stage, package ack, does) once they are stored.
//
// It is for every runner except Dataflow (see ReadDataflow). It panics if the subscription is not
// a full subscription name.
func Read(s beam.Scope, cfg Config) beam.PCollection {
	s = s.Scope("Read")
	subscription, opts := cfg.Subscription, cfg
	if _, err := psclient.ParseSubscription(subscription); err != nil {
		panic(fmt.Sprintf("source.Read: subscription %q %v", subscription, err))
	}
	if opts.MaxOutstanding <= 0 {
		opts.MaxOutstanding = defaultMaxOutstanding
	}
	if opts.PullBatch <= 0 {
		opts.PullBatch = defaultPullBatch
	}
	if opts.StopAfterIdle < 0 {
		opts.StopAfterIdle = 0
	}
	imp := beam.Impulse(s)
	return beam.ParDo(s, &readFn{
		Subscription:        subscription,
		StopAfterIdle:       opts.StopAfterIdle,
		StopWithOutstanding: opts.StopWithOutstanding,
		MaxOutstanding:      opts.MaxOutstanding,
		PullBatch:           opts.PullBatch,
	}, imp)
}

// readFn is the splittable reader. See Restriction and tracker for its restriction.
type readFn struct {
	Subscription        string
	StopAfterIdle       time.Duration
	StopWithOutstanding bool
	MaxOutstanding      int
	PullBatch           int

	client    *pubsub.Client
	acks      psclient.Manager
	pullBatch int                  // the MaxMessages of the next Pull: PullBatch, less after a response too large
	lastLog   map[string]time.Time // by message, for logf
	// lastHeartbeat is when the reader last emitted a heartbeat (see heartbeatEvery).
	lastHeartbeat time.Time
}

func (fn *readFn) Setup(ctx context.Context) error {
	name, err := psclient.ParseSubscription(fn.Subscription)
	if err != nil {
		return fmt.Errorf("source: subscription %q %w", fn.Subscription, err)
	}
	// The client keeps its context: it must outlive a cancelled caller.
	fn.client, err = psclient.NewClient(context.WithoutCancel(ctx), name.Project)
	if err != nil {
		return fmt.Errorf("source: subscription %s: creating the Pub/Sub client: %w", fn.Subscription, err)
	}
	if err := psclient.CheckSubscription(ctx, fn.client, fn.Subscription); err != nil {
		fn.client.Close()
		fn.client = nil
		return err
	}
	fn.acks, err = psclient.ForSubscription(ctx, fn.Subscription)
	if err != nil {
		fn.client.Close()
		fn.client = nil
		return fmt.Errorf("source: %w", err)
	}
	return nil
}

// CheckSubscription checks that subscription exists and Pub/Sub (or the emulator named by
// PUBSUB_EMULATOR_HOST) answers, so that an unreachable service is not taken for an idle one.
func CheckSubscription(ctx context.Context, subscription string) error {
	name, err := psclient.ParseSubscription(subscription)
	if err != nil {
		return fmt.Errorf("inputSubscription %q %w", subscription, err)
	}
	client, err := psclient.NewClient(ctx, name.Project)
	if err != nil {
		return fmt.Errorf("inputSubscription %s: creating the Pub/Sub client: %w", subscription, err)
	}
	defer client.Close()
	return psclient.CheckSubscription(ctx, client, subscription)
}

func (fn *readFn) Teardown() error {
	if fn.client == nil {
		return nil
	}
	err := fn.client.Close()
	fn.client = nil
	return err
}

func (fn *readFn) CreateInitialRestriction(_ []byte) Restriction { return Restriction{} }

func (fn *readFn) SplitRestriction(_ []byte, r Restriction) []Restriction { return []Restriction{r} }

func (fn *readFn) RestrictionSize(_ []byte, r Restriction) float64 {
	if r.Done {
		return 0
	}
	return 1
}

func (fn *readFn) CreateTracker(r Restriction) *sdf.LockRTracker {
	return sdf.NewLockRTracker(newTracker(r))
}

// TruncateRestriction, on drain, stops the reader: what it has not pulled stays in Pub/Sub.
func (fn *readFn) TruncateRestriction(rt *sdf.LockRTracker, _ []byte) Restriction {
	r := rt.GetRestriction().(Restriction)
	r.Done = true
	return r
}

func (fn *readFn) InitialWatermarkEstimatorState(et beam.EventTime, _ Restriction, _ []byte) int64 {
	return et.Milliseconds()
}

func (fn *readFn) CreateWatermarkEstimator(state int64) *watermarkEstimator {
	return &watermarkEstimator{state: state}
}

func (fn *readFn) WatermarkEstimatorState(we *watermarkEstimator) int64 { return we.state }

// ProcessElement pulls once, emits what it got and returns: prism sends a bundle's outputs
// downstream only when the bundle ends, so the reader resumes at once after a non-empty pull
// and a little later after an empty one.
func (fn *readFn) ProcessElement(ctx context.Context, we *watermarkEstimator, rt *sdf.LockRTracker, _ []byte,
	emit func(beam.EventTime, flow.Messages)) (sdf.ProcessContinuation, error) {
	now := time.Now()
	var rest Restriction
	if err := withTracker(rt, func(t *tracker) {
		if t.rest.StartMillis == 0 {
			t.rest.StartMillis = now.UnixMilli()
			t.rest.LastMillis = t.rest.StartMillis
			slog.Info("source: reader started", "subscription", fn.Subscription,
				"stopAfterIdle", fn.StopAfterIdle, "maxOutstanding", fn.MaxOutstanding, "pullBatch", fn.PullBatch)
		}
		rest = t.rest
	}); err != nil {
		return sdf.StopProcessing(), err
	}

	if now.Sub(fn.lastHeartbeat) >= heartbeatEvery {
		fn.lastHeartbeat = now
		emit(mtime.FromTime(now), flow.Messages{})
	}

	room := fn.MaxOutstanding - fn.acks.Outstanding()
	if room <= 0 {
		we.advance(now.Add(-assumedLag))
		fn.logf(now, "source: at MaxOutstanding; waiting for acknowledgements", "outstanding", fn.MaxOutstanding-room)
		return sdf.ResumeProcessingIn(fullDelay), nil
	}

	// No split from the pull until the pulled messages are claimed and emitted.
	withTracker(rt, func(t *tracker) { t.busy = true })
	defer withTracker(rt, func(t *tracker) { t.busy = false })

	pullStart := time.Now()
	if fn.pullBatch <= 0 || fn.pullBatch > min(fn.PullBatch, maxPullMessages) {
		fn.pullBatch = min(fn.PullBatch, maxPullMessages)
	}
	want := min(fn.PullBatch, room)
	msgs, err := fn.pull(ctx, min(fn.pullBatch, want), false)
	if err == nil {
		msgs = fn.pullMore(ctx, msgs, want)
	}
	if status.Code(err) == codes.ResourceExhausted && fn.pullBatch > 1 {
		// The response was larger than the client takes (large messages): ask for fewer.
		// The messages of the lost response come back after their ack deadline.
		fn.pullBatch = max(1, fn.pullBatch/2)
		slog.Warn("source: a Pull response was too large; pulling fewer messages at a time", "subscription", fn.Subscription,
			"maxMessages", fn.pullBatch, "error", err)
		return sdf.ResumeProcessingIn(0), nil
	}
	if err != nil {
		if ctx.Err() != nil {
			return sdf.StopProcessing(), fmt.Errorf("source: subscription %s: %w", fn.Subscription, ctx.Err())
		}
		switch status.Code(err) {
		case codes.NotFound, codes.PermissionDenied, codes.InvalidArgument, codes.Unauthenticated, codes.FailedPrecondition:
			return sdf.StopProcessing(), fmt.Errorf("source: subscription %s: pull: %w", fn.Subscription, err)
		}
		fn.logf(now, "source: pull failed; retrying", "error", err)
		we.advance(pullStart.Add(-assumedLag))
		return sdf.ResumeProcessingIn(errorDelay), nil
	}
	we.advance(pullStart.Add(-assumedLag))

	if len(msgs) == 0 {
		now := time.Now()
		idle := now.Sub(time.UnixMilli(rest.LastMillis))
		if fn.StopAfterIdle > 0 && idle >= fn.StopAfterIdle {
			outstanding := fn.acks.Outstanding()
			if outstanding == 0 || fn.StopWithOutstanding {
				rt.TryClaim(int64(endPosition))
				ran := now.Sub(time.UnixMilli(rest.StartMillis))
				slog.Info("source: reader stopped: idle", "subscription", fn.Subscription,
					"messages", rest.Next, "outstanding", outstanding, "ran", ran.Round(time.Millisecond), "idle", idle.Round(time.Millisecond),
					"activeRatePerSec", rate(rest.Next, time.UnixMilli(rest.LastMillis).Sub(time.UnixMilli(rest.StartMillis))))
				return sdf.StopProcessing(), nil
			}
			fn.logf(now, "source: idle, waiting for outstanding messages to be acknowledged before stopping",
				"outstanding", outstanding, "idle", idle.Round(time.Second))
		}
		we.advance(now.Add(-assumedLag))
		return sdf.ResumeProcessingIn(idleDelay), nil
	}

	arrived := time.Now()
	ackIDs := make([]string, len(msgs))
	for i, m := range msgs {
		ackIDs[i] = m.GetAckId()
	}
	fn.acks.Track(ackIDs...)
	out := flow.Messages{Messages: make([]flow.Message, len(msgs))}
	for i, m := range msgs {
		pos := rest.Next + int64(i)
		if !rt.TryClaim(pos) {
			// Unreachable: the tracker refuses splits while busy. The unclaimed messages are
			// tracked and will never be acknowledged; fail the bundle rather than lose them quietly.
			return sdf.StopProcessing(), fmt.Errorf("source: subscription %s: cannot claim position %d: %v",
				fn.Subscription, pos, rt.GetError())
		}
		out.Messages[i] = toMessage(m)
	}
	// One element per Pull response: an element costs far more to move than its bytes.
	emit(mtime.FromTime(arrived), out)
	withTracker(rt, func(t *tracker) { t.rest.LastMillis = arrived.UnixMilli() })
	return sdf.ResumeProcessingIn(0), nil
}

// pullMore adds the responses of follow-up Pulls to msgs, the response of a first Pull, for as
// long as each response is full (asked for fn.pullBatch and got them all), msgs holds fewer than
// want messages and their payloads fewer than maxElementBytes. A follow-up Pull returns at once
// with what is ready (ReturnImmediately), rather than waiting for messages under a short
// deadline: a Pull given up by the client after the server has leased its messages would hide
// them until their ack deadline. A follow-up Pull that fails or comes back empty ends the
// element; an error is left for the next element's first Pull to meet (a response too large
// halves fn.pullBatch there as well).
func (fn *readFn) pullMore(ctx context.Context, msgs []*pubsubpb.ReceivedMessage, want int) []*pubsubpb.ReceivedMessage {
	last, size := len(msgs), 0
	for _, m := range msgs {
		size += len(m.GetMessage().GetData())
	}
	for last == fn.pullBatch && len(msgs) < want && size < maxElementBytes {
		more, err := fn.pull(ctx, min(fn.pullBatch, want-len(msgs)), true)
		if err != nil || len(more) == 0 {
			return msgs
		}
		for _, m := range more {
			size += len(m.GetMessage().GetData())
		}
		msgs, last = append(msgs, more...), len(more)
	}
	return msgs
}

// pull makes one Pull request for at most n messages; it returns no message and no error when
// none came within pullTimeout. With now, the Pull returns at once with what is ready
// (ReturnImmediately, which Pub/Sub discourages for the Pulls that wait for new messages).
func (fn *readFn) pull(ctx context.Context, n int, now bool) ([]*pubsubpb.ReceivedMessage, error) {
	pctx, cancel := context.WithTimeout(ctx, pullTimeout)
	defer cancel()
	resp, err := fn.client.SubscriptionAdminClient.Pull(pctx, &pubsubpb.PullRequest{
		Subscription: fn.Subscription,
		MaxMessages:  int32(n),
		//lint:ignore SA1019 a follow-up Pull wants what is ready now, see pullMore
		ReturnImmediately: now,
	}, gax.WithGRPCOptions(grpc.MaxCallRecvMsgSize(maxPullResponseBytes)))
	if err != nil {
		if ctx.Err() == nil && (pctx.Err() != nil || status.Code(err) == codes.DeadlineExceeded) {
			return nil, nil
		}
		return nil, err
	}
	return resp.GetReceivedMessages(), nil
}

// logf logs msg at most once per logEvery.
func (fn *readFn) logf(now time.Time, msg string, args ...any) {
	if now.Sub(fn.lastLog[msg]) < logEvery {
		return
	}
	if fn.lastLog == nil {
		fn.lastLog = map[string]time.Time{}
	}
	fn.lastLog[msg] = now
	slog.Info(msg, append([]any{"subscription", fn.Subscription}, args...)...)
}

func rate(n int64, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(int64(float64(n)/d.Seconds()*10)) / 10
}

func toMessage(rm *pubsubpb.ReceivedMessage) flow.Message {
	m := rm.GetMessage()
	out := flow.Message{
		ID:          m.GetMessageId(),
		Data:        m.GetData(),
		AckID:       rm.GetAckId(),
		OrderingKey: m.GetOrderingKey(),
	}
	if len(m.GetAttributes()) > 0 {
		out.Attributes = m.GetAttributes()
	}
	if m.GetPublishTime() != nil {
		out.PublishTimeMillis = m.GetPublishTime().AsTime().UnixMilli()
	}
	return out
}

// ReadDataflow reads cfg.Subscription with the SDK's pubsubio.Read, which only the Dataflow
// service executes (prism rejects it), and converts each *pb.PubsubMessage with FromPubsub. The
// service acknowledges at its own checkpoints: AckID is empty. It panics if the subscription is
// not a full subscription name.
func ReadDataflow(s beam.Scope, cfg Config) beam.PCollection {
	s = s.Scope("Read")
	name, err := psclient.ParseSubscription(cfg.Subscription)
	if err != nil {
		panic(fmt.Sprintf("source.ReadDataflow: subscription %q %v", cfg.Subscription, err))
	}
	raw := pubsubio.Read(s, name.Project, pubsubio.ReadOptions{Subscription: name.ID, WithAttributes: true})
	return FromPubsub(s, raw)
}

// FromPubsub turns a PCollection<*pb.PubsubMessage> (pubsubio.Read's output) into a
// PCollection<flow.Messages> of one message each, whose element timestamps are the time the
// pipeline received each message, as Read's are.
//
// pubsubio.Read timestamps an element with its publish time and Dataflow's watermark follows
// the publish times of the backlog, so a subscription seek, a replay of dead letters or a
// backlog after an outage would make data that is behind the watermark: late data, which fixed
// windows with allowed lateness 0 drop after Dataflow has acknowledged it. Restamped at receipt,
// an element is never behind the watermark (which trails the oldest unacknowledged publish
// time); during a backlog, windows close once the watermark catches up instead.
//
// A message without a message id (seen from older runners) gets one derived from its payload,
// attributes and publish time (see DerivedID), counted in the metric messages-without-id and
// logged once per worker; a message without a publish time takes the element's timestamp,
// which pubsubio.Read sets to the publish time.
func FromPubsub(s beam.Scope, col beam.PCollection) beam.PCollection {
	return beam.ParDo(s, &fromPubsubFn{}, col)
}

var messagesWithoutID = beam.NewCounter(flow.Namespace, "messages-without-id")

// fromPubsubFn is FromPubsub's DoFn.
type fromPubsubFn struct {
	loggedNoID bool
}

func (fn *fromPubsubFn) ProcessElement(ctx context.Context, et beam.EventTime, m *pb.PubsubMessage, emit func(beam.EventTime, flow.Messages)) {
	out := flow.Message{ID: m.GetMessageId(), Data: m.GetData(), OrderingKey: m.GetOrderingKey()}
	if len(m.GetAttributes()) > 0 {
		out.Attributes = m.GetAttributes()
	}
	if m.GetPublishTime() != nil {
		out.PublishTimeMillis = m.GetPublishTime().AsTime().UnixMilli()
	} else {
		out.PublishTimeMillis = et.Milliseconds()
	}
	if out.ID == "" {
		out.ID = DerivedID(out)
		messagesWithoutID.Inc(ctx, 1)
		if !fn.loggedNoID {
			fn.loggedNoID = true
			slog.Warn("source: a message arrived without a message id; it and any other such message get an id derived from payload, attributes and publish time (metric messages-without-id)",
				"derived id", out.ID)
		}
	}
	emit(mtime.Now(), flow.Messages{Messages: []flow.Message{out}})
}

// DerivedID returns the id given to a message that has none: "derived-" and the first 16 bytes,
// in hex, of the SHA-256 of its payload, its attributes (sorted by key) and its publish time, so
// that a redelivery of the same message gets the same id. Each part is length-prefixed, so
// that no two different messages share the hashed bytes.
func DerivedID(m flow.Message) string {
	h := sha256.New()
	var n [8]byte
	put := func(b []byte) {
		binary.BigEndian.PutUint64(n[:], uint64(len(b)))
		h.Write(n[:])
		h.Write(b)
	}
	put(m.Data)
	keys := make([]string, 0, len(m.Attributes))
	for k := range m.Attributes {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		put([]byte(k))
		put([]byte(m.Attributes[k]))
	}
	binary.BigEndian.PutUint64(n[:], uint64(m.PublishTimeMillis))
	h.Write(n[:])
	return "derived-" + hex.EncodeToString(h.Sum(nil)[:16])
}
