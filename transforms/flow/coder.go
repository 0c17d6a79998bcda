package flow

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sync"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/klauspost/compress/s2"
	"github.com/minio/minlz"
	"google.golang.org/protobuf/encoding/protowire"
)

// The coders of Rows and Messages, registered with Beam: what a runner moves, and on Dataflow's
// Streaming Engine what it bills, is these bytes. Each field is written once, lengths as
// unsigned LEB128 varints (encoding/binary's Uvarint):
//
//	Rows       count, then each Row
//	Row        len(MessageID) MessageID, len(AckID) AckID, Schema (8 bytes, little-endian),
//	           attributes, len(Payload) Payload, original, metadata
//	Messages   count, then each Message
//	Message    len(ID) ID, len(AckID) AckID, PublishTimeMillis (zig-zag varint), attributes,
//	           len(Data) Data, original, len(OrderingKey) OrderingKey
//	original   0 when not Transformed, else len(Original)+1 and Original (the JavaScript UDF's input)
//	metadata   0 when PublishTimeMillis is 0 and OrderingKey empty, else 1, PublishTimeMillis
//	           (zig-zag varint), len(OrderingKey) OrderingKey
//	attributes count, then len(key) key, len(value) value for each, by key order
//
// so a row costs its payload and ids plus about 13 bytes (EncodedRowsSize). Decoded payloads
// share the element's buffer, which Beam gives to each decode afresh.
//
// Rows cross the batch stage's GroupByKey and state, which Dataflow's Streaming Engine bills by
// the byte (packed, see Pack, in the count and combined modes; as a Rows element in the
// fixed-window mode), so they go compressed: EncodeRows writes one format byte, then rowsPlain
// and the bytes above, or, when that is smaller, rowsMinLZ and those bytes compressed with MinLZ
// (github.com/minio/minlz, block format), rowsS2 and those bytes compressed with S2
// (github.com/klauspost/compress/s2, block format; Snappy's format extended), or rowsZstd and
// one Zstandard frame of them, as the element's Compression says. JSON rows of one stream share
// their field names and much of their values, so an element of many rows compresses to a
// fraction of its payloads: with MinLZ about 0.31 of the demo's events and 0.22 of the
// Wikipedia edits at 100 rows an element, 0.63 and 0.87 for a lone row; with S2 0.33, 0.24,
// 0.65 and 0.85; with zstd about 0.21, 0.18, 0.50 and 0.72 (BenchmarkEncodeRows).
func init() {
	beam.RegisterCoder(reflect.TypeOf(Rows{}), EncodeRows, DecodeRows)
	beam.RegisterCoder(reflect.TypeOf(Messages{}), EncodeMessages, DecodeMessages)
}

// The format byte of an encoded Rows element.
const (
	rowsPlain = 0 // the rows as they are
	rowsS2    = 1 // the rows compressed with S2
	rowsZstd  = 2 // the rows compressed with zstd, one frame
	rowsMinLZ = 3 // the rows compressed with MinLZ
)

// minCompressBytes is the smallest encoding EncodeRows tries to compress.
const minCompressBytes = 128

// EncodeRows encodes rs in the format above: compressed as rs.Compression says when that is
// smaller.
func EncodeRows(rs Rows) []byte { return AppendRows(nil, rs) }

