package convert

import "fmt"

// TopLevel returns the value of the top-level field name of payload, which must be one JSON
// object (RFC 8259, valid UTF-8): the decoded text of a string, or the text of a number as
// written (42, 4.2e1), with found true. found is false when the object has no field name, or
// when its value is null. The error, a *PayloadError, says what is wrong: the payload is not one
// JSON object (as TopLevelFields checks it), the field appears twice (as Convert refuses it), or
// its value is a boolean, an array or an object, which name nothing.
func TopLevel(payload []byte, name string) (text string, found bool, err error) {
	var got *value
	err = walkTopLevel(payload, func(key []byte, v value) error {
		if string(key) != name {
			return nil
		}
		if got != nil {
			return FieldTwice(name)
		}
		got = &v
		return nil
	})
	switch {
	case err != nil:
		return "", false, err
	case got == nil || got.kind == kindNull:
		return "", false, nil
	case got.kind == kindString:
		s, err := stringContent(*got, nil)
		if err != nil {
			return "", false, &PayloadError{Rule: fmt.Sprintf("field %q %v", name, err)}
		}
		return string(s), true, nil
	case got.kind == kindNumber:
		return string(got.raw), true, nil
	}
	return "", false, &PayloadError{Rule: fmt.Sprintf("field %q is %s (%s); only a string or a number names a table", name, got.kind, quote(got.raw))}
}
