package convert

import (
	"encoding/binary"
	"fmt"
	"math/bits"
	"unicode/utf16"
	"unicode/utf8"
)

// This file is a strict JSON (RFC 8259) scanner over a payload that is already known to be valid
// UTF-8. It does not build a tree: it finds the span of each value, so that converters read numbers
// from their exact text and String columns keep the original spelling of non-string values.

// kind is the JSON type of a scanned value.
type kind uint8

const (
	kindNone kind = iota // no value (a missing field)
	kindNull
	kindFalse
	kindTrue
	kindNumber
	kindString
	kindArray
	kindObject
)

func (k kind) String() string {
	return [...]string{"nothing", "null", "a boolean", "a boolean", "a number", "a string", "an array", "an object"}[k]
}

// maxDepth bounds the nesting of arrays and objects, so that a hostile payload cannot exhaust the
// stack. encoding/json allows 10000; real events nest a few levels.
const maxDepth = 1000

// value is one JSON value of the payload.
type value struct {
	kind kind
	// raw is the exact text of the value; for strings, including the quotes.
	raw []byte
	// escaped is true for a string that contains backslash escapes.
	escaped bool
	// spaced is true for an array or object with white space between its tokens.
	spaced bool
}

// syntaxError is a JSON syntax error at a byte offset of the payload.
type syntaxError struct {
	offset int
	msg    string
}

func (e *syntaxError) Error() string {
	return fmt.Sprintf("invalid JSON at byte %d: %s", e.offset, e.msg)
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func skipSpace(b []byte, i int) int {
	for i < len(b) && isSpace(b[i]) {
		i++
	}
	return i
}

func describeAt(b []byte, i int) string {
	if i >= len(b) {
		return "unexpected end of the payload"
	}
	r, _ := utf8.DecodeRune(b[i:])
	return fmt.Sprintf("unexpected character %q", r)
}

// scanValue scans the value that starts at b[i] (no leading space) and returns it with the index
// just after it.
func scanValue(b []byte, i, depth int) (value, int, error) {
	if i >= len(b) {
		return value{}, i, &syntaxError{i, "unexpected end of the payload, expected a value"}
	}
	switch c := b[i]; {
	case c == '"':
		end, escaped, err := scanString(b, i)
		return value{kind: kindString, raw: b[i:end], escaped: escaped}, end, err
	case c == '-' || (c >= '0' && c <= '9'):
		end, err := scanNumber(b, i)
		return value{kind: kindNumber, raw: b[i:end]}, end, err
	case c == '{':
		end, spaced, err := scanObject(b, i, depth+1)
		return value{kind: kindObject, raw: b[i:end], spaced: spaced}, end, err
	case c == '[':
		end, spaced, err := scanArray(b, i, depth+1)
		return value{kind: kindArray, raw: b[i:end], spaced: spaced}, end, err
	case c == 't':
		return scanLiteral(b, i, "true", kindTrue)
	case c == 'f':
		return scanLiteral(b, i, "false", kindFalse)
	case c == 'n':
		return scanLiteral(b, i, "null", kindNull)
	default:
		return value{}, i, &syntaxError{i, describeAt(b, i) + ", expected a value"}
	}
}

func scanLiteral(b []byte, i int, lit string, k kind) (value, int, error) {
	if len(b)-i < len(lit) || string(b[i:i+len(lit)]) != lit {
		return value{}, i, &syntaxError{i, describeAt(b, i) + ", expected a value"}
	}
	return value{kind: k, raw: b[i : i+len(lit)]}, i + len(lit), nil
}

// scanString scans the string whose opening quote is b[i]; it returns the index after the closing
// quote and whether the string holds escapes.
func scanString(b []byte, i int) (end int, escaped bool, err error) {
	start := i
	i++
	for {
		if i = skipPlain(b, i); i >= len(b) {
			break
		}
		c := b[i]
		switch {
		case c == '"':
			return i + 1, escaped, nil
		case c == '\\':
			escaped = true
			if i+1 >= len(b) {
				return i, escaped, &syntaxError{i, "unterminated escape in a string"}
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(b) || !isHex4(b[i+2:i+6]) {
					return i, escaped, &syntaxError{i, `\u must be followed by four hexadecimal digits`}
				}
				i += 6
			default:
				return i, escaped, &syntaxError{i, fmt.Sprintf(`invalid escape \%c in a string`, b[i+1])}
			}
		case c < 0x20:
			return i, escaped, &syntaxError{i, fmt.Sprintf("control character %q must be escaped in a string", c)}
		default:
			i++
		}
	}
	return start, escaped, &syntaxError{start, "unterminated string"}
}

const (
	lows  = 0x0101010101010101
	highs = 0x8080808080808080
)

// skipPlain returns the index of the first quote, backslash or control character at or after
// b[i], or len(b). It tests 8 bytes at a time with the bit tricks of "Bit Twiddling Hacks"
// (determine if a word has a byte less than n / equal to n): the lowest flagged byte of a word is
// always a true match, so the scan jumps straight to it. Bytes >= 0x80 never match, so UTF-8 text
// passes through.
func skipPlain(b []byte, i int) int {
	for ; i+8 <= len(b); i += 8 {
		w := binary.LittleEndian.Uint64(b[i:])
		quote := w ^ (lows * '"')
		bslash := w ^ (lows * '\\')
		m := ((w - lows*0x20) & ^w) | ((quote - lows) & ^quote) | ((bslash - lows) & ^bslash)
		if m &= highs; m != 0 {
			return i + bits.TrailingZeros64(m)>>3
		}
	}
	for ; i < len(b); i++ {
		if c := b[i]; c == '"' || c == '\\' || c < 0x20 {
			return i
		}
	}
	return i
}

func isHex4(b []byte) bool {
	for _, c := range b[:4] {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return false
		}
	}
	return true
}