// AppendRows appends EncodeRows's encoding of rs to dst. The uncompressed form is written into a
// pooled buffer and compressed from there, so that an element of many rows costs one new buffer
// (the size of its compressed form) rather than three (docs/operations.md, "Cost per message").
func AppendRows(dst []byte, rs Rows) []byte {
	scratch := plainBuffers.Get().(*[]byte)
	defer putBuffer(&plainBuffers, scratch)
	body := appendRows(slices.Grow((*scratch)[:0], EncodedRowsSize(rs)), rs)
	*scratch = body
	if 1+len(body) >= minCompressBytes {
		// Into a pooled buffer, then copied: room for S2's bound (more than the uncompressed
		// size) in dst would be cleared whole, for a third of it to be kept; zstd would grow dst
		// by doubling.
		out := compressedBuffers.Get().(*[]byte)
		defer putBuffer(&compressedBuffers, out)
		format, compressed := byte(rowsS2), []byte(nil)
		switch rs.Compression {
		case Zstd:
			format, compressed = rowsZstd, appendZstd((*out)[:0], body)
			*out = compressed[:0] // the buffer EncodeAll grew, if it did, for the next element
		case MinLZ:
			if bound := minlz.MaxEncodedLen(len(body)); bound >= 0 {
				if cap(*out) < bound {
					*out = make([]byte, bound)
				}
				var err error
				if compressed, err = minlz.Encode((*out)[:cap(*out)], body, minlz.LevelFastest); err != nil {
					panic(fmt.Sprintf("flow: MinLZ refused a block of %d bytes within its bound: %v", len(body), err))
				}
				format = rowsMinLZ
				break
			}
			// Larger than a MinLZ block can be (8 MiB): S2's block format takes up to 4 GiB.
			fallthrough
		default:
			if bound := s2.MaxEncodedLen(len(body)); cap(*out) < bound {
				*out = make([]byte, bound)
			}
			compressed = s2.Encode((*out)[:cap(*out)], body)
		}
		if len(compressed) < len(body) {
			return append(append(dst, format), compressed...)
		}
	}
	return append(append(dst, rowsPlain), body...)
}

// plainBuffers hold the uncompressed form of an element, and compressedBuffers its compressed
// form, while AppendRows compresses it.
var plainBuffers, compressedBuffers = sync.Pool{New: func() any { return new([]byte) }}, sync.Pool{New: func() any { return new([]byte) }}

// maxPooledBytes bounds the buffers the pools keep: those of the parse stage's usual largest
// elements (1,000 rows or about 4 MiB of payloads) are kept, and reused by the next element,
// while one of an element of larger rows is left to the garbage collector. The pools then hold
// up to two buffers of 8 MiB for each element being encoded at the same time (a worker that
// encodes many bundles at once holds more), and sync.Pool drops them over two garbage
// collections once unused. Clearing and faulting in a fresh
// buffer of megabytes costs more than filling it: encoding an element of 1,000 demo rows took
// 1.9 ms instead of 2.6 (BenchmarkEncodeRows), and the demo's binary process, prism apart, 2.61
// instead of 2.73 CPU-s per 100,000 messages (medians of six rounds, 2026-12-03), for 30 to 50
// MiB more peak memory (the pools' buffers count as live, and the heap may grow by twice as much
// again, GOGC=200), against a bound of 256 KiB, which kept only the buffers of small elements.
const maxPooledBytes = 8 << 20

func putBuffer(pool *sync.Pool, b *[]byte) {
	if cap(*b) <= maxPooledBytes {
		pool.Put(b)
	}
}

// appendRows appends rs, uncompressed, to b.
func appendRows(b []byte, rs Rows) []byte {
	b = binary.AppendUvarint(b, uint64(len(rs.Rows)))
	var attrs attributesWriter
	for i := range rs.Rows {
		r := &rs.Rows[i]
		b = appendString(b, r.MessageID)
		b = appendString(b, r.AckID)
		b = binary.LittleEndian.AppendUint64(b, r.Schema)
		b = attrs.append(b, r.Attributes)
		b = appendBytes(b, r.Payload)
		b = appendOriginal(b, r.Transformed, r.Original)
		if r.PublishTimeMillis == 0 && r.OrderingKey == "" {
			b = append(b, 0)
		} else {
			b = appendString(binary.AppendVarint(append(b, 1), r.PublishTimeMillis), r.OrderingKey)
		}
	}
	return b
}

// EncodedRowsSize is the length of rs's uncompressed encoding (the format byte included), or a
// little more: EncodeRows's length before compression.
func EncodedRowsSize(rs Rows) int {
	n := 1 + binary.MaxVarintLen64
	var attrs attributesWriter
	for i := range rs.Rows {
		r := &rs.Rows[i]
		n += 7*binary.MaxVarintLen32 + 8 + binary.MaxVarintLen64 + len(r.MessageID) + len(r.AckID) + len(r.Payload) + len(r.Original) + len(r.OrderingKey) + attrs.size(r.Attributes)
	}
	return n
}

