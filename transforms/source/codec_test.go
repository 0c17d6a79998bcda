package source

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"

	"cloud.google.com/go/pubsub/v2"
	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"
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

// pullResponseBytes returns a marshalled Pull response of n messages of 1,000 bytes each.
func pullResponseBytes(t testing.TB, n int) []byte {
	resp := &pubsubpb.PullResponse{}
	for i := range n {
		resp.ReceivedMessages = append(resp.ReceivedMessages, &pubsubpb.ReceivedMessage{
			AckId: fmt.Sprintf("ack-%d", i),
			Message: &pubsubpb.PubsubMessage{Data: []byte(strings.Repeat(string(rune('a'+i%26)), 1000)),
				Attributes: map[string]string{"k": fmt.Sprint(i)}, MessageId: fmt.Sprint(1_000_000 + i)},
		})
	}
	raw, err := proto.Marshal(resp)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// inBuffers cuts raw into a BufferSlice of buffers of at most size bytes, as gRPC hands a
// received message to the codec (one buffer per HTTP/2 frame it read, 16 KiB by default).
func inBuffers(raw []byte, size int) mem.BufferSlice {
	var data mem.BufferSlice
	for len(raw) > 0 {
		n := min(size, len(raw))
		data = append(data, mem.SliceBuffer(raw[:n]))
		raw = raw[n:]
	}
	return data
}

// pullCodec decodes a response that gRPC hands over in one buffer, in many or in none to what
// proto.Unmarshal decodes from the whole, each payload its own bytes (not a view of gRPC's
// buffers, which gRPC reuses once Unmarshal returns).
func TestPullCodecBuffers(t *testing.T) {
	raw := pullResponseBytes(t, 100)
	want := new(pubsubpb.PullResponse)
	if err := proto.Unmarshal(raw, want); err != nil {
		t.Fatal(err)
	}
	for _, size := range []int{len(raw), 16 << 10, 1000, 7} {
		data := inBuffers(slices.Clone(raw), size)
		got := new(pubsubpb.PullResponse)
		if err := (pullCodec{}).Unmarshal(data, got); err != nil {
			t.Fatalf("buffers of %d bytes: %v", size, err)
		}
		for _, b := range data { // what gRPC's pool does to its buffers once the codec returns
			clear(b.ReadOnlyData())
		}
		if diff := cmp.Diff(want, got, protocmp.Transform()); diff != "" {
			t.Errorf("buffers of %d bytes (-proto.Unmarshal +pullCodec):\n%s", size, diff)
		}
	}
	got := new(pubsubpb.PullResponse)
	if err := (pullCodec{}).Unmarshal(nil, got); err != nil || len(got.GetReceivedMessages()) != 0 {
		t.Errorf("no buffers: %v, %d messages; want an empty response", err, len(got.GetReceivedMessages()))
	}
}
