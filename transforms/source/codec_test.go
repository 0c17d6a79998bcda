package source

import (
	"context"
	"net"
	"strings"
	"sync"
	"testing"

	"cloud.google.com/go/pubsub/v2"
	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// The reader's Pull goes out with the content-type "application/grpc", as the client's other
// calls do: Google's endpoints answer "application/grpc+proto", which a forced codec named
// "proto" would send, with an HTTP 404 (pullCodec). The emulator takes either, so a server of
// this test records what it receives and refuses the call.
func TestPullContentType(t *testing.T) {
	var (
		mu   sync.Mutex
		seen = map[string][]string{}
	)
	srv := grpc.NewServer(grpc.UnknownServiceHandler(func(_ any, stream grpc.ServerStream) error {
		method, _ := grpc.MethodFromServerStream(stream)
		md, _ := metadata.FromIncomingContext(stream.Context())
		mu.Lock()
		seen[method[strings.LastIndex(method, "/")+1:]] = md.Get("content-type")
		mu.Unlock()
		return status.Error(codes.FailedPrecondition, "recorded")
	}))
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(lis)
	t.Cleanup(srv.Stop)
	t.Setenv("PUBSUB_EMULATOR_HOST", lis.Addr().String())
	ctx := context.Background()
	client, err := pubsub.NewClient(ctx, "test-project")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })

	fn := &readFn{Subscription: testSub, client: client}
	if _, err := fn.pull(ctx, 10, true); status.Code(err) != codes.FailedPrecondition {
		t.Fatalf("pull: %v; want the test server's FailedPrecondition", err)
	}
	client.SubscriptionAdminClient.Acknowledge(ctx, &pubsubpb.AcknowledgeRequest{Subscription: testSub, AckIds: []string{"a"}})
	mu.Lock()
	defer mu.Unlock()
	for _, method := range []string{"Pull", "Acknowledge"} {
		if got := seen[method]; len(got) != 1 || got[0] != "application/grpc" {
			t.Errorf("%s's content-type: %q; want [\"application/grpc\"]", method, got)
		}
	}
}

// The reader's Pull decodes with pullCodec: each payload is a view of the response's bytes, cut
// to its length, where proto.Unmarshal gives each a buffer of its own, with the capacity of its
// allocation's size class (1,024 bytes for these payloads of 1,000).
func TestPullDecodesPayloadsInPlace(t *testing.T) {
	em := newEmulator(t)
	ctx := context.Background()
	payload := strings.Repeat("x", 1000)
	for range 3 {
		if _, err := em.client.TopicAdminClient.Publish(ctx, &pubsubpb.PublishRequest{Topic: testTopic,
			Messages: []*pubsubpb.PubsubMessage{{Data: []byte(payload), Attributes: map[string]string{"k": "v"}, OrderingKey: "o"}}}); err != nil {
			t.Fatal(err)
		}
	}
	fn := &readFn{Subscription: testSub, client: em.client}
	resp, err := fn.pull(ctx, 10, false)
	if err != nil {
		t.Fatal(err)
	}
	msgs := resp.GetReceivedMessages()
	if len(msgs) != 3 {
		t.Fatalf("%d messages; want 3", len(msgs))
	}
	for _, rm := range msgs {
		m := rm.GetMessage()
		if string(m.GetData()) != payload || m.GetAttributes()["k"] != "v" || m.GetOrderingKey() != "o" ||
			m.GetMessageId() == "" || m.GetPublishTime() == nil || rm.GetAckId() == "" {
			t.Fatalf("message %v: not as published", m.GetMessageId())
		}
		if cap(m.GetData()) != len(m.GetData()) {
			t.Errorf("message %s: payload of length %d, capacity %d: not decoded by pullCodec", m.GetMessageId(), len(m.GetData()), cap(m.GetData()))
		}
	}
}
