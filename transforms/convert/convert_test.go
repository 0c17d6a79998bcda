package convert_test

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/ch-beam/pubsub-to-clickhouse/internal/shared"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/chtype"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/convert"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/schema"
)

// table builds a schema from "name Type [DEFAULT expr]" column specs.
func table(t testing.TB, specs ...string) *schema.Table {
	t.Helper()
	tb := &schema.Table{Database: "db", Name: "t", ServerTimeZone: "Etc/UTC"}
	for _, spec := range specs {
		name, rest, _ := strings.Cut(spec, " ")
		typ, def, _ := strings.Cut(rest, " DEFAULT ")
		kind := ""
		if def != "" {
			kind = "DEFAULT"
		}
		for _, k := range []string{"MATERIALIZED", "ALIAS", "EPHEMERAL"} {
			if a, e, ok := strings.Cut(typ, " "+k+" "); ok {
				typ, kind, def = a, k, e
			}
		}
		ct, err := chtype.Parse(typ)
		if err != nil {
			t.Fatal(err)
		}
		tb.Columns = append(tb.Columns, schema.Column{Name: name, TypeName: typ, Type: ct, DefaultKind: kind, DefaultExpression: def})
	}
	return tb
}

// useDefault marks a column whose DEFAULT the server computes.
type useDefault struct{}

// convertRow converts payload and decodes the row into one Go value per writable column.
func convertRow(t testing.TB, tb *schema.Table, payload string) ([]any, error) {
	t.Helper()
	c, err := convert.New(tb)
	if err != nil {
		t.Fatal(err)
	}
	row, err := c.Convert(nil, []byte(payload))
	if err != nil {
		return nil, err
	}
	return decodeRow(t, tb, row), nil
}

// decodeRow decodes a row of tb into one Go value per writable column (useDefault{} for a
// column whose DEFAULT the server computes).
func decodeRow(t testing.TB, tb *schema.Table, row []byte) []any {
	t.Helper()
	cols := tb.Writable()
	types := make([]*chtype.Type, len(cols))
	for i, col := range cols {
		types[i] = col.Type
	}
	spans, err := convert.Split(types, row, nil)
	if err != nil {
		t.Fatalf("row %x does not decode: %v", row, err)
	}
	out := make([]any, len(spans))
	for i, s := range spans {
		if s == nil {
			out[i] = useDefault{}
			continue
		}
		col, err := convert.NewColumn(types[i])
		if err != nil {
			t.Fatal(err)
		}
		if err := col.Append(s); err != nil {
			t.Fatal(err)
		}
		out[i] = firstOf(col.Values())
	}
	return out
}

func firstOf(slice any) any {
	switch s := slice.(type) {
	case []int8:
		return s[0]
	case []int16:
		return s[0]
	case []int32:
		return s[0]
	case []int64:
		return s[0]
	case []uint8:
		return s[0]
	case []uint16:
		return s[0]
	case []uint32:
		return s[0]
	case []uint64:
		return s[0]
	case []float32:
		return s[0]
	case []float64:
		return s[0]
	case []string:
		return s[0]
	case []time.Time:
		return s[0]
	case []*int32:
		return s[0]
	case []*int8:
		return s[0]
	case []*string:
		return s[0]
	case []*uint8:
		return s[0]
	case [][]*int32:
		return s[0]
	case [][]string:
		return s[0]
	case [][]uint8:
		return s[0]
	case [][]time.Time:
		return s[0]
	case [][][]int64:
		return s[0]
	}
	return reflect.ValueOf(slice).Index(0).Interface() // the types added since, by reflection
}

func ptr[T any](v T) *T { return &v }

func utc(s string) time.Time {
	tm, err := time.Parse(time.DateTime, s)
	if err != nil {
		panic(err)
	}
	return tm
}

type convCase struct {
	name    string
	columns []string
	payload string
	want    []any  // decoded values, one per writable column
	wantErr string // substring of the error; each must also name the column
}

func run(t *testing.T, cases []convCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := convertRow(t, table(t, tc.columns...), tc.payload)
			if tc.wantErr != "" {
				if err == nil {
					t.Fatalf("payload %s converted to %v, want an error containing %q", tc.payload, got, tc.wantErr)
				}
				if !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %q, want it to contain %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("payload %s: %v", tc.payload, err)
			}
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateNaNs(), valueComparers); diff != "" {
				t.Errorf("payload %s (-want +got):\n%s", tc.payload, diff)
			}
		})
	}
}

