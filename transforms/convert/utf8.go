package convert

import (
	"encoding/binary"
	"fmt"
	"math/bits"
	"unicode/utf8"
)

// UTF-8: every payload must be valid UTF-8 before its JSON is scanned.

// CheckUTF8 returns nil when payload is valid UTF-8, else the *PayloadError a payload that is not
// gets: the rule of every message, also of one the JavaScript UDF would take, since JavaScript
// strings hold U+FFFD where the bytes were not UTF-8. The error gives the first bad byte's offset
// (from 0) and value, and the top-level field it is in when the payload reads as a JSON object up
// to there: "payload: not valid UTF-8 (first bad byte at offset 6: 0xFF, in the value of field
// "a")", or "in a field name after field "a"" (a name is not printed, being no text), or nothing
// more when the byte is outside any field.
func CheckUTF8(payload []byte) error {
	if validUTF8(payload) {
		return nil
	}
	at := firstInvalidUTF8(payload)
	where := fieldWhere(payload, at)
	if where != "" {
		where = ", " + where
	}
	return &PayloadError{Rule: fmt.Sprintf("not valid UTF-8 (first bad byte at offset %d: 0x%02X%s)", at, payload[at], where)}
}

// fieldWhere says where offset at of payload is (fieldAt): `in the value of field "a"`, `in the
// first field's name`, `in a field name after field "a"`, or "" outside the object's fields.
func fieldWhere(payload []byte, at int) string {
	inName, field, ok := fieldAt(payload, at)
	switch {
	case !ok:
		return ""
	case inName && field == nil:
		return "in the first field's name"
	case inName:
		return fmt.Sprintf("in a field name after field %q", field)
	}
	return fmt.Sprintf("in the value of field %q", field)
}

// fieldAt tells where offset at of payload, a JSON object whose bytes before at are UTF-8, is: in
// a top-level field's name (inName; field is then the field before it, nil for the first), or in
// the value of the top-level field named field (its name as written, escapes undecoded). ok is
// false when at is outside the object's fields or the bytes before it are not the start of a
// JSON object (a field name not a string, a value without its ':'); the syntax of the values is
// not checked, only strings and brackets followed.
func fieldAt(payload []byte, at int) (inName bool, field []byte, ok bool) {
	i := 0
	skipSpace := func() {
		for i < at && (payload[i] == ' ' || payload[i] == '\t' || payload[i] == '\n' || payload[i] == '\r') {
			i++
		}
	}
	// str steps over the string starting at i ('"'); it reports false when at comes first.
	str := func() bool {
		for i++; i < at; i++ {
			switch payload[i] {
			case '\\':
				i++
			case '"':
				i++
				return true
			}
		}
		return false
	}
	skipSpace()
	if i >= at || payload[i] != '{' {
		return false, nil, false
	}
	i++
	var last []byte
	for {
		skipSpace()
		if i >= at || payload[i] != '"' {
			return false, nil, false
		}
		start := i
		if !str() {
			return true, last, true
		}
		name := payload[start+1 : i-1]
		skipSpace()
		if i >= at || payload[i] != ':' {
			return false, nil, false
		}
		depth := 0
		for i++; ; i++ {
			if i >= at {
				return false, name, true
			}
			switch payload[i] {
			case '"':
				if !str() {
					return false, name, true
				}
				i--
			case '[', '{':
				depth++
			case ']', '}':
				depth--
			case ',':
				if depth > 0 {
					continue
				}
			default:
				continue
			}
			if depth < 0 || (depth == 0 && payload[i] == ',') {
				break
			}
		}
		if payload[i] != ',' {
			return false, nil, false // the object's end
		}
		i++
		last = name
	}
}

func firstInvalidUTF8(b []byte) int {
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n == 1 {
			return i
		}
		i += n
	}
	return -1
}

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
