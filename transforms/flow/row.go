package flow

import (
	"bytes"
	"time"
)

// Row is one message that converts into a row of the table. It carries the message, not its
// converted form: the payload is needed anyway (a dead letter keeps the original bytes, and a
// schema change converts it again), and conversion is cheaper than moving the RowBinary through
// the shuffle beside it (docs/operations.md, "Cost per message"). The write stage converts the
// payload with its own view of the table.
type Row struct {
	// Payload is the bytes to convert: the message's payload, or the JavaScript UDF's output
	// when Transformed.
	Payload []byte
	// Schema is the convert.Converter.SchemaHash of the table as the parse stage saw it when the
	// payload converted. The write stage reads the table's schema again when its own view differs
	// (the table changed), before converting. Unchecked (0): the parse stage had no schema of the
	// table (a routed table it could not read), and the write stage's conversion is the check.
	Schema uint64
	// MessageID is the source message's Pub/Sub id. It is stable across redeliveries, so the
	// write stage derives each INSERT's insert_deduplication_token from it.
	MessageID string
	// AckID acknowledges the source message once the row is inserted (local source only).
	AckID string
	// Attributes are the source message's attributes (nil when it has none), for its dead letter
	// if the server rejects the row. Read only: the rows decoded from one element that have the
	// same attributes share the map.
	Attributes map[string]string
	// PublishTimeMillis is the source message's publish time (Unix milliseconds), which the
	// write stage's conversion needs for the columns of metadataColumns; the parse stage sets it
	// only when the template has metadata columns (else 0).
	PublishTimeMillis int64
	// OrderingKey is the source message's ordering key ("" when it has none), for the columns of
	// metadataColumns and for the row's dead letter if the server rejects it. With
	// PublishTimeMillis 0 and no key, the pair costs one byte in the coder.
	OrderingKey string
	// Transformed is whether Payload is the JavaScript UDF's output; Original then holds the
	// payload as published, for the row's dead letter.
	Transformed bool
	// Original is the payload as published when Transformed; nil otherwise.
	Original []byte
}

// Published returns the payload as published, for the row's dead letter: Original when the UDF
// transformed the message, else Payload.
func (r Row) Published() []byte {
	if r.Transformed {
		return r.Original
	}
	return r.Payload
}

// DeadLetter returns the dead-letter record of a row the write stage could not insert, failed at
// failedAt with errorMessage and stackTrace: its payload as published, its message id,
// attributes, ordering key and ack id. The payload is a copy. The batch stage decodes a batch's
// rows into pooled buffers that it reuses once the write stage returns, and a record can outlive
// that: on Dataflow the bundle's dead letters are gathered (batch.DeadLetters) in the stage the
// write stage is fused into, before any encoding.
func (r Row) DeadLetter(errorMessage, stackTrace string, failedAt time.Time) DeadLetter {
	return DeadLetter{
		Payload:        bytes.Clone(r.Published()),
		ErrorMessage:   errorMessage,
		StackTrace:     stackTrace,
		FailedAtMillis: failedAt.UnixMilli(),
		MessageID:      r.MessageID,
		Attributes:     r.Attributes,
		OrderingKey:    r.OrderingKey,
		AckID:          r.AckID,
	}.BoundErrors()
}

// Rows is a group of rows that travels as one element: the rows of one source element out of
// the parse stage, one batch out of the batch stage. A Beam element costs far more to move
// between stages than its bytes (docs/operations.md, "Cost per message"), so rows travel in
// groups; the batch stage counts rows, not elements. Rows has its own compact coder (coder.go).
type Rows struct {
	Rows []Row
	// Compression is how the coder compresses the element (EncodeRows, Pack): the
	// shuffleCompression parameter, which the batch stage sets on what it sends through its
	// GroupByKey and state. Decoding does not set it (the zero value, MinLZ).
	Compression Compression
}

// Messages is a group of messages that travels as one element: the messages of one Pull
// response (the local source), or one message (Dataflow's source, which gives one element per
// message). It has its own compact coder (coder.go).
type Messages struct {
	Messages []Message
}

// Unchecked is the Row.Schema of a row that no conversion checked: the parse stage of a routed
// table that it could not read yet passes its messages on, and the write stage, which reads the
// table before it inserts, converts each with every check (valid UTF-8 included) and
// dead-letters those that fail. No convert.Converter.SchemaHash is 0.
const Unchecked uint64 = 0
