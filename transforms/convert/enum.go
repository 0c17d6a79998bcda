package convert

import (
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"

	"github.com/ch-beam/pubsub-to-clickhouse/transforms/chtype"
)

// Enum8, Enum16.
//
// Accepted: a JSON string that is one of the Enum's names, exactly (case-sensitive, escapes
// resolved); or a JSON number whose value is one of the Enum's numbers ("by number": 2, 2.0).
// A string is always a name, never read as a number, so an Enum with a name '1' stays unambiguous.
// Errors: an unknown name or number, listing the Enum's names and numbers; booleans, arrays,
// objects.
//
// Refused at start-up: an Enum with a name that ClickHouse writes with a backslash escape in the
// type ('it\'s', a name with a backslash or a control character) anywhere but as its last value:
// clickhouse-go v2.51.0 parses the type the server sends for the INSERT, and its parser panics on
// such a name followed by a shorter one (lib/column/enum.go keeps the positions of the escapes of
// earlier names). The server lists an Enum's values by number, so "last" is the largest number.
//
// RowBinary: the number as Int8 (Enum8) or little-endian Int16 (Enum16).

type enumEncoder struct {
	name    string // "Enum8" or "Enum16"
	width   int    // bytes: 1 (Enum8) or 2 (Enum16)
	byName  map[string]int16
	byValue map[int16]bool
	names   string // 'a' = 1, 'b' = 2
}

// maxEnumListed bounds how many of an Enum's names an error message lists.
const maxEnumListed = 50

// enumFamily is the family of Enum8 (width 1) or Enum16 (width 2).
func enumFamily(width int) *family {
	return scalarFamily(typeOnly(func(t *chtype.Type) (scalar, error) { return newEnumEncoder(t, width) }))
}

func newEnumEncoder(t *chtype.Type, width int) (scalar, error) {
	if len(t.Enum) == 0 {
		return nil, fmt.Errorf("%s has no values", t)
	}
	for _, ev := range t.Enum[:len(t.Enum)-1] {
		if strings.ContainsFunc(ev.Name, func(r rune) bool { return r == '\'' || r == '\\' || r < 0x20 || r == 0x7f }) {
			return nil, fmt.Errorf("the Enum name %s is written with a backslash escape in the type, and clickhouse-go v2.51.0's Enum parser (lib/column/enum.go) fails on such a name unless it is the last one; rename the value", quoteEnumName(ev.Name))
		}
	}
	e := enumEncoder{name: t.Name, width: width, byName: map[string]int16{}, byValue: map[int16]bool{}}
	var b strings.Builder
	for i, ev := range t.Enum {
		e.byName[ev.Name] = ev.Value
		e.byValue[ev.Value] = true
		switch {
		case i < maxEnumListed:
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(quoteEnumName(ev.Name))
			b.WriteString(" = ")
			b.WriteString(strconv.Itoa(int(ev.Value)))
		case i == maxEnumListed:
			fmt.Fprintf(&b, ", … (%d more)", len(t.Enum)-maxEnumListed)
		}
	}
	e.names = b.String()
	return e, nil
}

// quoteEnumName quotes a name as ClickHouse writes it in a type: 'it\'s'.
func quoteEnumName(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s) + "'"
}

func (e enumEncoder) put(dst []byte, n int16) []byte {
	if e.width == 1 {
		return append(dst, byte(n))
	}
	return append(dst, byte(n), byte(uint16(n)>>8))
}

func (e enumEncoder) encode(dst []byte, v value, c *Converter) ([]byte, error) {
	switch v.kind {
	case kindString:
		s, err := c.text(v)
		if err != nil {
			return dst, errValue(v, err.Error())
		}
		if n, ok := e.byName[string(s)]; ok {
			return e.put(dst, n), nil
		}
		return dst, errValue(v, fmt.Sprintf("is not a name of this %s; its names are %s", e.name, e.names))
	case kindNumber:
		neg, mag, whole, inRange := parseWhole(v.raw)
		if whole && inRange && mag <= 32768 {
			n := int64(mag)
			if neg {
				n = -n
			}
			if n >= -32768 && n <= 32767 && e.byValue[int16(n)] {
				return e.put(dst, int16(n)), nil
			}
		}
		return dst, errValue(v, fmt.Sprintf("is not a number of this %s; its names are %s", e.name, e.names))
	}
	return dst, errValue(v, fmt.Sprintf("is %s; %s takes one of its names or numbers: %s", v.kind, e.name, e.names))
}

func (e enumEncoder) size() int {
	if e.width == 1 {
		return 1
	}
	return 2
}

// column decodes the number into []int8 (Enum8) or []int16 (Enum16), which clickhouse-go's Enum
// columns take.
func (e enumEncoder) column(wrap shape) Column {
	if e.width == 1 {
		return fixedColumn(wrap, 1, func(b []byte) int8 { return int8(b[0]) })
	}
	return fixedColumn(wrap, 2, func(b []byte) int16 { return int16(binary.LittleEndian.Uint16(b)) })
}