// RowBytes is the size of r in the uncompressed encoding of the rows that hold it (the format
// above), in bytes: its payload, original, message id, ack id, ordering key and attributes, each
// with its length, and the schema hash. This is the size the batch stage bounds a batch by
// (batchByteSize); it is the payload and about 20 to 100 bytes more, as the ids and attributes
// are long.
func RowBytes(r *Row) int {
	n := stringLen(len(r.MessageID)) + stringLen(len(r.AckID)) + 8 + stringLen(len(r.Payload))
	n += uvarintLen(uint64(len(r.Attributes)))
	for k, v := range r.Attributes {
		n += stringLen(len(k)) + stringLen(len(v))
	}
	if r.Transformed {
		n += uvarintLen(uint64(len(r.Original))+1) + len(r.Original)
	} else {
		n++
	}
	if r.PublishTimeMillis == 0 && r.OrderingKey == "" {
		n++
	} else {
		n += 1 + varintLen(r.PublishTimeMillis) + stringLen(len(r.OrderingKey))
	}
	return n
}

// stringLen is the encoded size of a string or bytes of n bytes: its length, then the bytes.
func stringLen(n int) int { return uvarintLen(uint64(n)) + n }

// uvarintLen and varintLen are the sizes of binary.AppendUvarint's and binary.AppendVarint's
// encodings (LEB128; the signed one zig-zag, as Protocol Buffers' sint64).
func uvarintLen(v uint64) int { return protowire.SizeVarint(v) }
func varintLen(v int64) int   { return protowire.SizeVarint(protowire.EncodeZigZag(v)) }

// DecodeRows decodes what EncodeRows wrote; the payloads share b, or the buffer b decompresses
// into.
func DecodeRows(b []byte) (Rows, error) {
	return decodeRows(b, nil)
}

// decodedLen returns the length of the rows' uncompressed encoding (the format byte apart), read
// from the header of b, an encoding of EncodeRows: MinLZ's and S2's block formats start with it
// (minlz.IsMinLZ, at most 8 MiB, and only for a MinLZ block: minlz.DecodedLen would also read an
// S2 header, of up to 4 GiB; s2.DecodedLen), and so does a zstd group (appendZstd); false when it
// does not read.
func decodedLen(b []byte) (int, bool) {
	if len(b) == 0 {
		return 0, false
	}
	switch b[0] {
	case rowsPlain:
		return len(b) - 1, true
	case rowsS2:
		n, err := s2.DecodedLen(b[1:])
		return n, err == nil
	case rowsZstd:
		n, _, ok := zstdLen(b[1:])
		return n, ok
	case rowsMinLZ:
		if ok, n, err := minlz.IsMinLZ(b[1:]); ok && err == nil {
			return n, true
		}
	}
	return 0, false
}

// roomFor returns *buf at its capacity, made larger first when it has not room for n bytes (see
// decodeRows); nil when buf is nil, for the decompressor to make a buffer.
func roomFor(buf *[]byte, n int) []byte {
	if buf == nil {
		return nil
	}
	if cap(*buf) < n {
		*buf = make([]byte, n+n/4)
	}
	return (*buf)[:cap(*buf)]
}

// decodeRows is DecodeRows that decompresses into *buf, made larger first when it is too small
// (by a quarter more than needed: groups differ in size, and a buffer made just large enough for
// one would be too small for every larger one after it, so that most decodes in a pipeline
// allocated a new buffer although the one pooled was about their size); a nil buf decompresses
// into a new buffer.
func decodeRows(b []byte, buf *[]byte) (Rows, error) {
	if len(b) == 0 {
		return Rows{}, fmt.Errorf("flow: decoding Rows: %w", errCorrupt)
	}
	switch b[0] {
	case rowsPlain:
		b = b[1:]
	case rowsS2, rowsZstd, rowsMinLZ:
		decompress := s2.Decode
		switch b[0] {
		case rowsZstd:
			decompress = decodeZstd
		case rowsMinLZ:
			// decodedLen took the header for a MinLZ block's, which minlz.Decode then decodes
			// as one (it would also take a Snappy or S2 block, which no encoder here writes
			// after rowsMinLZ).
			decompress = minlz.Decode
		}
		n, ok := decodedLen(b)
		if !ok {
			return Rows{}, fmt.Errorf("flow: decoding Rows: %w: the length of the compressed rows does not read", errCorrupt)
		}
		plain, err := decompress(roomFor(buf, n), b[1:])
		if err != nil {
			return Rows{}, fmt.Errorf("flow: decoding Rows: %w: %v", errCorrupt, err)
		}
		b = plain
	default:
		return Rows{}, fmt.Errorf("flow: decoding Rows: %w: format %d", errCorrupt, b[0])
	}
	d := decoder{b: b}
	n := d.count()
	rs := Rows{Rows: make([]Row, 0, n)}
	// The ids of every row go into one string, cut afterwards: one allocation, not two a row.
	var (
		ids  []byte
		ends = make([]int, 0, 2*n)
	)
	for ; n > 0 && d.err == nil; n-- {
		var r Row
		ids = append(ids, d.bytes()...)
		ends = append(ends, len(ids))
		ids = append(ids, d.bytes()...)
		ends = append(ends, len(ids))
		r.Schema = d.uint64()
		r.Attributes = d.attributes()
		r.Payload = d.bytes()
		r.Transformed, r.Original = d.original()
		switch d.uvarint() {
		case 0:
		case 1:
			r.PublishTimeMillis = d.varint()
			r.OrderingKey = d.string()
		default:
			d.err = errCorrupt
		}
		rs.Rows = append(rs.Rows, r)
	}
	if all, start := string(ids), 0; d.err == nil {
		for i := range rs.Rows {
			r := &rs.Rows[i]
			r.MessageID, r.AckID, start = all[start:ends[2*i]], all[ends[2*i]:ends[2*i+1]], ends[2*i+1]
		}
	}
	return rs, d.done("Rows")
}

