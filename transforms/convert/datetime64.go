package convert

import (
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/ch-beam/pubsub-to-clickhouse/transforms/chtype"
)

// Date32, DateTime64(P[, 'zone']), and Date and DateTime from epoch numbers.
//
// Strings: as for Date and DateTime (datetime.go), the ISO-8601 layouts YYYY-MM-DD and
// YYYY-MM-DD[T ]hh:mm:ss[.fraction][Z|±hh:mm|±hhmm|±hh]; Date32 takes a date (or a date-time that
// is exactly midnight UTC), DateTime64 any of them, read in the column's zone, else the server's,
// when the text has no Z or offset.
//
// Numbers (a JSON number, or an epoch string: see below):
//   - Date and Date32: a whole number of days since 1970-01-01 (19782 is 2024-02-29; Date32 also
//     takes negative days). ClickHouse's own text parsing reads a "big" integer as seconds instead;
//     the pipeline never switches meaning on a value's size, so a number is always days.
//   - DateTime: a whole number of seconds since 1970-01-01 00:00:00 UTC (1704067200). Never
//     milliseconds: 1704067200000 is out of range, not read as milliseconds.
//   - DateTime64(P): seconds since the epoch, with a fraction (1704067200.123); digits beyond P are
//     cut as for strings.
//
// Epoch strings: a JSON string whose content (escapes resolved) is exactly the text of a JSON
// integer, -?(0|[1-9][0-9]*), means what that JSON number means, with the same errors: "19782"
// into Date is 2024-02-29, "1704067200" into DateTime is 2024-01-01 00:00:00 UTC, "-1" into
// Date32 is 1969-12-31, "-1" into Date is out of range. For DateTime64 the text may also have a
// fraction, -?(0|[1-9][0-9]*)(\.[0-9]+)?: "1704067200.123". Nothing else is an epoch string: not
// "+1", "01", "1e9", "1.5" (but into DateTime64), " 1", "1 ", "", nor digits other than ASCII 0-9.
// Such strings, like every other, are read as ISO-8601 (datetime.go), with its errors. So
// "20240101" into DateTime is 20240101 seconds (1970-08-23 06:15:01 UTC), not 2024-01-01: a string
// of digits never switches meaning on its length either.
//
// DateTime64(P) keeps P fractional digits (0 to 9): further digits of the text are cut with integer
// arithmetic, never through float64, towards the earlier instant ("…:00.123456789" into
// DateTime64(3) is …:00.123; epoch -1.5 into DateTime64(0) is -2).
//
// Ranges, checked, never clamped (ClickHouse docs, "Date32", "DateTime64"): Date32 1900-01-01 to
// 2299-12-31; DateTime64 from 1900-01-01 00:00:00 UTC to 2299-12-31 23:59:59.999999999 UTC, but also
// at most 2262-04-11 23:47:16.854775807 UTC: DateTime64(9) holds no later instant in its Int64, and
// clickhouse-go v2.51.0 converts every DateTime64 value through time.Time.UnixNano, which has no
// later instant either, whatever P is.
//
// RowBinary: Date32 as a little-endian Int32 of days since 1970-01-01; DateTime64(P) as a
// little-endian Int64 of 10^-P second ticks since the epoch.

const (
	minDate32Days = -25567 // 1900-01-01
	maxDate32Days = 120529 // 2299-12-31

	minDateTime64Unix = -2208988800 // 1900-01-01 00:00:00 UTC
	// The latest instant a DateTime64 takes: int64 nanoseconds, 2262-04-11 23:47:16.854775807 UTC.
	maxDateTime64Unix = 9223372036
)

var pow10 = [...]int64{1, 10, 100, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9}

// wholeNumber reads a JSON number as a whole number that fits an int64; whole is false for a
// fraction, inRange false beyond ±(2^63-1).
func wholeNumber(raw []byte) (n int64, whole, inRange bool) {
	neg, mag, whole, inRange := parseWhole(raw)
	if !whole || !inRange || mag > 1<<63-1 {
		return 0, whole, false
	}
	if neg {
		return -int64(mag), true, true
	}
	return int64(mag), true, true
}

