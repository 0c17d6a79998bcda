package convert

import (
	"fmt"

	"github.com/google/uuid"
)

// UUID.
//
// Accepted: a JSON string in the canonical 8-4-4-4-12 form of RFC 9562, 32 hexadecimal digits
// (either letter case) in groups separated by hyphens: "123e4567-e89b-12d3-a456-426614174000".
// Errors: other spellings (no hyphens, braces, "urn:uuid:" prefix, surrounding space), non-strings.
//
// RowBinary: ClickHouse stores a UUID as two little-endian UInt64 halves, so the 16 bytes of the
// canonical text are written as bytes 7…0 then 15…8 (RowBinary format docs, "UUID").

type uuidEncoder struct{}

const uuidRule = `is not a UUID; UUID takes a string of 32 hexadecimal digits as 8-4-4-4-12, e.g. "123e4567-e89b-12d3-a456-426614174000"`

func (uuidEncoder) encode(dst []byte, v value, c *Converter) ([]byte, error) {
	if v.kind != kindString {
		return dst, errValue(v, fmt.Sprintf("is %s; %s", v.kind, uuidRule[len("is not a UUID; "):]))
	}
	s, err := c.text(v)
	if err != nil {
		return dst, errValue(v, err.Error())
	}
	u, ok := parseUUID(s)
	if !ok {
		return dst, errValue(v, uuidRule)
	}
	for i := 7; i >= 0; i-- {
		dst = append(dst, u[i])
	}
	for i := 15; i >= 8; i-- {
		dst = append(dst, u[i])
	}
	return dst, nil
}

// parseUUID reads the canonical 8-4-4-4-12 text form.
func parseUUID(s []byte) (u [16]byte, ok bool) {
	if len(s) != 36 || s[8] != '-' || s[13] != '-' || s[18] != '-' || s[23] != '-' {
		return u, false
	}
	var hex [32]byte
	k := 0
	for i, ch := range s {
		if i == 8 || i == 13 || i == 18 || i == 23 {
			continue
		}
		hex[k] = ch
		k++
	}
	for i := range u {
		hi, ok1 := hexVal(hex[2*i])
		lo, ok2 := hexVal(hex[2*i+1])
		if !ok1 || !ok2 {
			return u, false
		}
		u[i] = hi<<4 | lo
	}
	return u, true
}

func hexVal(c byte) (byte, bool) {
	switch {
	case c >= '0' && c <= '9':
		return c - '0', true
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10, true
	case c >= 'A' && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

func (uuidEncoder) size() int { return 16 }

// column decodes two little-endian UInt64 halves into []uuid.UUID (github.com/google/uuid).
func (uuidEncoder) column(wrap shape) Column {
	return fixedColumn(wrap, 16, func(b []byte) uuid.UUID {
		var u uuid.UUID
		for i := 0; i < 8; i++ {
			u[i], u[8+i] = b[7-i], b[15-i]
		}
		return u
	})
}
