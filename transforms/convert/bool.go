package convert

import "fmt"

// Bool.
//
// Accepted: JSON true and false; the numbers 0 and 1 (in any JSON spelling of those values, such
// as 1.0 or 1e0); the strings "true" and "false".
// Errors: other numbers (2, 0.5), other strings ("yes", "TRUE", "1"), arrays and objects.
//
// RowBinary: one byte, 0 or 1.

type boolEncoder struct{}

const boolRule = "Bool takes true, false, 0, 1, \"true\" or \"false\""

func (boolEncoder) encode(dst []byte, v value, c *Converter) ([]byte, error) {
	switch v.kind {
	case kindTrue:
		return append(dst, 1), nil
	case kindFalse:
		return append(dst, 0), nil
	case kindNumber:
		var buf [32]byte
		n := parseExact(v.raw, buf[:0])
		switch {
		case len(n.digits) == 0:
			return append(dst, 0), nil
		case !n.neg && n.exp == 0 && string(n.digits) == "1":
			return append(dst, 1), nil
		}
		return dst, errValue(v, "is neither 0 nor 1; "+boolRule)
	case kindString:
		s, err := c.text(v)
		if err != nil {
			return dst, errValue(v, err.Error())
		}
		switch string(s) {
		case "true":
			return append(dst, 1), nil
		case "false":
			return append(dst, 0), nil
		}
		return dst, errValue(v, "is not a boolean; "+boolRule)
	}
	return dst, errValue(v, fmt.Sprintf("is %s; %s", v.kind, boolRule))
}

func (boolEncoder) size() int { return 1 }

// column decodes one byte into []bool.
func (boolEncoder) column(wrap shape) Column {
	return fixedColumn(wrap, 1, func(b []byte) bool { return b[0] != 0 })
}
