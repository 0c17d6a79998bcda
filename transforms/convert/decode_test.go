package convert

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"math/big"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/uuid"
	"github.com/paulmach/orb"
	"github.com/shopspring/decimal"

	"github.com/ch-beam/pubsub-to-clickhouse/transforms/chtype"
)

func types(t *testing.T, names ...string) []*chtype.Type {
	var out []*chtype.Type
	for _, n := range names {
		ct, err := chtype.Parse(n)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, ct)
	}
	return out
}

func TestSplitAndColumns(t *testing.T) {
	ts := types(t, "Int16", "Nullable(String)", "Array(Nullable(Int8))", "String", "Array(Array(UInt8))", "DateTime")
	row := []byte{
		0, 0xfe, 0xff, // Int16 -2
		0, 0, 2, 'h', 'i', // Nullable(String) "hi"
		0, 2, 1, 0, 7, // Array(Nullable(Int8)) [NULL, 7]
		1,             // String: DEFAULT
		0, 2, 1, 9, 0, // Array(Array(UInt8)) [[9], []]
		0, 0x80, 0, 0, 0x65, // DateTime 0x65000080
	}
	spans, err := Split(ts, row, nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []any
	for i, s := range spans {
		if s == nil {
			got = append(got, "DEFAULT")
			continue
		}
		col, err := NewColumn(ts[i])
		if err != nil {
			t.Fatal(err)
		}
		if err := col.Append(s); err != nil {
			t.Fatalf("column %d: %v", i, err)
		}
		got = append(got, col.Values())
	}
	hi, seven := "hi", int8(7)
	want := []any{[]int16{-2}, []*string{&hi}, [][]*int8{{nil, &seven}}, "DEFAULT", [][][]uint8{{{9}, {}}}, []time.Time{time.Unix(0x65000080, 0).UTC()}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestSplitRejectsCorruptRows(t *testing.T) {
	ts := types(t, "UInt32", "String")
	for name, row := range map[string][]byte{
		"cut short":        {0, 1, 2},
		"bad default flag": {2, 1, 2, 3, 4, 0, 0},
		"string too long":  {0, 1, 2, 3, 4, 0, 5, 'a'},
		"bytes after row":  {0, 1, 2, 3, 4, 1, 9},
		"missing a column": {0, 1, 2, 3, 4},
	} {
		if _, err := Split(ts, row, nil); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: %v, want ErrCorrupt", name, err)
		}
	}
}

func mustHex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.ReplaceAll(s, " ", ""))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestNewTypes decodes one value of each type added for issue 6, from the bytes the RowBinary
// format documents, into the Go value clickhouse-go's column takes.
func TestNewTypes(t *testing.T) {
	i128min := new(big.Int).Neg(new(big.Int).Lsh(big.NewInt(1), 127))
	u256max := new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), 256), big.NewInt(1))
	for _, tc := range []struct {
		typ  string
		hex  string
		want any
	}{
		{"Bool", "01", []bool{true}},
		{"Enum8('a' = -2)", "fe", []int8{-2}},
		{"Enum16('a' = -1000)", "18fc", []int16{-1000}},
		{"Int128", "00000000000000000000000000000080", []*big.Int{i128min}},
		{"UInt256", strings.Repeat("ff", 32), []*big.Int{u256max}},
		{"Int256", strings.Repeat("ff", 32), []*big.Int{big.NewInt(-1)}},
		{"Nullable(Int128)", "01", []*big.Int{nil}},
		{"Nullable(UInt128)", "00 02000000000000000000000000000000", []*big.Int{big.NewInt(2)}},
		{"Decimal(9, 2)", "6affffff", []decimal.Decimal{decimal.New(-150, -2)}},
		{"Decimal(18, 4)", "1027000000000000", []decimal.Decimal{decimal.New(10000, -4)}},
		{"Decimal128(3)", strings.Repeat("ff", 16), []decimal.Decimal{decimal.New(-1, -3)}},
		{"Decimal(76, 0)", "0001" + strings.Repeat("00", 30), []decimal.Decimal{decimal.New(256, 0)}},
		{"Nullable(Decimal32(2))", "00 01000000", []*decimal.Decimal{ptr(decimal.New(1, -2))}},
		{"FixedString(3)", "616200", []string{"ab\x00"}},
		{"UUID", "d3129be867453e12 004017146642 56a4", []uuid.UUID{uuid.MustParse("123e4567-e89b-12d3-a456-426614174000")}},
		{"IPv4", "0100a8c0", []netip.Addr{netip.MustParseAddr("192.168.0.1")}},
		{"IPv6", "20010db8000000000000000000000001", []netip.Addr{netip.MustParseAddr("2001:db8::1")}},
		{"Date32", "ffffffff", []time.Time{time.Date(1969, 12, 31, 0, 0, 0, 0, time.UTC)}},
		{"DateTime64(3, 'UTC')", "ffffffffffffffff", []time.Time{time.Date(1969, 12, 31, 23, 59, 59, 999e6, time.UTC)}},
		{"DateTime64(9)", "ffffffffffffff7f", []time.Time{time.Date(2262, 4, 11, 23, 47, 16, 854775807, time.UTC)}},
		{"Time", "ffffffff", []time.Duration{-time.Second}},
		{"Time64(3)", "dc05000000000000", []time.Duration{1500 * time.Millisecond}},
		{"BFloat16", "803f", []float32{1}},
		{"JSON", "02 7b7d", []string{"{}"}},
		{"LowCardinality(Nullable(FixedString(1)))", "00 78", []*string{ptr("x")}},
		{"SimpleAggregateFunction(sum, UInt64)", "0500000000000000", []uint64{5}},
		{"Point", "000000000000f03f 00000000000000c0", []orb.Point{{1, -2}}},
		{"Ring", "02 0000000000000000 0000000000000000 000000000000f03f 000000000000f03f", []orb.Ring{{{0, 0}, {1, 1}}}},
		{"MultiPolygon", "01 01 01 000000000000f03f 0000000000000000", []orb.MultiPolygon{{{{{1, 0}}}}}},
		{"Map(String, Nullable(UInt8))", "02 0161 00 07 0162 01", []*Map{{Keys: []any{"a", "b"}, Values: []any{ptr(uint8(7)), (*uint8)(nil)}}}},
		{"Map(UInt8, Array(String))", "00", []*Map{{Keys: []any{}, Values: []any{}}}},
		{"Tuple(UInt8, String)", "07 0161", [][]any{{uint8(7), "a"}}},
		{"Tuple(a Nullable(Int128), b Array(UUID))", "01 00", [][]any{{(*big.Int)(nil), []uuid.UUID{}}}},
		{"Nested(a UInt8, b String)", "02 01 0161 02 0162", [][][]any{{{uint8(1), "a"}, {uint8(2), "b"}}}},
		{"Array(Map(String, UInt8))", "01 01 0178 09", [][]*Map{{{Keys: []any{"x"}, Values: []any{uint8(9)}}}}},
		{"Array(Array(Nullable(Int256)))", "01 02 01 00" + strings.Repeat("ff", 32), [][][]*big.Int{{{nil, big.NewInt(-1)}}}},
		{"Array(Nullable(Decimal(5, 1)))", "02 01 00 0f000000", [][]*decimal.Decimal{{nil, ptr(decimal.New(15, -1))}}},
		{"Array(Array(Date32))", "01 01 00000000", [][][]time.Time{{{time.Unix(0, 0).UTC()}}}},
	} {
		ts := types(t, tc.typ)
		row := append([]byte{0}, mustHex(t, tc.hex)...)
		spans, err := Split(ts, row, nil)
		if err != nil {
			t.Errorf("%s: Split: %v", tc.typ, err)
			continue
		}
		col, err := NewColumn(ts[0])
		if err != nil {
			t.Errorf("%s: NewColumn: %v", tc.typ, err)
			continue
		}
		if err := col.Append(spans[0]); err != nil {
			t.Errorf("%s: Append: %v", tc.typ, err)
			continue
		}
		if diff := cmp.Diff(tc.want, col.Values(), comparers); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.typ, diff)
		}
		// Every strict prefix of the value is cut short.
		for n := 1; n < len(row); n++ {
			if _, err := Split(ts, row[:n], nil); !errors.Is(err, ErrCorrupt) {
				t.Errorf("%s: Split of the first %d bytes: %v, want ErrCorrupt", tc.typ, n, err)
			}
		}
	}
}

