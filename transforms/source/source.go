// Package source reads the Pub/Sub subscription into a PCollection<flow.Messages>: one element per
// Pull response on the local runner, one element per message on Dataflow.
//
// Read is the reader for every runner except Dataflow (prism, the tests, the demo): a splittable
// DoFn that pulls with the unary Pull RPC (the emulator's StreamingPull serves about 100 messages
// per second), hands each ack id to the subscription's psclient.Manager before emitting the message
// and never acknowledges: the write and dead-letter stages do, once the row is stored. It can
// stop after an idle period so that a local run ends.
//
// ReadDataflow is the reader for Dataflow: the SDK's pubsubio.Read in the same graph, with each
// message decoded by transforms/pubsubio; only the Dataflow service executes it.
package source

import (
	"context"
	"fmt"
	"log/slog"
	"reflect"
	"sync"
	"time"

	"cloud.google.com/go/pubsub/v2"
	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/sdf"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	pb "google.golang.org/genproto/googleapis/pubsub/v1"

	"github.com/ch-beam/pubsub-to-clickhouse/transforms/flow"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/psclient"
)

// messagesRedelivered counts the messages the local reader receives again: those whose
// delivery attempt, which Pub/Sub gives only on a subscription with a dead-letter policy, is 2
// or more.
var messagesRedelivered = beam.NewCounter(flow.Namespace, "messages-redelivered")

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

// gate holds the local readers' Pulls against a drain: Drain closes it, after which no Pull
// begins (beginPull), and PullsDone waits for those under way.
var gate struct {
	sync.Mutex
	draining bool
	pulling  int // Pulls under way, their messages not yet tracked
}

// Drain makes every local reader (Read) of this process pull no more: at its next call, within
// the resume delay or the Pull under way (at most pullTimeout), it ends its input as
// StopAfterIdle does, with the messages it pulled still outstanding, and the pipeline then writes
// and acknowledges them as it drains and ends. The local run's answer to an interrupt
// (SIGINT, SIGTERM): nothing read is given back while its row may be under way, so nothing is
// stored twice. There is no way back: a reader that stopped does not start again. ReadDataflow is
// not concerned (Dataflow drains a job itself: gcloud dataflow jobs drain).
func Drain() {
	gate.Lock()
	gate.draining = true
	gate.Unlock()
}

// PullsDone waits, after Drain, until no Pull of a local reader is under way, at most limit, and
// reports whether none is: the messages of every Pull are then tracked by the subscription's
// psclient.Acker, so that a Release gives them back (a Pull that ends after it leaves its
// messages leased by Pub/Sub until their ack deadline). A Pull takes at most pullTimeout.
func PullsDone(limit time.Duration) bool {
	for deadline := time.Now().Add(limit); ; time.Sleep(10 * time.Millisecond) {
		gate.Lock()
		n := gate.pulling
		gate.Unlock()
		if n == 0 {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
	}
}

// isDraining reports whether Drain was called.
func isDraining() bool {
	gate.Lock()
	defer gate.Unlock()
	return gate.draining
}

// beginPull reports whether a reader may pull: not after Drain. Each true is ended by endPull,
// once the Pull's messages are tracked.
func beginPull() bool {
	gate.Lock()
	defer gate.Unlock()
	if gate.draining {
		return false
	}
	gate.pulling++
	return true
}

func endPull() {
	gate.Lock()
	gate.pulling--
	gate.Unlock()
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
	// MaxOutstandingBytes caps the bytes (payloads and attributes) of the messages pulled but
	// not yet acknowledged: the reader stops pulling while they are at or above it, so they can
	// go above it by what one element pulls (at most PullBatch messages, and Pulls stop adding
	// to an element at 16 MiB of payloads). 0: no cap. Give it room for every batch to fill: a
	// batch that cannot fill waits for its time bound, and without one (a count trigger alone)
	// for ever, since its messages stay unacknowledged until it is written.
	MaxOutstandingBytes int64
	// PullBatch is the most messages of one element. Default 5000: on the local runner an element
	// costs far more to move than its bytes, so fewer, larger elements cost less per message
	// (docs/operations.md, "Cost per message"). A Pull asks for at most maxPullMessages; while
	// Pulls come back full, the reader pulls again at once, up to PullBatch messages or
	// maxElementBytes of payload.
	PullBatch int

	// firstPull is the MaxMessages of the reader's first Pull: fitPullMessages when 0. Tests
	// set it to meet a response too large on the first Pull.
	firstPull int
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
	// or within pullTimeout while a Pull waits on an idle subscription. Heartbeats come while
	// the subscription is idle too, with no message outstanding: the JavaScript UDF's reload
	// (javascriptTextTransformReloadIntervalMinutes) is also checked when an element arrives, and
	// without them a changed function was loaded only after the first messages that followed it
	// (TestUDFReload).
	heartbeatEvery = 200 * time.Millisecond

	// maxPullResponseBytes is the largest Pull response the client takes, in bytes (gRPC's
	// default is 4 MiB: a thousand 5 KB messages would not fit). gRPC refuses a larger response
	// with ResourceExhausted after the server has leased its messages: they are lost until their
	// ack deadline. The reader then pulls fitPullMessages at a time and grows back (see
	// readFn.shrink and readFn.grow).
	maxPullResponseBytes = 64 << 20
	// maxMessageBytes is the largest Pub/Sub message, 10 MB (https://cloud.google.com/pubsub/quotas).
	maxMessageBytes = 10_000_000
	// fitPullMessages is the MaxMessages of the reader's first Pull and of the Pulls after a
	// response too large: so many messages of maxMessageBytes always fit in
	// maxPullResponseBytes (6).
	fitPullMessages = maxPullResponseBytes / maxMessageBytes
	// growPullBytes is the most bytes a Pull response may be expected to reach, at its bytes
	// per message, once the reader doubles its MaxMessages: 80% of maxPullResponseBytes, a
	// margin for messages larger than the last ones.
	growPullBytes = maxPullResponseBytes / 10 * 8

	// defaultAckDeadline is the subscription's ack deadline when Setup cannot read it:
	// Pub/Sub's default, 10 s (https://cloud.google.com/pubsub/docs/lease-management).
	defaultAckDeadline = 10 * time.Second
	// adminTimeout bounds Setup's GetSubscription.
	adminTimeout = 10 * time.Second
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
		MaxOutstandingBytes: opts.MaxOutstandingBytes,
		PullBatch:           opts.PullBatch,
		FirstPull:           opts.firstPull,
	}, imp)
}

