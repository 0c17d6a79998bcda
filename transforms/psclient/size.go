package psclient

import (
	"cloud.google.com/go/pubsub/v2"
	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// MessageSize is m's size as the Pub/Sub client's publisher counts it, in bytes: the encoded
// PubsubMessage of its data, attributes and ordering key (cloud.google.com/go/pubsub/v2,
// Publisher.Publish), which is a little more than the sum of their lengths (each field's tag and
// length).
func MessageSize(m *pubsub.Message) int {
	return proto.Size(&pubsubpb.PubsubMessage{Data: m.Data, Attributes: m.Attributes, OrderingKey: m.OrderingKey})
}

// MaxMessageBytes is the largest MessageSize the client's publisher of topic
// (projects/<project>/topics/<name>) takes, in bytes: Pub/Sub's 10 MB publish request
// (pubsub.MaxPublishRequestBytes, https://cloud.google.com/pubsub/quotas#resource_limits) less
// the request's topic field and 5 bytes of framing, as the publisher bounds a bundle; it refuses a
// larger message with "item size exceeds bundle byte limit" (pubsub.ErrOversizedMessage).
func MaxMessageBytes(topic string) int {
	return int(pubsub.MaxPublishRequestBytes) - (1 + protowire.SizeVarint(uint64(len(topic))) + len(topic)) - 5
}
