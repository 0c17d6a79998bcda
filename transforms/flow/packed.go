package flow

import (
	"encoding/binary"
	"fmt"
	"reflect"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
)

// Packed is a Rows element encoded once (EncodeRows), with its row count beside the bytes. The
// batch stage keys, buffers in state and counts rows in this form: a Rows element would be
// decoded and encoded again at each step (and compressed again each time), the cost the
// profile of the batch stage showed (docs/operations.md, "Cost per message").
type Packed struct {
	// Rows is how many rows Data holds; 0 for a heartbeat of the source.
	Rows int
	// Data is EncodeRows's encoding of the rows.
	Data []byte

	// encoded is what EncodePacked returns for p, when Pack made p: its coder's bytes are
	// written once, with Data their tail.
	encoded []byte
}

// Pack encodes rs (EncodeRows), in the bytes that the coder of Packed writes.
func Pack(rs Rows) Packed {
	prefix := binary.AppendUvarint(nil, uint64(len(rs.Rows))) // AppendRows makes room for the rest
	encoded := AppendRows(prefix, rs)
	return Packed{Rows: len(rs.Rows), Data: encoded[len(prefix):], encoded: encoded}
}

// Unpack decodes the rows (DecodeRows); an error means p was not made by Pack. The rows share
// p.Data, or the buffer it decompresses into. The zero Packed holds no rows.
func (p Packed) Unpack() (Rows, error) {
	if p.Rows == 0 && len(p.Data) == 0 {
		return Rows{}, nil
	}
	rs, err := DecodeRows(p.Data)
	if err == nil && len(rs.Rows) != p.Rows {
		err = fmt.Errorf("flow: decoding Packed: %w: %d rows, the count says %d", errCorrupt, len(rs.Rows), p.Rows)
	}
	return rs, err
}

// The coder of Packed: the row count (unsigned LEB128), then Data.
func init() {
	beam.RegisterCoder(reflect.TypeOf(Packed{}), EncodePacked, DecodePacked)
}

// EncodePacked encodes p in the format above.
func EncodePacked(p Packed) []byte {
	if p.encoded != nil {
		return p.encoded
	}
	return append(binary.AppendUvarint(make([]byte, 0, binary.MaxVarintLen64+len(p.Data)), uint64(p.Rows)), p.Data...)
}

// DecodePacked decodes what EncodePacked wrote; Data shares b.
func DecodePacked(b []byte) (Packed, error) {
	n, k := binary.Uvarint(b)
	if k <= 0 || n > 1<<31 {
		return Packed{}, fmt.Errorf("flow: decoding Packed: %w", errCorrupt)
	}
	return Packed{Rows: int(n), Data: b[k:]}, nil
}
