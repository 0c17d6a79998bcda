package convert

import (
	"encoding/binary"
	"fmt"
	"math"
	"time"

	"github.com/ch-beam/pubsub-to-clickhouse/transforms/chtype"
)

// Integers: Int8…Int64, UInt8…UInt64.
//
// Accepted: a JSON number, or a string holding one in JSON's number syntax, whose value is a whole
// number within the column's range: 42, -7, "42", 1e3, 42.0, 1.5e1. The value is computed from the
// text with integer arithmetic, never through float64, so 9007199254740993 and
// 18446744073709551615 are kept exactly. JSON true and false are 1 and 0.
// Errors: a fraction (2.5), a value outside the range (300 into UInt8, -1 into UInt16: nothing
// wraps), an empty or non-numeric string ("", "42abc", " 42", "0x1F"), an array or object.

type intEncoder struct {
	name   string
	signed bool
	bytes  int
	max    uint64 // largest magnitude of a positive value
	minMag uint64 // largest magnitude of a negative value (0 for unsigned)
	// columnOf returns the Column of the type's values (scalar.column).
	columnOf func(wrap shape) Column
}

// intFamily is the family of the integer type of bytes bytes whose values clickhouse-go takes
// as T, read by read from little-endian two's complement: Int8…Int64 (signed, by the name),
// UInt8…UInt64.
func intFamily[T any](bytes int, read func([]byte) T) *family {
	columnOf := func(wrap shape) Column { return fixedColumn(wrap, bytes, read) }
	return scalarFamily(func(t *chtype.Type, _ *time.Location) (scalar, error) {
		return newIntEncoder(t.Name, bytes, columnOf), nil
	}).holdsIDs(intHoldsIDs)
}

func newIntEncoder(name string, bytes int, columnOf func(wrap shape) Column) *intEncoder {
	e := &intEncoder{name: name, bytes: bytes, columnOf: columnOf}
	bits := uint(e.bytes * 8)
	if name[0] == 'I' {
		e.signed = true
		e.max = 1<<(bits-1) - 1
		e.minMag = 1 << (bits - 1)
	} else {
		e.max = math.MaxUint64 >> (64 - bits)
	}
	return e
}

func (e *intEncoder) rangeRule() string {
	if e.signed {
		return fmt.Sprintf("is out of range for %s (%d to %d)", e.name, -int64(e.minMag-1)-1, e.max)
	}
	return fmt.Sprintf("is out of range for %s (0 to %d)", e.name, e.max)
}

func (e *intEncoder) encode(dst []byte, v value, c *Converter) ([]byte, error) {
	var text []byte
	switch v.kind {
	case kindNumber:
		text = v.raw
	case kindString:
		s, ok, err := numberText(v, c)
		if err != nil {
			return dst, err
		}
		if !ok {
			return dst, notAnInteger(v, e.name)
		}
		text = s
	case kindTrue:
		return e.put(dst, 1), nil
	case kindFalse:
		return e.put(dst, 0), nil
	default:
		return dst, errValue(v, fmt.Sprintf("is %s; %s takes an integer", v.kind, e.name))
	}
	neg, mag, whole, inRange := parseWhole(text)
	switch {
	case !whole:
		return dst, errValue(v, fmt.Sprintf("is not a whole number; %s takes an integer", e.name))
	case !inRange:
		return dst, errValue(v, e.rangeRule())
	}
	switch {
	case neg && mag == 0:
		return e.put(dst, 0), nil
	case neg && mag > e.minMag, !neg && mag > e.max:
		return dst, errValue(v, e.rangeRule())
	case neg:
		return e.put(dst, -mag), nil // two's complement of the magnitude
	default:
		return e.put(dst, mag), nil
	}
}

