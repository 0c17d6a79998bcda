// Package flow holds the values that flow between the stages: the Pub/Sub message (Message),
// the row it becomes (Row) and the dead letter of a message that cannot become one (DeadLetter),
// and the metrics namespace they share. It imports nothing of the pipeline.
package flow

// Message is one Pub/Sub message. Its fields are exported so that Beam's schema coder encodes it.
type Message struct {
	// ID is the message id the Pub/Sub service assigned.
	ID string
	// Data is the payload bytes, unchanged.
	Data []byte
	// Attributes are the message's attributes; nil when it has none.
	Attributes map[string]string
	// PublishTimeMillis is the publish time in Unix milliseconds (UTC).
	PublishTimeMillis int64
	// AckID acknowledges the message on a subscription (the local source). Empty on Dataflow, where
	// the service acknowledges at its own checkpoints.
	AckID string
}

// Namespace is the Beam metrics namespace of every metric of the pipeline.
const Namespace = "PubSubToClickHouse"
