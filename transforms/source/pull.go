// The local reader's pulls: ProcessElement, which pulls, tracks the ack ids and emits one
// element per Pull response, and the Pull requests themselves.

package source

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"time"

	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/sdf"
	"github.com/googleapis/gax-go/v2"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/ch-beam/pubsub-to-clickhouse/transforms/flow"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/psclient"
)

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
			capBytes := "none (a cap only in the combined mode: windowSeconds with batchRowCount, or neither)"
			if fn.MaxOutstandingBytes > 0 {
				capBytes = fmt.Sprint(fn.MaxOutstandingBytes)
			}
			slog.Info("source: reader started", "subscription", fn.Subscription,
				"stopAfterIdle", fn.StopAfterIdle, "maxOutstanding", fn.MaxOutstanding, "maxOutstandingBytes", capBytes,
				"messagesPerPull", fmt.Sprintf("%d at first, doubled while responses stay small, up to %d", min(cmp.Or(fn.FirstPull, fitPullMessages), fn.maxBatch()), fn.maxBatch()))
		}
		rest = t.rest
	}); err != nil {
		return sdf.StopProcessing(), err
	}

	if now.Sub(fn.lastHeartbeat) >= heartbeatEvery {
		fn.lastHeartbeat = now
		emit(mtime.FromTime(now), flow.Messages{})
	}

	// Drain: the input ends here, with what was pulled still outstanding; the pipeline writes
	// and acknowledges it as it drains (the batchers flush when the input ends).
	drained := func() (sdf.ProcessContinuation, error) {
		rt.TryClaim(int64(endPosition))
		slog.Info("source: reader stopped: draining; the messages still unacknowledged are written and acknowledged as the pipeline drains",
			"subscription", fn.Subscription, "messages", rest.Next, "outstanding", fn.acks.Outstanding(),
			"ran", now.Sub(time.UnixMilli(rest.StartMillis)).Round(time.Millisecond))
		return sdf.StopProcessing(), nil
	}
	if isDraining() {
		return drained()
	}

	room := fn.MaxOutstanding - fn.acks.Outstanding()
	if room <= 0 {
		we.advance(now.Add(-assumedLag))
		fn.logf(now, "source: at MaxOutstanding; waiting for acknowledgements", "outstanding", fn.MaxOutstanding-room)
		return sdf.ResumeProcessingIn(fullDelay), nil
	}
	if fn.MaxOutstandingBytes > 0 {
		if b := fn.acks.OutstandingBytes(); b >= fn.MaxOutstandingBytes {
			we.advance(now.Add(-assumedLag))
			fn.logf(now, "source: at MaxOutstandingBytes; waiting for acknowledgements", "outstandingBytes", b, "maxOutstandingBytes", fn.MaxOutstandingBytes)
			return sdf.ResumeProcessingIn(fullDelay), nil
		}
	}

	// No Pull once a drain began (Drain and this are one step: PullsDone sees every Pull that
	// began before it), and the Pull is under way until its messages are tracked.
	if !beginPull() {
		return drained()
	}
	defer endPull()
	// No split from the pull until the pulled messages are claimed and emitted.
	withTracker(rt, func(t *tracker) { t.busy = true })
	defer withTracker(rt, func(t *tracker) { t.busy = false })

	pullStart := time.Now()
	if fn.pullBatch <= 0 {
		fn.pullBatch = min(cmp.Or(fn.FirstPull, fitPullMessages), fn.maxBatch())
	} else if fn.pullBatch > fn.maxBatch() {
		fn.pullBatch = fn.maxBatch()
	}
	want, batch := min(fn.PullBatch, room), fn.pullBatch
	asked := min(fn.pullBatch, want)
	msgs, lost, err := fn.pullSized(ctx, asked, false)
	if err == nil && !lost {
		msgs, lost = fn.pullMore(ctx, msgs, asked, want)
	}
	if lost {
		// The messages of the lost response come back after their ack deadline: the idle
		// time counts from then.
		lostAt := time.Now()
		withTracker(rt, func(t *tracker) { t.rest.LostMillis = lostAt.UnixMilli() })
		if len(msgs) == 0 {
			// Pull again at once with fewer messages, or after errorDelay if there were no
			// fewer to ask for.
			we.advance(pullStart.Add(-assumedLag))
			if fn.pullBatch == batch {
				return sdf.ResumeProcessingIn(errorDelay), nil
			}
			return sdf.ResumeProcessingIn(0), nil
		}
	}
	if err != nil {
		if ctx.Err() != nil {
			return sdf.StopProcessing(), fmt.Errorf("source: subscription %s: %w", fn.Subscription, ctx.Err())
		}
		switch status.Code(err) {
		case codes.NotFound:
			return sdf.StopProcessing(), fmt.Errorf("source: subscription %s: pull: the subscription does not exist any more (it was there when the run started: "+
				"deleted since?); re-create it on its topic, or give another --inputSubscription (the messages read and not acknowledged are lost with it): %w", fn.Subscription, err)
		case codes.FailedPrecondition:
			// What Pub/Sub answers the Pull of a subscription detached from its topic
			// (google.pubsub.v1.Subscription's detached field), which the start-up check refuses.
			return sdf.StopProcessing(), fmt.Errorf("source: subscription %s: pull: Pub/Sub refuses to deliver from the subscription (FAILED_PRECONDITION, "+
				"its answer for one detached from its topic since the run started, which delivers nothing more and keeps no backlog): "+
				"create a subscription on the topic and give that one (the messages read and not acknowledged are lost with it): %w", fn.Subscription, err)
		case codes.PermissionDenied, codes.InvalidArgument, codes.Unauthenticated:
			return sdf.StopProcessing(), fmt.Errorf("source: subscription %s: pull: %w", fn.Subscription, err)
		}
		fn.logf(now, "source: pull failed; retrying", "error", err)
		we.advance(pullStart.Add(-assumedLag))
		return sdf.ResumeProcessingIn(errorDelay), nil
	}
	we.advance(pullStart.Add(-assumedLag))

	if len(msgs) == 0 {
		now := time.Now()
		idle := now.Sub(fn.idleSince(rest))
		if fn.StopAfterIdle > 0 && idle < fn.StopAfterIdle && now.Sub(time.UnixMilli(rest.LastMillis)) >= fn.StopAfterIdle {
			fn.logf(now, "source: idle, but not stopping before the messages of a lost Pull response are redelivered",
				"redeliveredBy", time.UnixMilli(rest.LostMillis).Add(fn.ackDeadline).UTC(), "ackDeadline", fn.ackDeadline)
		}
		if fn.StopAfterIdle > 0 && idle >= fn.StopAfterIdle {
			outstanding := fn.acks.Outstanding()
			if outstanding == 0 || fn.StopWithOutstanding {
				rt.TryClaim(int64(endPosition))
				ran := now.Sub(time.UnixMilli(rest.StartMillis))
				stopped := "source: reader stopped: idle"
				if outstanding > 0 {
					// StopWithOutstanding: the batcher holding them flushes when the input ends.
					stopped += "; the messages still unacknowledged are written and acknowledged as the pipeline drains"
				}
				attrs := []any{"subscription", fn.Subscription,
					"messages", rest.Next, "outstanding", outstanding, "ran", ran.Round(time.Millisecond), "idle", idle.Round(time.Millisecond)}
				// The rate while messages came, from the first Pull to the last arrival; not over
				// less than a second, where one message more or less would make it any number.
				if active := time.UnixMilli(rest.LastMillis).Sub(time.UnixMilli(rest.StartMillis)); active >= time.Second {
					attrs = append(attrs, "activeRatePerSec", psclient.Rate(rest.Next, active))
				}
				slog.Info(stopped, attrs...)
				return sdf.StopProcessing(), nil
			}
			fn.logf(now, "source: idle, waiting for outstanding messages to be acknowledged before stopping",
				"outstanding", outstanding, "idle", idle.Round(time.Second))
		}
		we.advance(now.Add(-assumedLag))
		return sdf.ResumeProcessingIn(idleDelay), nil
	}

	arrived := time.Now()
	ackIDs, sizes := make([]string, len(msgs)), make([]int, len(msgs))
	again, highest := 0, int32(0) // messages received again, and their highest delivery attempt
	for i, m := range msgs {
		ackIDs[i], sizes[i] = m.GetAckId(), messageBytes(m.GetMessage())
		if a := m.GetDeliveryAttempt(); a > 1 {
			again, highest = again+1, max(highest, a)
		}
	}
	fn.acks.TrackSized(ackIDs, sizes)
	if again > 0 {
		fn.redelivered(ctx, arrived, again, highest)
	}
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