func TestIntegers(t *testing.T) {
	run(t, []convCase{
		{"beyond 2^53 exactly", []string{"a Int64", "b UInt64"}, `{"a":9007199254740993,"b":18446744073709551615}`, []any{int64(9007199254740993), uint64(math.MaxUint64)}, ""},
		{"as strings", []string{"a Int64", "b UInt64"}, `{"a":"-9223372036854775808","b":"18446744073709551615"}`, []any{int64(math.MinInt64), uint64(math.MaxUint64)}, ""},
		{"edges of every width", []string{"a Int8", "b Int16", "c Int32", "d UInt8", "e UInt16", "f UInt32"},
			`{"a":-128,"b":32767,"c":-2147483648,"d":255,"e":65535,"f":4294967295}`,
			[]any{int8(-128), int16(32767), int32(-2147483648), uint8(255), uint16(65535), uint32(4294967295)}, ""},
		{"exponent and decimal forms", []string{"a UInt32", "b Int64", "c Int32", "d Int32", "e Int64"},
			`{"a":1e3,"b":42.0,"c":1.5e1,"d":-0,"e":12300e-2}`, []any{uint32(1000), int64(42), int32(15), int32(0), int64(123)}, ""},
		{"zero with huge exponent", []string{"a Int8"}, `{"a":0e99999999999}`, []any{int8(0)}, ""},
		{"booleans", []string{"a UInt8", "b Int64"}, `{"a":true,"b":false}`, []any{uint8(1), int64(0)}, ""},
		{"escaped digits in a string", []string{"a Int32"}, `{"a":"\u0034\u0032"}`, []any{int32(42)}, ""},
		{"Int64 overflow", []string{"a Int64"}, `{"a":9223372036854775808}`, nil, `column "a" (Int64): 9223372036854775808 is out of range for Int64 (-9223372036854775808 to 9223372036854775807)`},
		{"Int64 underflow", []string{"a Int64"}, `{"a":-9223372036854775809}`, nil, `is out of range for Int64`},
		{"UInt64 overflow", []string{"a UInt64"}, `{"a":18446744073709551616}`, nil, `is out of range for UInt64`},
		{"Int8 wraps never", []string{"a Int8"}, `{"a":128}`, nil, `128 is out of range for Int8 (-128 to 127)`},
		{"negative into unsigned", []string{"a UInt32"}, `{"a":-1}`, nil, `-1 is out of range for UInt32 (0 to 4294967295)`},
		{"fraction", []string{"a Int32"}, `{"a":2.5}`, nil, `2.5 is not a whole number`},
		{"tiny fraction via exponent", []string{"a Int32"}, `{"a":1e-1}`, nil, `is not a whole number`},
		{"huge exponent", []string{"a Int64"}, `{"a":1e19}`, nil, `is out of range for Int64`},
		{"very huge exponent", []string{"a Int64"}, `{"a":1e99999999999}`, nil, `is out of range for Int64`},
		// More digits than the exponent bound of a short number: 10^2000000 × 10^-1999999999 is a
		// fraction, and 10^-1000000 × 10^2000001 out of range, whatever the bound keeps of the
		// exponent's digits.
		{"fraction with millions of digits", []string{"a Int64"}, `{"a":1` + strings.Repeat("0", 2_000_000) + `e-1999999999}`, nil, `is not a whole number`},
		{"out of range with millions of digits", []string{"a Int64"}, `{"a":0.` + strings.Repeat("0", 999_999) + `1e1999999999}`, nil, `is out of range for Int64`},
		{"string with trailing garbage", []string{"a Int32"}, `{"a":"42abc"}`, nil, `"42abc" is not a number`},
		{"empty string", []string{"a Int32"}, `{"a":""}`, nil, `"" is not a number`},
		{"leading space", []string{"a Int32"}, `{"a":" 42"}`, nil, `is not a number`},
		{"hex", []string{"a Int32"}, `{"a":"0x1F"}`, nil, `is not a number`},
		{"a word is not a boolean", []string{"a UInt8"}, `{"a":"yes"}`, nil, `"yes" is not a number`},
		{"object", []string{"a UInt8"}, `{"a":{"x":1}}`, nil, `{"x":1} is an object; UInt8 takes an integer`},
	})
}

