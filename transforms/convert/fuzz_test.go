package convert_test

import (
	"errors"
	"testing"

	"github.com/ch-beam/pubsub-to-clickhouse/internal/shared"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/chtype"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/convert"
)

// FuzzConvert feeds arbitrary payloads to a converter over a table of every supported type
// family. Every input must either convert into a row that decodes over the table's columns (Split,
// then each column's decoder, NewColumn), or fail with a *convert.PayloadError or a
// *convert.RowError whose every error names a column. Seeded with the payloads of ../shared/cases,
// a row that fills every column, and the other forms of the group fields (nested.go) and epoch
// strings.
func FuzzConvert(f *testing.F) {
	for _, c := range shared.Cases(f) {
		f.Add(c.Data())
	}
	f.Add([]byte(`{"i8":-128,"u64":"18446744073709551615","f32":"NaN","s":{"a":[1, 2]},"d":"2024-02-29","dt":"2024-01-01T00:00:00.5+01:00","a":[[1],[null]],"n":null,"lc":"x"}`))
	// Every column of the table, valid: mutations start from a row that converts.
	full := []byte(`{"i8":1,"u64":2,"f32":3,"f64":4,"s":"s","d":19782,"dt":1704067200,"dts":"2024-01-01","a":[],"as":[],` +
		`"dec":"-12.50","d32":1e-4,"d256":"1e70","i128":"-170141183460469231731687303715884105728","u256":[1e77],"b":1,` +
		`"uuid":"123e4567-e89b-12d3-a456-426614174000","ip4":"10.0.0.1","ip6":"::ffff:1.2.3.4","fs":"ab","e8":"it's","e16":-1000,` +
		`"d32d":-25567,"dt64":"2262-04-11T23:47:16.854775807Z","dt64t":1704067200.5,"tm":"-999:59:59","tm64":-0.001,"bf":0.1,` +
		`"m":{"1":[{"k":null}],"2":[]},"t":{"b":[1,"x"],"a":"2024-01-01"},"tu":[null,[[1.5]]],"n.a":[1,2],"n.b":["x",null],` +
		`"nt":[{"a":1,"b":"x"},[2,null]],"j":{"a":{"b":[{"c":1}]},"a.c":2},"p":[1,2],"poly":[[[0,0],[1,1]]],"saf":7,` +
		`"g":[{"a":1,"b":null},{"a":2}],"x":{"y":{"z":[1],"w":["q"]}},"u":{"id":1,"tags":["t"]}}`)
	f.Add(full)
	f.Add([]byte(`{"i8":1,"u64":2,"f32":3,"f64":4,"s":"s","d":"19782","dt":"1704067200","dts":"0","d32d":"-25567","dt64":"-1.5","dt64t":"1704067200.123",` +
		`"g":{"a":[1,2],"b":["x",null]},"x.y":[{"z":1,"w":"q"}],"u.id":null,"u.tags":[],"nt":{"a":[1],"b":["x"]},"m":{"19782":[]}}`))
	f.Add([]byte(`{"g.a":[1],"g.b":["x"],"x":{"y.z":[1],"y.w":["q"]},"u":null,"t.a":1,"g":{"a":[1]},"x.y":{}}`))
	tb := table(f, "i8 Int8", "u64 UInt64", "f32 Float32", "f64 Float64", "s String", "d Date",
		"dt DateTime('Asia/Tokyo')", "dts DateTime", "a Array(Array(Nullable(Int16)))", "n Nullable(UInt32)",
		"lc LowCardinality(Nullable(String))", "def String DEFAULT 'x'", "as Array(String)",
		// Issue 6: every other type family.
		"dec Decimal(10, 2)", "d32 Decimal32(4)", "d256 Nullable(Decimal(76, 5))", "i128 Int128", "u256 Array(UInt256)",
		"b Bool", "uuid Nullable(UUID)", "ip4 IPv4", "ip6 IPv6", "fs LowCardinality(FixedString(3))",
		"e8 Enum8('x' = -2, 'it\\'s' = 1)", "e16 Nullable(Enum16('a' = -1000, 'b' = 1000))", "d32d Date32",
		"dt64 DateTime64(9, 'UTC')", "dt64t DateTime64(3, 'Asia/Tokyo')", "tm Time", "tm64 Time64(3)", "bf BFloat16",
		"m Map(UInt8, Array(Map(String, Nullable(Decimal(5, 1)))))", "t Tuple(a Date32, b Tuple(UInt8, String))",
		"tu Tuple(Nullable(Int8), Array(Array(Decimal(3, 1))))", "n.a Array(UInt8)", "n.b Array(Nullable(String))",
		"nt Nested(a UInt8, b Nullable(String))", "j JSON", "p Point", "poly Polygon",
		"saf SimpleAggregateFunction(max, Nullable(Int32))",
		// Group fields: a Nested structure, deeper dotted names, dotted columns of other types.
		"g.a Array(UInt8)", "g.b Array(Nullable(String))", "g.m Array(UInt8) MATERIALIZED g.a",
		"x.y.z Array(Int8)", "x.y.w Array(String) DEFAULT arrayMap(v -> 'w', x.y.z)", "u.id Nullable(UInt32)", "u.tags Array(String)")
	conv, err := convert.New(tb)
	if err != nil {
		f.Fatal(err)
	}
	if _, err := conv.Convert(nil, full); err != nil {
		f.Fatalf("the full seed does not convert: %v", err)
	}
	var types []*chtype.Type
	for _, c := range tb.Writable() {
		types = append(types, c.Type)
	}
	f.Fuzz(func(t *testing.T, payload []byte) {
		row, err := conv.Convert(nil, payload)
		if err == nil {
			spans, err := convert.Split(types, row, nil)
			if err != nil {
				t.Fatalf("payload %q: row %x does not decode: %v", payload, row, err)
			}
			for i, span := range spans {
				if span == nil {
					continue
				}
				col, err := convert.NewColumn(types[i])
				if err != nil {
					t.Fatal(err)
				}
				if err := col.Append(span); err != nil {
					t.Fatalf("payload %q: column %d (%s) does not decode: %v", payload, i, types[i], err)
				}
			}
			return
		}
		var pe *convert.PayloadError
		var re *convert.RowError
		switch {
		case errors.As(err, &pe):
		case errors.As(err, &re):
			for _, ve := range re.Errs {
				if ve.Column == "" || ve.Rule == "" {
					t.Fatalf("payload %q: error without a column or a rule: %#v", payload, ve)
				}
			}
		default:
			t.Fatalf("payload %q: error of type %T: %v", payload, err, err)
		}
	})
}
