package deadletter

import (
	"context"
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
