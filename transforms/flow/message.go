// Package flow holds the values that flow between the stages: the Pub/Sub message (Message),
// the row it becomes (Row) and the dead letter of a message that cannot become one (DeadLetter),
// and the metrics namespace they share. It imports nothing of the pipeline.
package flow

// Message is one Pub/Sub message. Its fields are exported so that Beam's schema coder encodes it.
type Message struct {
	// ID is the message id the Pub/Sub service assigned.
	ID string
	// Data is the payload bytes, unchanged, or the JavaScript UDF's output when Transformed.
	Data []byte
	// Attributes are the message's attributes; nil when it has none. Read only: messages with
	// the same attributes may share the map (those of one Pull response of the local source,
	// pubsubio.DecodePullResponse, and those decoded from one element, DecodeMessages).
	Attributes map[string]string
	// PublishTimeMillis is the publish time in Unix milliseconds (UTC).
	PublishTimeMillis int64
	// OrderingKey is the message's ordering key (Pub/Sub's ordering_key); empty when it has none.
	OrderingKey string
	// AckID acknowledges the message on a subscription (the local source). Empty on Dataflow, where
	// the service acknowledges at its own checkpoints.
	AckID string
	// Transformed is whether the JavaScript UDF (package udf) replaced Data with its output;
	// Original then holds the payload as published, which a dead letter carries.
	Transformed bool
	// Original is the payload as published when Transformed; nil otherwise.
	Original []byte
}

// Published returns the payload as published: Original when the UDF transformed the message,
// else Data.
func (m Message) Published() []byte {
	if m.Transformed {
		return m.Original
	}
	return m.Data
}

// Namespace is the Beam metrics namespace of every metric of the pipeline.
const Namespace = "PubSubToClickHouse"
