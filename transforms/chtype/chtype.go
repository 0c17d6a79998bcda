// Package chtype parses ClickHouse data type names, as system.columns prints them, into a tree.
//
// The input is the canonical spelling that ClickHouse writes into system.columns.type
// (and returns from toTypeName or DESCRIBE TABLE). The families and their arguments
// follow the ClickHouse data type reference, https://clickhouse.com/docs/sql-reference/data-types,
// and in particular the pages on Nullable, LowCardinality, Array, Map, Tuple, Nested,
// Enum, DateTime, DateTime64, Decimal, FixedString, Variant, Dynamic, JSON/Object,
// AggregateFunction and SimpleAggregateFunction. Quoted strings use the ClickHouse
// SQL literal rules (https://clickhouse.com/docs/sql-reference/syntax#string):
// backslash escapes (\', \\, \n, \t, \0, \xHH, ...) or a doubled quote character.
//
// Every parsed type is a *Type. Which fields are filled depends on the family:
//
//	Int32, String, UUID, IPv4, Bool, Date32, Point, Nothing, JSON, Dynamic, ...
//	                                      Name only
//	Nullable(T), LowCardinality(T), Array(T)
//	                                      Elems = [T]
//	Map(K, V)                             Elems = [K, V]
//	Tuple(T1, T2)                         Elems = [T1, T2], FieldNames = nil
//	Tuple(a T1, b T2), Nested(a T1, b T2) Elems = [T1, T2], FieldNames = ["a", "b"]
//	Variant(T1, T2)                       Elems = [T1, T2]
//	DateTime('UTC')                       Args = ["UTC"]
//	DateTime64(3, 'UTC')                  Args = ["3", "UTC"]
//	Decimal(10, 2), Decimal32(4)          Args = ["10", "2"], Args = ["4"]
//	FixedString(16)                       Args = ["16"]
//	Object('json')                        Args = ["json"]
//	Enum8('a' = 1, 'b' = -2), Enum16(...) Enum = [{"a", 1}, {"b", -2}]
//	JSON(max_dynamic_paths=10, a.b UInt32, SKIP x)
//	                                      Args = ["max_dynamic_paths=10", "a.b UInt32", "SKIP x"]
//	Dynamic(max_types=10)                 Args = ["max_types=10"]
//	SimpleAggregateFunction(sum, UInt64)  Args = ["sum"], Elems = [UInt64]
//	AggregateFunction(uniq, String)       Args = ["uniq"], Elems = [String]
//	AggregateFunction(quantiles(0.5, 0.9), UInt64)
//	                                      Args = ["quantiles(0.5, 0.9)"], Elems = [UInt64]
//	AggregateFunction(1, sumMap, Array(UInt8), Array(UInt64))
//	                                      Args = ["1", "sumMap"], Elems = [Array(UInt8), Array(UInt64)]
//
// The arguments of JSON and Dynamic, and the function of AggregateFunction and
// SimpleAggregateFunction, are kept as raw text: one entry per top-level
// comma-separated part, trimmed of surrounding white space, quotes left in place.
// For a versioned AggregateFunction the version comes first, so the function is
// always the last entry of Args.
//
// Any other family with parentheses, including ones this package does not know
// (for example QBit(Float32, 8)), is read generically: an argument that is a type
// goes to Elems, a number or a single-quoted string goes to Args (quotes removed).
package chtype

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Type is one node of a parsed ClickHouse type.
type Type struct {
	// Name is the type family name as ClickHouse spells it: "Int32", "String", "Nullable",
	// "LowCardinality", "Array", "Map", "Tuple", "Nested", "DateTime", "DateTime64", "Decimal",
	// "Decimal32", "FixedString", "Enum8", "Enum16", "Object", "JSON", "Variant", "Dynamic", "SimpleAggregateFunction", "AggregateFunction", ...
	Name string
	// Elems are the type arguments: one for Nullable, LowCardinality, Array; key and value for Map;
	// the elements for Tuple, Nested and Variant. For SimpleAggregateFunction(f, T): Elems = [T], Args = [f].
	Elems []*Type
	// FieldNames holds the element names of a named Tuple or of Nested, parallel to Elems; nil for unnamed tuples.
	FieldNames []string
	// Args are the non-type parameters, in order, as literal text with string quotes removed and
	// escapes resolved: DateTime('UTC') -> ["UTC"]; DateTime64(3, 'UTC') -> ["3", "UTC"];
	// FixedString(16) -> ["16"]; Decimal(10, 2) -> ["10", "2"]; Object('json') -> ["json"].
	Args []string
	// Enum holds the values of Enum8/Enum16 in declaration order.
	Enum []EnumValue
}

// EnumValue is one name = number pair of an Enum8 or Enum16.
type EnumValue struct {
	Name  string
	Value int16
}

// maxDepth bounds the nesting of types, like ClickHouse's max_parser_depth (default 1000).
const maxDepth = 1000

// parseError is the error returned by Parse.
type parseError struct {
	input  string
	offset int
	msg    string
}

