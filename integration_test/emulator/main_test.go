package main

import (
	"context"
	"net"
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
	resp, err := c.SubscriptionAdminClient.Pull(ctx, &pubsubpb.PullRequest{Subscription: "projects/p/subscriptions/s", MaxMessages: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.ReceivedMessages) != 1 || string(resp.ReceivedMessages[0].Message.Data) != "hello" {
		t.Errorf("pulled %v", resp.ReceivedMessages)
	}
}
