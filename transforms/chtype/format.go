// The printing of a Type as its canonical type name (Type.String), as system.columns spells it.

package chtype

import (
	"strconv"
	"strings"
)

// String renders the type back in ClickHouse's canonical spelling, e.g. "Array(Nullable(DateTime('UTC')))",
// "Tuple(a UInt8, b String)", "Enum8('a' = 1, 'b' = 2)", "Decimal(10, 2)"; Parse(t.String()) equals t.
//
// Arguments are separated by ", ". Strings are single-quoted with backslash
// escapes, as ClickHouse's quoteString writes them. Element names that are not
// plain identifiers are backquoted. Raw Args (JSON, Dynamic, aggregate functions)
// are written as they are. For other families, Elems are written before Args;
// DateTime time zones, the time zone of DateTime64 and Object's argument are
// always quoted, other Args only when they are not a bare number-like literal.
// A nil *Type renders as "".
func (t *Type) String() string {
	var b strings.Builder
	t.write(&b)
	return b.String()
}

func (t *Type) write(b *strings.Builder) {
	if t == nil {
		return
	}
	b.WriteString(t.Name)
	switch t.Name {
	case "Enum8", "Enum16", "Enum":
		if len(t.Enum) == 0 {
			break
		}
		b.WriteByte('(')
		for i, v := range t.Enum {
			if i > 0 {
				b.WriteString(", ")
			}
			writeQuoted(b, v.Name, '\'')
			b.WriteString(" = ")
			b.WriteString(strconv.Itoa(int(v.Value)))
		}
		b.WriteByte(')')
		return
	case "JSON", "Dynamic", "AggregateFunction", "SimpleAggregateFunction":
		if len(t.Args)+len(t.Elems) == 0 {
			return
		}
		b.WriteByte('(')
		for i, a := range t.Args {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(a)
		}
		for i, e := range t.Elems {
			if i > 0 || len(t.Args) > 0 {
				b.WriteString(", ")
			}
			e.write(b)
		}
		b.WriteByte(')')
		return
	case "Tuple", "Nested":
		b.WriteByte('(')
		for i, e := range t.Elems {
			if i > 0 {
				b.WriteString(", ")
			}
			if i < len(t.FieldNames) {
				if isIdent(t.FieldNames[i]) {
					b.WriteString(t.FieldNames[i])
				} else {
					writeQuoted(b, t.FieldNames[i], '`')
				}
				b.WriteByte(' ')
			}
			e.write(b)
		}
		b.WriteByte(')')
		return
	}
	if len(t.Elems)+len(t.Args) == 0 {
		return
	}
	b.WriteByte('(')
	for i, e := range t.Elems {
		if i > 0 {
			b.WriteString(", ")
		}
		e.write(b)
	}
	for i, a := range t.Args {
		if i > 0 || len(t.Elems) > 0 {
			b.WriteString(", ")
		}
		quote := !isBare(a)
		switch t.Name {
		case "DateTime", "Object":
			quote = true
		case "DateTime64", "Time64":
			quote = quote || i > 0
		}
		if quote {
			writeQuoted(b, a, '\'')
		} else {
			b.WriteString(a)
		}
	}
	b.WriteByte(')')
}

// writeQuoted writes s between quote characters q, escaping like ClickHouse's
// writeAnyQuotedString: backslash, the quote character and control characters
// get backslash escapes; everything else is written as is.
func writeQuoted(b *strings.Builder, s string, q byte) {
	const hex = "0123456789ABCDEF"
	b.WriteByte(q)
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '\\', q:
			b.WriteByte('\\')
			b.WriteByte(c)
		case '\a':
			b.WriteString(`\a`)
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		case '\v':
			b.WriteString(`\v`)
		case 0:
			b.WriteString(`\0`)
		default:
			if c < 0x20 || c == 0x7f {
				b.WriteString(`\x`)
				b.WriteByte(hex[c>>4])
				b.WriteByte(hex[c&0xf])
			} else {
				b.WriteByte(c)
			}
		}
	}
	b.WriteByte(q)
}

// QuoteString returns s as a ClickHouse string literal: in single quotes, with the escapes of
// ClickHouse's writeAnyQuotedString (backslash, the quote and control characters).
func QuoteString(s string) string {
	var b strings.Builder
	writeQuoted(&b, s, '\'')
	return b.String()
}