// idleSince is when the reader's idle time for StopAfterIdle began: when a message last arrived,
// or, if a Pull response was lost after that, the end of the ack deadline of its messages, when
// Pub/Sub redelivers them.
func (fn *readFn) idleSince(rest Restriction) time.Time {
	since := time.UnixMilli(rest.LastMillis)
	if rest.LostMillis == 0 {
		return since
	}
	if back := time.UnixMilli(rest.LostMillis).Add(fn.ackDeadline); back.After(since) {
		return back
	}
	return since
}

// maxBatch is the largest MaxMessages of a Pull: PullBatch, at most maxPullMessages.
func (fn *readFn) maxBatch() int { return max(1, min(fn.PullBatch, maxPullMessages)) }

// pullMore adds the responses of follow-up Pulls to msgs, the response of a first Pull for asked
// messages, for as long as each response is full (asked for n messages and got them all; the
// first Pull's MaxMessages is passed, as pullSized may have grown fn.pullBatch), msgs holds fewer than
// want messages and their payloads fewer than maxElementBytes. A follow-up Pull returns at once
// with what is ready (ReturnImmediately), rather than waiting for messages under a short
// deadline: a Pull given up by the client after the server has leased its messages would hide
// them until their ack deadline. A follow-up Pull that fails or comes back empty ends the
// element; an error is left for the next element's first Pull to meet, except a response too
// large, which pullSized handles as it does for a first Pull: pullMore then returns msgs, which
// the reader keeps, and lost.
func (fn *readFn) pullMore(ctx context.Context, msgs []*pubsubpb.ReceivedMessage, asked, want int) (_ []*pubsubpb.ReceivedMessage, lost bool) {
	full, size := len(msgs) == asked, 0
	for _, m := range msgs {
		size += len(m.GetMessage().GetData())
	}
	for full && len(msgs) < want && size < maxElementBytes {
		n := min(fn.pullBatch, want-len(msgs))
		more, gone, err := fn.pullSized(ctx, n, true)
		if gone || err != nil || len(more) == 0 {
			return msgs, gone
		}
		for _, m := range more {
			size += len(m.GetMessage().GetData())
		}
		msgs, full = append(msgs, more...), len(more) == n
	}
	return msgs, false
}