func TestFloats(t *testing.T) {
	run(t, []convCase{
		{"numbers", []string{"a Float32", "b Float64"}, `{"a":0.25,"b":-0.5e-3}`, []any{float32(0.25), -0.0005}, ""},
		{"numeric strings", []string{"a Float32", "b Float64"}, `{"a":"1.5","b":"-2E2"}`, []any{float32(1.5), -200.0}, ""},
		{"spelled-out specials", []string{"a Float64", "b Float64", "c Float32"}, `{"a":"NaN","b":"-Infinity","c":"Infinity"}`, []any{math.NaN(), math.Inf(-1), float32(math.Inf(1))}, ""},
		{"float64 exactness", []string{"a Float64"}, `{"a":0.1}`, []any{0.1}, ""},
		{"integers", []string{"a Float64"}, `{"a":9007199254740993}`, []any{9007199254740992.0}, ""},
		{"Float32 overflow", []string{"a Float32"}, `{"a":3.5e38}`, nil, `column "a" (Float32): 3.5e38 is out of range for Float32`},
		{"Float64 overflow", []string{"a Float64"}, `{"a":-1e400}`, nil, `is out of range for Float64`},
		{"Float64 overflow in a string", []string{"a Float64"}, `{"a":"1e400"}`, nil, `is out of range for Float64`},
		// More than 800 digits before the decimal point, which strconv.ParseFloat alone misplaces:
		// 10^800 × 10^-800 is 1 (it read 0.1), 10^20000 × 10^-19690 beyond Float64 (it read 0).
		{"many digits and an exponent", []string{"a Float64", "b Float32", "c Float64"},
			`{"a":1` + strings.Repeat("0", 800) + `e-800,"b":"-1` + strings.Repeat("0", 800) + `.5e-800","c":0.` + strings.Repeat("0", 900) + `1e901}`,
			[]any{1.0, float32(-1), 1.0}, ""},
		{"many digits beyond Float64", []string{"a Float64"}, `{"a":1` + strings.Repeat("0", 20000) + `e-19690}`, nil, `is out of range for Float64`},
		{"bare NaN is not JSON", []string{"a Float64"}, `{"a":NaN}`, nil, `payload: invalid JSON at byte 5`},
		{"word", []string{"a Float64"}, `{"a":"abc"}`, nil, `"abc" is not a number`},
		{"boolean", []string{"a Float64"}, `{"a":true}`, nil, `true is a boolean; Float64 takes a number`},
	})
}

func TestStrings(t *testing.T) {
	run(t, []convCase{
		{"escapes resolved", []string{"a String"}, `{"a":"tab\there \"q\" \u00e9 \ud83d\ude00 \/"}`, []any{"tab\there \"q\" é 😀 /"}, ""},
		{"non-ASCII as is", []string{"a String"}, `{"a":"Zürich 東京"}`, []any{"Zürich 東京"}, ""},
		{"number keeps its spelling", []string{"a String", "b String"}, `{"a":1.50,"b":-0e10}`, []any{"1.50", "-0e10"}, ""},
		{"object compacted in key order", []string{"a String"}, `{"a": {"zeta": 1, "alpha": [ 2.50 , "x y" ] }}`, []any{`{"zeta":1,"alpha":[2.50,"x y"]}`}, ""},
		{"escaped quote inside nested string", []string{"a String"}, `{"a": {"k": "a \" b"}}`, []any{`{"k":"a \" b"}`}, ""},
		{"booleans", []string{"a String"}, `{"a":true}`, []any{"true"}, ""},
		{"empty string is not NULL", []string{"a String", "b Nullable(String)"}, `{"a":"","b":""}`, []any{"", ptr("")}, ""},
		{"lone surrogate", []string{"a String"}, `{"a":"\ud800"}`, nil, `lone UTF-16 surrogate`},
		{"lone low surrogate", []string{"a String"}, `{"a":"x\udc00y"}`, nil, `lone UTF-16 surrogate`},
	})
}

