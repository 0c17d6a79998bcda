package convert

import (
	"encoding/binary"
	"fmt"
	"math"
	"reflect"
	"time"

	"github.com/paulmach/orb"

	"github.com/ch-beam/pubsub-to-clickhouse/transforms/chtype"
)

// Geo types: Point, Ring, LineString, Polygon, MultiLineString, MultiPolygon.
//
// Accepted: nested JSON arrays of numbers, as GeoJSON writes coordinates: a Point is [x, y]
// (two numbers, each converted as Float64), a Ring or LineString an array of Points, a Polygon or
// MultiLineString an array of Rings or LineStrings, a MultiPolygon an array of Polygons:
// [[[0,0],[10,0],[10,10],[0,0]]] is a Polygon. null or a missing field is empty, except for Point.
// Errors: a Point without exactly two numbers, other JSON values, errors named by their path
// (element [0][2].2: the y of the third point of the first ring).
//
// RowBinary: Point as Tuple(Float64, Float64); Ring and LineString as Array(Point); Polygon and
// MultiLineString as Array(Ring) / Array(LineString); MultiPolygon as Array(Polygon).

type pointEncoder struct{}

func (pointEncoder) encode(dst []byte, v value, c *Converter) ([]byte, error) {
	if v.kind != kindArray {
		return dst, errValue(v, fmt.Sprintf("is %s; Point takes a JSON array [x, y] of two numbers", v.kind))
	}
	if n := countElements(v.raw); n != 2 {
		return dst, errValue(v, fmt.Sprintf("has %d element%s; Point takes a JSON array [x, y] of two numbers", n, plural(n)))
	}
	it := newElements(v.raw)
	for i := 0; i < 2; i++ {
		el, _ := it.next()
		var err error
		if dst, err = (floatEncoder{bits: 64}).encode(dst, el, c); err != nil {
			return dst, withPath(err, fmt.Sprintf(".%d", i+1))
		}
	}
	return dst, nil
}

// geoArray is the family of a geo type that RowBinary writes as an Array of elem (Ring: of
// Point), whose values decode into goValue's type (orb.Ring).
func geoArray(elem string, goValue any) *family {
	et := &chtype.Type{Name: elem}
	return &family{
		encoder: func(_ *chtype.Type, zone *time.Location) (encoder, error) {
			e, err := newEncoder(et, zone)
			return arrayEncoder{elem: e, elemType: et}, err
		},
		skip:   countedSkip(func(*chtype.Type) ([]*chtype.Type, bool) { return []*chtype.Type{et}, true }),
		column: newReflectColumn,
		value: func(t *chtype.Type) (*valueDecoder, error) {
			return newArrayDecoder(t, et, reflect.TypeOf(goValue))
		},
		empty: true,
	}
}

func (pointEncoder) size() int { return 16 }

// column decodes two Float64 into []orb.Point (github.com/paulmach/orb). The geo arrays (Ring, …)
// are Arrays of Points, decoded in decodecomposite.go.
func (pointEncoder) column(wrap shape) Column {
	return fixedColumn(wrap, 16, func(b []byte) orb.Point {
		return orb.Point{
			math.Float64frombits(binary.LittleEndian.Uint64(b)),
			math.Float64frombits(binary.LittleEndian.Uint64(b[8:])),
		}
	})
}