// pullSized makes one Pull request for at most n messages, as pull does, and adapts
// fn.pullBatch to its answer (shrink, grow). A response too large for the client is lost:
// pullSized then returns no message, no error, and lost.
func (fn *readFn) pullSized(ctx context.Context, n int, now bool) (_ []*pubsubpb.ReceivedMessage, lost bool, _ error) {
	resp, err := fn.pull(ctx, n, now)
	if status.Code(err) == codes.ResourceExhausted {
		fn.shrink(err)
		return nil, true, nil
	}
	msgs := resp.GetReceivedMessages()
	// The response's encoded size only matters while the batch can grow: proto.Size walks every
	// message and its attributes (a few percent of the binary's CPU on small messages).
	if err == nil && len(msgs) > 0 && fn.pullBatch < fn.maxBatch() {
		fn.grow(len(msgs), proto.Size(resp))
	}
	return msgs, false, err
}

// shrink sets fn.pullBatch after a response too large (err): fitPullMessages, which always fit,
// or, if the batch was no larger (a limit other than the client's), half of it, at least one.
// It logs each shrink; at one message, at most once per logEvery.
func (fn *readFn) shrink(err error) {
	next := fitPullMessages
	if fn.pullBatch <= next {
		next = max(1, fn.pullBatch/2)
	}
	if next == fn.pullBatch {
		fn.logf(time.Now(), "source: a Pull response of one message was too large; retrying", "error", err)
		return
	}
	slog.Warn("source: a Pull response was too large and is lost until its messages' ack deadline; pulling fewer messages at a time",
		"subscription", fn.Subscription, "maxMessages", fn.pullBatch, "nextMaxMessages", next,
		"maxResponseBytes", maxPullResponseBytes, "ackDeadline", fn.ackDeadline, "error", err)
	fn.pullBatch = next
}