func (e *parseError) Error() string {
	return fmt.Sprintf("chtype: parse %q: %s at offset %d", e.input, e.msg, e.offset)
}

// Parse parses a ClickHouse type name. Errors name the input and the position of the problem.
//
// The error message has the form
//
//	chtype: parse "Array(Int8": missing ")" at offset 10
//
// where the offset is a byte offset into the input. Parse rejects empty input,
// unbalanced parentheses, trailing text, a wrong number of arguments for Nullable,
// LowCardinality, Array (1) and Map (2), empty Variant, Enum8/Enum16 and Nested,
// unnamed Nested elements, a Tuple that mixes named and unnamed elements,
// unterminated quoted strings, and Enum values that are not integers or do not
// fit Enum8 (int8) or Enum16 (int16).
func Parse(s string) (*Type, error) {
	p := &parser{in: s}
	p.skipSpace()
	if p.eof() {
		return nil, p.errorf(p.pos, "empty input")
	}
	t, err := p.parseType()
	if err != nil {
		return nil, err
	}
	p.skipSpace()
	if !p.eof() {
		if p.in[p.pos] == ')' {
			return nil, p.errorf(p.pos, `unbalanced ")"`)
		}
		return nil, p.errorf(p.pos, "unexpected trailing text %s", p.snippet())
	}
	return t, nil
}

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
		return strconv.Quote(s[:16]) + "..."
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

// parseList parses a comma-separated list after an opening parenthesis, up to and
// including the closing one. elem is called at the first non-space byte of each element.
func (p *parser) parseList(elem func() error) error {
	p.skipSpace()
	if p.eof() {
		return p.missingClose()
	}
	if p.in[p.pos] == ')' {
		p.pos++
		return nil
	}
	for {
		p.skipSpace()
		if p.eof() {
			return p.missingClose()
		}
		if err := elem(); err != nil {
			return err
		}
		p.skipSpace()
		if p.eof() {
			return p.missingClose()
		}
		switch p.in[p.pos] {
		case ',':
			p.pos++
		case ')':
			p.pos++
			return nil
		default:
			return p.errorf(p.pos, `expected "," or ")", found %s`, p.snippet())
		}
	}
}

func (p *parser) parseType() (*Type, error) {
	p.skipSpace()
	if p.eof() {
		return nil, p.missingClose()
	}
	start := p.pos
	name := p.ident()
	if name == "" {
		return nil, p.errorf(start, "expected type name, found %s", p.snippet())
	}
	if p.depth >= maxDepth {
		return nil, p.errorf(start, "types nested more than %d deep", maxDepth)
	}
	p.depth++
	defer func() { p.depth-- }()

	t := &Type{Name: name}
	p.skipSpace()
	paren := !p.eof() && p.in[p.pos] == '('
	if paren {
		p.pos++
	}
	var err error
	switch name {
	case "Nullable", "LowCardinality", "Array", "Map":
		if paren {
			err = p.parseList(func() error { return p.appendType(t) })
		}
		want := 1
		if name == "Map" {
			want = 2
		}
		if err == nil && len(t.Elems) != want {
			plural := "s"
			if want == 1 {
				plural = ""
			}
			err = p.errorf(start, "%s must have exactly %d type argument%s, got %d", name, want, plural, len(t.Elems))
		}
	case "Variant":
		if paren {
			err = p.parseList(func() error { return p.appendType(t) })
		}
		if err == nil && len(t.Elems) == 0 {
			err = p.errorf(start, "Variant must have at least 1 type argument")
		}
	case "Tuple", "Nested":
		if paren {
			err = p.parseFields(t)
		}
		if err == nil && name == "Nested" && len(t.Elems) == 0 {
			err = p.errorf(start, "Nested must have at least 1 element")
		}
	case "Enum8", "Enum16", "Enum":
		if paren {
			err = p.parseEnum(t)
		}
		if err == nil && len(t.Enum) == 0 {
			err = p.errorf(start, "%s must have at least 1 value", name)
		}
	case "JSON", "Dynamic":
		if paren {
			err = p.parseList(func() error { return p.appendRaw(t) })
		}
	case "AggregateFunction", "SimpleAggregateFunction":
		if paren {
			err = p.parseList(func() error {
				// The function (and, for AggregateFunction, an optional leading
				// version number) is raw text; the rest are argument types.
				n := len(t.Args) + len(t.Elems)
				if n == 0 || n == 1 && name == "AggregateFunction" && isDigits(t.Args[0]) {
					return p.appendRaw(t)
				}
				return p.appendType(t)
			})
		}
		if err == nil {
			switch {
			case len(t.Args) == 0:
				err = p.errorf(start, "%s must name an aggregate function", name)
			case name == "SimpleAggregateFunction" && len(t.Elems) == 0:
				err = p.errorf(start, "SimpleAggregateFunction must have a function and at least 1 type argument")
			}
		}
	default:
		if paren {
			err = p.parseList(func() error {
				switch c := p.in[p.pos]; {
				case c == '\'':
					s, err := p.quoted()
					if err != nil {
						return err
					}
					t.Args = append(t.Args, s)
					return nil
				case isNumberStart(c):
					t.Args = append(t.Args, p.bare())
					return nil
				default:
					return p.appendType(t)
				}
			})
		}
	}
	if err != nil {
		return nil, err
	}
	return t, nil
}

