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
		return x.StringFixed(decimalScale(t))
	case time.Time:
		return quoteString(formatTime(t, x, serverZone))
	case time.Duration:
		return quoteString(formatDuration(x))
	case uuid.UUID:
		return quoteString(x.String())
	case netip.Addr:
		return quoteString(x.String())
	}
	rv := reflect.ValueOf(v)
	switch {
	case rv.CanInt():
		return strconv.FormatInt(rv.Int(), 10)
	case rv.CanUint():
		return strconv.FormatUint(rv.Uint(), 10)
	}
	return fmt.Sprint(v) // the geo types: orb's own text
}

// quoteString quotes s as a ClickHouse string literal.
func quoteString(s string) string { return chtype.QuoteString(s) }

// formatFloat writes f as ClickHouse does: the shortest text that reads back as the same value,
// in exponent form only for very large or small magnitudes; inf, -inf, nan.
func formatFloat(f float64, bits int) string {
	switch {
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	case math.IsNaN(f):
		return "nan"
	}
	if a := math.Abs(f); a != 0 && (a < 1e-6 || a >= 1e21) {
		return strconv.FormatFloat(f, 'e', -1, bits)
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

// formatDuration formats a Time or Time64 value as [-]hhh:mm:ss[.fraction].
func formatDuration(d time.Duration) string {
	sign := ""
	if d < 0 {
		sign, d = "-", -d
	}
	s := fmt.Sprintf("%s%02d:%02d:%02d", sign, int64(d/time.Hour), int64(d/time.Minute)%60, int64(d/time.Second)%60)
	if frac := d % time.Second; frac != 0 {
		s += strings.TrimRight(fmt.Sprintf(".%09d", int64(frac)), "0")
	}
	return s
}
