package convert

import (
	"encoding/binary"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Date and DateTime.
//
// Accepted: an ISO-8601 string, YYYY-MM-DD or YYYY-MM-DD[T ]hh:mm:ss[.fraction][Z|±hh:mm|±hhmm|±hh]
// (the T or a space between date and time; lowercase t and z too, as RFC 3339 allows). A fraction
// of a second is truncated (DateTime holds whole seconds). Without Z or an offset, the time is read
// in the column's time zone (DateTime('Asia/Tokyo')), else in the server's. A date alone is
// midnight of that day. Also a JSON number, or a string holding one (an epoch string): days since
// 1970-01-01 for Date, seconds since the epoch for DateTime (datetime64.go, which wraps these
// encoders).
//
// Date takes a date; a date-time only when it is exactly midnight, without a zone or in UTC
// ("2024-01-01T00:00:00Z"), since any other time of day, or another zone's midnight, would have
// to be cut away or shifted to another day.
//
// Ranges, checked, never clamped (ClickHouse docs, "Date", "DateTime"): Date 1970-01-01 to
// 2149-06-06; DateTime 1970-01-01 00:00:00 UTC to 2106-02-07 06:28:15 UTC.
// Errors: other layouts ("10/03/2024", "1.7e9", " 1704067200"); a text of an accepted layout whose
// part names no day or time, said with that part and its rule: impossible dates ("2023-02-29":
// "has day 29 in February 2023, which has 28 days"), hour 24, minute 60, second 60 (a leap
// second: ClickHouse's date-times count Unix seconds, which have none), offsets beyond ±23:59;
// values out of range; other JSON values.

const (
	maxDateDays     = 65535     // 2149-06-06
	maxDateTimeUnix = 1<<32 - 1 // 2106-02-07 06:28:15 UTC
	isoLayouts      = "YYYY-MM-DD or YYYY-MM-DD[T ]hh:mm:ss[.fraction][Z|±hh:mm|±hhmm|±hh]"
)

// civil is a parsed ISO-8601 date or date-time.
type civil struct {
	year, month, day     int
	hour, minute, second int
	nanos                int  // fraction of a second, truncated to nanoseconds
	hasTime              bool // a time of day was given
	hasZone              bool // Z or an offset was given
	offset               int  // seconds east of UTC, when hasZone
}

// parseISO parses s. ok is false when s is not one of the accepted layouts, or when it has one
// but a part of it names no day of the calendar or time of the clock; why then says which part
// and the rule it breaks ("has day 29 in February 2023, which has 28 days"), and is "" for a
// text of another layout.
func parseISO(s []byte) (c civil, ok bool, why string) {
	if len(s) < 10 || s[4] != '-' || s[7] != '-' {
		return c, false, ""
	}
	y1, ok1 := twoDigits(s[0], s[1])
	y2, ok2 := twoDigits(s[2], s[3])
	m, ok3 := twoDigits(s[5], s[6])
	d, ok4 := twoDigits(s[8], s[9])
	if !ok1 || !ok2 || !ok3 || !ok4 {
		return c, false, ""
	}
	c.year, c.month, c.day = y1*100+y2, m, d
	switch {
	case c.month < 1 || c.month > 12:
		why = fmt.Sprintf("has month %02d; months are 01 to 12", c.month)
	case c.day < 1 || c.day > daysIn(c.year, c.month):
		why = fmt.Sprintf("has day %02d in %s %04d, which has days 01 to %d", c.day, time.Month(c.month), c.year, daysIn(c.year, c.month))
		if c.month == 2 && c.day == 29 {
			why = fmt.Sprintf("has day 29 in February %04d, which has 28 days (%04d is not a leap year)", c.year, c.year)
		}
	}
	if len(s) == 10 {
		return c, why == "", why
	}
	if sep := s[10]; sep != 'T' && sep != 't' && sep != ' ' || len(s) < 19 || s[13] != ':' || s[16] != ':' {
		return c, false, ""
	}
	c.hasTime = true
	h, ok1 := twoDigits(s[11], s[12])
	mi, ok2 := twoDigits(s[14], s[15])
	sec, ok3 := twoDigits(s[17], s[18])
	if !ok1 || !ok2 || !ok3 {
		return c, false, ""
	}
	c.hour, c.minute, c.second = h, mi, sec
	switch {
	case why != "":
	case c.hour == 24:
		why = "has hour 24; hours are 00 to 23 (write the next day's 00:00:00)"
	case c.hour > 23:
		why = fmt.Sprintf("has hour %02d; hours are 00 to 23", c.hour)
	case c.minute > 59:
		why = fmt.Sprintf("has minute %02d; minutes are 00 to 59", c.minute)
	case c.second == 60:
		why = "has second 60, a leap second, which no ClickHouse date-time holds (seconds are 00 to 59, as in Unix time); it is not moved to a second next to it"
	case c.second > 59:
		why = fmt.Sprintf("has second %02d; seconds are 00 to 59", c.second)
	}
	i := 19
	if i < len(s) && (s[i] == '.' || s[i] == ',') {
		i++
		start := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			if i-start < 9 {
				c.nanos = c.nanos*10 + int(s[i]-'0')
			}
			i++
		}
		if i == start {
			return c, false, ""
		}
		for k := i - start; k < 9; k++ {
			c.nanos *= 10
		}
	}
	if i == len(s) {
		return c, why == "", why
	}
	c.hasZone = true
	switch s[i] {
	case 'Z', 'z':
		if i+1 != len(s) {
			return c, false, ""
		}
		return c, why == "", why
	case '+', '-':
		sign := 1
		if s[i] == '-' {
			sign = -1
		}
		rest := s[i+1:]
		var hh, mm int
		switch {
		case len(rest) == 2:
			hh, ok1 = twoDigits(rest[0], rest[1])
			ok2 = true
		case len(rest) == 4:
			hh, ok1 = twoDigits(rest[0], rest[1])
			mm, ok2 = twoDigits(rest[2], rest[3])
		case len(rest) == 5 && rest[2] == ':':
			hh, ok1 = twoDigits(rest[0], rest[1])
			mm, ok2 = twoDigits(rest[3], rest[4])
		default:
			return c, false, ""
		}
		if !ok1 || !ok2 {
			return c, false, ""
		}
		if why == "" && (hh > 23 || mm > 59) {
			why = fmt.Sprintf("has the UTC offset %s; an offset's hours are 00 to 23 and its minutes 00 to 59", s[i:])
		}
		c.offset = sign * (hh*3600 + mm*60)
		return c, why == "", why
	}
	return c, false, ""
}

