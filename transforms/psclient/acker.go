package psclient

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"cloud.google.com/go/pubsub/v2"
	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"github.com/googleapis/gax-go/v2/apierror"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// AckSettings tune an Acker. A zero field takes its default.
type AckSettings struct {
	// Deadline is the ack deadline every extension asks for (ModifyAckDeadline), rounded up to
	// whole seconds, between 1 s and 600 s. Default 60 s.
	Deadline time.Duration
	// ExtendEvery is how often the deadline of a tracked message is extended again. Default
	// Deadline/3 (20 s).
	ExtendEvery time.Duration
	// FirstExtendAfter is how long after Track a message's deadline is first extended; until then
	// the subscription's own ack deadline (at least 10 s) holds it, and a message acknowledged
	// sooner never costs a ModifyAckDeadline. Keep it well below the subscription's ack deadline.
	// Default 5 s.
	FirstExtendAfter time.Duration
	// Tick is how often the background loop looks for deadlines to extend. Default 1 s.
	Tick time.Duration
	// AckAttempts is how many times an Acknowledge request is tried in line when it fails with a
	// transient gRPC error (Unavailable, Internal, ResourceExhausted; a request that ran out of
	// time, DeadlineExceeded, once), before the Acker's loop takes it over (Ack). Default 4.
	AckAttempts int
	// MaxIDsPerRequest caps the ack ids of one Acknowledge or ModifyAckDeadline request. Default
	// and maximum 1000 (Pub/Sub accepts about 2500 ids or 512 KB per request).
	MaxIDsPerRequest int
}

const (
	maxIDsPerRequest   = 1000
	maxBytesPerRequest = 400 << 10 // ack ids' bytes per request, under Pub/Sub's 512 KB limit
	rpcTimeout         = 30 * time.Second
	retryTimeout       = 5 * time.Second // of retryAcks' requests, which the extension loop waits for
	warnEvery          = 10 * time.Second
)

func (s AckSettings) withDefaults() AckSettings {
	if s.Deadline <= 0 {
		s.Deadline = 60 * time.Second
	}
	if s.Deadline > 600*time.Second {
		s.Deadline = 600 * time.Second
	}
	if s.ExtendEvery <= 0 {
		s.ExtendEvery = s.Deadline / 3
	}
	if s.FirstExtendAfter <= 0 {
		s.FirstExtendAfter = 5 * time.Second
	}
	if s.Tick <= 0 {
		s.Tick = time.Second
	}
	if s.AckAttempts <= 0 {
		s.AckAttempts = 4
	}
	if s.MaxIDsPerRequest <= 0 || s.MaxIDsPerRequest > maxIDsPerRequest {
		s.MaxIDsPerRequest = maxIDsPerRequest
	}
	return s
}

// deadlineSeconds is Deadline in whole seconds, rounded up, within [1, 600].
func (s AckSettings) deadlineSeconds() int32 {
	secs := int32((s.Deadline + time.Second - 1) / time.Second)
	return min(max(secs, 1), 600)
}

// AckStats are an Acker's counters since it was created.
type AckStats struct {
	Outstanding     int   // ids tracked now
	Tracked         int64 // ids ever tracked
	Acked           int64 // ids acknowledged successfully
	AckFailed       int64 // ids whose acknowledgement failed
	AckRetried      int64 // ids whose acknowledgement failed with a transient error and was left to the loop
	AckRequests     int64 // Acknowledge requests sent (retries included)
	Extended        int64 // ids whose deadline was extended successfully (counted per extension)
	ExtendRequests  int64 // ModifyAckDeadline requests sent
	ExtendFailures  int64 // ModifyAckDeadline requests that failed
	MaxIDsInRequest int   // most ids sent in one Acknowledge or ModifyAckDeadline request
}

