package convert_test

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/ClickHouse/ch-go/proto"
	chcolumn "github.com/ClickHouse/clickhouse-go/v2/lib/column"
	"github.com/google/go-cmp/cmp"

	"github.com/ch-beam/pubsub-to-clickhouse/transforms/chclient"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/chtype"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/convert"
)

// nativeCases are JSON values of each type that has a NativeColumn, NULL and [] among them.
var nativeCases = []struct {
	typ    string
	values []string
}{
	{"Int8", []string{"-128", "0", "127"}},
	{"Int16", []string{"-32768", "7"}},
	{"Int32", []string{"-2147483648", "2147483647"}},
	{"Int64", []string{"-9223372036854775808", `"9223372036854775807"`}},
	{"UInt8", []string{"0", "255", "true"}},
	{"UInt16", []string{"65535"}},
	{"UInt32", []string{"4294967295", "1"}},
	{"UInt64", []string{"18446744073709551615", "0"}},
	{"Int128", []string{"-170141183460469231731687303715884105728", "1"}},
	{"UInt128", []string{"340282366920938463463374607431768211455"}},
	{"Int256", []string{"-5", `"57896044618658097711785492504343953926634992332820282019728792003956564819967"`}},
	{"UInt256", []string{"12345678901234567890123456789"}},
	{"Float32", []string{"1.5", "-0.1", "3e38"}},
	{"Float64", []string{"1e308", "-2.5", "0"}},
	{"Decimal(9, 2)", []string{"1234567.89", "-0.01"}},
	{"Decimal(18, 4)", []string{"12345678901234.5678"}},
	{"Decimal(38, 10)", []string{"-1234567890123456789012345678.0123456789"}},
	{"Decimal(76, 20)", []string{"123.45"}},
	{"Bool", []string{"true", "false"}},
	{"String", []string{`""`, `"héllo"`, `"a\"b\\c\u0000"`, `"` + string(bytes.Repeat([]byte("x"), 300)) + `"`}},
	{"FixedString(4)", []string{`"abcd"`, `"ab"`}},
	{"UUID", []string{`"123e4567-e89b-12d3-a456-426614174000"`, `"00000000-0000-0000-0000-000000000000"`}},
	{"IPv4", []string{`"192.168.1.1"`, `"0.0.0.0"`}},
	{"IPv6", []string{`"2001:db8::1"`, `"::ffff:1.2.3.4"`}},
	{"Enum8('a' = 1, 'b' = -2)", []string{`"a"`, `"b"`, "1"}},
	{"Enum16('x' = 1000, 'y' = -1000)", []string{`"x"`, `"y"`}},
	{"Date", []string{`"2024-03-10"`, `"1970-01-01"`}},
	{"Date32", []string{`"1900-01-01"`, `"2299-12-31"`}},
	{"DateTime", []string{`"2024-03-10T12:34:56Z"`, "1700000000"}},
	{"DateTime('Europe/Berlin')", []string{`"2024-03-10 12:34:56"`}},
	{"DateTime64(3)", []string{`"2024-03-10T12:34:56.789Z"`, "1700000000"}},
	{"DateTime64(9, 'UTC')", []string{`"2024-03-10T12:34:56.123456789Z"`}},
}