// EncodeMessages encodes ms in the format above.
func EncodeMessages(ms Messages) []byte {
	n := binary.MaxVarintLen64
	var attrs attributesWriter
	for i := range ms.Messages {
		m := &ms.Messages[i]
		n += 5*binary.MaxVarintLen32 + binary.MaxVarintLen64 + len(m.ID) + len(m.AckID) + len(m.Data) + len(m.Original) + len(m.OrderingKey) + attrs.size(m.Attributes)
	}
	b := binary.AppendUvarint(make([]byte, 0, n), uint64(len(ms.Messages)))
	attrs = attributesWriter{}
	for i := range ms.Messages {
		m := &ms.Messages[i]
		b = appendString(b, m.ID)
		b = appendString(b, m.AckID)
		b = binary.AppendVarint(b, m.PublishTimeMillis)
		b = attrs.append(b, m.Attributes)
		b = appendBytes(b, m.Data)
		b = appendOriginal(b, m.Transformed, m.Original)
		b = appendString(b, m.OrderingKey)
	}
	return b
}

// DecodeMessages decodes what EncodeMessages wrote; the payloads share b.
func DecodeMessages(b []byte) (Messages, error) {
	d := decoder{b: b}
	n := d.count()
	ms := Messages{Messages: make([]Message, 0, n)}
	for ; n > 0 && d.err == nil; n-- {
		var m Message
		m.ID = d.string()
		m.AckID = d.string()
		m.PublishTimeMillis = d.varint()
		m.Attributes = d.attributes()
		m.Data = d.bytes()
		m.Transformed, m.Original = d.original()
		m.OrderingKey = d.string()
		ms.Messages = append(ms.Messages, m)
	}
	return ms, d.done("Messages")
}