func hex4(b []byte) rune {
	var r rune
	for _, c := range b[:4] {
		r <<= 4
		switch {
		case c >= '0' && c <= '9':
			r |= rune(c - '0')
		case c >= 'a' && c <= 'f':
			r |= rune(c - 'a' + 10)
		default:
			r |= rune(c - 'A' + 10)
		}
	}
	return r
}

// scanNumber scans a number per RFC 8259: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func scanNumber(b []byte, i int) (int, error) {
	end, ok := numberEnd(b, i)
	if !ok {
		return end, &syntaxError{end, describeAt(b, end) + " in a number"}
	}
	return end, nil
}

// numberEnd returns the end of the JSON number that starts at b[i], and false with the offset of
// the first wrong byte when the text does not follow the grammar.
func numberEnd(b []byte, i int) (int, bool) {
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
	default:
		return i, false
	}
	if i < len(b) && b[i] == '.' {
		i++
		if i >= len(b) || b[i] < '0' || b[i] > '9' {
			return i, false
		}
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i >= len(b) || b[i] < '0' || b[i] > '9' {
			return i, false
		}
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
	}
	return i, true
}

// scanArray scans the array that starts at b[i]; spaced reports white space between its tokens,
// at any depth.
func scanArray(b []byte, i, depth int) (end int, spaced bool, err error) {
	if depth > maxDepth {
		return i, false, &syntaxError{i, fmt.Sprintf("nesting deeper than %d levels", maxDepth)}
	}
	i, spaced = skipSpaced(b, i+1, spaced)
	if i < len(b) && b[i] == ']' {
		return i + 1, spaced, nil
	}
	for {
		v, end, err := scanValue(b, i, depth)
		if err != nil {
			return end, spaced, err
		}
		spaced = spaced || v.spaced
		if i, spaced = skipSpaced(b, end, spaced); i >= len(b) {
			return i, spaced, &syntaxError{i, "unexpected end of the payload in an array"}
		}
		switch b[i] {
		case ',':
			i, spaced = skipSpaced(b, i+1, spaced)
		case ']':
			return i + 1, spaced, nil
		default:
			return i, spaced, &syntaxError{i, describeAt(b, i) + ` in an array, expected "," or "]"`}
		}
	}
}