// epochString reports whether s, the content of a JSON string, is an epoch string: the text of a
// JSON integer, -?(0|[1-9][0-9]*), or, when fraction is set, also of a JSON number with a
// fraction and no exponent, -?(0|[1-9][0-9]*)(\.[0-9]+)?. Such a text follows JSON's number
// grammar, so the readers of number values (parseWhole, parseExact) take it as it is.
func epochString(s []byte, fraction bool) bool {
	i := 0
	if i < len(s) && s[i] == '-' {
		i++
	}
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case i < len(s) && s[i] >= '1' && s[i] <= '9':
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
	default:
		return false
	}
	if fraction && i < len(s) && s[i] == '.' {
		i++
		start := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		if i == start {
			return false
		}
	}
	return i == len(s)
}

// isoDay reads s, the content of the string value v, as a date for Date or Date32: YYYY-MM-DD,
// or a date-time that is exactly midnight UTC; it returns days since 1970-01-01.
func isoDay(v value, s []byte, typ string) (int64, error) {
	t, ok, why := parseISO(s)
	switch {
	case !ok:
		return 0, errValue(v, isoRule(why, "is not an ISO-8601 date (YYYY-MM-DD)"))
	case t.hasTime && (t.hour != 0 || t.minute != 0 || t.second != 0 || t.nanos != 0 || t.offset != 0):
		return 0, errValue(v, fmt.Sprintf("has a time of day other than midnight UTC; a %s column takes a date (YYYY-MM-DD), and cutting the time away would change the value", typ))
	}
	return daysFromCivil(t.year, t.month, t.day), nil
}

// epochDays reads num, the number text of v (a number value, or an epoch string's content), as
// whole days since 1970-01-01.
func epochDays(v value, num []byte, typ string) (int64, bool, error) {
	n, whole, inRange := wholeNumber(num)
	if !whole {
		return 0, false, errValue(v, fmt.Sprintf("is not a whole number; a number into %s is a count of days since 1970-01-01", typ))
	}
	return n, inRange, nil
}

// epochText returns the content of the string value v, and whether it is an epoch string.
func epochText(v value, c *Converter, fraction bool) (s []byte, epoch bool, err error) {
	s, err = c.text(v)
	if err != nil {
		return nil, false, errValue(v, err.Error())
	}
	return s, epochString(s, fraction), nil
}

// epochDateEncoder is Date: ISO strings as dateEncoder, numbers and epoch strings as days since
// 1970-01-01.
type epochDateEncoder struct{ dateEncoder }

func (e epochDateEncoder) encode(dst []byte, v value, c *Converter) ([]byte, error) {
	switch v.kind {
	case kindString:
		s, epoch, err := epochText(v, c, false)
		switch {
		case err != nil:
			return dst, err
		case !epoch:
			return e.encodeISO(dst, v, s)
		}
		return encodeEpochDate(dst, v, s)
	case kindNumber:
		return encodeEpochDate(dst, v, v.raw)
	}
	return dst, errValue(v, fmt.Sprintf("is %s; Date takes an ISO-8601 date string (YYYY-MM-DD) or a number of days since 1970-01-01", v.kind))
}

// encodeEpochDate encodes num, the number text of v, as a Date of that many days.
func encodeEpochDate(dst []byte, v value, num []byte) ([]byte, error) {
	days, inRange, err := epochDays(v, num, "Date")
	if err != nil {
		return dst, err
	}
	if !inRange || days < 0 || days > maxDateDays {
		return dst, errValue(v, "is out of range for Date (0 to 65535 days: 1970-01-01 to 2149-06-06)")
	}
	return binary.LittleEndian.AppendUint16(dst, uint16(days)), nil
}

// epochDateTimeEncoder is DateTime: ISO strings as dateTimeEncoder, numbers and epoch strings as
// Unix seconds.
type epochDateTimeEncoder struct{ dateTimeEncoder }

func (e epochDateTimeEncoder) encode(dst []byte, v value, c *Converter) ([]byte, error) {
	switch v.kind {
	case kindString:
		s, epoch, err := epochText(v, c, false)
		switch {
		case err != nil:
			return dst, err
		case !epoch:
			return e.encodeISO(dst, v, s)
		}
		return encodeEpochDateTime(dst, v, s)
	case kindNumber:
		return encodeEpochDateTime(dst, v, v.raw)
	}
	return dst, errValue(v, fmt.Sprintf("is %s; DateTime takes an ISO-8601 string (%s) or a number of seconds since 1970-01-01 00:00:00 UTC", v.kind, isoLayouts))
}

