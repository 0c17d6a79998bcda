package convert

import (
	"errors"
	"fmt"
	"time"

	"github.com/ch-beam/pubsub-to-clickhouse/transforms/chtype"
)

// Nullable(T), LowCardinality(T), Array(T).
//
// Nullable(T): JSON null is NULL; any other value converts as T. LowCardinality(T) converts as T
// (RowBinary writes it as T). Array(T): a JSON array, each element converted as T; null is []
// (also for an element of type Array, and {} for an element of type Map); a non-array is an
// error, and so is a null element unless T is Nullable. Errors inside an array name the element's index: element [1].

// errNullableTuple refuses Nullable(Tuple(…)) (ClickHouse 26.x, with enable_nullable_tuple_type =
// 1): the parse stage's RowBinary of it is what the server reads, but clickhouse-go v2.51.0's
// Nullable column counts no row for a Tuple's values (lib/column/nullable.go: the Tuple's Append
// gives no NULL flags), so the ClickHouse 26.7 engine answers the write stage's INSERT with code 108
// NO_DATA_TO_INSERT, and it takes no NULL for a Tuple at all.
var errNullableTuple = errors.New("clickhouse-go v2.51.0 cannot insert a Nullable(Tuple): its column counts no row for a Tuple's values and takes no NULL for one; " +
	"declare the Tuple's elements Nullable instead, or use a JSON or String column")

func newNullableEncoder(t *chtype.Type, zone *time.Location) (encoder, error) {
	if f := families[t.Elems[0].Name]; f != nil && f.notNullable != nil {
		return nil, f.notNullable
	}
	inner, err := newEncoder(t.Elems[0], zone)
	if err != nil {
		return nil, err
	}
	return nullableEncoder{inner}, nil
}

type nullableEncoder struct {
	inner encoder
}

func (e nullableEncoder) encode(dst []byte, v value, c *Converter) ([]byte, error) {
	if v.kind == kindNull {
		return append(dst, 1), nil
	}
	return e.inner.encode(append(dst, 0), v, c)
}

type arrayEncoder struct {
	elem     encoder
	elemType *chtype.Type
}

func newArrayEncoder(t *chtype.Type, zone *time.Location) (encoder, error) {
	inner, err := newEncoder(t.Elems[0], zone)
	if err != nil {
		return nil, err
	}
	return arrayEncoder{elem: inner, elemType: t.Elems[0]}, nil
}

func (e arrayEncoder) encode(dst []byte, v value, c *Converter) ([]byte, error) {
	switch v.kind {
	case kindNull:
		return append(dst, 0), nil
	case kindArray:
	default:
		return dst, errValue(v, fmt.Sprintf("is %s; %s takes a JSON array", v.kind, "Array("+e.elemType.String()+")"))
	}
	dst = appendUvarint(dst, countElements(v.raw))
	_, elemNullable := unwrapColumn(e.elemType)
	it := newElements(v.raw)
	for i := 0; ; i++ {
		el, ok := it.next()
		if !ok {
			return dst, nil
		}
		var err error
		if el.kind == kindNull && !elemNullable && !emptyOnNull(e.elemType) {
			err = errValue(el, fmt.Sprintf("is not allowed: the element type %s is not Nullable", e.elemType))
		} else {
			dst, err = e.elem.encode(dst, el, c)
		}
		if err != nil {
			var ve *ValueError
			if errors.As(err, &ve) {
				ve.Path = fmt.Sprintf("[%d]", i) + ve.Path
			}
			return dst, err
		}
	}
}
