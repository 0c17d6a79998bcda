package convert

import (
	"bytes"
	"fmt"
)

// TopLevelFields calls fn for each field of payload's one JSON object, in the payload's order,
// with the field's name (escapes resolved) and the exact text of its value (for a string,
// including the quotes; for an array or object, as written, white space included). The payload
// is checked as Convert checks it, before fn is first called: valid UTF-8, exactly one JSON
// object (RFC 8259), nothing but white space after it; those errors, and a field name holding
// a \u escape of a lone UTF-16 surrogate, are *PayloadError. An error of fn stops the walk and is
// returned as it is. A name given twice is passed twice: what that means is the caller's.
func TopLevelFields(payload []byte, fn func(name string, value []byte) error) error {
	return walkTopLevel(payload, func(name []byte, v value) error { return fn(string(name), v.raw) })
}

// walkTopLevel checks payload as TopLevelFields says and calls fn for each field of its object,
// with the field's name (escapes resolved; valid until the next call) and its scanned value.
func walkTopLevel(payload []byte, fn func(name []byte, v value) error) error {
	if err := CheckUTF8(payload); err != nil {
		return err
	}
	i := skipSpace(payload, 0)
	if i >= len(payload) {
		return &PayloadError{Rule: emptyRule(payload)}
	}
	if bytes.HasPrefix(payload, []byte(byteOrderMark)) {
		return &PayloadError{Rule: bomRule}
	}
	v, end, err := scanValue(payload, i, 0)
	if err != nil {
		return syntaxRule(payload, err)
	}
	if v.kind != kindObject {
		return notOneObject(payload, v, end)
	}
	if j := skipSpace(payload, end); j < len(payload) {
		return &PayloadError{Rule: fmt.Sprintf("unexpected text after the JSON object at byte %d: %s; a message must hold exactly one JSON object", j, quote(payload[j:]))}
	}
	var scratch []byte
	for it := newMembers(v.raw); ; {
		key, val, ok := it.next()
		if !ok {
			return nil
		}
		name, err := stringContent(key, scratch)
		if err != nil {
			return &PayloadError{Rule: fmt.Sprintf("field name %s %v", quote(key.raw), err)}
		}
		if key.escaped {
			scratch = name
		}
		if err := fn(name, val); err != nil {
			return err
		}
	}
}