// Acker is the Manager of one subscription: it owns a Pub/Sub client and a goroutine that
// extends the ack deadlines of the messages it tracks.
type Acker struct {
	sub      string
	settings AckSettings
	client   *pubsub.Client
	ctx      context.Context // cancelled by Close
	cancel   context.CancelFunc
	done     chan struct{} // closed when the extension loop has returned

	mu      sync.Mutex
	tracked map[string]entry
	bytes   int64 // the sizes of the tracked entries, added up
	// early counts the Ack calls under way with an id that was not tracked when they began; an
	// entry TrackSized makes for the id meanwhile takes the count (Release leaves it alone).
	// Empty unless an id is acknowledged before it is tracked.
	early    map[string]int32
	closed   bool
	lastWarn time.Time
	// retrying counts the tracked entries with retryAckUntil set; lastRetryWarn is when
	// retryLater last warned.
	retrying      int
	lastRetryWarn time.Time

	tracks, acked, ackFailed, ackRequests    atomic.Int64
	ackRetried                               atomic.Int64 // ids left to retryAcks
	extended, extendRequests, extendFailures atomic.Int64
	maxIDsInRequest                          atomic.Int64
	outcomes                                 outcomes // by Outcome, from Stored
}

// entry is a tracked id's state. Its times are monotonic nanoseconds since epoch (mono): 8 bytes
// where a time.Time takes 24, so that the map of tracked ids, which each message's Track and Ack
// read, takes less of the CPU's caches.
type entry struct {
	pulled int64 // when Track was called
	next   int64 // when the deadline is to be extended next
	size   int64 // the message's size in bytes, as TrackSized was given it; 0 with Track
	// acking counts the Ack calls under way with the id (Release gives none of them back);
	// the entry goes when the first of them ends, whatever its outcome, unless its request
	// failed with a transient error: then retryAckUntil is set (whole seconds of mono, plus one,
	// so that 0 is none: 4 bytes, which keep the entry at 32), and the loop tries to
	// acknowledge it again at every tick until then (retryAcks).
	acking        int32
	retryAckUntil int32
}

// epoch is when the package was loaded, from which mono counts.
var epoch = time.Now()

// monoSeconds returns t as whole seconds since epoch (mono), plus one.
func monoSeconds(t time.Time) int32 { return int32(mono(t)/int64(time.Second)) + 1 }

// mono returns t as nanoseconds since epoch, by the monotonic clock when t has its reading (as
// time.Now's do): a step of the wall clock moves no deadline.
func mono(t time.Time) int64 { return int64(t.Sub(epoch)) }

var _ Manager = (*Acker)(nil)

// New creates an Acker of subscription (projects/<project>/subscriptions/<name>) that is not in
// the process registry: its owner must Close it. ForSubscription is what the pipeline uses.
func NewAcker(ctx context.Context, subscription string, settings AckSettings) (*Acker, error) {
	name, err := ParseSubscription(subscription)
	if err != nil {
		return nil, fmt.Errorf("ack: subscription %q %w", subscription, err)
	}
	// The client keeps ctx (e.g. for token refreshes): it must outlive a cancelled caller.
	client, err := NewClient(context.WithoutCancel(ctx), name.Project)
	if err != nil {
		return nil, fmt.Errorf("ack: subscription %s: creating the Pub/Sub client: %w", subscription, err)
	}
	loopCtx, cancel := context.WithCancel(context.Background())
	a := &Acker{
		sub:      subscription,
		settings: settings.withDefaults(),
		client:   client,
		ctx:      loopCtx,
		cancel:   cancel,
		done:     make(chan struct{}),
		tracked:  map[string]entry{},
		early:    map[string]int32{},
	}
	go a.loop()
	return a, nil
}

// Subscription returns the subscription the Acker acknowledges on.
func (a *Acker) Subscription() string { return a.sub }

// Track registers ack ids that were just pulled: their deadline is first extended
// Settings.FirstExtendAfter later, then every Settings.ExtendEvery, until Ack.
func (a *Acker) Track(ackIDs ...string) { a.TrackSized(ackIDs, nil) }

