package convert

import (
	"bytes"
	"errors"
	"fmt"
	"time"

	"github.com/ch-beam/pubsub-to-clickhouse/transforms/chtype"
)

// Map(K, V).
//
// Accepted: a JSON object. Each key, a JSON string, converts as K from its text (so keys of a
// Map(UInt64, V) are numeric strings such as "42", of a Map(Date, V) ISO dates); each value converts
// as V (null is NULL for a Nullable V, empty for an Array, Map or Nested V, else an error). The
// entries keep the object's order. null, or a missing field, is the empty map {}, as for Array.
// Errors name the entry, element ["key"], and say when the key itself failed:
// element ["x"] (the key). Two keys that convert to the same K value ("1" and "01" into UInt8)
// are an error: a Map keeps one value per key, and which one is meant is ambiguous.
//
// RowBinary: the number of entries (LEB128), then each key and value (RowBinary format docs, "Map").

type mapEncoder struct {
	name             string // Map(K, V)
	keyType, valType *chtype.Type
	key, val         encoder
}

// errMapIPKey refuses Map(IPv4, V) and Map(IPv6, V), also with LowCardinality keys: the ClickHouse
// 26.7 engine takes them, but clickhouse-go v2.51.0's Map column refuses a key type whose Go scan
// type is not comparable (lib/column/map.go), and its IPv4 and IPv6 columns scan into net.IP, a
// slice, so every INSERT of the write stage fails before anything is sent ("unsupported column
// type").
var errMapIPKey = errors.New("clickhouse-go v2.51.0 cannot insert a Map whose keys are IPv4 or IPv6: its Map column needs keys it can compare, and it reads IP addresses as net.IP, a slice, " +
	"so every INSERT would fail with 'unsupported column type'; use String keys (the address's text)")

func newMapEncoder(t *chtype.Type, zone *time.Location) (encoder, error) {
	if k, _ := unwrapColumn(t.Elems[0]); k.Name == "IPv4" || k.Name == "IPv6" {
		return nil, errMapIPKey
	}
	key, err := newEncoder(t.Elems[0], zone)
	if err != nil {
		return nil, err
	}
	val, err := newEncoder(t.Elems[1], zone)
	if err != nil {
		return nil, err
	}
	return mapEncoder{name: t.String(), keyType: t.Elems[0], valType: t.Elems[1], key: key, val: val}, nil
}

func (e mapEncoder) encode(dst []byte, v value, c *Converter) ([]byte, error) {
	switch v.kind {
	case kindNull:
		return append(dst, 0), nil
	case kindObject:
	default:
		return dst, errValue(v, fmt.Sprintf("is %s; %s takes a JSON object", v.kind, e.name))
	}
	n := countMembers(v.raw)
	dst = appendUvarint(dst, n)
	var small [16][2]int
	keys := small[:0] // spans of the encoded keys in dst, for small maps
	var seen map[string]struct{}
	if n > len(small) {
		seen = make(map[string]struct{}, n)
	}
	for it := newMembers(v.raw); ; {
		key, val, ok := it.next()
		if !ok {
			return dst, nil
		}
		path := "[" + quote(key.raw) + "]"
		start := len(dst)
		var err error
		if dst, err = e.key.encode(dst, key, c); err != nil {
			return dst, withPath(err, path+" (the key)")
		}
		dup := false
		if seen != nil {
			_, dup = seen[string(dst[start:])]
			seen[string(dst[start:])] = struct{}{}
		} else {
			for _, k := range keys {
				dup = dup || bytes.Equal(dst[k[0]:k[1]], dst[start:])
			}
			keys = append(keys, [2]int{start, len(dst)})
		}
		if dup {
			return dst, withPath(errValue(key, fmt.Sprintf("is the same %s key as an earlier key of the object; which value is meant is ambiguous", e.keyType)), path+" (the key)")
		}
		if dst, err = encodeElement(dst, val, e.valType, e.val, c); err != nil {
			return dst, withPath(err, path)
		}
	}
}
