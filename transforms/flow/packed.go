package flow

import (
	"encoding/binary"
	"fmt"
	"reflect"
	"sync"
	"sync/atomic"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
)

// Packed is a Rows element encoded once (EncodeRows), with its row count beside the bytes. The
// batch stage keys, buffers in state and counts rows in this form: a Rows element would be
// decoded and encoded again at each step (and compressed again each time), the cost the
// profile of the batch stage showed (docs/cost-history.md).
type Packed struct {
	// Rows is how many rows Data holds; 0 for a heartbeat of the source.
	Rows int
	// Data is EncodeRows's encoding of the rows.
	Data []byte

	// encoded is what EncodePacked returns for p, when Pack or DecodePacked made p: its coder's
	// bytes are written once, with Data their tail (so p's fields are not to be changed).
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
func (p Packed) Unpack() (Rows, error) { return p.unpack(nil) }

// UnpackPooled is Unpack into a buffer kept in a pool: release gives it back, after which the
// rows' payloads and originals (which share it) must not be read. It spares a stage that
// decodes many groups the clearing and collecting of a new buffer of decompressed rows for
// each: decoding 1,000 demo rows then takes about half the time (BenchmarkUnpack). release is
// never nil; call it once.
func (p Packed) UnpackPooled() (rs Rows, release func(), err error) {
	buf := decodedBuffers.Get().(*[]byte)
	unreleased.Add(1)
	rs, err = p.unpack(buf)
	return rs, func() {
		unreleased.Add(-1)
		if poisonReleased.Load() {
			for i, b := 0, (*buf)[:cap(*buf)]; i < len(b); i++ {
				b[i] = 0xA5
			}
		}
		putBuffer(&decodedBuffers, buf)
	}, err
}

// unpack is Unpack decompressing into *buf (decodeRows).
func (p Packed) unpack(buf *[]byte) (Rows, error) {
	if p.Rows == 0 && len(p.Data) == 0 {
		return Rows{}, nil
	}
	rs, err := decodeRows(p.Data, buf)
	if err == nil && len(rs.Rows) != p.Rows {
		err = fmt.Errorf("flow: decoding Packed: %w: %d rows, the count says %d", errCorrupt, len(rs.Rows), p.Rows)
	}
	return rs, err
}

// decodedBuffers hold the decompressed rows of the groups UnpackPooled decodes.
var decodedBuffers = sync.Pool{New: func() any { return new([]byte) }}

// poisonReleased has UnpackPooled's release overwrite the buffer it gives back (PoisonReleased).
var poisonReleased atomic.Bool

// unreleased counts the buffers UnpackPooled handed out and their release has not given back.
var unreleased atomic.Int64

// Unreleased returns how many buffers UnpackPooled handed out that have not been released, for
// the tests of a stage that decodes groups: 0 once its calls return, or the pool keeps nothing and
// every group decodes into a new buffer.
func Unreleased() int64 { return unreleased.Load() }

// PoisonReleased sets whether UnpackPooled's release overwrites the buffer it gives back with
// 0xA5 bytes, so that a payload read after its release is garbage, which fails the test that
// reads it, rather than bytes that are right until another group reuses the buffer. The tests
// that run pipelines set it (internal/flowtest.Main); a job does not.
func PoisonReleased(on bool) { poisonReleased.Store(on) }

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

// DecodePacked decodes what EncodePacked wrote; Data shares b, and EncodePacked of the result
// returns b itself (the batch stage puts most groups it receives into its state as they came:
// Beam's state writes them encoded again).
func DecodePacked(b []byte) (Packed, error) {
	n, k := binary.Uvarint(b)
	if k <= 0 || n > 1<<31 {
		return Packed{}, fmt.Errorf("flow: decoding Packed: %w", errCorrupt)
	}
	return Packed{Rows: int(n), Data: b[k:], encoded: b}, nil
}

// RowBytes is the size of the rows p holds, in bytes of their uncompressed encoding (EncodeRows):
// RowBytes of each row, summed. It is read from the encoding's header (decodedLen), without
// decoding the rows. It returns 0 for the zero Packed, and -1
// when the header does not read (p was not made by Pack, and its Unpack fails); a group not made
// by Pack whose header reads gets a size all the same, and fails when it is decoded.
func (p Packed) RowBytes() int {
	if p.Rows == 0 && len(p.Data) == 0 {
		return 0
	}
	body, ok := decodedLen(p.Data)
	if !ok {
		return -1
	}
	if n := body - uvarintLen(uint64(p.Rows)); n >= 0 {
		return n
	}
	return -1
}