// TrackSized is Track with the messages' sizes in bytes (sizes[i] is ackIDs[i]'s; nil or a
// shorter slice: 0 for the rest), which OutstandingBytes adds up until each is acknowledged.
func (a *Acker) TrackSized(ackIDs []string, sizes []int) {
	now := time.Now()
	pulled, next := mono(now), mono(now.Add(a.settings.FirstExtendAfter))
	a.mu.Lock()
	defer a.mu.Unlock()
	for i, id := range ackIDs {
		if id == "" {
			continue
		}
		if _, ok := a.tracked[id]; !ok {
			e := entry{pulled: pulled, next: next}
			if len(a.early) > 0 {
				e.acking = a.early[id]
			}
			if i < len(sizes) {
				e.size = int64(sizes[i])
			}
			a.tracked[id] = e
			a.bytes += e.size
			a.tracks.Add(1)
		}
	}
}

// Outstanding returns the number of tracked ids not yet acknowledged.
func (a *Acker) Outstanding() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.tracked)
}

// OutstandingBytes returns the sizes TrackSized was given of the tracked ids not yet
// acknowledged, added up.
func (a *Acker) OutstandingBytes() int64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.bytes
}

// forget stops tracking id, if it is tracked; a.mu is held.
func (a *Acker) forget(id string) {
	if e, ok := a.tracked[id]; ok {
		if e.retryAckUntil != 0 {
			a.retrying--
		}
		a.bytes -= e.size
		delete(a.tracked, id)
	}
}