func appendString(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

func appendBytes(b, p []byte) []byte {
	return append(binary.AppendUvarint(b, uint64(len(p))), p...)
}

func appendOriginal(b []byte, transformed bool, original []byte) []byte {
	if !transformed {
		return append(b, 0)
	}
	return append(binary.AppendUvarint(b, uint64(len(original))+1), original...)
}

func appendAttributes(b []byte, attrs map[string]string) []byte {
	b = binary.AppendUvarint(b, uint64(len(attrs)))
	if len(attrs) == 0 {
		return b
	}
	var small [8]string // the keys of most messages' attributes, without an allocation
	keys := small[:0]
	for k := range attrs {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		b = appendString(appendString(b, k), attrs[k])
	}
	return b
}

func attributesSize(attrs map[string]string) int {
	n := binary.MaxVarintLen32
	for k, v := range attrs {
		n += 2*binary.MaxVarintLen32 + len(k) + len(v)
	}
	return n
}

// attributesWriter writes the attributes of the rows or messages of one element: when one's map
// is the same map as the one before it (not merely equal), its encoding and size are the ones
// before it, taken again. The messages of one Pull response that carry the same attributes share
// one map (pubsubio.DecodePullResponse), as do the rows of one group (decoder.attributes).
type attributesWriter struct {
	last       map[string]string
	start, end int               // the last map's encoding, in the buffer being written
	sized      map[string]string // the last map given to size, and its attributesSize
	sizedBytes int
}

// append appends attrs's encoding (appendAttributes) to b, the buffer every earlier call of
// append was given, as it grows.
func (w *attributesWriter) append(b []byte, attrs map[string]string) []byte {
	if len(attrs) > 0 && sameMap(attrs, w.last) {
		return append(b, b[w.start:w.end]...)
	}
	w.start = len(b)
	b = appendAttributes(b, attrs)
	w.end, w.last = len(b), attrs
	return b
}

// size returns attributesSize(attrs).
func (w *attributesWriter) size(attrs map[string]string) int {
	if len(attrs) == 0 || !sameMap(attrs, w.sized) {
		w.sizedBytes, w.sized = attributesSize(attrs), attrs
	}
	return w.sizedBytes
}

// sameMap reports whether a and b are one map (not maps of equal contents); false when a is nil.
func sameMap(a, b map[string]string) bool {
	return a != nil && reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer()
}

var errCorrupt = errors.New("corrupt element")

// decoder reads the format above; the first error sticks.
type decoder struct {
	b   []byte
	err error

	// The encoding of the last attributes decoded and their map, which the next element's
	// attributes share when they are encoded the same (attributes).
	lastAttributes []byte
	lastMap        map[string]string
}

func (d *decoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, k := binary.Uvarint(d.b)
	if k <= 0 {
		d.err = errCorrupt
		return 0
	}
	d.b = d.b[k:]
	return v
}

func (d *decoder) varint() int64 {
	if d.err != nil {
		return 0
	}
	v, k := binary.Varint(d.b)
	if k <= 0 {
		d.err = errCorrupt
		return 0
	}
	d.b = d.b[k:]
	return v
}

// count reads a count of items that take at least a byte each.
func (d *decoder) count() int {
	n := d.uvarint()
	if n > uint64(len(d.b)) {
		d.err = errCorrupt
		return 0
	}
	return int(n)
}

func (d *decoder) uint64() uint64 {
	if d.err != nil || len(d.b) < 8 {
		d.err = errCorrupt
		return 0
	}
	v := binary.LittleEndian.Uint64(d.b)
	d.b = d.b[8:]
	return v
}

func (d *decoder) bytes() []byte {
	n := d.count()
	if d.err != nil {
		return nil
	}
	p := d.b[:n:n]
	d.b = d.b[n:]
	return p
}

func (d *decoder) original() (transformed bool, original []byte) {
	n := d.uvarint()
	if n == 0 || d.err != nil {
		return false, nil
	}
	if n-1 > uint64(len(d.b)) {
		d.err = errCorrupt
		return false, nil
	}
	original = d.b[: n-1 : n-1]
	d.b = d.b[n-1:]
	return true, original
}

func (d *decoder) string() string { return string(d.bytes()) }

// attributes decodes a map of attributes. Elements of one encoding whose attributes are encoded
// the same (a publisher that sets the same attributes on every message) share one map: the
// encoding is self-delimiting, so bytes that start with the last attributes' encoding hold the
// same attributes. Making a map for each row was about 2% of the demo's binary process, prism
// apart (docs/cost-history.md). The maps are never written to once decoded (Row.Attributes).
func (d *decoder) attributes() map[string]string {
	if d.lastMap != nil && bytes.HasPrefix(d.b, d.lastAttributes) {
		d.b = d.b[len(d.lastAttributes):]
		return d.lastMap
	}
	start := d.b
	n := d.count()
	if n == 0 || d.err != nil {
		return nil
	}
	m := make(map[string]string, n)
	for ; n > 0 && d.err == nil; n-- {
		k := d.string()
		m[k] = d.string()
	}
	if d.err == nil {
		d.lastAttributes, d.lastMap = start[:len(start)-len(d.b)], m
	}
	return m
}

func (d *decoder) done(what string) error {
	if d.err == nil && len(d.b) != 0 {
		d.err = errCorrupt
	}
	if d.err != nil {
		return fmt.Errorf("flow: decoding %s: %w", what, d.err)
	}
	return nil
}
