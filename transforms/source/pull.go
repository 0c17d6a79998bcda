// The local reader's pulls: ProcessElement, which pulls, tracks the ack ids and emits one
// element per Pull response, and the Pull requests themselves.

package source

import (
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
					"activeRatePerSec", psclient.Rate(rest.Next, time.UnixMilli(rest.LastMillis).Sub(time.UnixMilli(rest.StartMillis))))
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
