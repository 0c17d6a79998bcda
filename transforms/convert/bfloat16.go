package convert

import (
	"encoding/binary"
	"fmt"
	"math"
	"strconv"
)

// BFloat16 (ClickHouse 24.11 and later).
//
// Accepted as for Float32 (float.go): a JSON number, rounded to the nearest BFloat16 value (ties to
// even), a string holding a number, "NaN", "Infinity", "-Infinity". The number is first read as a
// float64 and then rounded to BFloat16's 8 significant bits; since float64 has more than twice as
// many bits plus two, the double rounding gives the correctly rounded result.
// Errors: a finite value beyond BFloat16's range (about ±3.39e38), as for Float32.
//
// RowBinary: the upper 16 bits of the Float32 of the value, little-endian (RowBinary format docs,
// "BFloat16").

type bfloat16Encoder struct{}

func (bfloat16Encoder) encode(dst []byte, v value, c *Converter) ([]byte, error) {
	var f float64
	switch v.kind {
	case kindNumber:
		f, _ = strconv.ParseFloat(bytesString(v.raw), 64)
	case kindString:
		s, err := c.text(v)
		if err != nil {
			return dst, errValue(v, err.Error())
		}
		var ok bool
		if f, ok = specialFloat(s); !ok {
			if end, ok := numberEnd(s, 0); !ok || end != len(s) || len(s) == 0 {
				return dst, errValue(v, "is not a number; BFloat16 takes a number or one of \"NaN\", \"Infinity\", \"-Infinity\"")
			}
			f, _ = strconv.ParseFloat(bytesString(s), 64)
		}
	default:
		return dst, errValue(v, fmt.Sprintf("is %s; BFloat16 takes a number", v.kind))
	}
	b, ok := toBFloat16(f)
	if !ok {
		return dst, errValue(v, "is out of range for BFloat16")
	}
	return binary.LittleEndian.AppendUint16(dst, b), nil
}

// toBFloat16 rounds f to the nearest BFloat16 (ties to even); ok is false when a finite f rounds
// beyond the largest finite BFloat16.
func toBFloat16(f float64) (uint16, bool) {
	if math.IsNaN(f) {
		return 0x7fc0, true
	}
	if math.IsInf(f, 0) {
		return uint16(math.Float32bits(float32(f)) >> 16), true
	}
	// Round f to 8 significant bits in float64 first (exact), then narrow: the result is exact in
	// float32 and in BFloat16.
	frac, exp := math.Frexp(f) // f = frac × 2^exp, 0.5 ≤ |frac| < 1
	if frac == 0 {
		return uint16(math.Float32bits(float32(f)) >> 16), true
	}
	if exp < -133 { // below half the smallest BFloat16 subnormal, 2^-133: rounds to zero
		return uint16(math.Float32bits(float32(math.Copysign(0, f))) >> 16), true
	}
	bits := 8
	if exp < -125 { // subnormal in float32/BFloat16: fewer significant bits
		bits -= -125 - exp
	}
	scaled := math.RoundToEven(math.Ldexp(frac, bits))
	r := math.Ldexp(scaled, exp-bits)
	if math.IsInf(float64(float32(r)), 0) || math.Abs(r) > math.MaxFloat32 {
		return 0, false
	}
	return uint16(math.Float32bits(float32(r)) >> 16), true
}

func (bfloat16Encoder) size() int { return 2 }

// column decodes the upper 2 bytes of a Float32 into []float32 (each exactly a BFloat16 value).
func (bfloat16Encoder) column(wrap shape) Column {
	return fixedColumn(wrap, 2, func(b []byte) float32 {
		return math.Float32frombits(uint32(binary.LittleEndian.Uint16(b)) << 16)
	})
}
