package convert

import (
	"encoding/binary"
	"fmt"
	"math/big"
	"strconv"
	"strings"
	"time"

	"github.com/shopspring/decimal"

	"github.com/ch-beam/pubsub-to-clickhouse/transforms/chtype"
)

// Decimal(P, S), Decimal32(S), Decimal64(S), Decimal128(S), Decimal256(S).
//
// Accepted: a JSON number, or a string holding one in JSON's number syntax, read exactly from its
// text with integer arithmetic, never through float64: 12.34, "12.34", -0.5, 1e2, "1.5E-1".
// Digits beyond the scale S are accepted only when they are zeros (1.2300 into Decimal(10, 2) is
// 1.23): a non-zero digit there is an error, since rounding or cutting it would change the value.
// A value that needs more than P digits (more than P - S before the point) is out of range.
// Errors: booleans, other strings ("", "1,5", "NaN"), arrays and objects.
//
// RowBinary: the value × 10^S as a little-endian two's-complement integer of 4 bytes (P ≤ 9),
// 8 (P ≤ 18), 16 (P ≤ 38) or 32 (P ≤ 76), as ClickHouse's RowBinary format documents for
// Decimal32, Decimal64, Decimal128 and Decimal256.

// maxExponent bounds the exponents the number parser keeps: a payload cannot hold more digits than
// this, so a larger exponent is out of range (or zero) for every type.
const maxExponent = 100_000_000

// exactNumber is the value of a JSON number's text, ±digits × 10^exp, with digits free of leading
// and trailing zeros (empty for zero).
type exactNumber struct {
	neg    bool
	digits []byte
	exp    int
}

// parseExact reads a text that follows JSON's number grammar. The digits are appended to buf.
func parseExact(text []byte, buf []byte) exactNumber {
	var n exactNumber
	i := 0
	if text[0] == '-' {
		n.neg = true
		i++
	}
	digits := buf[:0]
	for ; i < len(text) && text[i] >= '0' && text[i] <= '9'; i++ {
		digits = append(digits, text[i])
	}
	if i < len(text) && text[i] == '.' {
		for i++; i < len(text) && text[i] >= '0' && text[i] <= '9'; i++ {
			digits = append(digits, text[i])
			n.exp--
		}
	}
	if i < len(text) && (text[i] == 'e' || text[i] == 'E') {
		i++
		expNeg := false
		if text[i] == '+' || text[i] == '-' {
			expNeg = text[i] == '-'
			i++
		}
		e := 0
		for ; i < len(text); i++ {
			if e < maxExponent {
				e = e*10 + int(text[i]-'0')
			}
		}
		if expNeg {
			e = -e
		}
		n.exp += e
	}
	first := 0
	for first < len(digits) && digits[first] == '0' {
		first++
	}
	digits = digits[first:]
	for len(digits) > 0 && digits[len(digits)-1] == '0' {
		digits = digits[:len(digits)-1]
		n.exp++
	}
	if len(digits) == 0 {
		n.exp = 0
	}
	n.digits = digits
	return n
}

// bigInt returns digits × 10^shift with the number's sign; shift ≥ 0.
func (n exactNumber) bigInt(shift int) *big.Int {
	v := new(big.Int)
	if len(n.digits) > 0 {
		v.SetString(string(n.digits), 10)
	}
	if shift > 0 {
		v.Mul(v, new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(shift)), nil))
	}
	if n.neg {
		v.Neg(v)
	}
	return v
}

// numberText returns the text of a JSON number, or the content of a JSON string that holds one in
// JSON's number syntax; ok is false for a string that does not. v must be a number or a string.
func numberText(v value, c *Converter) (text []byte, ok bool, err error) {
	if v.kind == kindNumber {
		return v.raw, true, nil
	}
	s, err := c.text(v)
	if err != nil {
		return nil, false, errValue(v, err.Error())
	}
	if end, ok := numberEnd(s, 0); !ok || end != len(s) {
		return nil, false, nil
	}
	return s, true, nil
}

// appendTwos appends the little-endian two's-complement form of x in width bytes; x must fit.
func appendTwos(dst []byte, x *big.Int, width int) []byte {
	var buf [32]byte
	b := buf[:width]
	if x.Sign() >= 0 {
		x.FillBytes(b)
	} else {
		m := new(big.Int).Lsh(big.NewInt(1), uint(width*8))
		m.Add(m, x)
		m.FillBytes(b)
	}
	for i := width - 1; i >= 0; i-- {
		dst = append(dst, b[i])
	}
	return dst
}

type decimalEncoder struct {
	name      string // "Decimal(P, S)"
	precision int
	scale     int
	width     int // bytes: 4, 8, 16 or 32
	rangeText string
}

