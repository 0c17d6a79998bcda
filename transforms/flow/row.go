package flow

// Row is one converted message: the row in RowBinaryWithDefaults over the table's writable
// columns (see package convert), compact for the shuffle; the write stage decodes it.
type Row struct {
	Data []byte
	// Schema is the convert.Converter.SchemaHash of the columns Data holds. The write stage
	// converts Payload again when its own view of the table differs (the table changed).
	Schema uint64
	// Payload is the bytes Data was converted from, for converting again after a schema change:
	// the message's payload, or the JavaScript UDF's output when Transformed.
	Payload []byte
	// MessageID is the source message's Pub/Sub id. It is stable across redeliveries, so the
	// write stage derives each INSERT's insert_deduplication_token from it.
	MessageID string
	// AckID acknowledges the source message once the row is inserted (local source only).
	AckID string
	// Attributes are the source message's attributes (nil when it has none), for its dead letter
	// if the server rejects the row.
	Attributes map[string]string
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