func TestDateTimes(t *testing.T) {
	run(t, []convCase{
		{"offset", []string{"a DateTime('UTC')"}, `{"a":"2024-03-10T12:00:00+02:00"}`, []any{utc("2024-03-10 10:00:00")}, ""},
		{"compact offset and hour offset", []string{"a DateTime('UTC')", "b DateTime('UTC')"}, `{"a":"2024-03-10T12:00:00-0130","b":"2024-03-10T12:00:00+05"}`, []any{utc("2024-03-10 13:30:00"), utc("2024-03-10 07:00:00")}, ""},
		{"fraction truncated", []string{"a DateTime('UTC')"}, `{"a":"2024-03-10T12:00:00.999999999Z"}`, []any{utc("2024-03-10 12:00:00")}, ""},
		{"space and lowercase", []string{"a DateTime('UTC')", "b DateTime('UTC')"}, `{"a":"2024-03-10 12:00:00","b":"2024-03-10t12:00:00z"}`, []any{utc("2024-03-10 12:00:00"), utc("2024-03-10 12:00:00")}, ""},
		{"column zone applies without offset", []string{"a DateTime('Asia/Tokyo')", "b DateTime"}, `{"a":"2024-01-01 09:00:00","b":"2024-01-01 09:00:00"}`, []any{utc("2024-01-01 00:00:00"), utc("2024-01-01 09:00:00")}, ""},
		{"DST: a repeated local time is not guessed", []string{"a DateTime('Europe/Berlin')"}, `{"a":"2024-10-27 02:30:00"}`, nil, `column "a" (DateTime('Europe/Berlin')): "2024-10-27 02:30:00" occurs twice in time zone Europe/Berlin (its clocks go back); give a UTC offset`},
		{"DST: a skipped local time is not guessed", []string{"a DateTime('Europe/Berlin')"}, `{"a":"2024-03-31 02:30:00"}`, nil, `does not exist in time zone Europe/Berlin (its clocks skip that time)`},
		{"DST: a skipped midnight is not moved to the day before", []string{"a DateTime('America/Havana')"}, `{"a":"2024-03-10"}`, nil, `does not exist in time zone America/Havana`},
		{"DST: the hours around the change are exact", []string{"a DateTime('Europe/Berlin')", "b DateTime('Europe/Berlin')", "c DateTime('Europe/Berlin')"},
			`{"a":"2024-10-27 01:59:59","b":"2024-10-27 03:00:00","c":"2024-03-31 03:00:00"}`,
			[]any{utc("2024-10-26 23:59:59"), utc("2024-10-27 02:00:00"), utc("2024-03-31 01:00:00")}, ""},
		{"DST: an offset makes a repeated time exact", []string{"a DateTime('Europe/Berlin')"}, `{"a":"2024-10-27T02:30:00+01:00"}`, []any{utc("2024-10-27 01:30:00")}, ""},
		{"Z wins over the column zone", []string{"a DateTime('Asia/Tokyo')"}, `{"a":"2024-01-01T09:00:00Z"}`, []any{utc("2024-01-01 09:00:00")}, ""},
		{"date alone", []string{"a Date", "b DateTime('UTC')"}, `{"a":"2024-02-29","b":"2024-02-29"}`, []any{utc("2024-02-29 00:00:00"), utc("2024-02-29 00:00:00")}, ""},
		{"midnight into Date", []string{"a Date"}, `{"a":"2024-02-29T00:00:00Z"}`, []any{utc("2024-02-29 00:00:00")}, ""},
		{"range edges", []string{"a Date", "b Date", "c DateTime('UTC')", "d DateTime('UTC')"},
			`{"a":"1970-01-01","b":"2149-06-06","c":"1970-01-01T00:00:00Z","d":"2106-02-07T06:28:15Z"}`,
			[]any{utc("1970-01-01 00:00:00"), utc("2149-06-06 00:00:00"), utc("1970-01-01 00:00:00"), utc("2106-02-07 06:28:15")}, ""},
		{"time of day into Date", []string{"a Date"}, `{"a":"2024-02-29T10:00:00Z"}`, nil, `has a time of day`},
		{"not ISO", []string{"a DateTime('UTC')"}, `{"a":"10/03/2024"}`, nil, `column "a" (DateTime('UTC')): "10/03/2024" is not an ISO-8601 date-time`},
		{"no such day", []string{"a Date"}, `{"a":"2023-02-29"}`, nil, `column "a" (Date): "2023-02-29" has day 29 in February 2023, which has 28 days (2023 is not a leap year)`},
		{"hour 24", []string{"a DateTime('UTC')"}, `{"a":"2024-01-01T24:00:00Z"}`, nil, `column "a" (DateTime('UTC')): "2024-01-01T24:00:00Z" has hour 24; hours are 00 to 23 (write the next day's 00:00:00)`},
		{"leap second", []string{"a DateTime('UTC')"}, `{"a":"2016-12-31T23:59:60Z"}`, nil, `column "a" (DateTime('UTC')): "2016-12-31T23:59:60Z" has second 60, a leap second, which no ClickHouse date-time holds (seconds are 00 to 59, as in Unix time); it is not moved to a second next to it`},
		{"before 1970 by offset", []string{"a DateTime('UTC')"}, `{"a":"1970-01-01T00:00:00+01:00"}`, nil, `is out of range for DateTime`},
		{"Date before 1970", []string{"a Date"}, `{"a":"1969-12-31"}`, nil, `is out of range for Date (1970-01-01 to 2149-06-06)`},
		{"Date after 2149-06-06", []string{"a Date"}, `{"a":"2149-06-07"}`, nil, `is out of range for Date`},
		{"DateTime after 2106", []string{"a DateTime('UTC')"}, `{"a":"2106-02-07T06:28:16Z"}`, nil, `is out of range for DateTime`},
		{"epoch number is seconds (issue 6)", []string{"a DateTime('UTC')"}, `{"a":1704067200}`, []any{utc("2024-01-01 00:00:00")}, ""},
		{"boolean", []string{"a DateTime('UTC')"}, `{"a":true}`, nil, `column "a" (DateTime('UTC')): true is a boolean; DateTime takes an ISO-8601 string (YYYY-MM-DD or YYYY-MM-DD[T ]hh:mm:ss[.fraction][Z|±hh:mm|±hhmm|±hh]) or a number of seconds since 1970-01-01 00:00:00 UTC`},
		{"trailing text", []string{"a DateTime('UTC')"}, `{"a":"2024-01-01T00:00:00Zx"}`, nil, `is not an ISO-8601 date-time`},
	})
}

