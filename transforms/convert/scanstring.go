package convert

import (
	"encoding/binary"
	"fmt"
	"math/bits"
	"slices"
	"unicode/utf16"
	"unicode/utf8"
)

// JSON strings: their scan (escapes and control characters found a word at a time) and their
// content with the escapes resolved.

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

// text returns the decoded content of a string value. The result may alias the converter's
// scratch buffer: use it before the next call.
func (c *Converter) text(v value) ([]byte, error) {
	if !v.escaped {
		return v.raw[1 : len(v.raw)-1], nil
	}
	return c.unescape(v)
}

// unescape is text for a string with escapes.
func (c *Converter) unescape(v value) ([]byte, error) {
	s, err := stringContent(v, c.scratch)
	if err == nil {
		c.scratch = s[:0]
	}
	return s, err
}
