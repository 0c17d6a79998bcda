package convert

import (
	"errors"
	"fmt"

	"github.com/ch-beam/pubsub-to-clickhouse/transforms/chtype"
)

// Nullable(T), LowCardinality(T), Array(T).
//
// Nullable(T): JSON null is NULL; any other value converts as T. LowCardinality(T) converts as T
// (RowBinary writes it as T). Array(T): a JSON array, each element converted as T; null is []
// (also for an element of type Array, and {} for an element of type Map); a non-array is an
// error, and so is a null element unless T is Nullable. Errors inside an array name the element's index: element [1].

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

func (e arrayEncoder) encode(dst []byte, v value, c *Converter) ([]byte, error) {
	switch v.kind {
	case kindNull:
		return append(dst, 0), nil
	case kindArray:
	default:
		return dst, errValue(v, fmt.Sprintf("is %s; %s takes a JSON array", v.kind, "Array("+e.elemType.String()+")"))
	}
	dst = appendUvarint(dst, countElements(v.raw))
	_, elemNullable := e.elemType.Unwrap()
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
