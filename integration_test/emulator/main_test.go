package main

import (
	"bytes"
	"context"
	"net"
	"slices"
	"strconv"
	"testing"

	"cloud.google.com/go/pubsub/v2"
	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
)

func TestEmulatorServesPubSub(t *testing.T) {
	srv, err := start(0)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	_, p, _ := net.SplitHostPort(srv.Addr)
	port, _ := strconv.Atoi(p)
	if _, err := start(port); err == nil {
		t.Error("a second emulator on the same port started")
	}

	t.Setenv("PUBSUB_EMULATOR_HOST", "127.0.0.1:"+p)
	ctx := context.Background()
	c, err := pubsub.NewClient(ctx, "p")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.TopicAdminClient.CreateTopic(ctx, &pubsubpb.Topic{Name: "projects/p/topics/t"}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.SubscriptionAdminClient.CreateSubscription(ctx, &pubsubpb.Subscription{
		Name: "projects/p/subscriptions/s", Topic: "projects/p/topics/t",
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.TopicAdminClient.Publish(ctx, &pubsubpb.PublishRequest{
		Topic: "projects/p/topics/t", Messages: []*pubsubpb.PubsubMessage{{Data: []byte("hello")}},
	}); err != nil {
		t.Fatal(err)
	}
	// Pub/Sub takes messages of up to 10 MB; gRPC's default server takes requests of 4 MiB.
	big := bytes.Repeat([]byte("x"), 9<<20)
	if _, err := c.TopicAdminClient.Publish(ctx, &pubsubpb.PublishRequest{
		Topic: "projects/p/topics/t", Messages: []*pubsubpb.PubsubMessage{{Data: big}},
	}); err != nil {
		t.Fatalf("publishing a message of 9 MiB: %v", err)
	}
	resp, err := c.SubscriptionAdminClient.Pull(ctx, &pubsubpb.PullRequest{Subscription: "projects/p/subscriptions/s", MaxMessages: 10})
	if err != nil {
		t.Fatal(err)
	}
	var sizes []int
	for _, m := range resp.ReceivedMessages {
		sizes = append(sizes, len(m.Message.Data))
	}
	slices.Sort(sizes)
	if !slices.Equal(sizes, []int{len("hello"), len(big)}) {
		t.Errorf("pulled messages of %v bytes, want hello and the 9 MiB one", sizes)
	}
}
