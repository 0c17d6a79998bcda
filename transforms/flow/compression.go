package flow

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"

	"github.com/klauspost/compress/zstd"
)

// Compression is how the coder of Rows (EncodeRows, and Pack, which uses it) compresses a group
// of rows: the template's shuffleCompression parameter. It is what Dataflow's Streaming Engine
// carries through the batch stage's GroupByKey and keeps in its state, billed by the byte when
// the job is billed by data processed (docs/operations.md, "Cost per message"). Decoding needs no
// Compression: the encoding's format byte says which it is, so a pipeline reads groups of any,
// whatever its own (a job updated from one Compression to another reads the groups its state
// holds from before).
type Compression uint8

const (
	// MinLZ compresses with MinLZ (github.com/minio/minlz, block format, at its default level,
	// LevelFastest), S2's successor by the same author: about 0.29 of the demo's payload bytes
	// and 0.19 of the Wikipedia edits' at 1,000 rows a group, where S2 gives 0.32 and 0.20 (0.63
	// and 0.87 for a lone row, against 0.65 and 0.85), in about S2's time to compress and five
	// sixths of it to decompress (BenchmarkEncodeRows, BenchmarkUnpack). Its faster level,
	// LevelSuperFast, compresses a quarter faster, to more bytes than S2 below 1,000 rows (0.46
	// of the demo's at 10 rows, 0.82 for a lone row), which cost more on Dataflow's bill than
	// the CPU it saves. A group larger than MinLZ's largest block (minlz.MaxBlockSize, 8 MiB)
	// is compressed with S2 instead. The zero value, and the default.
	MinLZ Compression = iota
	// S2 compresses with S2 (github.com/klauspost/compress/s2, block format, its default and
	// fastest mode), the default before MinLZ; a release that reads no MinLZ reads it.
	S2
	// Zstd compresses with Zstandard (RFC 8878; github.com/klauspost/compress/zstd at its fastest
	// level, zstd.SpeedFastest, one frame a group without a checksum, after the uncompressed
	// length as a uvarint, since the frame header does not always give it): about 0.21 and
	// 0.15, for 2 to 2.5 times the CPU of S2 to compress a group of 1,000 rows (5 to 10 times
	// for a lone row: about 4 to 7 µs a group more) and about 1.2 times to unpack one
	// (BenchmarkEncodeRows, BenchmarkUnpack).
	Zstd
)

// compressionNames are the parameter's values, by Compression.
var compressionNames = [...]string{MinLZ: "minlz", S2: "s2", Zstd: "zstd"}

// CompressionNames returns the values ParseCompression takes, the default first.
func CompressionNames() []string { return compressionNames[:] }

// String returns c as the shuffleCompression parameter gives it: "minlz", "s2" or "zstd".
func (c Compression) String() string {
	if int(c) < len(compressionNames) {
		return compressionNames[c]
	}
	return fmt.Sprintf("Compression(%d)", uint8(c))
}

// ParseCompression returns the Compression a shuffleCompression value names: "minlz", "s2" or
// "zstd" (exactly, lower case), or "" for the default, MinLZ. Any other value is an error naming
// it and the values taken.
func ParseCompression(s string) (Compression, error) {
	if s == "" {
		return MinLZ, nil
	}
	for c, name := range compressionNames {
		if s == name {
			return Compression(c), nil
		}
	}
	return MinLZ, fmt.Errorf("%q is not a compression of the rows through the shuffle: give minlz, s2 or zstd", s)
}

// zstdEncoder and zstdDecoder are made on first use and shared: EncodeAll and DecodeAll may be
// called concurrently (each call takes one of the encoders or decoders they hold, GOMAXPROCS of
// each, and runs on the caller's goroutine). The encoders' window is 1 MiB and they keep less
// state (zstd.WithLowerEncoderMem): an encoder that has compressed a group of 1,000 demo rows
// then keeps about 1.5 MiB instead of 8.6, for the same bytes and time on the demo's and the
// Wikipedia edits' groups of 1,000 rows (measured 2026-12-04). The decoders decode no more than
// the length before the frame (zstd.WithDecodeAllCapLimit), so a frame whose header claims more
// is an error, not an allocation of what it claims.
var (
	zstdEncoder = sync.OnceValue(func() *zstd.Encoder {
		e, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderCRC(false),
			zstd.WithWindowSize(1<<20), zstd.WithLowerEncoderMem(true))
		if err != nil {
			panic(fmt.Sprintf("flow: making the zstd encoder: %v", err)) // only for invalid options
		}
		return e
	})
	zstdDecoder = sync.OnceValue(func() *zstd.Decoder {
		d, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(0), zstd.WithDecoderMaxMemory(maxZstdBytes),
			zstd.WithDecodeAllCapLimit(true))
		if err != nil {
			panic(fmt.Sprintf("flow: making the zstd decoder: %v", err))
		}
		return d
	})
)

// maxZstdBytes bounds the uncompressed length a zstd group may give: 4 GiB less a byte, the most
// S2's block format can give. A longer length is an error; a shorter one that is corrupt is
// allocated before the frame fails to fill it, as S2's decoded length is.
const maxZstdBytes = 1<<32 - 1

// zstdMagic starts a Zstandard frame (RFC 8878, section 3.1.1: 0xFD2FB528, little-endian).
var zstdMagic = []byte{0x28, 0xb5, 0x2f, 0xfd}

// appendZstd appends the zstd encoding of body to dst: its length as a uvarint, then one frame.
func appendZstd(dst, body []byte) []byte {
	return zstdEncoder().EncodeAll(body, binary.AppendUvarint(dst, uint64(len(body))))
}

// zstdLen returns the uncompressed length an encoding of appendZstd gives, and the frame after
// it; false when the length does not read or is above maxZstdBytes.
func zstdLen(b []byte) (n int, frame []byte, ok bool) {
	v, k := binary.Uvarint(b)
	if k <= 0 || v > maxZstdBytes {
		return 0, nil, false
	}
	return int(v), b[k:], true
}

// decodeZstd decodes an encoding of appendZstd into dst (appended to dst[:0]; a new buffer when
// it has not the room), which must then hold exactly the length it gives: a frame that holds
// more fails when it reaches the length, one that holds less after it is decoded.
func decodeZstd(dst, b []byte) ([]byte, error) {
	n, frame, ok := zstdLen(b)
	if !ok {
		return nil, errors.New("the zstd group's length does not read")
	}
	if !bytes.HasPrefix(frame, zstdMagic) {
		// A skippable frame, say, which klauspost/compress (v1.20.3) would also report on stderr.
		return nil, errors.New("the zstd group's frame does not start with zstd's magic number")
	}
	if cap(dst) < n {
		dst = make([]byte, 0, n)
	}
	plain, err := zstdDecoder().DecodeAll(frame, dst[:0:n])
	if err != nil {
		return nil, err
	}
	if len(plain) != n {
		return nil, fmt.Errorf("the zstd group holds %d bytes, its length says %d", len(plain), n)
	}
	return plain, nil
}
