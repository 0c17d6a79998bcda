// The lexer of type names: the parser's position in the input, the character classes, and the
// readers of names, bare literals and quoted strings (ClickHouse's SQL literal rules).

package chtype

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/ch-beam/pubsub-to-clickhouse/transforms/text"
)

type parser struct {
	in    string
	pos   int
	depth int
}

func (p *parser) errorf(off int, format string, args ...any) error {
	return &parseError{input: p.in, offset: off, msg: fmt.Sprintf(format, args...)}
}

func (p *parser) eof() bool { return p.pos >= len(p.in) }

func (p *parser) missingClose() error { return p.errorf(len(p.in), `missing ")"`) }

// snippet quotes a short piece of the input at the current position, for error messages.
func (p *parser) snippet() string {
	if p.eof() {
		return "end of input"
	}
	s := p.in[p.pos:]
	if len(s) > 16 {
		return strconv.Quote(text.Prefix(s, 16)) + "..." // not half of a character
	}
	return strconv.Quote(s)
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'
}

func (p *parser) skipSpace() {
	for !p.eof() && isSpace(p.in[p.pos]) {
		p.pos++
	}
}

func trimSpace(s string) string {
	for len(s) > 0 && isSpace(s[0]) {
		s = s[1:]
	}
	for len(s) > 0 && isSpace(s[len(s)-1]) {
		s = s[:len(s)-1]
	}
	return s
}

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' }
func isDigit(c byte) bool  { return c >= '0' && c <= '9' }
func isWordChar(c byte) bool {
	return isLetter(c) || isDigit(c)
}

// isBareChar reports whether c can be part of an unquoted literal such as 10, -2 or 0.5.
func isBareChar(c byte) bool { return isWordChar(c) || c == '.' || c == '+' || c == '-' }

// isNumberStart reports whether c starts an unquoted literal rather than a type name.
func isNumberStart(c byte) bool { return isDigit(c) || c == '.' || c == '+' || c == '-' }

// isBare reports whether s is read back as one unquoted literal.
func isBare(s string) bool {
	if s == "" || !isNumberStart(s[0]) {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isBareChar(s[i]) {
			return false
		}
	}
	return true
}

// isIdent reports whether s is a plain identifier that needs no quoting.
func isIdent(s string) bool {
	if s == "" || !isLetter(s[0]) {
		return false
	}
	for i := 1; i < len(s); i++ {
		if !isWordChar(s[i]) {
			return false
		}
	}
	return true
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isDigit(s[i]) {
			return false
		}
	}
	return true
}

// ident reads a type family name: a letter or underscore, then letters, digits, underscores.
func (p *parser) ident() string {
	start := p.pos
	if p.eof() || !isLetter(p.in[p.pos]) {
		return ""
	}
	for !p.eof() && isWordChar(p.in[p.pos]) {
		p.pos++
	}
	return p.in[start:p.pos]
}

// word reads an unquoted element name: letters, digits and underscores.
func (p *parser) word() string {
	start := p.pos
	for !p.eof() && isWordChar(p.in[p.pos]) {
		p.pos++
	}
	return p.in[start:p.pos]
}

// bare reads an unquoted literal such as 3, -2 or 0.5.
func (p *parser) bare() string {
	start := p.pos
	for !p.eof() && isBareChar(p.in[p.pos]) {
		p.pos++
	}
	return p.in[start:p.pos]
}

// quoted reads a string enclosed in the quote character at the current position
// (', " or `) and returns its content with escapes resolved, following the
// ClickHouse lexer: a backslash escapes the next character (\b \f \n \r \t \0 \a
// \v \e and \xHH have their C meaning, any other character stands for itself),
// and a doubled quote character stands for one.
func (p *parser) quoted() (string, error) {
	start := p.pos
	q := p.in[p.pos]
	p.pos++
	var b strings.Builder
	for !p.eof() {
		c := p.in[p.pos]
		switch {
		case c == '\\':
			if p.pos+1 >= len(p.in) {
				p.pos = len(p.in)
				continue
			}
			e := p.in[p.pos+1]
			p.pos += 2
			switch e {
			case 'a':
				b.WriteByte('\a')
			case 'b':
				b.WriteByte('\b')
			case 'e':
				b.WriteByte(0x1b)
			case 'f':
				b.WriteByte('\f')
			case 'n':
				b.WriteByte('\n')
			case 'r':
				b.WriteByte('\r')
			case 't':
				b.WriteByte('\t')
			case 'v':
				b.WriteByte('\v')
			case '0':
				b.WriteByte(0)
			case 'x':
				if p.pos+2 <= len(p.in) {
					if v, err := strconv.ParseUint(p.in[p.pos:p.pos+2], 16, 8); err == nil {
						b.WriteByte(byte(v))
						p.pos += 2
						continue
					}
				}
				b.WriteByte('x')
			default:
				b.WriteByte(e)
			}
		case c == q:
			if p.pos+1 < len(p.in) && p.in[p.pos+1] == q {
				b.WriteByte(q)
				p.pos += 2
				continue
			}
			p.pos++
			return b.String(), nil
		default:
			b.WriteByte(c)
			p.pos++
		}
	}
	return "", p.errorf(start, "unterminated quoted string")
}

// ReadName reads a name at the start of s as ClickHouse's lexer does: a string literal or a
// quoted identifier ('x', `x` or "x", escapes resolved as quoted resolves them), or a bare one
// (letters, digits, underscores). It returns the name, what follows it, and whether s starts
// with one (an unterminated quote, or another character, does not). For clauses the server
// writes, such as a table engine's arguments in system.tables' engine_full.
func ReadName(s string) (name, rest string, ok bool) {
	p := &parser{in: s}
	if p.eof() {
		return "", s, false
	}
	switch p.in[0] {
	case '\'', '`', '"':
		name, err := p.quoted()
		if err != nil {
			return "", s, false
		}
		return name, p.in[p.pos:], true
	}
	name = p.word()
	return name, p.in[p.pos:], name != ""
}