// encodeEpochDateTime encodes num, the number text of v, as a DateTime of that many seconds.
func encodeEpochDateTime(dst []byte, v value, num []byte) ([]byte, error) {
	secs, whole, inRange := wholeNumber(num)
	switch {
	case !whole:
		return dst, errValue(v, "is not a whole number; a number into DateTime is a count of seconds since 1970-01-01 00:00:00 UTC")
	case !inRange || secs < 0 || secs > maxDateTimeUnix:
		return dst, errValue(v, dateTimeRange+asMilliseconds(secs, inRange))
	}
	return binary.LittleEndian.AppendUint32(dst, uint32(secs)), nil
}

// dateTimeRange is the rule of a number of seconds that a DateTime cannot hold.
const dateTimeRange = "is out of range for DateTime (0 to 4294967295 seconds: 1970-01-01 00:00:00 to 2106-02-07 06:28:15 UTC)"

// asMilliseconds says, of a number of seconds too large for a DateTime that reads as an instant
// of this century or the next in milliseconds (1000000000000, 2001-09-09, to 4294967295999, the
// last millisecond a DateTime holds), what it reads as and the seconds to send instead: ", and as
// Unix milliseconds it reads 2024-01-01 00:00:00.000 UTC: send 1704067200, or divide it by 1000
// in a JavaScript UDF, javascriptTextTransformGcsPath (milliseconds are never guessed)". Not
// after "; ", which separates a row's errors (RowError). "" for other numbers, such as
// 4294967296, which is one second too many rather than milliseconds of 1970.
func asMilliseconds(n int64, inRange bool) string {
	if !inRange || n < 1e12 || n/1000 > maxDateTimeUnix {
		return ""
	}
	return millisecondsHint(n, strconv.FormatInt(n/1000, 10))
}

// millisecondsHint is the sentence of asMilliseconds and asMilliseconds64: what n reads as in
// Unix milliseconds, and the seconds to send instead.
func millisecondsHint(n int64, send string) string {
	return fmt.Sprintf(", and as Unix milliseconds it reads %s UTC: send %s, or divide it by 1000 in a JavaScript UDF, javascriptTextTransformGcsPath (milliseconds are never guessed)",
		time.UnixMilli(n).UTC().Format("2006-01-02 15:04:05.000"), send)
}

// asMilliseconds64 is asMilliseconds for DateTime64, whose numbers are seconds as well (with a
// fraction for less than a second): of a whole number out of its range that reads as an instant
// from 2001-09-09 to the last millisecond a DateTime64 holds (2262-04-11 23:47:16.854 UTC) in
// milliseconds, what it reads as and the seconds to send instead, the milliseconds as the
// fraction (kept when P ≥ 3). "" for other numbers.
func asMilliseconds64(num []byte) string {
	n, whole, inRange := wholeNumber(num)
	if !whole || !inRange || n < 1e12 || n > (1<<63-1)/1_000_000 {
		return ""
	}
	return millisecondsHint(n, fmt.Sprintf("%d.%03d", n/1000, n%1000))
}

type date32Encoder struct{}

const date32Range = "is out of range for Date32 (1900-01-01 to 2299-12-31)"

func (date32Encoder) encode(dst []byte, v value, c *Converter) ([]byte, error) {
	var days int64
	switch v.kind {
	case kindString:
		s, epoch, err := epochText(v, c, false)
		switch {
		case err != nil:
			return dst, err
		case epoch:
			if days, err = epochDays32(v, s); err != nil {
				return dst, err
			}
		default:
			if days, err = isoDay(v, s, "Date32"); err != nil {
				return dst, err
			}
		}
	case kindNumber:
		var err error
		if days, err = epochDays32(v, v.raw); err != nil {
			return dst, err
		}
	default:
		return dst, errValue(v, fmt.Sprintf("is %s; Date32 takes an ISO-8601 date string (YYYY-MM-DD) or a number of days since 1970-01-01", v.kind))
	}
	if days < minDate32Days || days > maxDate32Days {
		return dst, errValue(v, date32Range)
	}
	return binary.LittleEndian.AppendUint32(dst, uint32(int32(days))), nil
}