func (p *parser) appendType(t *Type) error {
	e, err := p.parseType()
	if err != nil {
		return err
	}
	t.Elems = append(t.Elems, e)
	return nil
}

// appendRaw appends the raw text of one argument, up to the next top-level
// comma or closing parenthesis. Quoted strings and nested brackets are skipped
// as a whole.
func (p *parser) appendRaw(t *Type) error {
	start := p.pos
	var closers []byte
loop:
	for !p.eof() {
		switch c := p.in[p.pos]; c {
		case '\'', '"', '`':
			if _, err := p.quoted(); err != nil {
				return err
			}
			continue
		case '(':
			closers = append(closers, ')')
		case '[':
			closers = append(closers, ']')
		case '{':
			closers = append(closers, '}')
		case ')', ']', '}':
			if len(closers) == 0 && c == ')' {
				break loop
			}
			if len(closers) == 0 || closers[len(closers)-1] != c {
				return p.errorf(p.pos, "unbalanced %q", string(c))
			}
			closers = closers[:len(closers)-1]
		case ',':
			if len(closers) == 0 {
				break loop
			}
		}
		p.pos++
	}
	if len(closers) > 0 {
		return p.errorf(p.pos, "missing %q", string(closers[len(closers)-1]))
	}
	s := trimSpace(p.in[start:p.pos])
	if s == "" {
		return p.errorf(start, "empty argument")
	}
	t.Args = append(t.Args, s)
	return nil
}

// parseFields parses the elements of a Tuple or Nested: either all "name Type"
// or, for Tuple only, all "Type".
func (p *parser) parseFields(t *Type) error {
	return p.parseList(func() error {
		start := p.pos
		name, named, err := p.fieldName()
		if err != nil {
			return err
		}
		e, err := p.parseType()
		if err != nil {
			return err
		}
		switch {
		case t.Name == "Nested" && !named:
			return p.errorf(start, "Nested elements must be named")
		case len(t.Elems) > 0 && named != (t.FieldNames != nil):
			return p.errorf(start, "Tuple cannot mix named and unnamed elements")
		}
		t.Elems = append(t.Elems, e)
		if named {
			t.FieldNames = append(t.FieldNames, name)
		}
		return nil
	})
}

// fieldName reads an element name if there is one. A quoted word is always a
// name; an unquoted word is a name only when another word (the type) follows.
// Without a name the position is left unchanged.
func (p *parser) fieldName() (name string, named bool, err error) {
	start := p.pos
	if c := p.in[p.pos]; c == '`' || c == '"' {
		name, err := p.quoted()
		if err != nil {
			return "", false, err
		}
		if name == "" {
			return "", false, p.errorf(start, "empty element name")
		}
		return name, true, nil
	}
	w := p.word()
	if w != "" {
		p.skipSpace()
		if !p.eof() && isWordChar(p.in[p.pos]) {
			return w, true, nil
		}
	}
	p.pos = start
	return "", false, nil
}

func (p *parser) parseEnum(t *Type) error {
	bits, limits := 16, "-32768..32767"
	if t.Name == "Enum8" {
		bits, limits = 8, "-128..127"
	}
	return p.parseList(func() error {
		if p.in[p.pos] != '\'' {
			return p.errorf(p.pos, "expected quoted enum name, found %s", p.snippet())
		}
		name, err := p.quoted()
		if err != nil {
			return err
		}
		p.skipSpace()
		if p.eof() {
			return p.missingClose()
		}
		if p.in[p.pos] != '=' {
			return p.errorf(p.pos, `expected "=" after enum name, found %s`, p.snippet())
		}
		p.pos++
		p.skipSpace()
		vStart := p.pos
		tok := p.bare()
		if tok == "" {
			if p.eof() {
				return p.missingClose()
			}
			return p.errorf(vStart, "expected integer enum value, found %s", p.snippet())
		}
		v, err := strconv.ParseInt(tok, 10, bits)
		if err != nil {
			if errors.Is(err, strconv.ErrRange) {
				return p.errorf(vStart, "enum value %s out of range for %s (%s)", tok, t.Name, limits)
			}
			return p.errorf(vStart, "enum value %q is not an integer", tok)
		}
		t.Enum = append(t.Enum, EnumValue{Name: name, Value: int16(v)})
		return nil
	})
}

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

// Unwrap returns the type with any LowCardinality and Nullable wrappers removed (in any order/nesting) and whether a Nullable was among them.
//
// Only the outer wrappers are removed: Unwrap of LowCardinality(Nullable(String))
// is (String, true), of Array(Nullable(String)) the Array itself and false.
func (t *Type) Unwrap() (base *Type, nullable bool) {
	for t != nil && (t.Name == "Nullable" || t.Name == "LowCardinality") && len(t.Elems) == 1 {
		if t.Name == "Nullable" {
			nullable = true
		}
		t = t.Elems[0]
	}
	return t, nullable
}
