package convert

import (
	"encoding/binary"
	"fmt"
	"strconv"

	"github.com/ch-beam/pubsub-to-clickhouse/transforms/chtype"
)

// FixedString(N).
//
// Accepted as for String (string.go): a JSON string's text with its escapes resolved, or any other
// JSON value's compacted text, when it is at most N bytes long (UTF-8 bytes, not characters). A
// shorter value is padded with zero bytes to N, as ClickHouse pads it: "ab" into FixedString(4) is
// the bytes 'a' 'b' 0 0.
// Errors: a value longer than N bytes (nothing is cut), a string with a lone UTF-16 surrogate.
//
// RowBinary: exactly N bytes, no length prefix (RowBinary format docs, "FixedString"): the padding
// is written here, since the format has no shorter form.

type fixedStringEncoder struct {
	n    int
	name string
}

func newFixedStringEncoder(t *chtype.Type) (scalar, error) {
	if len(t.Args) != 1 {
		return nil, fmt.Errorf("%s: expected FixedString(N)", t)
	}
	n, err := strconv.Atoi(t.Args[0])
	if err != nil || n < 1 {
		return nil, fmt.Errorf("%s: N must be a positive number of bytes", t)
	}
	return fixedStringEncoder{n: n, name: fmt.Sprintf("FixedString(%d)", n)}, nil
}

func (e fixedStringEncoder) encode(dst []byte, v value, c *Converter) ([]byte, error) {
	var s []byte
	switch {
	case v.kind == kindString:
		var err error
		if s, err = c.text(v); err != nil {
			return dst, errValue(v, err.Error())
		}
	case !v.spaced:
		s = v.raw
	default:
		// appendCompact writes a length prefix first; keep only the text.
		tmp := appendCompact(c.scratch[:0], v.raw)
		_, k := binary.Uvarint(tmp)
		s = tmp[k:]
		c.scratch = tmp[:0]
	}
	if len(s) > e.n {
		return dst, errValue(v, fmt.Sprintf("is %d bytes long; %s holds at most %d bytes", len(s), e.name, e.n))
	}
	dst = append(dst, s...)
	for k := len(s); k < e.n; k++ {
		dst = append(dst, 0)
	}
	return dst, nil
}

func (e fixedStringEncoder) size() int { return e.n }

// column decodes exactly N bytes into []string (zero-padded, as stored).
func (e fixedStringEncoder) column(wrap shape) Column {
	n := e.n
	return fixedColumn(wrap, n, func(b []byte) string { return string(b[:n]) })
}