func TestArraysNullableDefaults(t *testing.T) {
	run(t, []convCase{
		{"nullable elements, null, empty, ISO elements", []string{"a Array(Nullable(Int32))", "b Array(String)", "c Array(UInt8)", "d Array(DateTime('UTC'))"},
			`{"a":[1,null,3],"b":null,"c":[],"d":["2024-01-01T00:00:00Z"]}`,
			[]any{[]*int32{ptr(int32(1)), nil, ptr(int32(3))}, []string{}, []uint8{}, []time.Time{utc("2024-01-01 00:00:00")}}, ""},
		{"missing array is empty", []string{"a Array(String)"}, `{}`, []any{[]string{}}, ""},
		{"nested arrays, null inner array is empty", []string{"a Array(Array(Int64))"}, `{"a":[[1,2],[],null]}`, []any{[][]int64{{1, 2}, {}, {}}}, ""},
		{"LowCardinality", []string{"a LowCardinality(String)", "b Array(LowCardinality(String))", "c LowCardinality(Nullable(String))"}, `{"a":"DE","b":["x"]}`, []any{"DE", []string{"x"}, (*string)(nil)}, ""},
		{"null into Nullable", []string{"a Nullable(String)", "b Nullable(UInt8)"}, `{"a":null,"b":false}`, []any{(*string)(nil), ptr(uint8(0))}, ""},
		{"missing takes DEFAULT, also when Nullable", []string{"id UInt32", "s String DEFAULT 'new'", "n Nullable(Int32) DEFAULT 7"}, `{"id":1}`, []any{uint32(1), useDefault{}, useDefault{}}, ""},
		{"null takes DEFAULT of a non-Nullable column", []string{"s String DEFAULT 'new'", "id UInt8"}, `{"s":null,"id":1}`, []any{useDefault{}, uint8(1)}, ""},
		{"MATERIALIZED and ALIAS never written", []string{"raw String", "len UInt64 MATERIALIZED length(raw)", "up String ALIAS upper(raw)"}, `{"raw":"abc","len":999,"up":"zzz"}`, []any{"abc"}, ""},
		{"extra fields ignored", []string{"a Int8"}, `{"b":[1,{"c":null}],"a":1,"z":"x"}`, []any{int8(1)}, ""},
		{"case-sensitive names", []string{"a Nullable(Int8)", "b Int8"}, `{"A":1,"b":2}`, []any{(*int8)(nil), int8(2)}, ""},
		{"no field is a column: a row of DEFAULTs", []string{"a Int8 DEFAULT 7", "b String DEFAULT 'x'"}, `{"A":1}`, []any{useDefault{}, useDefault{}}, ""},
		{"an empty object into DEFAULT columns: a row of DEFAULTs", []string{"a Int8 DEFAULT 1"}, `{}`, []any{useDefault{}}, ""},
		{"only nulls into DEFAULT columns: a row of DEFAULTs", []string{"a Int8 DEFAULT 1", "b String DEFAULT 'x'"}, `{"a":null,"b":null}`, []any{useDefault{}, useDefault{}}, ""},
		{"an empty object into a Nullable column is a NULL row", []string{"a Nullable(Int8)"}, `{}`, []any{(*int8)(nil)}, ""},
		{"escaped field name", []string{"ab Int8"}, `{"a\u0062":3}`, []any{int8(3)}, ""},
		{"null into non-Nullable without DEFAULT", []string{"cnt UInt32"}, `{"cnt":null}`, nil, `column "cnt" (UInt32): null is not allowed`},
		{"missing without DEFAULT", []string{"cnt UInt32"}, `{}`, nil, `column "cnt" (UInt32): the field is missing, and the column has no DEFAULT and is not Nullable`},
		{"scalar is not an array", []string{"c Array(UInt8)"}, `{"c":"5"}`, nil, `column "c" (Array(UInt8)): "5" is a string; Array(UInt8) takes a JSON array`},
		{"element out of range names its index", []string{"c Array(UInt8)"}, `{"c":[1,300]}`, nil, `column "c" (Array(UInt8)): element [1]: 300 is out of range for UInt8`},
		{"null element of non-Nullable type", []string{"c Array(UInt8)"}, `{"c":[null]}`, nil, `element [0]: null is not allowed`},
		{"nested element path", []string{"c Array(Array(UInt8))"}, `{"c":[[1],[2,-3]]}`, nil, `element [1][1]: -3 is out of range`},
		{"several columns fail together", []string{"a Int8", "b UInt8"}, `{"a":300,"b":-1}`, nil, `column "a" (Int8): 300 is out of range for Int8 (-128 to 127); column "b" (UInt8): -1 is out of range`},
		{"duplicate field", []string{"a Int8"}, `{"a":1,"a":2}`, nil, `field "a" appears twice`},
		{"long values are cut", []string{"a Int8"}, `{"a":"` + strings.Repeat("9", 500) + `"}`, nil, strings.Repeat("9", 99) + "…"},
	})
}

