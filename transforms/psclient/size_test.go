package psclient

import (
	"context"
	"errors"
	"strings"
	"testing"

	"cloud.google.com/go/pubsub/v2"

	"github.com/ch-beam/pubsub-to-clickhouse/internal/pubsubtest"
)

// TestMaxMessageBytes: the client's publisher takes a message of MaxMessageBytes as MessageSize
// counts it (data, attributes and ordering key), and refuses one a byte larger with
// pubsub.ErrOversizedMessage, for a topic name of any length.
func TestMaxMessageBytes(t *testing.T) {
	e := pubsubtest.Start(t)
	for _, id := range []string{"t", "a-topic-with-a-name-of-" + strings.Repeat("x", 200)} {
		topic := e.Topic(t, id)
		publisher := e.Client.Publisher(topic)
		publisher.EnableMessageOrdering = true
		limit := MaxMessageBytes(topic)
		// message returns a message of MessageSize n, with attributes and an ordering key.
		message := func(n int) *pubsub.Message {
			m := &pubsub.Message{Data: []byte("x"), Attributes: map[string]string{"replay_id": "2026-12-05T07:00:00Z", "pad": ""}, OrderingKey: "key"}
			m.Data = make([]byte, n-MessageSize(m)-3) // 3 bytes short, then the rest in an attribute
			m.Attributes["pad"] = strings.Repeat("p", n-MessageSize(m))
			if got := MessageSize(m); got != n {
				t.Fatalf("a message of %d bytes came to %d", n, got)
			}
			return m
		}
		if m := message(1000); MessageSize(m) <= len(m.Data)+len("replay_id2026-12-05T07:00:00Zpad")+len(m.Attributes["pad"])+len("key") {
			t.Errorf("MessageSize counts no framing")
		}
		ctx := context.Background()
		if _, err := publisher.Publish(ctx, message(limit)).Get(ctx); err != nil {
			t.Errorf("topic %s: a message of MaxMessageBytes (%d): %v", id, limit, err)
		}
		if _, err := publisher.Publish(ctx, message(limit+1)).Get(ctx); !errors.Is(err, pubsub.ErrOversizedMessage) {
			t.Errorf("topic %s: a message of MaxMessageBytes+1 (%d): %v, want %v", id, limit+1, err, pubsub.ErrOversizedMessage)
		}
		publisher.Stop()
	}
}
