package flow

// Row is one converted message: the row in RowBinaryWithDefaults over the table's writable
// columns (see package convert), compact for the shuffle; the write stage decodes it.
type Row struct {
	Data []byte
	// Schema is the convert.Converter.SchemaHash of the columns Data holds. The write stage
	// converts Payload again when its own view of the table differs (the table changed).
	Schema uint64
	// Payload is the original message bytes, for a dead letter if the server rejects the row and
	// for converting again after a schema change.
	Payload []byte
	// MessageID is the source message's Pub/Sub id. It is stable across redeliveries, so the
	// write stage derives each INSERT's insert_deduplication_token from it.
	MessageID string
	// AckID acknowledges the source message once the row is inserted (local source only).
	AckID string
	// Attributes are the source message's attributes (nil when it has none), for its dead letter
	// if the server rejects the row.
	Attributes map[string]string
}