func TestNewColumnRejectsUnknownTypes(t *testing.T) {
	for _, typ := range []string{"Dynamic", "Variant(UInt8, String)", "Array(Dynamic)", "Map(String, Object('json'))", "Decimal(80, 2)", "DateTime64(10)", "AggregateFunction(uniq, String)"} {
		if _, err := NewColumn(types(t, typ)[0]); err == nil {
			t.Errorf("NewColumn(%s) = nil error, want one", typ)
		}
		if _, err := Split(types(t, typ), []byte{0, 0, 0, 0, 0, 0, 0, 0, 0}, nil); !errors.Is(err, ErrCorrupt) {
			t.Errorf("Split over %s: %v, want ErrCorrupt", typ, err)
		}
	}
}

var comparers = cmp.Options{
	cmp.Comparer(func(a, b decimal.Decimal) bool { return a.Equal(b) && a.Exponent() == b.Exponent() }),
	cmp.Comparer(func(a, b *big.Int) bool {
		if a == nil || b == nil {
			return a == b
		}
		return a.Cmp(b) == 0
	}),
	cmp.Comparer(func(a, b netip.Addr) bool { return a == b }),
}

func ptr[T any](v T) *T { return &v }

// TestStringColumns: the String and Nullable(String) columns, which keep their values in one
// buffer, give each value back whole and in order (NULL, empty, multi-byte), again after Reset,
// and refuse a span that does not hold exactly one value.
func TestStringColumns(t *testing.T) {
	values := []*string{ptr("héllo"), nil, ptr(""), ptr("a\x00b"), nil, ptr(strings.Repeat("x", 300))}
	encode := func(v *string, nullable bool) []byte {
		var b []byte
		if nullable {
			if v == nil {
				return []byte{1}
			}
			b = append(b, 0)
		}
		return append(binary.AppendUvarint(b, uint64(len(*v))), *v...)
	}
	for _, typ := range []string{"String", "Nullable(String)", "JSON", "LowCardinality(Nullable(String))"} {
		nullable := strings.Contains(typ, "Nullable")
		col, err := NewColumn(types(t, typ)[0])
		if err != nil {
			t.Fatal(err)
		}
		for round := range 2 {
			var want any
			var plain []string
			for _, v := range values {
				if !nullable && v == nil {
					continue
				}
				if err := col.Append(encode(v, nullable)); err != nil {
					t.Fatalf("%s: Append: %v", typ, err)
				}
				if !nullable {
					plain = append(plain, *v)
				}
			}
			want = plain
			if nullable {
				want = values
			}
			if diff := cmp.Diff(want, col.Values()); diff != "" {
				t.Errorf("%s, round %d (-want +got):\n%s", typ, round, diff)
			}
			col.Reset()
		}
		bad := [][]byte{{}, {2, 'a'}, {1, 'a', 'b'}, {0x80}}
		if nullable {
			bad = [][]byte{{}, {2}, {0}, {0, 2, 'a'}, {1, 0}}
		}
		for _, b := range bad {
			if err := col.Append(b); !errors.Is(err, ErrCorrupt) {
				t.Errorf("%s: Append(% x): %v, want ErrCorrupt", typ, b, err)
			}
		}
	}
}

// TestNullablePoolGrows: a Nullable column allocates its values in chunks that start small (a
// one-row block, as when a batch is split to isolate a rejected row, allocates 8 values, not
// 256) and double up to nullablePool, and every value keeps its own pointer.
func TestNullablePoolGrows(t *testing.T) {
	col := &nullableColumn[int32]{read: fixedCodec(4, func(b []byte) int32 { return int32(binary.LittleEndian.Uint32(b)) })}
	var caps []int
	for i := range 600 {
		if err := col.Append(binary.LittleEndian.AppendUint32([]byte{0}, uint32(i))); err != nil {
			t.Fatal(err)
		}
		if len(caps) == 0 || caps[len(caps)-1] != cap(col.pool) {
			caps = append(caps, cap(col.pool))
		}
	}
	if diff := cmp.Diff([]int{8, 16, 32, 64, 128, 256}, caps); diff != "" {
		t.Errorf("pool capacities (-want +got):\n%s", diff)
	}
	vals := col.Values().([]*int32)
	seen := map[*int32]bool{}
	for i, v := range vals {
		if *v != int32(i) || seen[v] {
			t.Fatalf("value %d: %d (pointer seen before: %v)", i, *v, seen[v])
		}
		seen[v] = true
	}
}