// TestNativeColumnIsTheDriversEncoding: for every type that has a NativeColumn, plain, Nullable and
// in an Array, the column NativeColumn builds from the converter's RowBinary reads into
// clickhouse-go's column of the type (Decode, through chclient.ReadNative as Insert does) and encodes to exactly the bytes
// that clickhouse-go writes for the Go values of the same rows (NewColumn, then Append and Encode:
// the path of the types that have no NativeColumn), and holds the same values.
func TestNativeColumnIsTheDriversEncoding(t *testing.T) {
	for _, tc := range nativeCases {
		for _, wrap := range []string{"%s", "Nullable(%s)", "Array(%s)"} {
			typ := fmt.Sprintf(wrap, tc.typ)
			if wrap == "Array(%s)" {
				// Arrays of the values: each value alone, all of them, and an empty one.
				typ = "Array(" + tc.typ + ")"
			}
			t.Run(typ, func(t *testing.T) {
				var payloads []string
				switch wrap {
				case "Array(%s)":
					all := ""
					for i, v := range tc.values {
						payloads = append(payloads, fmt.Sprintf(`{"c":[%s]}`, v))
						if i > 0 {
							all += ","
						}
						all += v
					}
					payloads = append(payloads, fmt.Sprintf(`{"c":[%s]}`, all), `{"c":[]}`, `{"c":null}`)
				case "Nullable(%s)":
					payloads = append(payloads, `{"c":null}`)
					for _, v := range tc.values {
						payloads = append(payloads, fmt.Sprintf(`{"c":%s}`, v), `{}`)
					}
				default:
					for _, v := range tc.values {
						payloads = append(payloads, fmt.Sprintf(`{"c":%s}`, v))
					}
				}
				ct, err := chtype.Parse(typ)
				if err != nil {
					t.Fatal(err)
				}
				conv, err := convert.New(table(t, "c "+typ))
				if err != nil {
					t.Fatal(err)
				}
				native, ok := convert.NewNativeColumn(ct)
				if !ok {
					t.Fatalf("%s has no NativeColumn", typ)
				}
				values, err := convert.NewColumn(ct)
				if err != nil {
					t.Fatal(err)
				}
				appendConverted(t, conv, ct, payloads, native, values)
				if native.Rows() != len(payloads) {
					t.Errorf("Rows() = %d, want %d", native.Rows(), len(payloads))
				}

				fromValues := driverColumn(t, typ)
				if _, err := fromValues.Append(values.Values()); err != nil {
					t.Fatalf("the driver's Append of %T: %v", values.Values(), err)
				}
				fromNative := driverColumn(t, typ)
				head, data, rows := native.Native()
				if err := chclient.ReadNative(fromNative, chclient.Native{Head: head, Values: data, Rows: rows, Type: typ}); err != nil {
					t.Fatalf("the driver's Decode: %v", err)
				}
				sameDriverColumn(t, payloads, "Go values", fromValues, "NativeColumn", fromNative)
			})
		}
	}
}

