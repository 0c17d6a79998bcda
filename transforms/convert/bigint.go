package convert

import (
	"fmt"
	"math/big"
	"time"

	"github.com/ch-beam/pubsub-to-clickhouse/transforms/chtype"
)

// Big integers: Int128, Int256, UInt128, UInt256.
//
// Accepted as the other integers (int.go): a JSON number, or a string holding one in JSON's number
// syntax, whose value is a whole number within the column's range, computed exactly from the text
// with big.Int arithmetic: 170141183460469231731687303715884105727, "-1", 1e30, 42.0. JSON true
// and false are 1 and 0.
// Errors: a fraction, a value outside the range (nothing wraps), other strings, arrays, objects.
//
// RowBinary: little-endian two's complement in 16 (…128) or 32 (…256) bytes.

type bigIntEncoder struct {
	name      string
	width     int // bytes
	min, max  *big.Int
	maxDigits int // decimal digits of the largest magnitude
}

// bigIntFamily is the family of the big integer type of width bytes: Int128, Int256 (signed, by
// the name), UInt128, UInt256. Each holds every Pub/Sub message id.
func bigIntFamily(width int) *family {
	return scalarFamily(func(t *chtype.Type, _ *time.Location) (scalar, error) {
		return newBigIntEncoder(t.Name, width), nil
	}).holdsIDs(alwaysHoldsIDs)
}

func newBigIntEncoder(name string, width int) bigIntEncoder {
	e := bigIntEncoder{name: name, width: width}
	bits := uint(e.width * 8)
	one := big.NewInt(1)
	if name[0] == 'I' {
		e.max = new(big.Int).Sub(new(big.Int).Lsh(one, bits-1), one)
		e.min = new(big.Int).Neg(new(big.Int).Lsh(one, bits-1))
	} else {
		e.max = new(big.Int).Sub(new(big.Int).Lsh(one, bits), one)
		e.min = new(big.Int)
	}
	e.maxDigits = len(e.max.String())
	return e
}

func (e bigIntEncoder) rangeRule() string {
	return fmt.Sprintf("is out of range for %s (%s to %s)", e.name, e.min, e.max)
}

func (e bigIntEncoder) encode(dst []byte, v value, c *Converter) ([]byte, error) {
	switch v.kind {
	case kindTrue:
		return appendTwos(dst, big.NewInt(1), e.width), nil
	case kindFalse:
		return appendTwos(dst, new(big.Int), e.width), nil
	case kindNumber, kindString:
	default:
		return dst, errValue(v, fmt.Sprintf("is %s; %s takes an integer", v.kind, e.name))
	}
	text, ok, err := numberText(v, c)
	if err != nil {
		return dst, err
	}
	if !ok {
		return dst, notAnInteger(v, e.name)
	}
	var buf [96]byte
	n := parseExact(text, buf[:0])
	switch {
	case n.exp < 0:
		return dst, errValue(v, fmt.Sprintf("is not a whole number; %s takes an integer", e.name))
	case len(n.digits)+n.exp > e.maxDigits:
		return dst, errValue(v, e.rangeRule())
	}
	x := n.bigInt(n.exp)
	if x.Cmp(e.min) < 0 || x.Cmp(e.max) > 0 {
		return dst, errValue(v, e.rangeRule())
	}
	return appendTwos(dst, x, e.width), nil
}

func (e bigIntEncoder) size() int { return e.width }

// column decodes little-endian (two's complement when signed) into []*big.Int, which is also
// clickhouse-go's Nullable form, with nil for NULL.
func (e bigIntEncoder) column(wrap shape) Column {
	w, signed := e.width, e.name[0] == 'I'
	return wrappedPtr(wrap, fixedCodec(w, func(b []byte) *big.Int { return readBigInt(b[:w], signed) }))
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
