package convert

import (
	"encoding/binary"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unsafe"
)

// Floats: Float32, Float64.
//
// Accepted: a JSON number, rounded to the nearest value of the column's type as IEEE 754 does
// (0.1 into Float32 is 0.1f; 1e-400 underflows to 0); a string holding a number in JSON's syntax;
// the strings "NaN", "Infinity", "-Infinity" (also "+Infinity", "inf", "-inf", "-NaN", any letter
// case), as Java's Double.valueOf and ClickHouse's own text formats read them. A NaN is stored as
// ClickHouse stores one it parses: the quiet NaN with no payload, its sign from the text
// (Float64 0x7FF8000000000000, "-NaN" 0xFFF8000000000000; Float32 0x7FC00000, 0xFFC00000).
// Errors: a finite literal beyond the type's range (3.5e38 into Float32, 1e400 into Float64) is an
// error, never infinity; booleans, other strings, arrays and objects.

type floatEncoder struct {
	bits int // 32 or 64
}

func (e floatEncoder) name() string { return fmt.Sprintf("Float%d", e.bits) }

func (e floatEncoder) encode(dst []byte, v value, c *Converter) ([]byte, error) {
	var f float64
	switch v.kind {
	case kindNumber:
		var err error
		if f, err = ParseFloat(v.raw, e.bits); err != nil && math.IsInf(f, 0) {
			return dst, errValue(v, fmt.Sprintf("is out of range for %s", e.name()))
		}
	case kindString:
		s, err := c.text(v)
		if err != nil {
			return dst, errValue(v, err.Error())
		}
		var ok bool
		if f, ok = specialFloat(s); !ok {
			if end, ok := numberEnd(s, 0); !ok || end != len(s) || len(s) == 0 {
				return dst, errValue(v, notANumber(v, fmt.Sprintf("%s takes a number or one of \"NaN\", \"Infinity\", \"-Infinity\"", e.name())))
			}
			if f, err = ParseFloat(s, e.bits); err != nil && math.IsInf(f, 0) {
				return dst, errValue(v, fmt.Sprintf("is out of range for %s", e.name()))
			}
		}
	default:
		return dst, errValue(v, fmt.Sprintf("is %s; %s takes a number", v.kind, e.name()))
	}
	if e.bits == 32 {
		return binary.LittleEndian.AppendUint32(dst, float32Bits(f)), nil
	}
	return binary.LittleEndian.AppendUint64(dst, math.Float64bits(f)), nil
}

// ParseFloat is strconv.ParseFloat (bits 32 or 64) of text, with its errors (*strconv.NumError:
// ErrRange with ±Inf beyond the type's range). A number of JSON's grammar (RFC 8259, section 6)
// of more than 800 bytes is first written again as its significant digits with one before the
// decimal point and an exponent (parseExact): strconv keeps 800 digits of a number's integer
// part and then misplaces its decimal point, so that 1 followed by 800 zeros and e-800, which
// is 1, read as 0.1, and 1 followed by 20000 zeros and e-19690, beyond Float64, as 0. Any other
// text goes to strconv as it is.
func ParseFloat(text []byte, bits int) (float64, error) {
	if len(text) <= 800 {
		return strconv.ParseFloat(bytesString(text), bits)
	}
	if end, ok := numberEnd(text, 0); !ok || end != len(text) {
		return strconv.ParseFloat(bytesString(text), bits)
	}
	n := parseExact(text, nil)
	var b []byte
	if n.neg {
		b = append(b, '-')
	}
	switch len(n.digits) {
	case 0:
		b = append(b, '0')
	case 1:
		b = append(b, n.digits[0])
	default:
		b = append(append(b, n.digits[0], '.'), n.digits[1:]...)
	}
	b = strconv.AppendInt(append(b, 'e'), int64(n.exp+len(n.digits)-1), 10)
	return strconv.ParseFloat(bytesString(b), bits)
}

// float32Bits returns the bits of f as a Float32: rounded to the nearest (ties to even), a NaN
// as the quiet NaN with no payload and f's sign (what specialFloat gives, spelled out rather than
// left to the CPU's conversion).
func float32Bits(f float64) uint32 {
	if math.IsNaN(f) {
		return 0x7fc00000 | uint32(math.Float64bits(f)>>63)<<31
	}
	return math.Float32bits(float32(f))
}

// quietNaN is the NaN ClickHouse stores for the text "nan": the quiet NaN with no payload
// (std::numeric_limits<double>::quiet_NaN()), not Go's math.NaN(), whose payload is 1.
const quietNaN = 0x7ff8000000000000

// specialFloat reads the spelled-out non-finite values.
func specialFloat(s []byte) (float64, bool) {
	if len(s) < 3 || len(s) > len("-infinity") {
		return 0, false
	}
	t := strings.ToLower(string(s))
	sign := 1
	if t != "" && (t[0] == '-' || t[0] == '+') {
		if t[0] == '-' {
			sign = -1
		}
		t = t[1:]
	}
	switch t {
	case "nan":
		if sign < 0 {
			return math.Float64frombits(quietNaN | 1<<63), true
		}
		return math.Float64frombits(quietNaN), true
	case "infinity", "inf":
		return math.Inf(sign), true
	}
	return 0, false
}

// bytesString views b as a string without copying, for parsers that do not keep their input.
func bytesString(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}

func (e floatEncoder) size() int { return e.bits / 8 }

// column decodes IEEE 754 into []float32 or []float64.
func (e floatEncoder) column(wrap shape) Column {
	if e.bits == 32 {
		return fixedColumn(wrap, 4, func(b []byte) float32 { return math.Float32frombits(binary.LittleEndian.Uint32(b)) })
	}
	return fixedColumn(wrap, 8, func(b []byte) float64 { return math.Float64frombits(binary.LittleEndian.Uint64(b)) })
}