// decimalFamily is the family of Decimal(P, S) and Decimal(P) (precision 0), or of DecimalN(S)
// of the given precision (Decimal32: 9, Decimal64: 18, Decimal128: 38, Decimal256: 76).
func decimalFamily(precision int) *family {
	return scalarFamily(func(t *chtype.Type, _ *time.Location) (scalar, error) {
		return newDecimalEncoder(t, precision)
	}).holdsIDs(decimalHoldsIDs)
}

// newDecimalEncoder reads the precision and scale of Decimal(P, S) or Decimal(P) (precision 0),
// or the scale of DecimalN(S) of the given precision.
func newDecimalEncoder(t *chtype.Type, precision int) (scalar, error) {
	atoi := func(s string) (int, error) {
		n, err := strconv.Atoi(s)
		if err != nil {
			return 0, fmt.Errorf("%s: %q is not a number", t, s)
		}
		return n, nil
	}
	p, s := precision, 0
	var err error
	if precision == 0 {
		switch len(t.Args) {
		case 2:
			if s, err = atoi(t.Args[1]); err != nil {
				return nil, err
			}
			fallthrough
		case 1:
			if p, err = atoi(t.Args[0]); err != nil {
				return nil, err
			}
		default:
			return nil, fmt.Errorf("%s: expected Decimal(P, S)", t)
		}
	} else {
		if len(t.Args) != 1 {
			return nil, fmt.Errorf("%s: expected %s(S)", t, t.Name)
		}
		if s, err = atoi(t.Args[0]); err != nil {
			return nil, err
		}
	}
	if p < 1 || p > 76 || s < 0 || s > p {
		return nil, fmt.Errorf("%s: the precision must be 1 to 76 and the scale 0 to the precision", t)
	}
	e := decimalEncoder{name: fmt.Sprintf("Decimal(%d, %d)", p, s), precision: p, scale: s}
	switch {
	case p <= 9:
		e.width = 4
	case p <= 18:
		e.width = 8
	case p <= 38:
		e.width = 16
	default:
		e.width = 32
	}
	limit := strings.Repeat("9", p-s)
	if limit == "" {
		limit = "0"
	}
	if s > 0 {
		limit += "." + strings.Repeat("9", s)
	}
	e.rangeText = fmt.Sprintf("is out of range for %s (-%s to %s)", e.name, limit, limit)
	return e, nil
}

func (e decimalEncoder) encode(dst []byte, v value, c *Converter) ([]byte, error) {
	if v.kind != kindNumber && v.kind != kindString {
		return dst, errValue(v, fmt.Sprintf("is %s; %s takes a number or a string holding one", v.kind, e.name))
	}
	text, ok, err := numberText(v, c)
	if err != nil {
		return dst, err
	}
	if !ok {
		return dst, errValue(v, notANumber(v, fmt.Sprintf("%s takes a number or a string holding one", e.name)))
	}
	var buf [80]byte
	n := parseExact(text, buf[:0])
	shift := n.exp + e.scale // unscaled value = digits × 10^shift
	switch {
	case shift < 0:
		return dst, errValue(v, fmt.Sprintf("has more digits after the decimal point than the scale of %s (%d); rounding would change the value", e.name, e.scale))
	case len(n.digits)+shift > e.precision:
		return dst, errValue(v, e.rangeText)
	}
	if e.width <= 8 { // at most 18 digits: fits an int64
		var u int64
		for _, d := range n.digits {
			u = u*10 + int64(d-'0')
		}
		for k := 0; k < shift; k++ {
			u *= 10
		}
		if n.neg {
			u = -u
		}
		if e.width == 4 {
			return binary.LittleEndian.AppendUint32(dst, uint32(int32(u))), nil
		}
		return binary.LittleEndian.AppendUint64(dst, uint64(u)), nil
	}
	return appendTwos(dst, n.bigInt(shift), e.width), nil
}

func (e decimalEncoder) size() int { return e.width }

// column decodes the value × 10^S into []decimal.Decimal (github.com/shopspring/decimal) with
// exponent -S.
func (e decimalEncoder) column(wrap shape) Column {
	w, exp := e.width, int32(-e.scale)
	return fixedColumn(wrap, w, func(b []byte) decimal.Decimal {
		switch w {
		case 4:
			return decimal.New(int64(int32(binary.LittleEndian.Uint32(b))), exp)
		case 8:
			return decimal.New(int64(binary.LittleEndian.Uint64(b)), exp)
		}
		return decimal.NewFromBigInt(readBigInt(b[:w], true), exp)
	})
}
