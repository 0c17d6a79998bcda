// Parse and the grammar of type names: a family with its argument list, the named elements of
// Tuple and Nested, the values of Enum8 and Enum16, and the raw arguments of JSON, Dynamic and
// the aggregate functions.

package chtype

import (
	"errors"
	"fmt"
	"strconv"
)

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
