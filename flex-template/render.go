package main

// The rendering of a decoded value as ClickHouse shows it in a VALUES list: numbers bare, strings
// and dates single-quoted with ClickHouse's escapes, arrays [..], tuples (..), maps {k:v}, NULL.

import (
	"fmt"
	"math"
	"math/big"
	"net/netip"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/paulmach/orb"
	"github.com/shopspring/decimal"

	"github.com/ch-beam/pubsub-to-clickhouse/transforms/chtype"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/convert"
)

// renderValue renders v, one value of a column of type t as convert.Column.Values gives it (see
// there for the Go type of each ClickHouse type), as a ClickHouse literal. Times are shown in
// the column's time zone, else in serverZone (the zone ClickHouse shows them in).
func renderValue(t *chtype.Type, v any, serverZone *time.Location) string {
	switch t.Name {
	case "LowCardinality", "SimpleAggregateFunction":
		if len(t.Elems) == 1 {
			// LowCardinality(Float32) and LowCardinality(Float64) give pointers, never nil
			// (convert.Column.Values).
			switch p := v.(type) {
			case *float32:
				if p != nil {
					v = *p
				}
			case *float64:
				if p != nil {
					v = *p
				}
			}
			return renderValue(t.Elems[0], v, serverZone)
		}
	case "Nullable":
		rv := reflect.ValueOf(v)
		if !rv.IsValid() || (rv.Kind() == reflect.Pointer && rv.IsNil()) {
			return "NULL"
		}
		if _, big := v.(*big.Int); !big && rv.Kind() == reflect.Pointer {
			v = rv.Elem().Interface()
		}
		return renderValue(t.Elems[0], v, serverZone)
	case "Array", "Nested":
		var elem *chtype.Type
		if t.Name == "Array" {
			elem = t.Elems[0]
		} else {
			elem = &chtype.Type{Name: "Tuple", Elems: t.Elems, FieldNames: t.FieldNames}
		}
		rv := reflect.ValueOf(v)
		if rv.Kind() != reflect.Slice {
			break
		}
		parts := make([]string, rv.Len())
		for i := range parts {
			parts[i] = renderValue(elem, rv.Index(i).Interface(), serverZone)
		}
		return "[" + strings.Join(parts, ",") + "]"
	case "Tuple":
		if vs, ok := v.([]any); ok && len(vs) == len(t.Elems) {
			parts := make([]string, len(vs))
			for i, e := range vs {
				parts[i] = renderValue(t.Elems[i], e, serverZone)
			}
			return "(" + strings.Join(parts, ",") + ")"
		}
	case "Map":
		if m, ok := v.(*convert.Map); ok && len(t.Elems) == 2 {
			parts := make([]string, len(m.Keys))
			for i := range m.Keys {
				parts[i] = renderValue(t.Elems[0], m.Keys[i], serverZone) + ":" + renderValue(t.Elems[1], m.Values[i], serverZone)
			}
			return "{" + strings.Join(parts, ",") + "}"
		}
	case "Enum8", "Enum16":
		n := reflect.ValueOf(v)
		if n.CanInt() {
			for _, e := range t.Enum {
				if int64(e.Value) == n.Int() {
					return quoteString(e.Name)
				}
			}
		}
	}
	return renderScalar(t, v, serverZone)
}

// renderScalar renders a value that is one Go value (not a slice, map or tuple of them).
func renderScalar(t *chtype.Type, v any, serverZone *time.Location) string {
	switch x := v.(type) {
	case string:
		return quoteString(x)
	case bool:
		return strconv.FormatBool(x)
	case float32:
		return formatFloat(float64(x), 32)
	case float64:
		return formatFloat(x, 64)
	case *big.Int:
		return x.String()
	case decimal.Decimal:
		return x.String() // ClickHouse 21.9 and later print no trailing zeros (output_format_decimal_trailing_zeros)
	case time.Time:
		return quoteString(formatTime(t, x, serverZone))
	case time.Duration:
		return quoteString(formatDuration(t, x))
	case uuid.UUID:
		return quoteString(x.String())
	case netip.Addr:
		return quoteString(formatIP(x))
	case orb.Point, orb.Ring, orb.LineString, orb.Polygon, orb.MultiLineString, orb.MultiPolygon:
		return formatGeo(x)
	}
	rv := reflect.ValueOf(v)
	switch {
	case rv.CanInt():
		return strconv.FormatInt(rv.Int(), 10)
	case rv.CanUint():
		return strconv.FormatUint(rv.Uint(), 10)
	}
	return fmt.Sprint(v)
}

