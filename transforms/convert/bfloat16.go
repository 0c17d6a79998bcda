package convert

import (
	"encoding/binary"
	"fmt"
	"math"
)

// BFloat16 (ClickHouse 24.11 and later).
//
// Accepted as for Float32 (float.go): a JSON number, a string holding a number, "NaN",
// "Infinity", "-Infinity". The value becomes what ClickHouse makes of the same text: the nearest
// Float32 (ties to even), then that Float32's upper 16 bits (ClickHouse's Float32ToBFloat16,
// base/base/BFloat16.h), which cuts the rest of the significand towards zero: 0.1 is
// 0.099609375, 1.01171875 is 1.0078125, 3.4e38 is the largest BFloat16, about 3.3895e38. Checked
// against the ClickHouse 26 engine's own JSONEachRow (integration_test/modern_types_test.go).
// Errors: a finite literal beyond Float32's range (3.5e38, 1e400) is out of range, never
// infinity (ClickHouse would store inf).
//
// RowBinary: those 16 bits, little-endian (RowBinary format docs, "BFloat16").

type bfloat16Encoder struct{}

func (bfloat16Encoder) encode(dst []byte, v value, c *Converter) ([]byte, error) {
	var text []byte
	switch v.kind {
	case kindNumber:
		text = v.raw
	case kindString:
		s, err := c.text(v)
		if err != nil {
			return dst, errValue(v, err.Error())
		}
		if f, ok := specialFloat(s); ok {
			return binary.LittleEndian.AppendUint16(dst, uint16(float32Bits(f)>>16)), nil
		}
		if end, ok := numberEnd(s, 0); !ok || end != len(s) || len(s) == 0 {
			return dst, errValue(v, notANumber(v, `BFloat16 takes a number or one of "NaN", "Infinity", "-Infinity"`))
		}
		text = s
	default:
		return dst, errValue(v, fmt.Sprintf("is %s; BFloat16 takes a number", v.kind))
	}
	f, err := ParseFloat(text, 32)
	if err != nil && math.IsInf(f, 0) {
		return dst, errValue(v, "is out of range for BFloat16")
	}
	return binary.LittleEndian.AppendUint16(dst, uint16(float32Bits(f)>>16)), nil
}

func (bfloat16Encoder) size() int { return 2 }

// column decodes the upper 2 bytes of a Float32 into []float32 (each exactly a BFloat16 value).
func (bfloat16Encoder) column(wrap shape) Column {
	return fixedColumn(wrap, 2, func(b []byte) float32 {
		return math.Float32frombits(uint32(binary.LittleEndian.Uint16(b)) << 16)
	})
}
