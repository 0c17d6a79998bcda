package deadletter

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"cloud.google.com/go/pubsub/v2/pstest"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/ch-beam/pubsub-to-clickhouse/internal/pubsubtest"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/flow"
)

// failOnce fails the first Publish request that holds a message of the ordering key, with a code
// the client does not retry.
type failOnce struct {
	key    string
	mu     sync.Mutex
	failed bool
}

func (f *failOnce) React(req any) (bool, any, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, m := range req.(*pubsubpb.PublishRequest).GetMessages() {
		if m.GetOrderingKey() == f.key && !f.failed {
			f.failed = true
			return true, nil, status.Error(codes.FailedPrecondition, "injected failure")
		}
	}
	return false, nil, nil
}

// TestPublishResumesOrderingKey: the dead-letter topic's messages carry their ordering keys, and a
// key whose publish failed (which the client then pauses) is published when the bundle is
// retried, instead of failing with pubsub.ErrPublishingPaused for good.
func TestPublishResumesOrderingKey(t *testing.T) {
	ctx := context.Background()
	e := pubsubtest.Start(t, pstest.ServerReactorOption{FuncName: "Publish", Reactor: &failOnce{key: "k1"}})
	topic := e.Topic(t, "dead-letters")
	sub := e.Subscription(t, topic, "dead-letters-check", time.Minute)
	f := &writeFn{Config: Config{Topic: topic}}
	var err error
	if f.client, f.publisher, err = OpenTopic(ctx, topic); err != nil {
		t.Fatal(err)
	}
	defer f.Teardown()
	recs := []*flow.DeadLetter{
		{Payload: []byte(`{"id":1}`), ErrorMessage: "bad", MessageID: "1", OrderingKey: "k1"},
		{Payload: []byte(`{"id":2}`), ErrorMessage: "bad", MessageID: "2", OrderingKey: "k1"},
		{Payload: []byte(`{"id":3}`), ErrorMessage: "bad", MessageID: "3"},
	}
	if err := f.publish(ctx, recs); err == nil {
		t.Fatal("the first publish succeeded, want the injected failure")
	}
	for attempt := 1; attempt <= 2; attempt++ { // the bundle retried: each time all of it
		if err := f.publish(ctx, recs); err != nil {
			t.Fatalf("retry %d: %v", attempt, err)
		}
	}
	type msg struct{ Data, OrderingKey string }
	var got []msg
	for _, m := range e.PullAll(t, sub) {
		got = append(got, msg{string(m.Data), m.OrderingKey})
	}
	// {"id":3} has no key, so the failure did not hold it back: it was published every time.
	want := []msg{{`{"id":1}`, "k1"}, {`{"id":1}`, "k1"}, {`{"id":2}`, "k1"}, {`{"id":2}`, "k1"}, {`{"id":3}`, ""}, {`{"id":3}`, ""}, {`{"id":3}`, ""}}
	if diff := cmp.Diff(want, got, cmpopts.SortSlices(func(a, b msg) bool { return a.Data < b.Data })); diff != "" {
		t.Errorf("the dead-letter topic holds (-want +got):\n%s", diff)
	}
}

// TestPublishTopicWithoutSubscription: the dead-letter topic deleted and created again while the
// job runs (its subscription left detached), or its subscription deleted. Pub/Sub takes the
// publish and delivers the dead letter to no one: before, the stage emitted its ack id (the
// message acknowledged, lost). Now, as the only destination, the batch fails, nothing
// acknowledged, until the topic has a subscription again; beside the dead-letter table it is
// published, and the stage warns once.
func TestPublishTopicWithoutSubscription(t *testing.T) {
	var logs bytes.Buffer
	defer slog.SetDefault(slog.Default())
	slog.SetDefault(slog.New(slog.NewTextHandler(&logs, nil)))
	ctx := context.Background()
	e := pubsubtest.Start(t)
	topic := e.Topic(t, "dead-letters")
	first := e.Subscription(t, topic, "dead-letters-read", time.Minute)
	defer func(d time.Duration) { topicRecheck = d }(topicRecheck)
	topicRecheck = time.Hour // found with a subscription: not asked again within the hour
	f := &writeFn{Config: Config{Topic: topic}}
	var err error
	if f.client, f.publisher, err = OpenTopic(ctx, topic); err != nil {
		t.Fatal(err)
	}
	defer f.Teardown()
	batch := func(id string) flow.DeadLetters {
		return flow.DeadLetters{Letters: []flow.DeadLetter{{Payload: []byte(`{"id":"` + id + `"}`), ErrorMessage: "bad", MessageID: id, AckID: "ack-" + id}}}
	}
	process := func(id string) ([]string, error) {
		var acked []string
		err := f.ProcessElement(ctx, 0, batch(id), func(ids []string) { acked = append(acked, ids...) })
		return acked, err
	}
	if acked, err := process("1"); err != nil || len(acked) != 1 {
		t.Fatalf("with a subscription: acknowledged %v, %v; want ack-1", acked, err)
	}
	if got := e.PullAll(t, first); len(got) != 1 {
		t.Fatalf("the subscription holds %d dead letters, want 1", len(got))
	}

	// The topic deleted and created again: its subscription is detached. Within topicRecheck
	// of the last answer the dead letter is published without asking, and reaches no one.
	if err := e.Client.TopicAdminClient.DeleteTopic(ctx, &pubsubpb.DeleteTopicRequest{Topic: topic}); err != nil {
		t.Fatal(err)
	}
	e.Topic(t, "dead-letters")
	if acked, err := process("1b"); err != nil || len(acked) != 1 {
		t.Fatalf("within topicRecheck of the answer: acknowledged %v, %v; want ack-1b, published without asking", acked, err)
	}
	f.keptUntil = time.Time{} // topicRecheck passed
	topicRecheck = 0
	acked, err := process("2")
	if err == nil || len(acked) > 0 || !strings.Contains(err.Error(), "has no subscription") {
		t.Fatalf("the topic created again without a subscription: acknowledged %v, error %v; want none and an error saying it has no subscription", acked, err)
	}
	second := e.Subscription(t, topic, "dead-letters-read-2", time.Minute)
	if acked, err := process("2"); err != nil || len(acked) != 1 {
		t.Fatalf("with a subscription again: acknowledged %v, %v; want ack-2", acked, err)
	}
	if got := e.PullAll(t, second); len(got) != 1 || string(got[0].Data) != `{"id":"2"}` {
		t.Errorf("the new subscription holds %v, want the dead letter of 2", got)
	}

	// Beside the dead-letter table (which keeps them: not here, this writeFn has no connection),
	// the dead letters are published and the missing subscription warned of, once.
	if err := e.Client.SubscriptionAdminClient.DeleteSubscription(ctx, &pubsubpb.DeleteSubscriptionRequest{Subscription: second}); err != nil {
		t.Fatal(err)
	}
	f.Table = "dead_letters"
	for _, id := range []string{"3", "4"} {
		if acked, err := process(id); err != nil || len(acked) != 1 {
			t.Fatalf("beside a table: acknowledged %v, %v; want ack-%s", acked, err, id)
		}
	}
	if n := strings.Count(logs.String(), "the dead-letter topic has no subscription any more"); n != 1 {
		t.Errorf("%d warnings of the topic without a subscription, want 1:\n%s", n, logs.String())
	}
}