// epochDays32 reads num, the number text of v, as days for Date32 (not yet range-checked beyond
// int64).
func epochDays32(v value, num []byte) (int64, error) {
	d, inRange, err := epochDays(v, num, "Date32")
	if err != nil {
		return 0, err
	}
	if !inRange {
		return 0, errValue(v, date32Range)
	}
	return d, nil
}

type dateTime64Encoder struct {
	precision int
	zone      zoneRange // its name, DateTime64(3) or DateTime64(3, 'UTC'), and its zone.loc
}

// newDateTimeEncoder is DateTime's codec: its zone, else the server's.
func newDateTimeEncoder(t *chtype.Type, serverLoc *time.Location) (scalar, error) {
	loc := serverLoc
	if len(t.Args) > 0 {
		var err error
		if loc, err = loadZone(t.Args[0]); err != nil {
			return nil, err
		}
	}
	return epochDateTimeEncoder{dateTimeEncoder{zoneRange{name: t.String(), loc: loc, ofServer: len(t.Args) == 0}}}, nil
}

func newDateTime64Encoder(t *chtype.Type, serverLoc *time.Location) (scalar, error) {
	if len(t.Args) < 1 || len(t.Args) > 2 {
		return nil, fmt.Errorf("%s: expected DateTime64(P[, 'zone'])", t)
	}
	p, err := strconv.Atoi(t.Args[0])
	if err != nil || p < 0 || p > 9 {
		return nil, fmt.Errorf("%s: the precision must be 0 to 9", t)
	}
	loc := serverLoc
	if len(t.Args) == 2 {
		if loc, err = loadZone(t.Args[1]); err != nil {
			return nil, err
		}
	}
	return dateTime64Encoder{precision: p, zone: zoneRange{name: t.String(), loc: loc, ofServer: len(t.Args) < 2}}, nil
}

func (e dateTime64Encoder) rangeRule() string {
	frac := ".854775807"[:e.precision+1]
	if e.precision == 0 {
		frac = ""
	}
	return fmt.Sprintf("is out of range for %s (1900-01-01 00:00:00 to 2262-04-11 23:47:16%s UTC)", e.zone.name, frac)
}

// isoRangeRule is the error of the ISO-8601 value c out of range: the type's range in UTC, and in
// its zone when that is another, and the instant c is when it is not written in UTC.
func (e dateTime64Encoder) isoRangeRule(c civil) string {
	p := e.precision
	secs, rule := c.unix(e.zone)
	at := time.Unix(secs, int64(c.nanos)/pow10[9-p]*pow10[9-p])
	layout := secondsLayout
	if p > 0 {
		layout += "." + strings.Repeat("0", p)
	}
	maxNanos := int64(1<<63-1) / pow10[9-p] * pow10[9-p] // 2262-04-11 23:47:16.854775807 UTC, cut to P digits
	return e.zone.rule(c, at, rule == "", time.Unix(minDateTime64Unix, 0), time.Unix(0, maxNanos), secondsLayout, layout)
}

func (e dateTime64Encoder) encode(dst []byte, v value, c *Converter) ([]byte, error) {
	p := e.precision
	var ticks int64
	switch v.kind {
	case kindString:
		s, epoch, err := epochText(v, c, true)
		if err != nil {
			return dst, err
		}
		if epoch {
			if ticks, err = e.epochTicks(v, s); err != nil {
				return dst, err
			}
			break
		}
		t, ok, why := parseISO(s)
		if !ok {
			return dst, errValue(v, isoRule(why, "is not an ISO-8601 date-time ("+isoLayouts+")"))
		}
		// The range is of instants, 1900-01-01 00:00:00 to 2262-04-11 23:47:16.854775807 UTC: a
		// wall clock of 1899 west of UTC ("1899-12-31T23:00:00-02:00"), or of 2262 east of it,
		// may name an instant inside it, so only years that no offset (less than a day) brings
		// into the range are refused before the instant is known.
		if t.year < 1899 || t.year > 2262 {
			return dst, errValue(v, e.isoRangeRule(t))
		}
		secs, rule := t.unix(e.zone)
		if rule != "" {
			return dst, errValue(v, rule)
		}
		if secs < minDateTime64Unix || secs > maxDateTime64Unix {
			return dst, errValue(v, e.isoRangeRule(t))
		}
		ticks = secs*pow10[p] + int64(t.nanos)/pow10[9-p]
		if lo, hi := e.ticksRange(); ticks < lo || ticks > hi {
			return dst, errValue(v, e.isoRangeRule(t))
		}
	case kindNumber:
		var err error
		if ticks, err = e.epochTicks(v, v.raw); err != nil {
			return dst, err
		}
	default:
		return dst, errValue(v, fmt.Sprintf("is %s; %s takes an ISO-8601 string (%s) or a number of seconds since 1970-01-01 00:00:00 UTC", v.kind, e.zone.name, isoLayouts))
	}
	return binary.LittleEndian.AppendUint64(dst, uint64(ticks)), nil
}

