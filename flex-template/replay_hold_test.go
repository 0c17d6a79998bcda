package main

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"google.golang.org/grpc"

	"github.com/ch-beam/pubsub-to-clickhouse/internal/pubsubtest"
)

// slowSecondPull starts an emulator whose second Pull waits 2.5 s before it is served (past a
// subscription's 1 s ack deadline), and counts the Pulls and the messages they deliver.
func slowSecondPull(t *testing.T) (e *pubsubtest.Emulator, pulls, delivered *atomic.Int32) {
	pulls, delivered = new(atomic.Int32), new(atomic.Int32)
	slow := grpc.UnaryInterceptor(func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		if info.FullMethod == "/google.pubsub.v1.Subscriber/Pull" && pulls.Add(1) == 2 {
			time.Sleep(2500 * time.Millisecond)
		}
		resp, err := handler(ctx, req)
		if r, ok := resp.(*pubsubpb.PullResponse); ok {
			delivered.Add(int32(len(r.GetReceivedMessages())))
		}
		return resp, err
	})
	return pubsubtest.StartServing(t, []grpc.ServerOption{slow}), pulls, delivered
}

// TestReplayDryRunHoldsItsMessages: the messages a dry run from a subscription holds to its end
// keep their lease while it goes on. The second Pull is held up past the subscription's ack
// deadline (1 s); the message of the first is not delivered again. Before, it was: Pub/Sub
// handed it out again, and a pull that brought only such messages ended the run and its count
// with others still to come (a Pull returns what it has at hand, not all there is).
func TestReplayDryRunHoldsItsMessages(t *testing.T) {
	e, pulls, delivered := slowSecondPull(t)
	dead := e.Topic(t, "dead")
	sub := e.Subscription(t, dead, "dead-sub", time.Second)
	events := e.Topic(t, "events")
	e.Publish(t, dead, &pubsubpb.PubsubMessage{Data: []byte(`{"a":1}`)})

	var out, errOut strings.Builder
	code := runReplay(context.Background(), newCmdIO(strings.NewReader(""), &out, &errOut),
		[]string{"--dry-run", "--topic=" + events, "--fromSubscription=" + sub})
	if code != exitOK || !strings.Contains(out.String(), "1 dead letter") {
		t.Fatalf("exit %d, standard output\n%s\nstandard error\n%s", code, out.String(), errOut.String())
	}
	if pulls.Load() < 2 {
		t.Fatalf("%d pulls: the run ended before the held-up one", pulls.Load())
	}
	if n := delivered.Load(); n != 1 {
		t.Errorf("the message was delivered %d times during the dry run, want once: its lease was not kept", n)
	}
	// Handed back at the end, it is there for the next reader at once.
	if got := e.PullAll(t, sub); len(got) != 1 {
		t.Errorf("%d messages on %s after the dry run, want 1", len(got), sub)
	}
}

// TestPeekSubscriptionHoldsItsMessages: infer's sample from a subscription keeps the leases of
// the messages it has read while it pulls more, as replay's dry run does.
func TestPeekSubscriptionHoldsItsMessages(t *testing.T) {
	e, pulls, delivered := slowSecondPull(t)
	topic := e.Topic(t, "events")
	sub := e.Subscription(t, topic, "events-sub", time.Second)
	e.Publish(t, topic, &pubsubpb.PubsubMessage{Data: []byte(`{"a":1}`)})
	msgs, _, err := peekSubscription(context.Background(), sub, 10)
	if err != nil || len(msgs) != 1 {
		t.Fatalf("peekSubscription = %d messages, %v; want 1", len(msgs), err)
	}
	if n := delivered.Load(); pulls.Load() < 2 || n != 1 {
		t.Errorf("%d pulls delivered the message %d times, want once in 2 pulls or more: its lease was not kept", pulls.Load(), n)
	}
	if got := e.PullAll(t, sub); len(got) != 1 {
		t.Errorf("%d messages on %s after the sample, want 1", len(got), sub)
	}
}

// TestReplayDryRunOrderedSubscription: a dry run from a subscription with message ordering holds
// the messages it reads, so Pub/Sub delivers it no later message of their ordering keys: it
// reads the first of each key alone, and its count says "at least" and why. Before, it said
// "would replay 2 dead letters" of the 6 that the replay itself then replayed.
func TestReplayDryRunOrderedSubscription(t *testing.T) {
	e := pubsubtest.Start(t)
	dead := e.Topic(t, "dead")
	sub := "projects/" + pubsubtest.Project + "/subscriptions/dead-ordered"
	if _, err := e.Client.SubscriptionAdminClient.CreateSubscription(context.Background(), &pubsubpb.Subscription{
		Name: sub, Topic: dead, AckDeadlineSeconds: 60, EnableMessageOrdering: true,
	}); err != nil {
		t.Fatal(err)
	}
	events := e.Topic(t, "events")
	e.Subscription(t, events, "events-sub", 60*time.Second)
	var msgs []*pubsubpb.PubsubMessage
	for i := range 6 {
		msgs = append(msgs, &pubsubpb.PubsubMessage{Data: fmt.Appendf(nil, `{"id":%d}`, i), OrderingKey: fmt.Sprint("k", i%2),
			Attributes: map[string]string{"errorMessage": "bad", "failedAt": "2026-01-01T00:00:00.000Z"}})
	}
	e.Publish(t, dead, msgs...)

	var out, errOut strings.Builder
	code := runReplay(context.Background(), newCmdIO(strings.NewReader(""), &out, &errOut),
		[]string{"--dry-run", "--topic=" + events, "--fromSubscription=" + sub})
	want := `messages read have 2 ordering keys ("k0", "k1"): the subscription has message ordering, and Pub/Sub delivers no later message of a key while an earlier one is unacknowledged, ` +
		"so a dry run, which acknowledges none, reads only the first dead letters of each key, and the count is of those: the replay itself, which acknowledges each once published, reads the others\n"
	if code != exitOK || !strings.HasPrefix(out.String(), "dry run: would replay at least 2 dead letters from "+sub) || !strings.Contains(out.String(), want) {
		t.Errorf("dry run: exit %d, standard output\n%s\nwant \"would replay at least 2 dead letters\" and\n%s\nstandard error\n%s", code, out.String(), want, errOut.String())
	}
	// The replay itself replays all 6.
	out.Reset()
	errOut.Reset()
	code = runReplay(context.Background(), newCmdIO(strings.NewReader(""), &out, &errOut), []string{"--topic=" + events, "--fromSubscription=" + sub})
	if code != exitOK || !strings.HasPrefix(out.String(), "replayed 6 dead letters from "+sub) {
		t.Errorf("replay: exit %d, standard output\n%s\nstandard error\n%s", code, out.String(), errOut.String())
	}
}