// put appends the low e.bytes bytes of u, little-endian (RowBinary).
func (e *intEncoder) put(dst []byte, u uint64) []byte {
	switch e.bytes {
	case 1:
		return append(dst, byte(u))
	case 2:
		return binary.LittleEndian.AppendUint16(dst, uint16(u))
	case 4:
		return binary.LittleEndian.AppendUint32(dst, uint32(u))
	default:
		return binary.LittleEndian.AppendUint64(dst, u)
	}
}

// parseWhole reads a JSON number's text (already known to follow the grammar) as a whole number:
// its sign and magnitude. whole is false when the number has a fractional part, inRange false when
// its magnitude is beyond 2^64-1.
func parseWhole(text []byte) (neg bool, mag uint64, whole, inRange bool) {
	i := 0
	if text[0] == '-' {
		neg = true
		i++
	}
	// Most numbers are integers of a few digits: up to 19 digits are below 10^19 < 2^64.
	for k := i; k < len(text) && k-i < 19 && text[k] >= '0' && text[k] <= '9'; k++ {
		mag = mag*10 + uint64(text[k]-'0')
		if k+1 == len(text) {
			return neg, mag, true, true
		}
	}
	mag = 0
	intStart := i
	for i < len(text) && text[i] >= '0' && text[i] <= '9' {
		i++
	}
	intDigits := text[intStart:i]
	var fracDigits []byte
	if i < len(text) && text[i] == '.' {
		i++
		fs := i
		for i < len(text) && text[i] >= '0' && text[i] <= '9' {
			i++
		}
		fracDigits = text[fs:i]
	}
	exp := 0
	if i < len(text) && (text[i] == 'e' || text[i] == 'E') {
		i++
		expNeg := false
		if text[i] == '+' || text[i] == '-' {
			expNeg = text[i] == '-'
			i++
		}
		for ; i < len(text); i++ {
			if exp < maxExponent { // beyond this, any non-zero mantissa is out of range or a fraction
				exp = exp*10 + int(text[i]-'0')
			}
		}
		if expNeg {
			exp = -exp
		}
	}
	// The value is digits × 10^(exp - len(fracDigits)), digits = intDigits followed by fracDigits.
	digit := func(k int) byte {
		if k < len(intDigits) {
			return intDigits[k]
		}
		return fracDigits[k-len(intDigits)]
	}
	n := len(intDigits) + len(fracDigits)
	first := 0
	for first < n && digit(first) == '0' {
		first++
	}
	if first == n {
		return neg, 0, true, true
	}
	scale := exp - len(fracDigits)
	last := n // digits[first:last] are the significant digits kept
	if scale < 0 {
		if -scale > n-first {
			return neg, 0, false, false
		}
		for k := n + scale; k < n; k++ {
			if digit(k) != '0' {
				return neg, 0, false, false
			}
		}
		last = n + scale
		scale = 0
	}
	if last-first+scale > 20 {
		return neg, 0, true, false
	}
	for k := first; k < last+scale; k++ {
		d := uint64(0)
		if k < last {
			d = uint64(digit(k) - '0')
		}
		if mag > (math.MaxUint64-d)/10 {
			return neg, 0, true, false
		}
		mag = mag*10 + d
	}
	return neg, mag, true, true
}

func (e *intEncoder) size() int { return e.bytes }

// column decodes little-endian two's complement into clickhouse-go's []int8…[]int64, []uint8…[]uint64.
func (e *intEncoder) column(wrap shape) Column { return e.columnOf(wrap) }

// notAnInteger is the error of a string that holds no number, into the integer type name (an Int,
// UInt or their 128- and 256-bit kinds). The string "true" or "false" is said to be a string: the
// type takes the JSON booleans, without quotes.
func notAnInteger(v value, name string) error {
	if b := string(v.raw); b == `"true"` || b == `"false"` {
		return errValue(v, fmt.Sprintf("is a string, not the JSON boolean %s; %s takes an integer, a string holding one, or the JSON booleans true and false (without quotes)",
			b[1:len(b)-1], name))
	}
	return errValue(v, notANumber(v, fmt.Sprintf("%s takes an integer, a string holding one, true or false", name)))
}
