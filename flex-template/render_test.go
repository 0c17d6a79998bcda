package main

import (
	"math"
	"net/netip"
	"testing"
	"time"

	"github.com/paulmach/orb"
	"github.com/shopspring/decimal"

	"github.com/ch-beam/pubsub-to-clickhouse/transforms/chtype"
)

// TestRenderValueAsClickHouse: check shows a value as ClickHouse 26.7 prints it in a VALUES list
// (each want is the engine's own output of the same value: SELECT ... FORMAT Values, or
// toString).
func TestRenderValueAsClickHouse(t *testing.T) {
	ptr := func(p orb.Point) *orb.Point { return &p }
	f64 := func(f float64) *float64 { return &f }
	f32 := func(f float32) *float32 { return &f }
	for _, tc := range []struct {
		typ  string
		v    any
		want string
	}{
		{"Float32", float32(math.MaxFloat32), "3.4028235e38"},
		{"Float64", 1e-7, "1e-7"},
		{"Float64", 1e21, "1e21"},
		{"Float64", 1e20, "100000000000000000000"},
		{"Float64", -2.5e-10, "-2.5e-10"},
		{"Float64", 1e100, "1e100"},
		{"Float64", 0.0000015, "0.0000015"},
		{"Float64", 0.000001, "0.000001"},
		{"Float64", 9.5e-7, "9.5e-7"},
		{"Float32", float32(0.000001), "0.000001"},
		{"Float32", float32(1e-7), "1e-7"},
		{"Float64", 0.0, "0"},
		{"Decimal(10, 2)", decimal.New(10000, -2), "100"},
		{"Decimal(10, 3)", decimal.New(1500, -3), "1.5"},
		{"Decimal(38, 2)", decimal.New(-50, -2), "-0.5"},
		{"Time64(3)", -(1590 * time.Millisecond), "'-00:00:01.590'"},
		{"Time64(3)", time.Second, "'00:00:01.000'"},
		{"Time64(6)", 100*time.Hour + 1500*time.Millisecond, "'100:00:01.500000'"},
		{"Time", -time.Second, "'-00:00:01'"},
		{"IPv6", netip.MustParseAddr("::1.2.3.4"), "'::1.2.3.4'"},
		{"IPv6", netip.MustParseAddr("::ffff:1.2.3.4"), "'::ffff:1.2.3.4'"},
		{"IPv6", netip.MustParseAddr("::0.0.1.0"), "'::100'"},
		{"IPv6", netip.MustParseAddr("::0.1.0.0"), "'::0.1.0.0'"},
		{"IPv6", netip.MustParseAddr("::1"), "'::1'"},
		{"IPv6", netip.MustParseAddr("::"), "'::'"},
		{"IPv6", netip.MustParseAddr("1::1.2.3.4"), "'1::102:304'"},
		{"IPv6", netip.MustParseAddr("::ffff:0:0"), "'::ffff:0.0.0.0'"},
		{"IPv4", netip.MustParseAddr("1.2.3.4"), "'1.2.3.4'"},
		{"Point", orb.Point{1.5, 2}, "(1.5,2)"},
		{"Nullable(Point)", ptr(orb.Point{1, 2}), "(1,2)"},
		{"Nullable(Point)", (*orb.Point)(nil), "NULL"},
		{"Ring", orb.Ring{{1, 2}, {3, 4}}, "[(1,2),(3,4)]"},
		{"LineString", orb.LineString{{0, 0}, {1, 1}}, "[(0,0),(1,1)]"},
		{"Polygon", orb.Polygon{{{0, 0}, {1, 0}, {0, 0}}}, "[[(0,0),(1,0),(0,0)]]"},
		{"MultiLineString", orb.MultiLineString{{{0, 0}, {1, 1}}}, "[[(0,0),(1,1)]]"},
		{"MultiPolygon", orb.MultiPolygon{{{{0, 0}, {1, 0}, {0, 0}}}}, "[[[(0,0),(1,0),(0,0)]]]"},
		// convert.Column.Values gives LowCardinality(Float32/Float64) as pointers, never nil.
		{"LowCardinality(Float64)", f64(1.5), "1.5"},
		{"LowCardinality(Float64)", f64(math.NaN()), "nan"},
		{"LowCardinality(Float32)", f32(float32(math.Inf(-1))), "-inf"},
		{"Array(LowCardinality(Float64))", []*float64{f64(math.NaN()), f64(2)}, "[nan,2]"},
		{"LowCardinality(Nullable(Float64))", (*float64)(nil), "NULL"},
	} {
		typ, err := chtype.Parse(tc.typ)
		if err != nil {
			t.Fatal(err)
		}
		if got := renderValue(typ, tc.v, time.UTC); got != tc.want {
			t.Errorf("%s %v: %s, want %s", tc.typ, tc.v, got, tc.want)
		}
	}
}