// scanObject scans the object that starts at b[i]; spaced reports white space between its
// tokens, at any depth.
func scanObject(b []byte, i, depth int) (end int, spaced bool, err error) {
	if depth > maxDepth {
		return i, false, &syntaxError{i, fmt.Sprintf("nesting deeper than %d levels", maxDepth)}
	}
	i, spaced = skipSpaced(b, i+1, spaced)
	if i < len(b) && b[i] == '}' {
		return i + 1, spaced, nil
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return i, spaced, &syntaxError{i, describeAt(b, i) + ", expected a field name in double quotes"}
		}
		keyEnd, _, err := scanString(b, i)
		if err != nil {
			return keyEnd, spaced, err
		}
		if i, spaced = skipSpaced(b, keyEnd, spaced); i >= len(b) || b[i] != ':' {
			return i, spaced, &syntaxError{i, describeAt(b, i) + `, expected ":" after a field name`}
		}
		i, spaced = skipSpaced(b, i+1, spaced)
		v, end, err := scanValue(b, i, depth)
		if err != nil {
			return end, spaced, err
		}
		spaced = spaced || v.spaced
		if i, spaced = skipSpaced(b, end, spaced); i >= len(b) {
			return i, spaced, &syntaxError{i, "unexpected end of the payload in an object"}
		}
		switch b[i] {
		case ',':
			i, spaced = skipSpaced(b, i+1, spaced)
		case '}':
			return i + 1, spaced, nil
		default:
			return i, spaced, &syntaxError{i, describeAt(b, i) + ` in an object, expected "," or "}"`}
		}
	}
}

// skipSpaced is skipSpace that also reports whether it skipped anything (or spaced was set).
func skipSpaced(b []byte, i int, spaced bool) (int, bool) {
	j := skipSpace(b, i)
	return j, spaced || j != i
}

// stringContent returns the decoded content of a scanned string value: its bytes as they are when
// it holds no escapes, else the unescaped text appended to scratch. A \u escape of a lone UTF-16
// surrogate is an error: it has no UTF-8 form, and replacing it would change the text.
func stringContent(v value, scratch []byte) ([]byte, error) {
	body := v.raw[1 : len(v.raw)-1]
	if !v.escaped {
		return body, nil
	}
	out := scratch[:0]
	for i := 0; i < len(body); {
		c := body[i]
		if c != '\\' {
			j := i + 1
			for j < len(body) && body[j] != '\\' {
				j++
			}
			out = append(out, body[i:j]...)
			i = j
			continue
		}
		switch body[i+1] {
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r := hex4(body[i+2:])
			i += 6
			if utf16.IsSurrogate(r) {
				if r >= 0xDC00 || i+6 > len(body) || body[i] != '\\' || body[i+1] != 'u' {
					return nil, fmt.Errorf(`holds \u%04X, a lone UTF-16 surrogate that has no UTF-8 form`, r)
				}
				r2 := hex4(body[i+2:])
				if r2 < 0xDC00 || r2 > 0xDFFF {
					return nil, fmt.Errorf(`holds \u%04X, a lone UTF-16 surrogate that has no UTF-8 form`, r)
				}
				r = utf16.DecodeRune(r, r2)
				i += 6
			}
			out = utf8.AppendRune(out, r)
			continue
		default: // '"', '\\', '/'
			out = append(out, body[i+1])
		}
		i += 2
	}
	return out, nil
}

// elements iterates over the elements of a scanned (hence valid) array.
type elements struct {
	arr []byte
	i   int // index of the next element, or len(arr) when done
}

func newElements(arr []byte) elements {
	i := skipSpace(arr, 1)
	if arr[i] == ']' {
		i = len(arr)
	}
	return elements{arr: arr, i: i}
}

// next returns the next element; ok is false after the last one.
func (e *elements) next() (v value, ok bool) {
	if e.i >= len(e.arr) {
		return value{}, false
	}
	v, end, _ := scanValue(e.arr, e.i, 0)
	i := skipSpace(e.arr, end)
	if e.arr[i] == ']' {
		e.i = len(e.arr)
	} else {
		e.i = skipSpace(e.arr, i+1)
	}
	return v, true
}

// countElements returns the number of elements of a scanned (hence valid) array.
func countElements(arr []byte) int {
	n := 0
	for it := newElements(arr); ; n++ {
		if _, ok := it.next(); !ok {
			return n
		}
	}
}