// ticksRange is the range of a DateTime64(P)'s ticks: 1900-01-01 00:00:00 UTC to
// 2262-04-11 23:47:16.854775807 UTC, cut to P digits.
func (e dateTime64Encoder) ticksRange() (lo, hi int64) {
	return minDateTime64Unix * pow10[e.precision], int64(1<<63-1) / pow10[9-e.precision]
}

// epochTicks reads num, the number text of v, as seconds since the epoch and returns
// floor(seconds × 10^P), from the digits (value = ±digits × 10^exp), never through float64; a
// value out of ticksRange is the range error, with the milliseconds hint (asMilliseconds64).
func (e dateTime64Encoder) epochTicks(v value, num []byte) (int64, error) {
	ticks, ok := e.epochTicksOf(num)
	if lo, hi := e.ticksRange(); !ok || ticks < lo || ticks > hi {
		return 0, errValue(v, e.rangeRule()+asMilliseconds64(num))
	}
	return ticks, nil
}

// epochTicksOf is epochTicks's arithmetic: ok false when the ticks overflow an int64.
func (e dateTime64Encoder) epochTicksOf(num []byte) (int64, bool) {
	var buf [64]byte
	n := parseExact(num, buf[:0])
	keep := len(n.digits) + n.exp + e.precision // digits of |value| × 10^P before the point
	if keep > 19 {
		return 0, false
	}
	var q int64
	for k := 0; k < keep; k++ {
		d := int64(0)
		if k < len(n.digits) {
			d = int64(n.digits[k] - '0')
		}
		if q > (1<<63-1-d)/10 {
			return 0, false
		}
		q = q*10 + d
	}
	cut := keep < len(n.digits) // non-zero digits (there are no trailing zeros) were cut
	if !n.neg {
		return q, true
	}
	if cut {
		return -q - 1, true // towards the earlier instant
	}
	return -q, true
}

func (epochDateEncoder) size() int { return 2 }

// column decodes UInt16 days since 1970-01-01 into []time.Time in UTC.
func (epochDateEncoder) column(wrap shape) Column {
	return fixedColumn(wrap, 2, func(b []byte) time.Time {
		return time.Unix(int64(binary.LittleEndian.Uint16(b))*86400, 0).UTC()
	})
}

func (epochDateTimeEncoder) size() int { return 4 }

// column decodes UInt32 seconds since the epoch into []time.Time in UTC.
func (epochDateTimeEncoder) column(wrap shape) Column {
	return fixedColumn(wrap, 4, func(b []byte) time.Time {
		return time.Unix(int64(binary.LittleEndian.Uint32(b)), 0).UTC()
	})
}

func (date32Encoder) size() int { return 4 }

// column decodes Int32 days since 1970-01-01 into []time.Time in UTC.
func (date32Encoder) column(wrap shape) Column {
	return fixedColumn(wrap, 4, func(b []byte) time.Time {
		return time.Unix(int64(int32(binary.LittleEndian.Uint32(b)))*86400, 0).UTC()
	})
}

func (dateTime64Encoder) size() int { return 8 }

// column decodes Int64 10^-P second ticks since the epoch into []time.Time in UTC.
func (e dateTime64Encoder) column(wrap shape) Column {
	p := e.precision
	return fixedColumn(wrap, 8, func(b []byte) time.Time {
		ticks, scale := int64(binary.LittleEndian.Uint64(b)), pow10[p]
		sec, frac := ticks/scale, ticks%scale
		if frac < 0 {
			sec, frac = sec-1, frac+scale
		}
		return time.Unix(sec, frac*pow10[9-p]).UTC()
	})
}
