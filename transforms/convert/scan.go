package convert

import (
	"encoding/binary"
	"fmt"
	"math/bits"
	"slices"
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

// isSpace reports JSON's white space; most bytes it sees are above ' ', which one comparison tells.
func isSpace(c byte) bool { return c <= ' ' && (c == ' ' || c == '\t' || c == '\n' || c == '\r') }

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

// scanString scans the string whose opening quote is b[i]; it returns the index after the closing
// quote and whether the string holds escapes. It reads 8 bytes at a time and finds the quotes,
// backslashes and control characters of a word at once (specials), so that the escapes of a word
// cost no further reads.
func scanString(b []byte, i int) (end int, escaped bool, err error) {
	start := i
	i++
	for i+8 <= len(b) {
		m := specials(binary.LittleEndian.Uint64(b[i : i+8]))
		next := i + 8 // where the next word starts
		for m != 0 {
			p := i + bits.TrailingZeros64(m)>>3
			switch c := b[p]; {
			case c == '"':
				return p + 1, escaped, nil
			case c != '\\':
				return p, escaped, &syntaxError{p, fmt.Sprintf("control character %q must be escaped in a string", c)}
			}
			escaped = true
			n := 0
			if p+1 < len(b) && (b[p+1] == '"' || b[p+1] == '\\') {
				n = 2 // the most common escapes, without a call
			} else if n, err = escapeLen(b, p); err != nil {
				return p, escaped, err
			}
			if p+n >= next {
				next = p + n
				break
			}
			m &= ^uint64(0) << (uint(p+n-i) * 8) // the specials after the escape
		}
		i = next
	}
	for i < len(b) {
		switch c := b[i]; {
		case c == '"':
			return i + 1, escaped, nil
		case c == '\\':
			escaped = true
			n, err := escapeLen(b, i)
			if err != nil {
				return i, escaped, err
			}
			i += n
		case c < 0x20:
			return i, escaped, &syntaxError{i, fmt.Sprintf("control character %q must be escaped in a string", c)}
		default:
			i++
		}
	}
	return start, escaped, &syntaxError{start, "unterminated string"}
}

// escapeLen returns the length of the escape whose backslash is b[i].
func escapeLen(b []byte, i int) (int, error) {
	if i+1 >= len(b) {
		return 0, &syntaxError{i, "unterminated escape in a string"}
	}
	switch {
	case unescaped[b[i+1]] != 0:
		return 2, nil
	case b[i+1] == 'u':
		if i+6 > len(b) || !isHex4(b[i+2:i+6]) {
			return 0, &syntaxError{i, `\u must be followed by four hexadecimal digits`}
		}
		return 6, nil
	}
	return 0, &syntaxError{i, fmt.Sprintf(`invalid escape \%c in a string`, b[i+1])}
}

// specials returns the high bit of each byte of w that is a quote, a backslash or a control
// character (below 0x20), exactly: adding 0x7F to a byte's low 7 bits, or 0x60, sets its high bit
// when they are not 0, or at least 0x20, and never carries into the next byte.
func specials(w uint64) uint64 {
	const low7 = 0x7F7F7F7F7F7F7F7F
	quote := w ^ (lows * '"')
	bslash := w ^ (lows * '\\')
	isQuote := ^((quote&low7 + low7) | quote)
	isBslash := ^((bslash&low7 + low7) | bslash)
	isControl := ^((w&low7 + lows*0x60) | w)
	return (isQuote | isBslash | isControl) & highs
}

const (
	lows  = 0x0101010101010101
	highs = 0x8080808080808080
)

// utf8Lead is what a UTF-8 character's first byte says of it (RFC 3629): its length n, 0 for a
// byte that starts none, and the range lo..hi of its second byte.
type utf8Lead struct{ n, lo, hi byte }

// utf8Leads gives utf8Lead for each byte.
var utf8Leads = func() (t [256]utf8Lead) {
	for _, r := range []struct {
		first, last byte
		lead        utf8Lead
	}{
		{0xC2, 0xDF, utf8Lead{2, 0x80, 0xBF}},
		{0xE0, 0xE0, utf8Lead{3, 0xA0, 0xBF}}, // no overlong forms
		{0xE1, 0xEC, utf8Lead{3, 0x80, 0xBF}},
		{0xED, 0xED, utf8Lead{3, 0x80, 0x9F}}, // no surrogates
		{0xEE, 0xEF, utf8Lead{3, 0x80, 0xBF}},
		{0xF0, 0xF0, utf8Lead{4, 0x90, 0xBF}}, // no overlong forms
		{0xF1, 0xF3, utf8Lead{4, 0x80, 0xBF}},
		{0xF4, 0xF4, utf8Lead{4, 0x80, 0x8F}}, // nothing above U+10FFFF
	} {
		for c := int(r.first); c <= int(r.last); c++ {
			t[c] = r.lead
		}
	}
	return t
}()

// validUTF8 is utf8.Valid, faster on text that is mostly ASCII: it steps over ASCII 32 and then
// 8 bytes at a time, jumps to the first non-ASCII byte of a word and checks each multi-byte
// character against the ranges of RFC 3629 (as utf8.Valid does: no overlong forms, no surrogates,
// nothing above U+10FFFF), then goes on by words again (utf8.Valid goes byte by byte after the
// first such character).
func validUTF8(b []byte) bool {
	le := binary.LittleEndian
	i := 0
	for {
		if i < len(b) && b[i] >= utf8.RuneSelf {
			goto multi
		}
		for ; i+32 <= len(b); i += 32 {
			p := b[i : i+32]
			if (le.Uint64(p)|le.Uint64(p[8:])|le.Uint64(p[16:])|le.Uint64(p[24:]))&highs != 0 {
				break
			}
		}
		for ; i+8 <= len(b); i += 8 {
			if w := le.Uint64(b[i:i+8]) & highs; w != 0 {
				i += bits.TrailingZeros64(w) >> 3
				goto multi
			}
		}
		for ; i < len(b); i++ {
			if b[i] >= utf8.RuneSelf {
				goto multi
			}
		}
		return true
	multi:
		// b[i] >= 0x80 starts a character of n bytes, whose second byte is in lo..hi and
		// others in 0x80..0xBF.
		lead := utf8Leads[b[i]]
		n := int(lead.n)
		if n == 0 || i+n > len(b) || b[i+1] < lead.lo || b[i+1] > lead.hi {
			return false
		}
		for k := 2; k < n; k++ {
			if b[i+k] < 0x80 || b[i+k] > 0xBF {
				return false
			}
		}
		i += n
	}
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

// stringContent returns the decoded content of a scanned string value: its bytes as they are when
// it holds no escapes, else the unescaped text written over scratch. A \u escape of a lone UTF-16
// surrogate is an error: it has no UTF-8 form, and replacing it would change the text.
func stringContent(v value, scratch []byte) ([]byte, error) {
	if !v.escaped {
		return v.raw[1 : len(v.raw)-1], nil
	}
	// The text is never longer than its escaped form; 8 more bytes let unescape copy whole words.
	out := slices.Grow(scratch[:0], len(v.raw)+8)[:len(v.raw)+8]
	_, _, n, lone := unescape(out, v.raw, 0)
	if n < 0 {
		return nil, fmt.Errorf(`holds \u%04X, a lone UTF-16 surrogate that has no UTF-8 form`, lone)
	}
	return out[:n], nil
}

// unescape scans the string whose opening quote is b[i] and writes its text, escapes resolved, at
// the start of out, which must hold len(b)-i+8 bytes. It returns the index after the closing quote,
// whether the string holds escapes and the length of the text; n is -1 when the string is not well
// formed (scanString says why) or holds a \u escape of a lone UTF-16 surrogate, which is then
// lone. Runs without escapes are copied 8 bytes at a time, and the first quote, backslash or
// control character of a word found with the bit tricks of "Bit Twiddling Hacks" (determine if a
// word has a byte less than n / equal to n: the lowest flagged byte is always a true match); the
// text written is never longer than what it was read from, so a word always fits.
func unescape(out, b []byte, i int) (end int, escaped bool, n int, lone rune) {
	o := 0
	i++
	for {
		for i+8 <= len(b) {
			w := binary.LittleEndian.Uint64(b[i : i+8])
			binary.LittleEndian.PutUint64(out[o:o+8], w)
			quote, bslash := w^(lows*'"'), w^(lows*'\\')
			if m := ((w - lows*0x20) & ^w) | ((quote - lows) & ^quote) | ((bslash - lows) & ^bslash); m&highs != 0 {
				k := bits.TrailingZeros64(m&highs) >> 3
				i, o = i+k, o+k
				goto special
			}
			i, o = i+8, o+8
		}
		for ; i < len(b); i, o = i+1, o+1 {
			if c := b[i]; c == '"' || c == '\\' || c < 0x20 {
				goto special
			}
			out[o] = b[i]
		}
		return 0, escaped, -1, 0 // unterminated
	special: // b[i] is a quote, a backslash or a control character
		if b[i] != '\\' || i+1 >= len(b) {
			if b[i] == '"' {
				return i + 1, escaped, o, 0
			}
			return 0, escaped, -1, 0
		}
		escaped = true
		if e := unescaped[b[i+1]]; e != 0 {
			out[o] = e
			o, i = o+1, i+2
			continue
		}
		if b[i+1] != 'u' || i+6 > len(b) || !isHex4(b[i+2:i+6]) {
			return 0, escaped, -1, 0
		}
		r := hex4(b[i+2:])
		i += 6
		if utf16.IsSurrogate(r) {
			if r >= 0xDC00 || i+6 > len(b) || b[i] != '\\' || b[i+1] != 'u' || !isHex4(b[i+2:i+6]) {
				return 0, escaped, -1, r
			}
			r2 := hex4(b[i+2:])
			if r2 < 0xDC00 || r2 > 0xDFFF {
				return 0, escaped, -1, r
			}
			r = utf16.DecodeRune(r, r2)
			i += 6
		}
		o += utf8.EncodeRune(out[o:], r)
	}
}

// unescaped gives, for the byte after a backslash, the byte the escape stands for; 0 for u and for
// bytes that make no escape.
var unescaped = [256]byte{'"': '"', '\\': '\\', '/': '/', 'b': '\b', 'f': '\f', 'n': '\n', 'r': '\r', 't': '\t'}

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