// Ack acknowledges ackIDs in requests of at most Settings.MaxIDsPerRequest ids, retrying
// transient errors Settings.AckAttempts times (a request that runs out of its 30 s, once), then
// stops tracking them. Ids whose request still fails with a transient error (Pub/Sub unreachable
// for a while) stay tracked, their deadlines extended, and the Acker's loop tries to acknowledge
// them once a tick until Settings.Deadline after the Ack began (retryAcks): a message stored
// during an outage of Pub/Sub shorter than that is not delivered again. So are the ids to which
// Pub/Sub, on a subscription with exactly-once delivery, gives a transient failure of their own
// in a failed request (ackResults). Other failures are returned (the message is redelivered
// once its deadline passes). Empty ids are ignored.
func (a *Acker) Ack(ctx context.Context, ackIDs []string) error {
	ids := make([]string, 0, len(ackIDs))
	for _, id := range ackIDs {
		if id != "" {
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	var early []string // the ids not tracked when this Ack began (Acker.early)
	a.mu.Lock()
	closed := a.closed
	if !closed {
		for _, id := range ids {
			if e, ok := a.tracked[id]; ok {
				e.acking++ // Release leaves it alone
				a.tracked[id] = e
			} else {
				a.early[id]++
				early = append(early, id)
			}
		}
	}
	a.mu.Unlock()
	if closed {
		return fmt.Errorf("ack: subscription %s: acknowledging %d messages: the manager is closed", a.sub, len(ids))
	}
	defer a.untrack(ids, early)
	began := time.Now()
	var errs []error
	for _, chunk := range chunks(ids, a.settings.MaxIDsPerRequest) {
		err := a.ackChunk(ctx, chunk)
		acked, retry, failed := ackResults(chunk, err)
		if len(acked) > 0 {
			a.acked.Add(int64(len(acked)))
			a.mu.Lock()
			if a.retrying > 0 { // untrack forgets the others
				for _, id := range acked {
					a.forget(id) // also one an earlier Ack left to retryAcks
				}
			}
			a.mu.Unlock()
		}
		// Pub/Sub unreachable (the client retries Unavailable within rpcTimeout), or ids whose
		// failure exactly-once delivery says is transient: left to the loop.
		if len(retry) > 0 && (ctx.Err() != nil || !a.retryLater(retry, began, err)) {
			failed = append(failed, retry...)
		}
		if len(failed) > 0 {
			a.ackFailed.Add(int64(len(failed)))
			if len(failed) < len(chunk) {
				err = fmt.Errorf("%d of its %d ids: %w", len(failed), len(chunk), err)
			}
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("ack: subscription %s: acknowledging %d messages: %w", a.sub, len(ids), errors.Join(errs...))
	}
	return nil
}

func (a *Acker) ackChunk(ctx context.Context, chunk []string) error {
	backoff := 100 * time.Millisecond
	for attempt := 1; ; attempt++ {
		callCtx, cancel := context.WithTimeout(ctx, rpcTimeout)
		err := a.acknowledge(callCtx, chunk)
		cancel()
		if err == nil {
			return nil
		}
		// A request that ran out of time is not tried again here: the loop retries it
		// (retryLater) without holding up the caller for another rpcTimeout.
		if attempt >= a.settings.AckAttempts || !transient(err) || status.Code(err) == codes.DeadlineExceeded || ctx.Err() != nil {
			return fmt.Errorf("Acknowledge of %d ids failed after %d attempts: %w", len(chunk), attempt, err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("Acknowledge of %d ids failed after %d attempts: %w (then %w)", len(chunk), attempt, err, ctx.Err())
		case <-time.After(backoff):
		}
		backoff *= 2
	}
}

// acknowledge sends one Acknowledge request of ids (at most Settings.MaxIDsPerRequest), counted
// in Stats. Each caller bounds ctx and decides what a failure means: Ack tries again in line,
// retryAcks at the next tick, Release not at all.
func (a *Acker) acknowledge(ctx context.Context, ids []string) error {
	a.ackRequests.Add(1)
	a.noteRequestSize(len(ids))
	return a.client.SubscriptionAdminClient.Acknowledge(ctx, &pubsubpb.AcknowledgeRequest{Subscription: a.sub, AckIds: ids})
}

// untrack ends an Ack of ids, whatever its outcome: it stops tracking them, but for those left
// to retryAcks, and unmarks early, the ones it found untracked.
func (a *Acker) untrack(ids, early []string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, id := range ids {
		e, ok := a.tracked[id]
		if !ok || e.retryAckUntil != 0 {
			continue
		}
		a.bytes -= e.size
		delete(a.tracked, id) // forget, with the entry already read
	}
	for _, id := range early {
		if a.early[id]--; a.early[id] <= 0 {
			delete(a.early, id)
		}
	}
}

// retryLater leaves ids, whose acknowledgement begun at began failed with err (transient), to
// retryAcks until Settings.Deadline after began (by then the deadline the Acker last extended
// has most likely passed, and Pub/Sub delivers them again), and reports whether it did: not once the loop has stopped (Release,
// Close). An id not tracked (acknowledged before it was tracked) is tracked for it.
func (a *Acker) retryLater(ids []string, began time.Time, err error) bool {
	if a.ctx.Err() != nil {
		return false
	}
	now := time.Now()
	until := monoSeconds(began.Add(a.settings.Deadline))
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, id := range ids {
		e, ok := a.tracked[id]
		if !ok {
			e = entry{pulled: mono(now), next: mono(now.Add(a.settings.ExtendEvery))}
		}
		if e.retryAckUntil == 0 {
			e.retryAckUntil = until
			a.retrying++
		}
		a.tracked[id] = e
	}
	a.ackRetried.Add(int64(len(ids)))
	if now.Sub(a.lastRetryWarn) >= warnEvery {
		a.lastRetryWarn = now
		slog.Warn("ack: acknowledging failed; retrying every tick while the ack deadline holds", "subscription", a.sub, "ids", len(ids), "error", err)
	}
	return true
}

// retryAcks tries once to acknowledge the ids retryLater left, and stops tracking those it
// acknowledged, those Pub/Sub refuses for good, and those whose time to retry has passed (Pub/Sub
// delivers them again).
func (a *Acker) retryAcks(now time.Time) {
	at := monoSeconds(now)
	var ids []string
	gaveUp := 0
	a.mu.Lock()
	if a.retrying == 0 {
		a.mu.Unlock()
		return
	}
	for id, e := range a.tracked {
		switch {
		case e.retryAckUntil == 0:
		case e.retryAckUntil <= at:
			a.forget(id)
			gaveUp++
		default:
			ids = append(ids, id)
		}
	}
	a.mu.Unlock()
	if gaveUp > 0 {
		a.ackFailed.Add(int64(gaveUp))
		slog.Warn("ack: acknowledging failed until the ack deadline passed; Pub/Sub will redeliver the messages", "subscription", a.sub, "ids", gaveUp)
	}
	for _, chunk := range chunks(ids, a.settings.MaxIDsPerRequest) {
		ctx, cancel := context.WithTimeout(a.ctx, retryTimeout)
		err := a.acknowledge(ctx, chunk)
		cancel()
		if err != nil && a.ctx.Err() != nil {
			return
		}
		acked, retry, failed := ackResults(chunk, err)
		if len(retry) == len(chunk) {
			return // Pub/Sub still away: the rest at the next tick, so that extensions are not held up
		}
		// The ids of retry (exactly-once delivery's transient failures) stay, tried again at
		// the next tick.
		a.acked.Add(int64(len(acked)))
		if len(failed) > 0 {
			a.ackFailed.Add(int64(len(failed)))
			slog.Warn("ack: acknowledging failed; Pub/Sub will redeliver the messages", "subscription", a.sub, "ids", len(failed), "error", err)
		}
		a.mu.Lock()
		for _, id := range acked {
			a.forget(id)
		}
		for _, id := range failed {
			a.forget(id)
		}
		a.mu.Unlock()
	}
}

// ackResults sorts the ids of one Acknowledge request by its outcome, err: all acked when it
// succeeded; all to retry when it failed with a transient error (transient, or the caller's
// deadline); otherwise by the failure Pub/Sub gives each id. On a subscription with exactly-once
// delivery, Pub/Sub answers a request of which some ids cannot be acknowledged with an error
// whose ErrorInfo metadata map each such id to its failure: one that starts with TRANSIENT_
// (TRANSIENT_FAILURE_UNORDERED_ACK_ID, for one) is worth retrying, any other
// (PERMANENT_FAILURE_INVALID_ACK_ID: an expired or malformed ack id) is not; an id the metadata
// do not name failed with the request's error. This is the client library's own reading
// (cloud.google.com/go/pubsub/v2, iterator.go, processResults;
// https://cloud.google.com/pubsub/docs/exactly-once-delivery).
func ackResults(ids []string, err error) (acked, retry, failed []string) {
	switch {
	case err == nil:
		return ids, nil, nil
	case transient(err) || errors.Is(err, context.DeadlineExceeded):
		return nil, ids, nil
	}
	var perID map[string]string
	if apiErr, ok := apierror.FromError(err); ok {
		perID = apiErr.Metadata()
	}
	for _, id := range ids {
		if strings.HasPrefix(perID[id], "TRANSIENT_") {
			retry = append(retry, id)
		} else {
			failed = append(failed, id)
		}
	}
	return nil, retry, failed
}

// transient reports whether a failed request is worth retrying.
func transient(err error) bool {
	switch status.Code(err) {
	case codes.Unavailable, codes.DeadlineExceeded, codes.Internal, codes.ResourceExhausted:
		return true
	}
	return false
}

func (a *Acker) noteRequestSize(n int) {
	for {
		cur := a.maxIDsInRequest.Load()
		if int64(n) <= cur || a.maxIDsInRequest.CompareAndSwap(cur, int64(n)) {
			return
		}
	}
}

// Stats returns the Acker's counters.
func (a *Acker) Stats() AckStats {
	return AckStats{
		Outstanding:     a.Outstanding(),
		Tracked:         a.tracks.Load(),
		Acked:           a.acked.Load(),
		AckFailed:       a.ackFailed.Load(),
		AckRequests:     a.ackRequests.Load(),
		AckRetried:      a.ackRetried.Load(),
		Extended:        a.extended.Load(),
		ExtendRequests:  a.extendRequests.Load(),
		ExtendFailures:  a.extendFailures.Load(),
		MaxIDsInRequest: int(a.maxIDsInRequest.Load()),
	}
}

func (a *Acker) loop() {
	defer close(a.done)
	ticker := time.NewTicker(a.settings.Tick)
	defer ticker.Stop()
	for {
		select {
		case <-a.ctx.Done():
			return
		case now := <-ticker.C:
			a.retryAcks(now)
			a.extendDue(now)
		}
	}
}

// extendDue extends the deadline of every tracked id whose extension is due.
func (a *Acker) extendDue(now time.Time) {
	at, next := mono(now), mono(now.Add(a.settings.ExtendEvery))
	a.mu.Lock()
	var due []string
	for id, e := range a.tracked {
		if e.next <= at {
			due = append(due, id)
			e.next = next
			a.tracked[id] = e
		}
	}
	a.mu.Unlock()
	if len(due) == 0 {
		return
	}
	secs := a.settings.deadlineSeconds()
	var failed, lost []string
	var lastErr error
	for _, chunk := range chunks(due, a.settings.MaxIDsPerRequest) {
		a.extendRequests.Add(1)
		a.noteRequestSize(len(chunk))
		ctx, cancel := context.WithTimeout(a.ctx, rpcTimeout)
		err := a.client.SubscriptionAdminClient.ModifyAckDeadline(ctx, &pubsubpb.ModifyAckDeadlineRequest{
			Subscription:       a.sub,
			AckIds:             chunk,
			AckDeadlineSeconds: secs,
		})
		cancel()
		if err != nil {
			if a.ctx.Err() != nil {
				return // closing
			}
			a.extendFailures.Add(1)
			retry, refused := extendResults(chunk, err)
			failed = append(failed, retry...)
			lost = append(lost, refused...)
			lastErr = err
			continue
		}
		a.extended.Add(int64(len(chunk)))
	}
	if len(failed) == 0 && len(lost) == 0 {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	// Retry the failed ids on the next tick.
	for _, id := range failed {
		if e, ok := a.tracked[id]; ok {
			e.next = math.MinInt64 // due at the next tick
			a.tracked[id] = e
		}
	}
	// Extend the refused ones no more: their lease is gone, and Pub/Sub delivers the message
	// again whatever is asked. They stay tracked, for their Ack (refused too) and the count of
	// messages outstanding.
	for _, id := range lost {
		if e, ok := a.tracked[id]; ok {
			e.next = math.MaxInt64
			a.tracked[id] = e
		}
	}
	if now.Sub(a.lastWarn) >= warnEvery {
		a.lastWarn = now
		if len(lost) > 0 {
			slog.Warn("ack: Pub/Sub refused to extend the ack deadline of some messages for good (exactly-once delivery: their ack ids expired); it delivers them again, and their acknowledgement will be refused",
				"subscription", a.sub, "ids", len(lost), "retrying", len(failed), "error", lastErr)
		} else {
			slog.Warn("ack: extending ack deadlines failed; retrying", "subscription", a.sub, "ids", len(failed), "error", lastErr)
		}
	}
}

// extendResults sorts the ids of a failed ModifyAckDeadline request: refused are those the
// error's ErrorInfo metadata name with a failure that is not TRANSIENT_ (on a subscription with
// exactly-once delivery, PERMANENT_FAILURE_INVALID_ACK_ID: the ack id expired, and no later
// request extends it); retry are the others, tried again at the next tick. The reading is the
// client library's (cloud.google.com/go/pubsub/v2, iterator.go, processResults), as ackResults';
// unlike an acknowledgement, an id the metadata do not name is retried, since a failed extension
// costs no more than a request and a given-up one a redelivery.
func extendResults(ids []string, err error) (retry, refused []string) {
	var perID map[string]string
	if apiErr, ok := apierror.FromError(err); ok {
		perID = apiErr.Metadata()
	}
	for _, id := range ids {
		if f, named := perID[id]; named && !strings.HasPrefix(f, "TRANSIENT_") {
			refused = append(refused, id)
		} else {
			retry = append(retry, id)
		}
	}
	return retry, refused
}

// AwaitRetries waits until the Acker's loop has no acknowledgement left to retry (Ack): each
// acknowledged, refused, or past its time to retry (Settings.Deadline after its Ack began, when
// Pub/Sub delivers it again), or until the loop stops (Release, Close) or ctx is done. For the
// end of a local run, before Release: the messages stored while Pub/Sub was unreachable are
// then acknowledged when it comes back, rather than tried once more and delivered again.
func (a *Acker) AwaitRetries(ctx context.Context) {
	logged := false
	for {
		a.mu.Lock()
		n := a.retrying
		a.mu.Unlock()
		if n == 0 {
			return
		}
		if !logged {
			logged = true
			slog.Warn("ack: waiting for the acknowledgements Pub/Sub has not taken, retried every tick while the ack deadline holds",
				"subscription", a.sub, "ids", n)
		}
		select {
		case <-ctx.Done():
			return
		case <-a.done:
			return
		case <-time.After(a.settings.Tick):
		}
	}
}

// Release gives back the messages the Acker still tracks: it sets their ack deadline to 0
// (ModifyAckDeadline), so that Pub/Sub redelivers them at once rather than when the deadline the
// Acker last extended passes (up to Settings.Deadline later), and stops tracking them. For the end
// of a local run, when nothing holds them any more: a run that failed leaves them unacknowledged,
// and a restart then receives them at once. It first stops extending deadlines (an extension sent
// after would set the deadline again), and leaves out the ids of an Ack under way (a bundle of
// the failed run may still be storing their rows: given back before the Ack lands, they would be
// redelivered although stored). The ids whose acknowledgement is being retried (Ack) are
// acknowledged once more instead. ctx bounds the whole; the Acker extends nothing after. It returns
// how many it gave back; an error means some stay with their deadline, and are redelivered once
// it passes.
func (a *Acker) Release(ctx context.Context) (int, error) {
	a.cancel()
	<-a.done
	a.mu.Lock()
	ids := make([]string, 0, len(a.tracked))
	var stored []string // left to retryAcks: acknowledged once more, never given back
	for id, e := range a.tracked {
		switch {
		case e.retryAckUntil != 0:
			stored = append(stored, id)
			a.forget(id)
		case e.acking == 0:
			ids = append(ids, id)
			a.forget(id)
		}
	}
	a.mu.Unlock()
	for _, chunk := range chunks(stored, a.settings.MaxIDsPerRequest) {
		if err := a.acknowledge(ctx, chunk); err != nil {
			a.ackFailed.Add(int64(len(chunk)))
			slog.Warn("ack: acknowledging stored messages failed at the end of the run; Pub/Sub will redeliver them", "subscription", a.sub, "ids", len(chunk), "error", err)
			continue
		}
		a.acked.Add(int64(len(chunk)))
	}
	released := 0
	var errs []error
	for _, chunk := range chunks(ids, a.settings.MaxIDsPerRequest) {
		err := a.giveBack(ctx, chunk)
		if err != nil {
			// Ids Pub/Sub refuses for good (exactly-once delivery: expired) have no lease left
			// to give back, and are delivered again as they are; the others are asked once more.
			retry, refused := extendResults(chunk, err)
			if len(refused) > 0 {
				released += len(refused)
				err = nil
				if len(retry) > 0 {
					err = a.giveBack(ctx, retry)
				}
				chunk = retry
			}
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		released += len(chunk)
	}
	if len(errs) > 0 {
		return released, fmt.Errorf("ack: subscription %s: giving back %d messages: %w", a.sub, len(ids)-released, errors.Join(errs...))
	}
	return released, nil
}

// giveBack sets the ack deadline of ids to 0 (ModifyAckDeadline).
func (a *Acker) giveBack(ctx context.Context, ids []string) error {
	return a.client.SubscriptionAdminClient.ModifyAckDeadline(ctx, &pubsubpb.ModifyAckDeadlineRequest{
		Subscription: a.sub, AckIds: ids, AckDeadlineSeconds: 0,
	})
}

// Close stops the extension loop and closes the client. Tracked messages are redelivered once
// their deadlines pass.
func (a *Acker) Close() error {
	a.mu.Lock()
	if a.closed {
		a.mu.Unlock()
		return nil
	}
	a.closed = true
	a.mu.Unlock()
	a.cancel()
	<-a.done
	if err := a.client.Close(); err != nil {
		return fmt.Errorf("ack: subscription %s: closing the client: %w", a.sub, err)
	}
	return nil
}

// chunks cuts ids into slices of at most n ids and maxBytesPerRequest bytes.
func chunks(ids []string, n int) [][]string {
	var out [][]string
	start, size := 0, 0
	for i, id := range ids {
		if i > start && (i-start >= n || size+len(id) > maxBytesPerRequest) {
			out = append(out, ids[start:i])
			start, size = i, 0
		}
		size += len(id)
	}
	if start < len(ids) {
		out = append(out, ids[start:])
	}
	return out
}

// The process registry of ForSubscription, keyed by registryKey.
var (
	registryMu       sync.Mutex
	registry         = map[string]*Acker{}
	registrySettings AckSettings
)

// registryKey is the subscription and the emulator the client would talk to: a process that
// points PUBSUB_EMULATOR_HOST at a new emulator (tests) gets a new Manager, not one whose client
// talks to the old emulator.
func registryKey(subscription string) string {
	return os.Getenv("PUBSUB_EMULATOR_HOST") + " " + subscription
}

func forSubscription(ctx context.Context, subscription string) (Manager, error) {
	registryMu.Lock()
	defer registryMu.Unlock()
	key := registryKey(subscription)
	if a, ok := registry[key]; ok {
		return a, nil
	}
	a, err := NewAcker(ctx, subscription, registrySettings)
	if err != nil {
		return nil, err
	}
	registry[key] = a
	return a, nil
}

// ReleaseAll gives back the messages every Acker of the process registry still tracks
// (Acker.Release), and returns how many; for the end of a local run. ctx bounds the whole: it is
// best effort, and a message not given back is redelivered once its deadline passes.
func ReleaseAll(ctx context.Context) (int, error) {
	registryMu.Lock()
	ackers := slices.Collect(maps.Values(registry))
	registryMu.Unlock()
	released := 0
	var errs []error
	for _, a := range ackers {
		n, err := a.Release(ctx)
		released += n
		if err != nil {
			errs = append(errs, err)
		}
	}
	return released, errors.Join(errs...)
}

// AwaitRetries waits for the acknowledgements every Acker of the process registry is retrying
// (Acker.AwaitRetries); for the end of a local run, before ReleaseAll.
func AwaitRetries(ctx context.Context) {
	registryMu.Lock()
	ackers := slices.Collect(maps.Values(registry))
	registryMu.Unlock()
	for _, a := range ackers {
		a.AwaitRetries(ctx)
	}
}

// AckFailures returns how many acknowledgements of the Ackers of the process registry failed for
// good (AckStats.AckFailed): messages stored whose acknowledgement Pub/Sub did not take, which it
// delivers again. For the end of a local run, after ReleaseAll.
func AckFailures() int64 {
	registryMu.Lock()
	defer registryMu.Unlock()
	var n int64
	for _, a := range registry {
		n += a.ackFailed.Load()
	}
	return n
}

// SetDefaultAckSettings sets the AckSettings of the Managers that ForSubscription creates from now on
// (tests shorten the deadlines with it). Existing Managers keep theirs.
func SetDefaultAckSettings(s AckSettings) {
	registryMu.Lock()
	defer registryMu.Unlock()
	registrySettings = s
}

// LookupAcker returns the Acker that ForSubscription returns for subscription (under the current
// PUBSUB_EMULATOR_HOST), if it has created one.
func LookupAcker(subscription string) (*Acker, bool) {
	registryMu.Lock()
	defer registryMu.Unlock()
	a, ok := registry[registryKey(subscription)]
	return a, ok
}

// CloseAckers closes every Manager of the registry and empties it; the next ForSubscription creates
// a new one. For tests, and for a process that is about to exit.
func CloseAckers() error {
	registryMu.Lock()
	all := registry
	registry = map[string]*Acker{}
	registryMu.Unlock()
	var errs []error
	for _, a := range all {
		if err := a.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
