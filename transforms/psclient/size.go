package psclient

import (
	"fmt"
	"maps"
	"slices"
	"unicode/utf8"

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

// ShortestTopic is the shortest topic name ParseTopic takes (a project number of one digit, a
// topic ID of three characters): no publish request has more room for a message than one to it.
const ShortestTopic = "projects/1/topics/abc"

// Pub/Sub's limits on a message's attributes and ordering key, in bytes of UTF-8 where a size
// (https://cloud.google.com/pubsub/quotas#resource_limits). The emulator keeps none of them.
const (
	MaxAttributes          = 100
	MaxAttributeKeyBytes   = 256
	MaxAttributeValueBytes = 1024
	MaxOrderingKeyBytes    = 1024
)

// CheckMessage returns why Pub/Sub would refuse m published to topic, nil if nothing: larger
// than MaxMessageBytes(topic) (topic "" for any topic: the bound of ShortestTopic), more than MaxAttributes attributes, an attribute's key or value or
// the ordering key longer than its limit, or one of them not valid UTF-8 (protobuf's string
// fields, which the client refuses to encode). The error names the attribute and the limit.
func CheckMessage(m *pubsub.Message, topic string) error {
	to, name := " to "+topic, topic
	if topic == "" {
		to, name = " to any topic", ShortestTopic
	}
	if size, limit := MessageSize(m), MaxMessageBytes(name); size > limit {
		return fmt.Errorf("the message is %d bytes as Pub/Sub encodes it (data, attributes and ordering key), above the %d bytes a publish request%s has room for (Pub/Sub's limit is 10 MB a request)", size, limit, to)
	}
	if n := len(m.Attributes); n > MaxAttributes {
		return fmt.Errorf("the message has %d attributes, over Pub/Sub's %d a message", n, MaxAttributes)
	}
	for _, k := range slices.Sorted(maps.Keys(m.Attributes)) { // the first in key order, each time
		v := m.Attributes[k]
		switch {
		case !utf8.ValidString(k):
			return fmt.Errorf("the attribute key %q is not valid UTF-8, which Pub/Sub requires of attributes", k)
		case !utf8.ValidString(v):
			return fmt.Errorf("the value of the attribute %q is not valid UTF-8, which Pub/Sub requires of attributes", k)
		case len(k) > MaxAttributeKeyBytes:
			return fmt.Errorf("the attribute key %.40q… is %d bytes, over Pub/Sub's %d", k, len(k), MaxAttributeKeyBytes)
		case len(v) > MaxAttributeValueBytes:
			return fmt.Errorf("the value of the attribute %q is %d bytes, over Pub/Sub's %d", k, len(v), MaxAttributeValueBytes)
		}
	}
	switch k := m.OrderingKey; {
	case !utf8.ValidString(k):
		return fmt.Errorf("the ordering key %q is not valid UTF-8, which Pub/Sub requires", k)
	case len(k) > MaxOrderingKeyBytes:
		return fmt.Errorf("the ordering key is %d bytes, over Pub/Sub's %d", len(k), MaxOrderingKeyBytes)
	}
	return nil
}
