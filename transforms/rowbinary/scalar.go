// The scalar types: the codec of each, which reads one value from its RowBinary bytes into the Go
// value that clickhouse-go's column of the type takes.

package rowbinary

import (
	"encoding/binary"
	"math"
	"math/big"
	"net/netip"
	"time"

	"github.com/google/uuid"
	"github.com/paulmach/orb"
	"github.com/shopspring/decimal"

	"github.com/ch-beam/pubsub-to-clickhouse/transforms/chtype"
)

// codec reads one scalar from the start of b: the value, the bytes it took, and false when b is
// too short.
type codec[T any] func(b []byte) (T, int, bool)

func fixedCodec[T any](width int, read func([]byte) T) codec[T] {
	return func(b []byte) (T, int, bool) {
		if len(b) < width {
			var zero T
			return zero, 0, false
		}
		return read(b), width, true
	}
}

func stringCodec(b []byte) (string, int, bool) {
	n, k := binary.Uvarint(b)
	if k <= 0 || n > uint64(len(b)-k) {
		return "", 0, false
	}
	return string(b[k : k+int(n)]), k + int(n), true
}

// scalarColumn returns the Column of a scalar type, plain (wrap ""), or wrapped in "Nullable" or
// "Array"; nil when t is not a scalar.
func scalarColumn(t *chtype.Type, wrap string) Column {
	switch t.Name {
	case "Int8":
		return wrapped(wrap, fixedCodec(1, func(b []byte) int8 { return int8(b[0]) }))
	case "Int16":
		return wrapped(wrap, fixedCodec(2, func(b []byte) int16 { return int16(binary.LittleEndian.Uint16(b)) }))
	case "Int32":
		return wrapped(wrap, fixedCodec(4, func(b []byte) int32 { return int32(binary.LittleEndian.Uint32(b)) }))
	case "Int64":
		return wrapped(wrap, fixedCodec(8, func(b []byte) int64 { return int64(binary.LittleEndian.Uint64(b)) }))
	case "UInt8":
		return wrapped(wrap, fixedCodec(1, func(b []byte) uint8 { return b[0] }))
	case "UInt16":
		return wrapped(wrap, fixedCodec(2, binary.LittleEndian.Uint16))
	case "UInt32":
		return wrapped(wrap, fixedCodec(4, binary.LittleEndian.Uint32))
	case "UInt64":
		return wrapped(wrap, fixedCodec(8, binary.LittleEndian.Uint64))
	case "Float32":
		return wrapped(wrap, fixedCodec(4, func(b []byte) float32 { return math.Float32frombits(binary.LittleEndian.Uint32(b)) }))
	case "Float64":
		return wrapped(wrap, fixedCodec(8, func(b []byte) float64 { return math.Float64frombits(binary.LittleEndian.Uint64(b)) }))
	case "Date":
		return wrapped(wrap, fixedCodec(2, readDate))
	case "DateTime":
		return wrapped(wrap, fixedCodec(4, readDateTime))
	case "String", "JSON":
		return wrapped(wrap, codec[string](stringCodec))
	case "Bool":
		return wrapped(wrap, fixedCodec(1, func(b []byte) bool { return b[0] != 0 }))
	case "Enum8":
		return wrapped(wrap, fixedCodec(1, func(b []byte) int8 { return int8(b[0]) }))
	case "Enum16":
		return wrapped(wrap, fixedCodec(2, func(b []byte) int16 { return int16(binary.LittleEndian.Uint16(b)) }))
	case "BFloat16":
		return wrapped(wrap, fixedCodec(2, func(b []byte) float32 {
			return math.Float32frombits(uint32(binary.LittleEndian.Uint16(b)) << 16)
		}))
	case "Date32":
		return wrapped(wrap, fixedCodec(4, func(b []byte) time.Time {
			return time.Unix(int64(int32(binary.LittleEndian.Uint32(b)))*86400, 0).UTC()
		}))
	case "DateTime64":
		p, ok := precisionArg(t)
		if !ok {
			return nil
		}
		return wrapped(wrap, fixedCodec(8, func(b []byte) time.Time {
			ticks, scale := int64(binary.LittleEndian.Uint64(b)), pow10(p)
			sec, frac := ticks/scale, ticks%scale
			if frac < 0 {
				sec, frac = sec-1, frac+scale
			}
			return time.Unix(sec, frac*pow10(9-p)).UTC()
		}))
	case "Time":
		return wrapped(wrap, fixedCodec(4, func(b []byte) time.Duration {
			return time.Duration(int32(binary.LittleEndian.Uint32(b))) * time.Second
		}))
	case "Time64":
		p, ok := precisionArg(t)
		if !ok {
			return nil
		}
		return wrapped(wrap, fixedCodec(8, func(b []byte) time.Duration {
			return time.Duration(int64(binary.LittleEndian.Uint64(b)) * pow10(9-p))
		}))
	case "Int128", "Int256", "UInt128", "UInt256":
		w, signed := fixedWidth(t), t.Name[0] == 'I'
		return wrappedPtr(wrap, fixedCodec(w, func(b []byte) *big.Int { return readBigInt(b[:w], signed) }))
	case "Decimal", "Decimal32", "Decimal64", "Decimal128", "Decimal256":
		p, s, ok := decimalParams(t)
		if !ok {
			return nil
		}
		w := decimalWidth(p)
		return wrapped(wrap, fixedCodec(w, func(b []byte) decimal.Decimal {
			switch w {
			case 4:
				return decimal.New(int64(int32(binary.LittleEndian.Uint32(b))), int32(-s))
			case 8:
				return decimal.New(int64(binary.LittleEndian.Uint64(b)), int32(-s))
			}
			return decimal.NewFromBigInt(readBigInt(b[:w], true), int32(-s))
		}))
	case "FixedString":
		n := fixedWidth(t)
		if n == 0 {
			return nil
		}
		return wrapped(wrap, fixedCodec(n, func(b []byte) string { return string(b[:n]) }))
	case "UUID":
		return wrapped(wrap, fixedCodec(16, func(b []byte) uuid.UUID {
			var u uuid.UUID
			for i := 0; i < 8; i++ {
				u[i], u[8+i] = b[7-i], b[15-i]
			}
			return u
		}))
	case "IPv4":
		return wrapped(wrap, fixedCodec(4, func(b []byte) netip.Addr {
			var a [4]byte
			binary.BigEndian.PutUint32(a[:], binary.LittleEndian.Uint32(b))
			return netip.AddrFrom4(a)
		}))
	case "IPv6":
		return wrapped(wrap, fixedCodec(16, func(b []byte) netip.Addr { return netip.AddrFrom16([16]byte(b[:16])) }))
	case "Point":
		return wrapped(wrap, fixedCodec(16, func(b []byte) orb.Point {
			return orb.Point{
				math.Float64frombits(binary.LittleEndian.Uint64(b)),
				math.Float64frombits(binary.LittleEndian.Uint64(b[8:])),
			}
		}))
	}
	return nil
}

func pow10(n int) int64 {
	p := int64(1)
	for ; n > 0; n-- {
		p *= 10
	}
	return p
}

// readBigInt reads a little-endian integer, two's complement when signed.
func readBigInt(b []byte, signed bool) *big.Int {
	be := make([]byte, len(b))
	for i := range b {
		be[len(b)-1-i] = b[i]
	}
	x := new(big.Int).SetBytes(be)
	if signed && len(b) > 0 && b[len(b)-1]&0x80 != 0 {
		x.Sub(x, new(big.Int).Lsh(big.NewInt(1), uint(len(b)*8)))
	}
	return x
}

func readDate(b []byte) time.Time {
	return time.Unix(int64(binary.LittleEndian.Uint16(b))*86400, 0).UTC()
}

func readDateTime(b []byte) time.Time {
	return time.Unix(int64(binary.LittleEndian.Uint32(b)), 0).UTC()
}