// twoDigits reads two ASCII digits; ok is false when either is another byte.
func twoDigits(a, b byte) (n int, ok bool) {
	x, y := a-'0', b-'0' // bytes below '0' wrap around to large values
	return int(x)*10 + int(y), x <= 9 && y <= 9
}

func isLeap(y int) bool { return y%4 == 0 && (y%100 != 0 || y%400 == 0) }

func daysIn(y, m int) int {
	switch m {
	case 2:
		if isLeap(y) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

// daysFromCivil returns the number of days from 1970-01-01 to y-m-d in the proleptic Gregorian
// calendar (H. Hinnant's algorithm).
func daysFromCivil(y, m, d int) int64 {
	if m <= 2 {
		y--
	}
	era := y / 400
	if y < 0 && y%400 != 0 {
		era--
	}
	yoe := y - era*400
	mp := (m + 9) % 12
	doy := (153*mp+2)/5 + d - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return int64(era)*146097 + int64(doe) - 719468
}

// unix returns the instant c names, in seconds since the epoch, reading a zone-less time in the
// zone of z (the column's, else the server's).
//
// A zone-less time that the zone skips (clocks go forward) or repeats (clocks go back) names no
// single instant: rule then says so, naming the zone and, when the column names none, that it is
// the server's, and the value is not guessed (time.Date's pick for such times is unspecified,
// and ClickHouse's own differs).
func (c civil) unix(z zoneRange) (secs int64, rule string) {
	loc := z.loc
	wall := daysFromCivil(c.year, c.month, c.day)*86400 + int64(c.hour*3600+c.minute*60+c.second)
	switch {
	case c.hasZone:
		return wall - int64(c.offset), ""
	case loc == time.UTC:
		return wall, ""
	}
	offsetAt := func(u int64) int64 {
		_, off := time.Unix(u, 0).In(loc).Zone()
		return int64(off)
	}
	// The offsets in force around the wall time; each gives a candidate instant, valid when
	// that offset is in force at it.
	var found []int64
	for _, probe := range [...]int64{wall - 36*3600, wall, wall + 36*3600} {
		cand := wall - offsetAt(probe)
		if offsetAt(cand) == wall-cand && !slices.Contains(found, cand) {
			found = append(found, cand)
		}
	}
	where := "time zone " + loc.String()
	if z.ofServer {
		where = "the server's time zone, " + loc.String() + ", which the column takes as it names none"
	}
	switch len(found) {
	case 1:
		return found[0], ""
	case 0:
		return 0, fmt.Sprintf("does not exist in %s (its clocks skip that time); give a UTC offset", where)
	default:
		return 0, fmt.Sprintf("occurs twice in %s (its clocks go back); give a UTC offset", where)
	}
}

// dateEncoder reads ISO-8601 strings into Date; epochDateEncoder (datetime64.go) is the encoder
// of the type, which also takes numbers and epoch strings.
type dateEncoder struct{}

// encodeISO encodes s, the content of the string v, as an ISO-8601 date.
func (dateEncoder) encodeISO(dst []byte, v value, s []byte) ([]byte, error) {
	t, ok, why := parseISO(s)
	switch {
	case !ok:
		return dst, errValue(v, isoRule(why, "is not an ISO-8601 date (YYYY-MM-DD)"))
	case t.hasTime && (t.hour != 0 || t.minute != 0 || t.second != 0 || t.nanos != 0 || t.offset != 0):
		return dst, errValue(v, "has a time of day other than midnight UTC; a Date column takes a date (YYYY-MM-DD), and cutting the time away would change the value")
	}
	days := daysFromCivil(t.year, t.month, t.day)
	if days < 0 || days > maxDateDays {
		return dst, errValue(v, "is out of range for Date (1970-01-01 to 2149-06-06)")
	}
	return binary.LittleEndian.AppendUint16(dst, uint16(days)), nil
}

// dateTimeEncoder reads ISO-8601 strings into DateTime; epochDateTimeEncoder (datetime64.go) is
// the encoder of the type, which also takes numbers and epoch strings.
type dateTimeEncoder struct {
	zone zoneRange // its zone.loc for values without Z or an offset
}

// secondsLayout writes a date-time to the second, as the range errors do.
const secondsLayout = "2006-01-02 15:04:05"

// zoneRange names a date-time type and the zone its values without Z or an offset are read in,
// for the errors of ISO-8601 values out of its range: a range given in UTC alone reads, beside a
// value of another zone's wall clock, as if that value were inside it ("1970-01-01 00:00:00"
// into DateTime('Asia/Kolkata') is 1969-12-31 18:30:00 UTC).
type zoneRange struct {
	name     string         // the type as the column has it: DateTime('Asia/Kolkata'), DateTime64(3)
	loc      *time.Location // the column's zone, else the server's
	ofServer bool           // loc is the server's: the type names no zone
}

// rule is the error of the ISO-8601 value c, out of the range lo to hi (instants, written with
// loLayout and hiLayout): "is out of range for T (lo to hi UTC)", and, when T's zone is not UTC,
// the range in that zone too; then, when c is not written in UTC, the instant it is, at (known
// false when the zone names no single instant for it).
func (z zoneRange) rule(c civil, at time.Time, known bool, lo, hi time.Time, loLayout, hiLayout string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "is out of range for %s (%s to %s UTC", z.name, lo.UTC().Format(loLayout), hi.UTC().Format(hiLayout))
	where := z.loc.String()
	if z.ofServer {
		where = "the server's time zone"
	}
	if z.loc != time.UTC {
		in := where
		if z.ofServer {
			in += ", " + z.loc.String()
		}
		fmt.Fprintf(&b, ", which is %s to %s in %s", lo.In(z.loc).Format(loLayout), hi.In(z.loc).Format(hiLayout), in)
	}
	b.WriteByte(')')
	switch {
	case !known:
	case !c.hasZone && z.loc != time.UTC:
		fmt.Fprintf(&b, ": read in %s, as it has no Z or offset, it is %s UTC", where, at.UTC().Format(hiLayout))
	case c.hasZone && c.offset != 0:
		fmt.Fprintf(&b, ": it is %s UTC", at.UTC().Format(hiLayout))
	}
	return b.String()
}

// encodeISO encodes s, the content of the string v, as an ISO-8601 date-time.
func (e dateTimeEncoder) encodeISO(dst []byte, v value, s []byte) ([]byte, error) {
	t, ok, why := parseISO(s)
	if !ok {
		return dst, errValue(v, isoRule(why, "is not an ISO-8601 date-time ("+isoLayouts+")"))
	}
	unix, rule := t.unix(e.zone)
	if rule != "" {
		return dst, errValue(v, rule)
	}
	if unix < 0 || unix > maxDateTimeUnix {
		return dst, errValue(v, e.zone.rule(t, time.Unix(unix, 0), true, time.Unix(0, 0), time.Unix(maxDateTimeUnix, 0), secondsLayout, secondsLayout))
	}
	return binary.LittleEndian.AppendUint32(dst, uint32(unix)), nil
}

// isoRule is the error of a text that parseISO refused: why, when the text has an accepted
// layout but names no day or time, else layout, the error of a text of another layout.
func isoRule(why, layout string) string {
	if why != "" {
		return why
	}
	return layout
}
