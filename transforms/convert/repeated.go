package convert

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
)

// RepeatedKey returns the first name that one object of payload holds twice, at any depth, and
// where that object is (a path such as .user.tags[2] or .user["a.b"], "" for the top-level
// object), with ok true.
// Names are compared as JSON.parse compares them (ECMA-262, JSON.parse: a later member of the
// same name replaces the earlier one): escapes resolved ("s" and "\u0073" are one name), and a
// \u escape of a lone UTF-16 surrogate read as U+FFFD, as goja reads it ("\ud800", "\udbff" and
// "\ufffd" are one name). ok is false when no object repeats a name, and when payload is not one
// well-formed JSON value (RFC 8259; numbers and literals are not checked): JSON.parse would throw
// on it. The payload is read once, without a bound on its nesting, in time linear in its length.
// Convert refuses a repeated name where it reads one (FieldTwice); this is for text another
// reader parses first, such as the input of the JavaScript UDF.
func RepeatedKey(payload []byte) (name, path string, ok bool) {
	if CheckUTF8(payload) != nil {
		return "", "", false
	}
	var r repeatedKeys
	if !r.read(payload) || r.name == nil {
		return "", "", false
	}
	return string(r.name), r.path, true
}

// maxListedNames is the most names of one object compared one by one; an object of more is
// read with a map, so that a hostile one of many names costs no more than its length.
const maxListedNames = 32

// repeatedKeys holds RepeatedKey's reading: the objects and arrays open (outermost first), the
// names read in the open objects, and the first repeated name and its object's path.
type repeatedKeys struct {
	open  []openValue
	names [][]byte
	name  []byte
	path  string
}

// openValue is an object or array being read.
type openValue struct {
	object bool
	first  int             // an object's first name in names
	seen   map[string]bool // an object's names once it has more than maxListedNames
	key    []byte          // an object's name being read
	index  int             // an array's element being read
}

// read reads payload, a JSON value, iteratively (no recursion, whatever the nesting), noting the
// first repeated name; it reports whether the payload is well formed.
func (r *repeatedKeys) read(p []byte) bool {
	i := skipSpace(p, 0)
	for {
		// A value at i.
		if i >= len(p) {
			return false
		}
		switch p[i] {
		case '{', '[':
			object := p[i] == '{'
			i = skipSpace(p, i+1)
			if i >= len(p) {
				return false
			}
			if object && p[i] == '}' || !object && p[i] == ']' {
				i++
				break // an empty object or array: a value read
			}
			r.open = append(r.open, openValue{object: object, first: len(r.names)})
			if object {
				var ok bool
				if i, ok = r.key(p, i); !ok {
					return false
				}
			}
			continue // the first member's value, or the first element
		case '"':
			end, _, err := scanString(p, i)
			if err != nil {
				return false
			}
			i = end
		default:
			j := i
			for j < len(p) && !isSpace(p[j]) && p[j] != ',' && p[j] != ']' && p[j] != '}' && p[j] != ':' {
				j++
			}
			if j == i {
				return false
			}
			i = j
		}
		// After a value: the next member or element, or the end of what is open.
		for {
			i = skipSpace(p, i)
			if len(r.open) == 0 {
				return i == len(p)
			}
			if i >= len(p) {
				return false
			}
			top := &r.open[len(r.open)-1]
			switch {
			case p[i] == ',' && top.object:
				var ok bool
				if i, ok = r.key(p, skipSpace(p, i+1)); !ok {
					return false
				}
			case p[i] == ',':
				top.index++
				i = skipSpace(p, i+1)
			case p[i] == '}' && top.object, p[i] == ']' && !top.object:
				r.names = r.names[:top.first]
				r.open = r.open[:len(r.open)-1]
				i++
				continue
			default:
				return false
			}
			break
		}
	}
}

// key reads the name of an object's member at i and the colon after it, notes it, and returns
// the index of the member's value.
func (r *repeatedKeys) key(p []byte, i int) (int, bool) {
	if i >= len(p) || p[i] != '"' {
		return i, false
	}
	end, escaped, err := scanString(p, i)
	if err != nil {
		return i, false
	}
	name := p[i+1 : end-1]
	if escaped {
		if text, err := stringContent(value{raw: p[i:end], kind: kindString, escaped: true}, nil); err == nil {
			name = text
		} else {
			// A lone surrogate's escape: read as encoding/json (and goja) read it, U+FFFD.
			var s string
			if json.Unmarshal(p[i:end], &s) != nil {
				return i, false
			}
			name = []byte(s)
		}
	}
	top := &r.open[len(r.open)-1]
	if r.name == nil && r.noted(top, name) {
		r.name = slices.Clone(name)
		r.path = r.pathOf()
	}
	top.key = name
	i = skipSpace(p, end)
	if i >= len(p) || p[i] != ':' {
		return i, false
	}
	return skipSpace(p, i+1), true
}

// noted adds name to top's names and reports whether top held it already.
func (r *repeatedKeys) noted(top *openValue, name []byte) bool {
	if top.seen == nil && len(r.names)-top.first >= maxListedNames {
		top.seen = make(map[string]bool, 2*maxListedNames)
		for _, n := range r.names[top.first:] {
			top.seen[string(n)] = true
		}
	}
	if top.seen != nil {
		repeated := top.seen[string(name)]
		top.seen[string(name)] = true
		return repeated
	}
	repeated := slices.ContainsFunc(r.names[top.first:], func(n []byte) bool { return bytes.Equal(n, name) })
	r.names = append(r.names, name)
	return repeated
}

// pathOf is the path of the innermost open object: each open object's name being read, and
// each open array's index, from the outermost (.a.b[1]["c.d"], as jq writes one).
func (r *repeatedKeys) pathOf() string {
	var b strings.Builder
	for _, o := range r.open[:len(r.open)-1] {
		if o.object {
			b.WriteString(pathStep(string(o.key)))
		} else {
			b.WriteString("[" + strconv.Itoa(o.index) + "]")
		}
	}
	return b.String()
}

// pathStep is the step of a path into the field name: .name for a name of ASCII letters, digits
// and _ that does not start with a digit, else the name quoted in brackets (["a.b"], [""]), so
// that a name holding '.', '[' or '"' cannot read as several steps.
func pathStep(name string) string {
	plain := name != "" && (name[0] < '0' || name[0] > '9')
	for i := 0; plain && i < len(name); i++ {
		c := name[i]
		plain = c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
	}
	if plain {
		return "." + name
	}
	return "[" + strconv.Quote(name) + "]"
}