// grow doubles fn.pullBatch, up to maxBatch, after a response of got messages and bytes bytes
// (its encoded size) when twice fn.pullBatch messages of the response's bytes per message would
// stay within growPullBytes; for a full response, when bytes*2 <= growPullBytes. An empty
// response tells nothing and changes nothing.
func (fn *readFn) grow(got, bytes int) {
	if got == 0 || fn.pullBatch >= fn.maxBatch() {
		return
	}
	if int64(bytes)*int64(2*fn.pullBatch) > int64(growPullBytes)*int64(got) {
		return
	}
	fn.pullBatch = min(fn.maxBatch(), 2*fn.pullBatch)
	fn.logf(time.Now(), "source: pulling more messages at a time", "maxMessages", fn.pullBatch, "lastResponseBytes", bytes)
}

// pull makes one Pull request for at most n messages and returns its response; it returns no
// response (nil) and no error when none came within pullTimeout. With now, the Pull returns at
// once with what is ready (ReturnImmediately, which Pub/Sub discourages for the Pulls that wait
// for new messages).
func (fn *readFn) pull(ctx context.Context, n int, now bool) (*pubsubpb.PullResponse, error) {
	pctx, cancel := context.WithTimeout(ctx, pullTimeout)
	defer cancel()
	resp, err := fn.client.SubscriptionAdminClient.Pull(pctx, &pubsubpb.PullRequest{
		Subscription: fn.Subscription,
		MaxMessages:  int32(n),
		//lint:ignore SA1019 a follow-up Pull wants what is ready now, see pullMore
		ReturnImmediately: now,
	}, gax.WithGRPCOptions(grpc.MaxCallRecvMsgSize(maxPullResponseBytes), grpc.ForceCodecV2(pullCodec{})))
	if err != nil {
		if ctx.Err() == nil && (pctx.Err() != nil || status.Code(err) == codes.DeadlineExceeded) {
			return nil, nil
		}
		return nil, err
	}
	return resp, nil
}

// redelivered counts n messages received again (metric messages-redelivered), the highest of
// their delivery attempts being highest, and warns of them at most once per logEvery. Pub/Sub
// gives a delivery attempt (ReceivedMessage.delivery_attempt, 1 for the first) only on a
// subscription with a dead-letter policy, which forwards a message to the policy's topic once it
// has been delivered max_delivery_attempts times without an acknowledgement
// (https://cloud.google.com/pubsub/docs/handling-failures): such a message reaches neither the
// table nor this pipeline's dead letters, and carries no error of it.
func (fn *readFn) redelivered(ctx context.Context, now time.Time, n int, highest int32) {
	messagesRedelivered.Inc(ctx, int64(n))
	const msg = "source: messages delivered again (given back by a run that failed or was stopped, released by infer or a dry run of replay, or their ack deadline passed): " +
		"a message whose delivery attempts reach the dead-letter policy's limit is forwarded by Pub/Sub to the policy's topic, " +
		"with no error of this pipeline"
	if now.Sub(fn.lastLog[msg]) < logEvery {
		return
	}
	if fn.lastLog == nil {
		fn.lastLog = map[string]time.Time{}
	}
	fn.lastLog[msg] = now
	slog.Warn(msg, "subscription", fn.Subscription, "messages", n, "highestDeliveryAttempt", highest,
		"maxDeliveryAttempts", fn.deadLetterPolicy.GetMaxDeliveryAttempts(), "deadLetterTopic", fn.deadLetterPolicy.GetDeadLetterTopic())
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

// messageBytes is what MaxOutstandingBytes counts of a message: its payload and attributes.
func messageBytes(m *pubsubpb.PubsubMessage) int {
	n := len(m.GetData())
	for k, v := range m.GetAttributes() {
		n += len(k) + len(v)
	}
	return n
}
