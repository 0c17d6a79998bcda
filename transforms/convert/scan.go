package convert

import (
	"encoding/binary"
	"errors"
	"fmt"
	"unicode/utf8"
)

// This file is a strict JSON (RFC 8259) scanner over a payload that is already known to be valid
// UTF-8. It does not build a tree: it finds the span of each value, so that converters read numbers
// from their exact text and String columns keep the original spelling of non-string values.
// Strings are scanned in scanstring.go, UTF-8 checked in utf8.go, and the payload's object,
// field by field, in fields.go.

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
	// raw is the exact text of the value; for strings, including the quotes.
	raw  []byte
	kind kind
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

// syntaxRule is the *PayloadError of err, met scanning payload: err's text and, for a
// *syntaxError inside the object's fields, the top-level field it is in (fieldWhere), so that the
// dead letter names it: "invalid JSON at byte 14: ... (in the value of field "b")".
func syntaxRule(payload []byte, err error) *PayloadError {
	var se *syntaxError
	if errors.As(err, &se) {
		if where := fieldWhere(payload, se.offset); where != "" {
			return &PayloadError{Rule: err.Error() + " (" + where + ")"}
		}
	}
	return &PayloadError{Rule: err.Error()}
}

// isSpace reports JSON's white space; most bytes it sees are above ' ', which one comparison tells.
func isSpace(c byte) bool { return c <= ' ' && (c == ' ' || c == '\t' || c == '\n' || c == '\r') }

func skipSpace(b []byte, i int) int {
	for i < len(b) && isSpace(b[i]) {
		i++
	}
	return i
}

// emptyRule is the rule a payload of no value breaks: it is empty, or (b not empty) only JSON's
// white space.
func emptyRule(b []byte) string {
	if len(b) == 0 {
		return "empty, expected one JSON object"
	}
	return "only white space, expected one JSON object"
}

// notOneObject is the error of a payload b whose first value, v (ending at end), is not a
// JSON object: the value, and the text after it when there is some (a line of a pretty-printed
// object, "name": "a",).
func notOneObject(b []byte, v value, end int) *PayloadError {
	if j := skipSpace(b, end); j < len(b) {
		return &PayloadError{Rule: fmt.Sprintf("the payload is %s followed by %s at byte %d, not a JSON object; a message must hold exactly one JSON object",
			quote(v.raw), quote(b[j:]), j)}
	}
	return &PayloadError{Rule: fmt.Sprintf("%s is not a JSON object; a message must hold exactly one JSON object", quote(v.raw))}
}

// byteOrderMark is UTF-8's byte order mark, which JSON text may not begin with (RFC 8259,
// section 8.1: implementations must not add one).
const byteOrderMark = "\xef\xbb\xbf"

// bomRule is the rule a payload that starts with byteOrderMark breaks.
const bomRule = "the payload starts with a UTF-8 byte order mark (EF BB BF), which JSON text may not (RFC 8259, section 8.1): " +
	"the publisher should leave it out"

// IsByteOrderMark reports whether err is the *PayloadError of a payload that starts with a UTF-8
// byte order mark.
func IsByteOrderMark(err error) bool {
	var pe *PayloadError
	return errors.As(err, &pe) && pe.Rule == bomRule
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
		end, spaced, err := scanComposite(b, i, depth+1)
		return value{kind: kindObject, raw: b[i:end], spaced: spaced}, end, err
	case c == '[':
		end, spaced, err := scanComposite(b, i, depth+1)
		return value{kind: kindArray, raw: b[i:end], spaced: spaced}, end, err
	}
	if k, n := literalAt(b, i); k != kindNone {
		return value{kind: k, raw: b[i : i+n]}, i + n, nil
	}
	return value{}, i, &syntaxError{i, describeAt(b, i) + ", expected a value"}
}

// The literals as little-endian words: "true", "null" and "fals" (of "false").
const (
	trueWord = 't' | 'r'<<8 | 'u'<<16 | 'e'<<24
	nullWord = 'n' | 'u'<<8 | 'l'<<16 | 'l'<<24
	falsWord = 'f' | 'a'<<8 | 'l'<<16 | 's'<<24
)