// readFn is the splittable reader. See Restriction and tracker for its restriction.
type readFn struct {
	Subscription        string
	StopAfterIdle       time.Duration
	StopWithOutstanding bool
	MaxOutstanding      int
	MaxOutstandingBytes int64
	PullBatch           int
	FirstPull           int // Config.firstPull

	client *pubsub.Client
	acks   psclient.Manager
	// pullBatch is the MaxMessages of the next Pull: fitPullMessages at first and after a
	// response too large, then doubled while responses leave room (grow), up to maxBatch. The
	// first Pull does not ask for maxBatch: on a backlog of messages of megabytes its response
	// would be too large, and lost until the ack deadline (60 s with the emulator), before the
	// reader had read anything.
	pullBatch int
	// ackDeadline is the subscription's ack deadline (defaultAckDeadline if Setup could not
	// read it): the messages of a lost Pull response come back after it.
	ackDeadline time.Duration
	// deadLetterPolicy is the subscription's dead-letter policy, nil when it has none or Setup
	// could not read it: the messages received again are logged beside its limit.
	deadLetterPolicy *pubsubpb.DeadLetterPolicy
	lastLog          map[string]time.Time // by message, for logf
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
	if err := psclient.CheckSubscription(ctx, fn.client, name); err != nil {
		fn.client.Close()
		fn.client = nil
		return fmt.Errorf("source: subscription %w", err)
	}
	fn.acks, err = psclient.ForSubscription(ctx, fn.Subscription)
	if err != nil {
		fn.client.Close()
		fn.client = nil
		return fmt.Errorf("source: %w", err)
	}
	fn.ackDeadline, fn.deadLetterPolicy = fn.subscriptionSettings(ctx)
	return nil
}

// subscriptionSettings reads the subscription's ack deadline and dead-letter policy, best
// effort: the reader may hold only the consume permission, which does not let it get the
// subscription. It returns defaultAckDeadline and no policy when it cannot.
func (fn *readFn) subscriptionSettings(ctx context.Context) (time.Duration, *pubsubpb.DeadLetterPolicy) {
	cctx, cancel := context.WithTimeout(ctx, adminTimeout)
	defer cancel()
	sub, err := fn.client.SubscriptionAdminClient.GetSubscription(cctx, &pubsubpb.GetSubscriptionRequest{Subscription: fn.Subscription})
	if err != nil || sub.GetAckDeadlineSeconds() <= 0 {
		slog.Info("source: could not read the subscription's ack deadline; assuming the default", "subscription", fn.Subscription,
			"ackDeadline", defaultAckDeadline, "error", err)
		return defaultAckDeadline, sub.GetDeadLetterPolicy()
	}
	return time.Duration(sub.GetAckDeadlineSeconds()) * time.Second, sub.GetDeadLetterPolicy()
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
