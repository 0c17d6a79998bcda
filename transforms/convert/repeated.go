package convert

import (
	"bytes"
	"slices"
	"strconv"
	"strings"
)

// RepeatedKey returns the first name that one object of payload holds twice, at any depth, and
// where that object is (a path such as .user.tags[2], "" for the top-level object), with ok true.
// Names are compared with their escapes resolved ("s" and "\u0073" are one name), as
// JSON.parse compares them (ECMA-262, JSON.parse: a later member of the same name replaces the
// earlier one). ok is false when no object repeats a name, and when payload is not one valid JSON
// value (RFC 8259) nested at most 1000 levels (the converter's bound): it says nothing then, and
// JSON.parse would throw on what is not JSON. Convert refuses a repeated
// name where it reads one (FieldTwice); this is for text another reader parses first, such as
// the input of the JavaScript UDF.
func RepeatedKey(payload []byte) (name, path string, ok bool) {
	if CheckUTF8(payload) != nil {
		return "", "", false
	}
	i := skipSpace(payload, 0)
	if i >= len(payload) {
		return "", "", false
	}
	v, end, err := scanValue(payload, i, 0)
	if err != nil || skipSpace(payload, end) < len(payload) {
		return "", "", false
	}
	var r repeatedKeys
	if r.walk(v) {
		slices.Reverse(r.path)
		return r.name, strings.Join(r.path, ""), true
	}
	return "", "", false
}

// maxListedNames is the most names of one object compared one by one; an object of more is
// read with a map, so that a hostile one of many names costs no more than its length.
const maxListedNames = 32

// repeatedKeys holds RepeatedKey's walk: the names of the objects being read, and once found,
// the repeated name and the path of its object from the inside out (".tags", "[2]", ".user").
type repeatedKeys struct {
	listed [][]byte // the names of the objects being read, each one's after its outer one's
	name   string
	path   []string
}

// walk reads v and reports whether one of its objects repeats a name.
func (r *repeatedKeys) walk(v value) bool {
	switch v.kind {
	case kindArray:
		for it, n := newElements(v.raw), 0; ; n++ {
			e, ok := it.next()
			if !ok {
				return false
			}
			if r.walk(e) {
				r.path = append(r.path, "["+strconv.Itoa(n)+"]")
				return true
			}
		}
	case kindObject:
		first := len(r.listed)
		defer func() { r.listed = r.listed[:first] }()
		var seen map[string]bool
		for it := newMembers(v.raw); ; {
			key, val, ok := it.next()
			if !ok {
				return false
			}
			name := key.raw[1 : len(key.raw)-1]
			if key.escaped {
				if text, err := stringContent(key, nil); err == nil {
					name = text
				} // else a lone surrogate's escape: the name as written
			}
			repeated := false
			switch {
			case seen != nil:
				repeated = seen[string(name)]
				seen[string(name)] = true
			case len(r.listed)-first < maxListedNames:
				repeated = slices.ContainsFunc(r.listed[first:], func(n []byte) bool { return bytes.Equal(n, name) })
				r.listed = append(r.listed, name)
			default:
				seen = make(map[string]bool, 2*maxListedNames)
				for _, n := range r.listed[first:] {
					seen[string(n)] = true
				}
				repeated = seen[string(name)]
				seen[string(name)] = true
			}
			if repeated {
				r.name = string(name)
				return true
			}
			if r.walk(val) {
				r.path = append(r.path, "."+string(name))
				return true
			}
		}
	}
	return false
}