func TestPayloads(t *testing.T) {
	run(t, []convCase{
		{"surrounding white space", []string{"a Int8"}, " \n{ \"a\" : 1 }\r\n ", []any{int8(1)}, ""},
		{"empty", []string{"a Int8"}, ``, nil, `payload: empty, expected one JSON object`},
		{"white space only", []string{"a Int8"}, " \n\t\r", nil, `payload: only white space, expected one JSON object`},
		{"null", []string{"a Int8"}, `null`, nil, `payload: null is not a JSON object`},
		{"scalar", []string{"a Int8"}, `42`, nil, `payload: 42 is not a JSON object`},
		{"array", []string{"a Int8"}, `[{"a":1}]`, nil, `payload: [{"a":1}] is not a JSON object`},
		// A line of a pretty-printed object, and a byte order mark: what is there, not a token.
		{"a value and more", []string{"a Int8"}, `"a": 1,`, nil, `payload: the payload is "a" followed by : 1, at byte 3, not a JSON object; a message must hold exactly one JSON object`},
		{"byte order mark", []string{"a Int8"}, "\xef\xbb\xbf{\"a\":1}", nil, `payload: the payload starts with a UTF-8 byte order mark (EF BB BF), which JSON text may not (RFC 8259, section 8.1): the publisher should leave it out`},
		{"two objects", []string{"a Int8"}, `{"a":1}{"a":2}`, nil, `payload: unexpected text after the JSON object at byte 7`},
		{"invalid UTF-8", []string{"a Nullable(String)"}, "{\"a\":\"\xff\xfe\"}", nil, `payload: not valid UTF-8 (first bad byte at offset 6: 0xFF, in the value of field "a")`},
		// The field the bad byte is in, from the bytes before it: a nested value is its
		// top-level field's, a ',' or '"' inside a string or a nested value ends nothing.
		{"invalid UTF-8 deep in a later field", []string{"a String"}, "{\"a\":[1,{\"b,\":\"\\\"}\"}],\"c\" : {\"d\":[\"\xc3\"]}}", nil, `payload: not valid UTF-8 (first bad byte at offset 35: 0xC3, in the value of field "c")`},
		{"invalid UTF-8 in the first field's name", []string{"a String"}, "{\"\xe9t\xe9\":1}", nil, `payload: not valid UTF-8 (first bad byte at offset 2: 0xE9, in the first field's name)`},
		{"invalid UTF-8 in a later field's name", []string{"a String"}, "{\"a\":\"x\", \"\xe9\":1}", nil, `payload: not valid UTF-8 (first bad byte at offset 11: 0xE9, in a field name after field "a")`},
		{"invalid UTF-8 after the object", []string{"a String"}, "{\"a\":\"x\"}\xff", nil, `payload: not valid UTF-8 (first bad byte at offset 9: 0xFF)`},
		{"invalid UTF-8 in no object", []string{"a String"}, "[\"\xff\"]", nil, `payload: not valid UTF-8 (first bad byte at offset 2: 0xFF)`},
		{"unterminated", []string{"a Int8"}, `{"a":1`, nil, `payload: invalid JSON at byte 6`},
		{"trailing comma", []string{"a Int8"}, `{"a":1,}`, nil, `payload: invalid JSON at byte 7`},
		{"single quotes", []string{"a Int8"}, `{'a':1}`, nil, `expected a field name in double quotes`},
		{"leading zero", []string{"a Int8"}, `{"a":01}`, nil, `payload: invalid JSON`},
		{"bad escape", []string{"a String"}, `{"a":"\x"}`, nil, `invalid escape \x`},
		{"raw control character", []string{"a String"}, "{\"a\":\"a\tb\"}", nil, `control character`},
		{"invalid JSON in an ignored field", []string{"a Int8"}, `{"a":1,"b":[1,]}`, nil, `payload: invalid JSON at byte 14: unexpected character ']', expected a value (in the value of field "b")`},
		// The field a syntax error is in, from the bytes before it, as for a byte not UTF-8.
		{"invalid JSON deep in a field", []string{"a String"}, `{"b":1,"a":{"c":[1,"\x"]}}`, nil, `payload: invalid JSON at byte 20: invalid escape \x in a string (in the value of field "a")`},
		{"invalid JSON in a field's name", []string{"a String"}, `{"a":"x","b\x":1}`, nil, `payload: invalid JSON at byte 11: invalid escape \x in a string (in a field name after field "a")`},
		{"a missing comma after a value", []string{"a Int8"}, `{"a":1 "b":2}`, nil, `payload: invalid JSON at byte 7: unexpected character '"' in an object, expected "," or "}" (in the value of field "a")`},
		{"a lone surrogate in an ignored field's name", []string{"a Int8"}, `{"a":1,"\ud800":2}`, nil, `payload: field name "\ud800" holds \uD800, a lone UTF-16 surrogate that has no UTF-8 form`},
		{"too deep", []string{"a String"}, `{"a":` + strings.Repeat("[", 1001) + strings.Repeat("]", 1001) + `}`, nil, `nesting deeper than 1000 levels`},
	})
}