// literalAt returns the kind and length of the literal true, false or null at b[i], or kindNone.
func literalAt(b []byte, i int) (kind, int) {
	if len(b)-i < 4 {
		return kindNone, 0
	}
	switch binary.LittleEndian.Uint32(b[i:]) {
	case trueWord:
		return kindTrue, 4
	case nullWord:
		return kindNull, 4
	case falsWord:
		if len(b)-i >= 5 && b[i+4] == 'e' {
			return kindFalse, 5
		}
	}
	return kindNone, 0
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

// scanComposite scans the array or object that starts at b[i], of nesting depth depth; spaced
// reports white space between its tokens, at any depth. It walks the nested values in a loop, not
// by recursion: objects has one bit per open array or object (set for an object), innermost at
// bit top. Its errors are those of the grammar, at the offset where the text leaves it.
func scanComposite(b []byte, i, depth int) (end int, spaced bool, err error) {
	var objects [maxDepth/64 + 1]uint64
	top := -1
	var j int
	var inObject bool
open: // b[i] is '[' or '{', of depth depth
	if depth > maxDepth {
		return i, spaced, &syntaxError{i, fmt.Sprintf("nesting deeper than %d levels", maxDepth)}
	}
	top++
	inObject = b[i] == '{'
	if inObject {
		objects[top>>6] |= 1 << (top & 63)
	} else {
		objects[top>>6] &^= 1 << (top & 63)
	}
	j = skipSpace(b, i+1)
	spaced = spaced || j != i+1
	i = j
	if i < len(b) && (inObject && b[i] == '}' || !inObject && b[i] == ']') {
		i++
		goto closed
	}
	if !inObject {
		goto element
	}
member: // b[i] should be the opening quote of a key
	if i >= len(b) || b[i] != '"' {
		return i, spaced, &syntaxError{i, describeAt(b, i) + ", expected a field name in double quotes"}
	}
	if i, _, err = scanString(b, i); err != nil {
		return i, spaced, err
	}
	j = skipSpace(b, i)
	spaced = spaced || j != i
	if i = j; i >= len(b) || b[i] != ':' {
		return i, spaced, &syntaxError{i, describeAt(b, i) + `, expected ":" after a field name`}
	}
	j = skipSpace(b, i+1)
	spaced = spaced || j != i+1
	i = j
element: // b[i] should start a value
	if i >= len(b) {
		return i, spaced, &syntaxError{i, "unexpected end of the payload, expected a value"}
	}
	switch c := b[i]; {
	case c == '"':
		if i, _, err = scanString(b, i); err != nil {
			return i, spaced, err
		}
	case c == '-' || (c >= '0' && c <= '9'):
		if i, err = scanNumber(b, i); err != nil {
			return i, spaced, err
		}
	case c == '{' || c == '[':
		depth++
		goto open
	default:
		k, n := literalAt(b, i)
		if k == kindNone {
			return i, spaced, &syntaxError{i, describeAt(b, i) + ", expected a value"}
		}
		i += n
	}
next: // a value ended at b[i] in the innermost open array or object
	j = skipSpace(b, i)
	spaced = spaced || j != i
	i = j
	inObject = objects[top>>6]>>(top&63)&1 != 0
	switch {
	case i >= len(b) && inObject:
		return i, spaced, &syntaxError{i, "unexpected end of the payload in an object"}
	case i >= len(b):
		return i, spaced, &syntaxError{i, "unexpected end of the payload in an array"}
	case b[i] == ',':
		j = skipSpace(b, i+1)
		spaced = spaced || j != i+1
		i = j
		if inObject {
			goto member
		}
		goto element
	case inObject && b[i] == '}', !inObject && b[i] == ']':
		i++
	case inObject:
		return i, spaced, &syntaxError{i, describeAt(b, i) + ` in an object, expected "," or "}"`}
	default:
		return i, spaced, &syntaxError{i, describeAt(b, i) + ` in an array, expected "," or "]"`}
	}
closed: // the innermost open array or object ended just before b[i]
	top--
	depth--
	if top >= 0 {
		goto next
	}
	return i, spaced, nil
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

type members struct {
	obj []byte
	i   int // index of the next key, or len(obj) when done
}

func newMembers(obj []byte) members {
	i := skipSpace(obj, 1)
	if obj[i] == '}' {
		i = len(obj)
	}
	return members{obj: obj, i: i}
}

// next returns the next key (a string value) and its value; ok is false after the last one.
func (m *members) next() (key, val value, ok bool) {
	if m.i >= len(m.obj) {
		return value{}, value{}, false
	}
	keyEnd, escaped, _ := scanString(m.obj, m.i)
	key = value{kind: kindString, raw: m.obj[m.i:keyEnd], escaped: escaped}
	i := skipSpace(m.obj, skipSpace(m.obj, keyEnd)+1)
	val, end, _ := scanValue(m.obj, i, 0)
	if i = skipSpace(m.obj, end); m.obj[i] == '}' {
		m.i = len(m.obj)
	} else {
		m.i = skipSpace(m.obj, i+1)
	}
	return key, val, true
}

// countMembers returns the number of members of a scanned (hence valid) object.
func countMembers(obj []byte) int {
	n := 0
	for it := newMembers(obj); ; n++ {
		if _, _, ok := it.next(); !ok {
			return n
		}
	}
}