// appendConverted converts each payload (of one column c of type ct) with conv and appends the
// column's value to each of cols.
func appendConverted(t *testing.T, conv *convert.Converter, ct *chtype.Type, payloads []string, cols ...interface{ Append([]byte) error }) {
	t.Helper()
	for _, p := range payloads {
		row, err := conv.Convert(nil, []byte(p))
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		spans, err := convert.Split([]*chtype.Type{ct}, row, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, col := range cols {
			if err := col.Append(spans[0]); err != nil {
				t.Fatalf("%s: %T.Append: %v", p, col, err)
			}
		}
	}
}

// convertedColumn converts the JSON values of a field c (one row each) for a column of type typ,
// and returns the product's Column of them.
func convertedColumn(t *testing.T, typ string, values ...string) convert.Column {
	t.Helper()
	ct, err := chtype.Parse(typ)
	if err != nil {
		t.Fatal(err)
	}
	conv, err := convert.New(table(t, "c "+typ))
	if err != nil {
		t.Fatal(err)
	}
	col, err := convert.NewColumn(ct)
	if err != nil {
		t.Fatal(err)
	}
	payloads := make([]string, len(values))
	for i, v := range values {
		payloads[i] = `{"c":` + v + `}`
	}
	appendConverted(t, conv, ct, payloads, col)
	return col
}

// sentAndRead hands col's values to clickhouse-go's column of type typ, and returns the block's
// bytes it encodes and its column decoded from them (rows rows).
func sentAndRead(t *testing.T, typ string, col convert.Column, rows int) ([]byte, chcolumn.Interface) {
	t.Helper()
	sent := driverColumn(t, typ)
	if _, err := sent.Append(col.Values()); err != nil {
		t.Fatalf("the driver's Append of %#v: %v", col.Values(), err)
	}
	b := encoded(sent)
	read := driverColumn(t, typ)
	if err := chclient.ReadNative(read, chclient.Native{Values: b, Rows: rows, Type: typ}); err != nil {
		t.Fatalf("the driver's Decode: %v", err)
	}
	return b, read
}

// shown prints a row's value, through its pointer for a Nullable column's.
func shown(v any) string {
	if r := reflect.ValueOf(v); r.Kind() == reflect.Pointer {
		if r.IsNil() {
			return "NULL"
		}
		v = r.Elem().Interface()
	}
	return fmt.Sprint(v)
}

func driverColumn(t *testing.T, typ string) chcolumn.Interface {
	t.Helper()
	col, err := chcolumn.Type(typ).Column("c", &chcolumn.ServerContext{})
	if err != nil {
		t.Fatal(err)
	}
	return col
}

func encoded(col chcolumn.Interface) []byte {
	var buf proto.Buffer
	col.Encode(&buf)
	return buf.Buf
}

// TestNativeColumnOnlyForItsTypes: the types whose Native format is not their values' RowBinary
// one after another have no NativeColumn (they take the Go values' path).
func TestNativeColumnOnlyForItsTypes(t *testing.T) {
	for _, typ := range []string{
		"LowCardinality(String)", "LowCardinality(Nullable(String))", "Array(Nullable(Int8))",
		"Array(Array(UInt8))", "Nullable(Array(Int8))", "Map(String, UInt8)", "Tuple(a UInt8, b String)",
		"Nested(a UInt8)", "Point", "Ring", "JSON", "BFloat16", "Time", "Time64(3)",
		"Array(LowCardinality(String))", "SimpleAggregateFunction(sum, UInt64)",
	} {
		ct, err := chtype.Parse(typ)
		if err != nil {
			t.Fatalf("%s: %v", typ, err)
		}
		if _, ok := convert.NewNativeColumn(ct); ok {
			t.Errorf("%s has a NativeColumn", typ)
		}
	}
}

// TestNativeColumnRejectsCorruptValues: bytes that are not one value of the column's type are
// ErrCorrupt, and leave the column as it was.
func TestNativeColumnRejectsCorruptValues(t *testing.T) {
	for _, tc := range []struct {
		typ string
		b   []byte
	}{
		{"UInt32", []byte{1, 2, 3}},
		{"UInt32", []byte{1, 2, 3, 4, 5}},
		{"String", []byte{5, 'a'}},
		{"String", []byte{1, 'a', 'b'}},
		{"Nullable(UInt8)", []byte{}},
		{"Nullable(UInt8)", []byte{2, 0}},
		{"Nullable(UInt8)", []byte{1, 0}},
		{"Nullable(String)", []byte{0}},
		{"Array(UInt16)", []byte{2, 1, 0}},
		{"Array(String)", []byte{1}},
		{"Array(String)", []byte{}},
	} {
		ct, err := chtype.Parse(tc.typ)
		if err != nil {
			t.Fatal(err)
		}
		col, ok := convert.NewNativeColumn(ct)
		if !ok {
			t.Fatalf("%s has no NativeColumn", tc.typ)
		}
		if err := col.Append(tc.b); !errors.Is(err, convert.ErrCorrupt) {
			t.Errorf("%s %v: %v, want ErrCorrupt", tc.typ, tc.b, err)
		}
		head, data, rows := col.Native()
		if rows != 0 || len(head)+len(data) != 0 {
			t.Errorf("%s %v: the column holds %d rows, %d bytes after the error", tc.typ, tc.b, rows, len(head)+len(data))
		}
	}
}

// TestNativeColumnReleased: a released column's memory goes to later columns, of any type,
// which start empty.
func TestNativeColumnReleased(t *testing.T) {
	for range 10 { // sync.Pool may drop what was put; some round reuses it
		nullable, _ := chtype.Parse("Nullable(String)")
		c, _ := convert.NewNativeColumn(nullable)
		for _, v := range [][]byte{{1}, {0, 2, 'h', 'i'}} {
			if err := c.Append(v); err != nil {
				t.Fatal(err)
			}
		}
		c.Release()
		u32, _ := chtype.Parse("Array(UInt32)")
		d, _ := convert.NewNativeColumn(u32)
		if err := d.Append([]byte{1, 7, 0, 0, 0}); err != nil {
			t.Fatal(err)
		}
		head, data, rows := d.Native()
		got := append(append([]byte{}, head...), data...)
		if want := []byte{1, 0, 0, 0, 0, 0, 0, 0, 7, 0, 0, 0}; rows != 1 || !bytes.Equal(got, want) {
			t.Fatalf("Array(UInt32) [7] after a released Nullable(String): %d rows, % x; want 1 row, % x", rows, got, want)
		}
		d.Release()
	}
}

// TestStringColumnIsTheDriversEncoding: the strings a StringColumn gathers from the converter's
// RowBinary, taken by clickhouse-go's String column as Insert has it take them
// (chclient.ReadStrings), encode to exactly the bytes the driver writes for the same rows from
// the Go values' path (NewColumn) and from the Native path (NativeColumn), and hold the same
// values.
func TestStringColumnIsTheDriversEncoding(t *testing.T) {
	ct, err := chtype.Parse("String")
	if err != nil {
		t.Fatal(err)
	}
	conv, err := convert.New(table(t, "c String"))
	if err != nil {
		t.Fatal(err)
	}
	payloads := []string{`{"c":""}`, `{"c":"héllo"}`, `{"c":"a\"b\\c\u0000"}`, `{"c":{"nested":[1,2]}}`, `{"c":12.5}`,
		`{"c":"` + strings.Repeat("x", 300) + `"}`, `{"c":"Łódź 東京"}`}
	gathered, ok := convert.NewStringColumn(ct)
	if !ok {
		t.Fatal("String has no StringColumn")
	}
	defer gathered.Release()
	native, _ := convert.NewNativeColumn(ct)
	defer native.Release()
	values, err := convert.NewColumn(ct)
	if err != nil {
		t.Fatal(err)
	}
	appendConverted(t, conv, ct, payloads, gathered, native, values)
	bytes := 0
	for _, v := range values.Values().([]string) {
		bytes += len(v)
	}
	if got := len(gathered.Values()); got != len(payloads) {
		t.Fatalf("%d values, want %d", got, len(payloads))
	}
	if gathered.Bytes() != bytes {
		t.Errorf("Bytes() = %d, want %d", gathered.Bytes(), bytes)
	}
	fromValues := driverColumn(t, "String")
	if _, err := fromValues.Append(values.Values()); err != nil {
		t.Fatal(err)
	}
	fromNative := driverColumn(t, "String")
	head, data, rows := native.Native()
	if err := chclient.ReadNative(fromNative, chclient.Native{Head: head, Values: data, Rows: rows, Type: "String"}); err != nil {
		t.Fatal(err)
	}
	fromStrings := driverColumn(t, "String")
	if err := chclient.ReadStrings(fromStrings, chclient.Strings{Values: gathered.Values(), Bytes: gathered.Bytes(), Type: "String"}); err != nil {
		t.Fatal(err)
	}
	sameDriverColumn(t, payloads, "Go values", fromValues, "StringColumn", fromStrings)
	sameDriverColumn(t, payloads, "NativeColumn", fromNative, "StringColumn", fromStrings)
}

// sameDriverColumn reports where the driver's column got, which took the payloads' values from
// gotFrom, encodes to other bytes or holds other values than want, from wantFrom.
func sameDriverColumn(t *testing.T, payloads []string, wantFrom string, want chcolumn.Interface, gotFrom string, got chcolumn.Interface) {
	t.Helper()
	if diff := cmp.Diff(encoded(want), encoded(got)); diff != "" {
		t.Errorf("the driver's encoding (-from %s +from %s):\n%s", wantFrom, gotFrom, diff)
	}
	for i := range payloads {
		if diff := cmp.Diff(shown(want.Row(i, false)), shown(got.Row(i, false))); diff != "" {
			t.Errorf("row %d, %s (-from %s +from %s):\n%s", i, payloads[i], wantFrom, gotFrom, diff)
		}
	}
}

// TestStringColumnOnlyForString: only a plain String column has a StringColumn; the others take
// the Native or the Go values' path.
func TestStringColumnOnlyForString(t *testing.T) {
	for _, typ := range []string{"Nullable(String)", "LowCardinality(String)", "FixedString(3)", "Array(String)", "UInt8", "Enum8('a' = 1)"} {
		ct, err := chtype.Parse(typ)
		if err != nil {
			t.Fatal(err)
		}
		if c, ok := convert.NewStringColumn(ct); ok {
			c.Release()
			t.Errorf("%s has a StringColumn", typ)
		}
	}
}

// TestStringColumnRejectsCorruptValues: bytes that are not exactly one String value are
// ErrCorrupt, and leave the column as it was.
func TestStringColumnRejectsCorruptValues(t *testing.T) {
	ct, _ := chtype.Parse("String")
	for _, b := range [][]byte{{}, {5, 'a'}, {1, 'a', 'b'}, {0x80}, {0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01}} {
		col, _ := convert.NewStringColumn(ct)
		if err := col.Append(b); !errors.Is(err, convert.ErrCorrupt) {
			t.Errorf("%v: %v, want ErrCorrupt", b, err)
		}
		if len(col.Values()) != 0 || col.Bytes() != 0 {
			t.Errorf("%v: the column holds %d values, %d bytes after the error", b, len(col.Values()), col.Bytes())
		}
		col.Release()
	}
}

// TestStringColumnReleased: a released column starts empty when it is taken again.
func TestStringColumnReleased(t *testing.T) {
	ct, _ := chtype.Parse("String")
	for range 10 { // sync.Pool may drop what was put; some round reuses it
		c, _ := convert.NewStringColumn(ct)
		if len(c.Values()) != 0 || c.Bytes() != 0 {
			t.Fatalf("a column taken from the pool holds %d values, %d bytes", len(c.Values()), c.Bytes())
		}
		if err := c.Append([]byte{2, 'h', 'i'}); err != nil {
			t.Fatal(err)
		}
		c.Release()
	}
}

// TestNullInsideCompositesReachesTheDriver: a NULL of a Nullable element inside a Tuple, a Map's
// value or a Nested(…) column goes into clickhouse-go's column of the type (Append, as the write
// stage's INSERT does) without an error or a panic.
func TestNullInsideCompositesReachesTheDriver(t *testing.T) {
	for _, tc := range []struct{ typ, value string }{
		{"Tuple(Nullable(Enum8('x' = 1)), UInt8)", `[null,1]`},
		{"Tuple(a Nullable(Enum16('x' = 1000)), b Nullable(Enum8('y' = -1)))", `{"a":null,"b":"y"}`},
		{"Map(String, Nullable(Enum8('x' = 1)))", `{"a":"x","b":null}`},
		{"Map(String, Nullable(Enum16('x' = 1000)))", `{"b":null}`},
		{"Nested(a Nullable(Enum8('x' = 1)), b UInt8)", `[{"a":null,"b":1},{"a":"x","b":2}]`},
		{"Array(Tuple(Nullable(Enum16('x' = 1)), Nullable(Time)))", `[[null,null],["x","00:00:01"]]`},
		{"Tuple(Nullable(Int8), Nullable(Int16), Map(String, Nullable(Int8)))", `[null,null,{"a":null}]`},
		// clickhouse-go's Array hands its element column an untyped nil for a nil pointer, which
		// Time and Time64 refused ("converting <nil> to Time is unsupported").
		{"Array(Nullable(Time))", `["00:00:01",null]`},
		{"Array(Nullable(Time64(3)))", `[null,"00:00:01.5"]`},
		{"Map(String, Array(Nullable(Time)))", `{"a":[null,"00:00:02"]}`},
		{"Tuple(Array(Nullable(Time64(6))), UInt8)", `[[null],1]`},
		{"Array(Array(Nullable(Time)))", `[[null],[]]`},
	} {
		t.Run(tc.typ, func(t *testing.T) {
			values := convertedColumn(t, tc.typ, tc.value)
			col := driverColumn(t, tc.typ)
			defer func() {
				if p := recover(); p != nil {
					t.Fatalf("the driver's Append of %#v panics: %v", values.Values(), p)
				}
			}()
			if _, err := col.Append(values.Values()); err != nil {
				t.Fatalf("the driver's Append of %#v: %v", values.Values(), err)
			}
			if col.Rows() != 1 {
				t.Errorf("the driver's column has %d rows, want 1", col.Rows())
			}
		})
	}
}

// TestLowCardinalityFloatsReachTheServer: a NaN into LowCardinality(Float32) or
// LowCardinality(Float64), also inside an Array, a Tuple or a Map, reaches the block that
// clickhouse-go sends as NaN. clickhouse-go v2.51.0's LowCardinality column finds each value's
// place in its dictionary with the value as a Go map key, and a NaN is never equal to itself: it
// gave every NaN the place of the dictionary's default value, and ClickHouse stored 0.
func TestLowCardinalityFloatsReachTheServer(t *testing.T) {
	for _, tc := range []struct {
		typ      string
		payloads []string
		want     []string // the rows clickhouse-go decodes from the block it encodes
	}{
		{"LowCardinality(Float64)", []string{`"NaN"`, `1.5`, `"NaN"`, `0`, `"-Infinity"`}, []string{"NaN", "1.5", "NaN", "0", "-Inf"}},
		{"LowCardinality(Float32)", []string{`"NaN"`, `2.5`, `"nan"`}, []string{"NaN", "2.5", "NaN"}},
		{"Array(LowCardinality(Float64))", []string{`["NaN",1,"NaN"]`, `[]`, `[0,"NaN"]`}, []string{"[NaN 1 NaN]", "[]", "[0 NaN]"}},
		{"Array(Array(LowCardinality(Float32)))", []string{`[["NaN"],[1]]`}, []string{"[[NaN] [1]]"}},
		{"Tuple(LowCardinality(Float64), UInt8)", []string{`["NaN",1]`, `[2,3]`}, []string{"[NaN 1]", "[2 3]"}},
		{"Map(String, LowCardinality(Float64))", []string{`{"a":"NaN","b":1}`}, []string{"map[a:NaN b:1]"}},
		{"LowCardinality(Nullable(Float64))", []string{`"NaN"`, `null`, `1`}, []string{"NaN", "<nil>", "1"}},
	} {
		t.Run(tc.typ, func(t *testing.T) {
			_, read := sentAndRead(t, tc.typ, convertedColumn(t, tc.typ, tc.payloads...), len(tc.payloads))
			var got []string
			for i := range tc.payloads {
				got = append(got, shown(read.Row(i, false)))
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("the rows of the block (-want +got):\n%s", diff)
			}
		})
	}
}

// TestLowCardinalityFloatsShareTheirDictionary: the pointers of LowCardinality(Float32) and
// LowCardinality(Float64) values (convert.lowCardinalityFloat) are one per value, not one per row,
// so that clickhouse-go's dictionary holds each value once, as it does for the values themselves:
// with a pointer per row the dictionary had an entry per row, and the block's column of 5,000
// rows of 11 values was 50 KB where it is 5 KB (an 8-byte value per row, and 2-byte keys for
// 1-byte ones).
func TestLowCardinalityFloatsShareTheirDictionary(t *testing.T) {
	for _, tc := range []struct {
		typ     string
		payload func(i int) string
		want    func(i int) string // the row as the driver decodes it (shown)
		rows    int
		max     int // the most bytes of the driver's encoding
	}{
		// 10 values and NaN: 1-byte keys and a dictionary of 12 entries (with the default).
		{"LowCardinality(Float64)", func(i int) string {
			if i%11 == 10 {
				return `"NaN"`
			}
			return fmt.Sprint(i % 11)
		}, func(i int) string {
			if i%11 == 10 {
				return "NaN"
			}
			return fmt.Sprint(i % 11)
		}, 5000, 5000 + 12*8 + 64},
		{"LowCardinality(Float32)", func(i int) string { return fmt.Sprint(i%10) + ".5" }, func(i int) string { return fmt.Sprint(i%10) + ".5" },
			5000, 5000 + 11*4 + 64},
		// Arrays: a UInt64 offset per row, a 1-byte key per element.
		{"Array(LowCardinality(Float64))", func(i int) string { return fmt.Sprintf(`[%d,"NaN",1.5]`, i%5) },
			func(i int) string { return fmt.Sprintf("[%d NaN 1.5]", i%5) }, 2000, 2000*8 + 3*2000 + 8*8 + 64},
	} {
		t.Run(tc.typ, func(t *testing.T) {
			payloads := make([]string, tc.rows)
			for i := range payloads {
				payloads[i] = tc.payload(i)
			}
			b, read := sentAndRead(t, tc.typ, convertedColumn(t, tc.typ, payloads...), tc.rows)
			if len(b) > tc.max {
				t.Errorf("the driver encodes %d rows of %s in %d bytes, want at most %d", tc.rows, tc.typ, len(b), tc.max)
			}
			// And each row still has its own value.
			for i := range tc.rows {
				if got, want := shown(read.Row(i, false)), tc.want(i); got != want {
					t.Fatalf("row %d: %s, want %s", i, got, want)
				}
			}
		})
	}
}