func TestUnsupportedTypeStopsAtStartUp(t *testing.T) {
	_, err := convert.New(table(t, "a Int8", "b AggregateFunction(uniq, String)"))
	want := `column "b": unsupported type AggregateFunction(uniq, String)`
	if err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Fatalf("New: %v, want an error starting %q", err, want)
	}
}

// TestSharedCases checks every case of ../shared/cases at the conversion level (the
// integration tests insert the rows into ClickHouse and read them back).
func TestSharedCases(t *testing.T) {
	for _, c := range shared.Cases(t) {
		t.Run(c.ID, func(t *testing.T) {
			tb := tableFromDDL(t, c.DDL)
			_, err := convertRow(t, tb, string(c.Data()))
			if c.Expect.DeadLetter == nil {
				if err != nil {
					t.Fatalf("payload %q: %v", c.Data(), err)
				}
				return
			}
			if err == nil {
				t.Fatalf("payload %q converted, want an error naming %q", c.Data(), c.Expect.DeadLetter.ErrorContains)
			}
			for _, s := range c.Expect.DeadLetter.ErrorContains {
				if !strings.Contains(err.Error(), `"`+s+`"`) {
					t.Errorf("error %q does not name %q", err, s)
				}
			}
		})
	}
}

// tableFromDDL reads the column list of the cases' simple CREATE TABLE statements.
func tableFromDDL(t *testing.T, ddl string) *schema.Table {
	t.Helper()
	open := strings.Index(ddl, "(")
	closeIdx := strings.LastIndex(ddl, ") ENGINE")
	return table(t, columnSpecs(ddl[open+1:closeIdx])...)
}