// formatGeo writes a geo value as ClickHouse does: a Point as a tuple (x,y), the others as arrays
// of what they hold: [(0,0),(1,0)].
func formatGeo(v any) string {
	var parts []string
	switch x := v.(type) {
	case orb.Point:
		return "(" + formatFloat(x[0], 64) + "," + formatFloat(x[1], 64) + ")"
	case orb.Ring:
		parts = formatEach(x, formatGeo)
	case orb.LineString:
		parts = formatEach(x, formatGeo)
	case orb.Polygon:
		parts = formatEach(x, formatGeo)
	case orb.MultiLineString:
		parts = formatEach(x, formatGeo)
	case orb.MultiPolygon:
		parts = formatEach(x, formatGeo)
	}
	return "[" + strings.Join(parts, ",") + "]"
}

// formatEach formats each element of s.
func formatEach[S ~[]E, E any](s S, f func(any) string) []string {
	out := make([]string, len(s))
	for i, e := range s {
		out[i] = f(e)
	}
	return out
}

// formatIP writes an address as ClickHouse's formatIPv6 does, which differs from netip's text in
// one case: an IPv6 address whose first 96 bits are zero and the 16 after them not (an
// IPv4-compatible address, ::1.2.3.4) ends in the IPv4 address, dotted, where netip writes
// ::102:304. (An IPv4-mapped one, ::ffff:1.2.3.4, both write dotted.)
func formatIP(a netip.Addr) string {
	if a.Is6() && !a.Is4In6() {
		b := a.As16()
		if [12]byte(b[:12]) == [12]byte{} && (b[12] != 0 || b[13] != 0) {
			return "::" + netip.AddrFrom4([4]byte(b[12:])).String()
		}
	}
	return a.String()
}

// quoteString quotes s as a ClickHouse string literal.
func quoteString(s string) string { return chtype.QuoteString(s) }

// formatFloat writes f as ClickHouse does: the shortest text that reads back as the same value,
// in exponent form only for very large or small magnitudes, the exponent without a sign for a
// positive one or leading zeros (3.4028235e38, 1e-7); inf, -inf, nan.
func formatFloat(f float64, bits int) string {
	switch {
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	case math.IsNaN(f):
		return "nan"
	}
	// The exponent of the shortest digits of the value in its own type decides, not the float64's
	// magnitude: the Float32 0.000001 is 9.99999997e-7 as a float64, and ClickHouse prints 0.000001.
	e := strconv.FormatFloat(f, 'e', -1, bits) // 3.4028235e+38, 1e-07
	mant, exp, _ := strings.Cut(e, "e")
	if n, _ := strconv.Atoi(exp); f != 0 && (n < -6 || n >= 21) {
		sign := ""
		if exp[0] == '-' {
			sign = "-"
		}
		return mant + "e" + sign + strings.TrimLeft(exp[1:], "0")
	}
	return strconv.FormatFloat(f, 'f', -1, bits)
}

// decimalScale returns the scale S of Decimal(P, S), Decimal32(S), ... .
func decimalScale(t *chtype.Type) int32 {
	if len(t.Args) == 0 {
		return 0
	}
	s, _ := strconv.Atoi(t.Args[len(t.Args)-1])
	return int32(s)
}

// formatTime formats a Date, Date32, DateTime or DateTime64(P) value as ClickHouse shows it: a
// date, or a date and time in the column's zone (else serverZone) with P digits of fraction.
func formatTime(t *chtype.Type, v time.Time, serverZone *time.Location) string {
	switch t.Name {
	case "Date", "Date32":
		return v.UTC().Format(time.DateOnly)
	}
	zone, precision := "", 0
	if t.Name == "DateTime64" && len(t.Args) > 0 {
		precision, _ = strconv.Atoi(t.Args[0])
		if len(t.Args) > 1 {
			zone = t.Args[1]
		}
	} else if len(t.Args) > 0 {
		zone = t.Args[0]
	}
	loc := serverZone
	if zone != "" {
		if l, err := time.LoadLocation(zone); err == nil {
			loc = l
		}
	}
	layout := time.DateTime
	if precision > 0 {
		layout += "." + strings.Repeat("0", precision)
	}
	return v.In(loc).Format(layout)
}

// formatDuration formats a Time or Time64(P) value as ClickHouse does: [-]hh:mm:ss, and for
// Time64(P) with P > 0 a fraction of P digits (-00:00:01.590 in Time64(3)).
func formatDuration(t *chtype.Type, d time.Duration) string {
	sign := ""
	if d < 0 {
		sign, d = "-", -d
	}
	s := fmt.Sprintf("%s%02d:%02d:%02d", sign, int64(d/time.Hour), int64(d/time.Minute)%60, int64(d/time.Second)%60)
	if p := decimalScale(t); t.Name == "Time64" && p > 0 {
		s += "." + fmt.Sprintf("%09d", int64(d%time.Second))[:min(p, 9)]
	}
	return s
}
