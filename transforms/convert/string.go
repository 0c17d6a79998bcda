package convert

import (
	"encoding/binary"
	"math/bits"
	"slices"
)

// String.
//
// Accepted: a JSON string, stored as its text with escapes resolved ("" is an empty string, not
// NULL); any other JSON value is stored as its original text, compacted: the number 1.50 stays
// "1.50", true is "true", an object keeps its key order and its numbers' spelling, only the white
// space between tokens is removed ({"zeta": 1, "alpha": 2.50} becomes {"zeta":1,"alpha":2.50}).
// ClickHouse 18.16's own JSONEachRow rejects numbers, objects and arrays for String columns.
// Errors: a string with a \u escape of a lone UTF-16 surrogate (it has no UTF-8 form).

type stringEncoder struct{}

func (stringEncoder) encode(dst []byte, v value, c *Converter) ([]byte, error) {
	if v.kind == kindString {
		s, err := c.text(v)
		if err != nil {
			return dst, errValue(v, err.Error())
		}
		dst = appendUvarint(dst, len(s))
		return append(dst, s...), nil
	}
	if !v.spaced {
		dst = appendUvarint(dst, len(v.raw))
		return append(dst, v.raw...), nil
	}
	return appendCompact(dst, v.raw), nil
}

// appendCompact appends the RowBinary string of a scanned JSON value's text without the white
// space between its tokens (strings are copied as they are).
func appendCompact(dst []byte, raw []byte) []byte {
	n := compactLen(raw)
	dst = appendUvarint(dst, n)
	if n == len(raw) {
		return append(dst, raw...)
	}
	inString := false
	for i := 0; i < len(raw); i++ {
		ch := raw[i]
		switch {
		case inString:
			dst = append(dst, ch)
			if ch == '\\' {
				i++
				dst = append(dst, raw[i])
			} else if ch == '"' {
				inString = false
			}
		case isSpace(ch):
		default:
			dst = append(dst, ch)
			inString = ch == '"'
		}
	}
	return dst
}

// compactLen returns the length of raw without the white space between its tokens.
func compactLen(raw []byte) int {
	n := 0
	inString := false
	for i := 0; i < len(raw); i++ {
		ch := raw[i]
		switch {
		case inString:
			n++
			if ch == '\\' {
				i++
				n++
			} else if ch == '"' {
				inString = false
			}
		case isSpace(ch):
		default:
			n++
			inString = ch == '"'
		}
	}
	return n
}

// appendField appends a String column's RowBinaryWithDefaults (0, then the String) for the JSON
// string that starts at b[i], resolving its escapes as it scans it: what scanning the value and
// encode would give, in one pass. It returns the index after the string and whether it holds
// escapes; ok is false, with dst as it was, when the string is not well formed or holds a lone
// surrogate (scanning and encode say why).
func (stringEncoder) appendField(dst, b []byte, i int) (row []byte, end int, escaped, ok bool) {
	start := len(dst)
	// The text, at most len(b)-i bytes, goes after a length of one byte and moves on when the
	// length takes more.
	row = slices.Grow(dst, 2+len(b)-i+8)
	row = append(row, 0, 0)
	out := row[len(row):cap(row)]
	end, escaped, n, _ := unescape(out, b, i)
	if n < 0 {
		return dst, 0, false, false
	}
	row = row[:start+2+n]
	if k := uvarintLen(n); k > 1 {
		row = row[:start+1+k+n]
		copy(row[start+1+k:], row[start+2:start+2+n])
	}
	binary.PutUvarint(row[start+1:], uint64(n))
	return row, end, escaped, true
}

// uvarintLen returns the length of n's LEB128 encoding.
func uvarintLen(n int) int { return (bits.Len64(uint64(n)|1) + 6) / 7 }

func (stringEncoder) size() int { return 0 }

// column decodes a LEB128 length and the bytes into []string.
func (stringEncoder) column(wrap shape) Column { return stringColumnOf(wrap) }