// columnSpecs splits the column list of a CREATE TABLE statement at the commas outside
// parentheses.
func columnSpecs(body string) []string {
	var specs []string
	depth, start := 0, 0
	for i, ch := range body {
		switch ch {
		case '(':
			depth++
		case ')':
			depth--
		case ',':
			if depth == 0 {
				specs = append(specs, strings.TrimSpace(body[start:i]))
				start = i + 1
			}
		}
	}
	return append(specs, strings.TrimSpace(body[start:]))
}

// TestColumns: the columns a dead letter's stack trace names come from a *RowError anywhere in the
// error's chain, in its order; an error without one names none.
func TestColumns(t *testing.T) {
	_, err := convertRow(t, table(t, "n UInt8", "s String", "d Date"), `{"n":300,"s":"x","d":"yesterday"}`)
	if err == nil {
		t.Fatal("converted a row with two bad values")
	}
	for _, e := range []error{err, fmt.Errorf("converting the output of the javascript UDF: %w", err)} {
		if got := convert.Columns(e); got != "n, d" {
			t.Errorf("Columns(%v) = %q, want %q", e, got, "n, d")
		}
	}
	if got := convert.Columns(errors.New("code: 153, message: Division by zero")); got != "" {
		t.Errorf("Columns of a server's error = %q, want none", got)
	}
}

// TestEphemeral: an EPHEMERAL column is written (its field converted as for any column of its
// type, the DEFAULT flag when the field is missing); one whose type has no converter, or whose
// name is also a group of dotted columns, is not, and its field is ignored or ambiguous as a
// MATERIALIZED column's; a table left with no column to write is refused.
func TestEphemeral(t *testing.T) {
	run(t, []convCase{
		{"written", []string{"id UInt8", "e String EPHEMERAL defaultValueOfTypeName('String')", "s String DEFAULT upper(e)"}, `{"id":1,"e":"abc"}`,
			[]any{uint8(1), "abc", useDefault{}}, ""},
		{"missing: its own default", []string{"id UInt8", "e UInt8 EPHEMERAL 7"}, `{"id":1}`, []any{uint8(1), useDefault{}}, ""},
		{"converted as its type", []string{"id UInt8", "e UInt8 EPHEMERAL 7"}, `{"id":1,"e":300}`, nil, `column "e" (UInt8): 300 is out of range for UInt8 (0 to 255)`},
		{"a type without a converter: not written", []string{"id UInt8", "d Dynamic EPHEMERAL defaultValueOfTypeName('Dynamic')"}, `{"id":1,"d":5}`,
			[]any{uint8(1)}, ""},
		{"a name with a backtick: not written", []string{"id UInt8", "b\x60q String EPHEMERAL ''"}, `{"id":1,"b\u0060q":"x"}`, []any{uint8(1)}, ""},
		{"also a group: ambiguous, as before", []string{"id UInt8", "n String EPHEMERAL ''", "n.a Array(UInt8)"}, `{"id":1,"n":[{"a":1}]}`, nil,
			`names both the EPHEMERAL column "n"`},
	})
	tb := table(t, "d Dynamic EPHEMERAL defaultValueOfTypeName('Dynamic')", "s String MATERIALIZED toString(d)")
	if _, err := convert.New(tb); !errors.Is(err, schema.ErrNoWritableColumn) {
		t.Errorf("a table whose only EPHEMERAL column has no converter: %v, want schema.ErrNoWritableColumn", err)
	}
	if tb.Columns[0].NotWritten == "" || tb.Columns[0].Writable() {
		t.Errorf("the Dynamic EPHEMERAL column is not marked NotWritten: %+v", tb.Columns[0])
	}
}
