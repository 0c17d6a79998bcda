package convert

import "fmt"

// TopLevel returns the value of the top-level field name of payload, which must be one JSON
// object (RFC 8259, valid UTF-8): the decoded text of a string, or the text of a number as
// written (42, 4.2e1), with found true. found is false when the object has no field name, or
// when its value is null. The error, a *PayloadError, says what is wrong: the payload is not one
// JSON object, the field appears twice (as Convert refuses it), or its value is a boolean, an
// array or an object, which name nothing. It reads only up to the end of the object.
func TopLevel(payload []byte, name string) (text string, found bool, err error) {
	if err := CheckUTF8(payload); err != nil {
		return "", false, err
	}
	i := skipSpace(payload, 0)
	v, end, err := scanValue(payload, i, 0)
	switch {
	case i >= len(payload):
		return "", false, &PayloadError{Rule: "empty, expected one JSON object"}
	case err != nil:
		return "", false, &PayloadError{Rule: err.Error()}
	case v.kind != kindObject:
		return "", false, &PayloadError{Rule: fmt.Sprintf("%s is not a JSON object; a message must hold exactly one JSON object", quote(v.raw))}
	case skipSpace(payload, end) != len(payload):
		return "", false, &PayloadError{Rule: fmt.Sprintf("more than one JSON value (%s after the object); a message must hold exactly one JSON object", describeAt(payload, skipSpace(payload, end)))}
	}
	var got *value
	var scratch []byte
	for it := newMembers(v.raw); ; {
		key, val, ok := it.next()
		if !ok {
			break
		}
		k, err := stringContent(key, scratch)
		if err != nil {
			return "", false, &PayloadError{Rule: fmt.Sprintf("the key %s %v", quote(key.raw), err)}
		}
		if string(k) != name {
			continue
		}
		if got != nil {
			return "", false, &PayloadError{Rule: fmt.Sprintf("field %q appears twice; which value is meant is ambiguous", name)}
		}
		got = &val
	}
	if got == nil || got.kind == kindNull {
		return "", false, nil
	}
	switch got.kind {
	case kindString:
		s, err := stringContent(*got, nil)
		if err != nil {
			return "", false, &PayloadError{Rule: fmt.Sprintf("field %q %v", name, err)}
		}
		return string(s), true, nil
	case kindNumber:
		return string(got.raw), true, nil
	}
	return "", false, &PayloadError{Rule: fmt.Sprintf("field %q is %s (%s); only a string or a number names a table", name, got.kind, quote(got.raw))}
}
