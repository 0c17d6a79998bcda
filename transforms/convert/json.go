package convert

import (
	"fmt"
	"strings"

	"github.com/ch-beam/pubsub-to-clickhouse/transforms/chtype"
)

// JSON (ClickHouse 24.8 and later; not the deprecated Object('json')).
//
// Accepted: a JSON object, passed to the server as its original text without the white space
// between tokens (as for String). The server parses it and infers each path's type with its own
// rules (for example, it stores 0.1 as a Float64 and 1 as an Int64); the pipeline does not
// convert the values. A value the server's JSON type refuses passes (ClickHouse 26.7 refuses a
// number beyond UInt64 and Int64 that is not written as a float, such as 18446744073709551616, and
// one beyond Float64, such as 1e400, with code 117): the write stage isolates that row and
// dead-letters it with the server's error. It only rejects what would make the server fail the whole
// INSERT in a way it can see: a key given twice in one object, or two keys that name the same
// path ({"a.b":1,"a":{"b":2}}: the server splits keys on dots).
// Errors: any other JSON value (ClickHouse's JSON type holds objects), the duplicates above.
//
// Refused at start-up: a JSON type with typed paths, JSON(a.b UInt32): the server converts those
// paths' values with its own text rules, and one value it rejects would fail the whole INSERT, not
// just that message. Declare the column JSON (SKIP and max_dynamic_… arguments are fine), or give
// the path a column of its own.
//
// The row carries the text as a String, which is RowBinary's form of JSON under the server setting
// input_format_binary_read_json_as_string; the write stage hands clickhouse-go the strings, which it
// sends in the JSON column's string serialization.

type jsonEncoder struct{}

// newJSONEncoder is JSON's codec, for a JSON(…) without typed paths.
func newJSONEncoder(t *chtype.Type) (scalar, error) {
	if err := checkJSONArgs(t); err != nil {
		return nil, err
	}
	return jsonEncoder{}, nil
}

// checkJSONArgs refuses typed paths in JSON(…).
func checkJSONArgs(t *chtype.Type) error {
	for _, a := range t.Args {
		switch {
		case strings.HasPrefix(a, "max_dynamic_paths"), strings.HasPrefix(a, "max_dynamic_types"),
			strings.HasPrefix(a, "SKIP ") || strings.HasPrefix(a, "SKIP\t"):
		default:
			return fmt.Errorf("a JSON column with typed paths (%s) is not supported: the server converts their values with its own rules, and a value it rejects would fail the whole INSERT; declare the column JSON without typed paths, or give the path a column of its own", a)
		}
	}
	return nil
}

func (jsonEncoder) encode(dst []byte, v value, c *Converter) ([]byte, error) {
	if v.kind != kindObject {
		return dst, errValue(v, fmt.Sprintf("is %s; JSON takes a JSON object", v.kind))
	}
	if err := checkJSONPaths(v.raw, "", "", map[string]bool{}, c); err != nil {
		return dst, err
	}
	return stringEncoder{}.encode(dst, v, c)
}

// checkJSONPaths walks an object and fails on a key given twice in one object, or on two leaves
// with the same dotted path. Objects inside arrays are documents of their own. at is the object's
// place for error messages: "" for the value itself, ".a" for the object under key a.
func checkJSONPaths(obj []byte, prefix, at string, leaves map[string]bool, c *Converter) error {
	var keys map[string]bool
	for it := newMembers(obj); ; {
		key, val, ok := it.next()
		if !ok {
			return nil
		}
		k, err := c.text(key)
		if err != nil {
			return withPath(errValue(key, err.Error()), at)
		}
		name := string(k)
		if keys == nil {
			keys = map[string]bool{}
		}
		if keys[name] {
			return withPath(errValue(key, "appears twice in one object; which value is meant is ambiguous"), at)
		}
		keys[name] = true
		path := name
		if prefix != "" {
			path = prefix + "." + name
		}
		switch val.kind {
		case kindObject:
			if err := checkJSONPaths(val.raw, path, at+"."+name, leaves, c); err != nil {
				return err
			}
		case kindArray:
			if err := checkJSONArray(val.raw, at+"."+name, c); err != nil {
				return err
			}
		default:
			if leaves[path] {
				return withPath(errValue(key, fmt.Sprintf("names the path %s a second time (the server splits keys on dots); which value is meant is ambiguous", path)), at)
			}
			leaves[path] = true
		}
	}
}

// checkJSONArray checks the objects of an array, at any depth, each as a document of its own.
func checkJSONArray(arr []byte, at string, c *Converter) error {
	it := newElements(arr)
	for i := 0; ; i++ {
		el, ok := it.next()
		if !ok {
			return nil
		}
		elAt := fmt.Sprintf("%s[%d]", at, i)
		switch el.kind {
		case kindObject:
			if err := checkJSONPaths(el.raw, "", elAt, map[string]bool{}, c); err != nil {
				return err
			}
		case kindArray:
			if err := checkJSONArray(el.raw, elAt, c); err != nil {
				return err
			}
		}
	}
}

func (jsonEncoder) size() int { return 0 }

// column decodes the JSON text (a LEB128 length and the bytes) into []string, which clickhouse-go's
// JSON column takes as text.
func (jsonEncoder) column(wrap shape) Column { return stringColumnOf(wrap) }
