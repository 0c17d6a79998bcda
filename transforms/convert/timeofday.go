package convert

import (
	"encoding/binary"
	"fmt"
	"strconv"
	"time"

	"github.com/ch-beam/pubsub-to-clickhouse/transforms/chtype"
)

// Time, Time64(P) (ClickHouse 25.6 and later): a time of day or a duration, without a date.
//
// Accepted: a JSON string [-]h:mm:ss[.fraction], with 1 to 3 digits of hours (0 to 999) and
// minutes and seconds 0 to 59 ("12:34:56", "-1:02:03.5", "999:59:59"); or a JSON number of
// seconds (3723 is 01:02:03), as ClickHouse reads a number into these types. Time takes whole
// seconds; Time64(P) keeps P fractional digits and cuts further digits (towards zero: the digits of
// the text are cut, whatever the sign).
// Range (ClickHouse docs, "Time", "Time64"): -999:59:59 to 999:59:59, with up to P fractional
// digits for Time64. Errors: a fraction into Time (the text "…:56.5" or the number 0.5: cutting it
// would change the value, unlike DateTime's ISO fractions the type has no date to anchor it), values
// out of range, minutes or seconds above 59, other layouts and JSON values.
//
// RowBinary: Time as a little-endian Int32 of seconds; Time64(P) as a little-endian Int64 of
// 10^-P second ticks.

const maxTimeSeconds = 999*3600 + 59*60 + 59

type timeEncoder struct {
	name      string
	precision int  // fractional digits kept
	is64      bool // Time64
}

// newTime64Encoder reads the precision of Time64(P); Time has no parameters (timeEncoder{name: "Time"}).
func newTime64Encoder(t *chtype.Type) (scalar, error) {
	if len(t.Args) != 1 {
		return nil, fmt.Errorf("%s: expected Time64(P)", t)
	}
	p, err := strconv.Atoi(t.Args[0])
	if err != nil || p < 0 || p > 9 {
		return nil, fmt.Errorf("%s: the precision must be 0 to 9", t)
	}
	return timeEncoder{name: t.String(), precision: p, is64: true}, nil
}

func (e timeEncoder) rangeRule() string {
	return fmt.Sprintf("is out of range for %s (-999:59:59 to 999:59:59)", e.name)
}

func (e timeEncoder) encode(dst []byte, v value, c *Converter) ([]byte, error) {
	var neg bool
	var secs, nanos int64 // magnitude
	cut := false          // non-zero digits beyond nanoseconds
	switch v.kind {
	case kindString:
		s, err := c.text(v)
		if err != nil {
			return dst, errValue(v, err.Error())
		}
		var ok bool
		if neg, secs, nanos, cut, ok = parseTimeOfDay(s); !ok {
			return dst, errValue(v, fmt.Sprintf("is not a time; %s takes [-]h:mm:ss[.fraction] (hours 0 to 999, minutes and seconds 00 to 59) or a number of seconds", e.name))
		}
	case kindNumber:
		var buf [64]byte
		n := parseExact(v.raw, buf[:0])
		neg = n.neg
		if len(n.digits)+n.exp > 7 {
			return dst, errValue(v, e.rangeRule())
		}
		for k, d := range n.digits {
			switch pos := len(n.digits) - 1 - k + n.exp; {
			case pos >= 0:
				secs += int64(d-'0') * pow10[pos]
			case pos >= -9:
				nanos += int64(d-'0') * pow10[9+pos]
			default:
				cut = true
			}
		}
	default:
		return dst, errValue(v, fmt.Sprintf("is %s; %s takes a string [-]h:mm:ss[.fraction] or a number of seconds", v.kind, e.name))
	}
	if secs > maxTimeSeconds {
		return dst, errValue(v, e.rangeRule())
	}
	if !e.is64 {
		if nanos != 0 || cut {
			return dst, errValue(v, "has a fraction of a second; Time holds whole seconds, and cutting it would change the value (use Time64)")
		}
		if neg {
			secs = -secs
		}
		return binary.LittleEndian.AppendUint32(dst, uint32(int32(secs))), nil
	}
	ticks := secs*pow10[e.precision] + nanos/pow10[9-e.precision]
	if neg {
		ticks = -ticks
	}
	return binary.LittleEndian.AppendUint64(dst, uint64(ticks)), nil
}

// parseTimeOfDay reads [-]h:mm:ss[.fraction] with 1 to 3 digits of hours.
func parseTimeOfDay(s []byte) (neg bool, secs, nanos int64, cut, ok bool) {
	i := 0
	if len(s) > 0 && s[0] == '-' {
		neg = true
		i++
	}
	h := int64(0)
	start := i
	for i < len(s) && s[i] >= '0' && s[i] <= '9' && i-start < 3 {
		h = h*10 + int64(s[i]-'0')
		i++
	}
	if i == start || i+6 > len(s) || s[i] != ':' || s[i+3] != ':' {
		return
	}
	two := func(b []byte) (int64, bool) {
		if b[0] < '0' || b[0] > '5' || b[1] < '0' || b[1] > '9' {
			return 0, false
		}
		return int64(b[0]-'0')*10 + int64(b[1]-'0'), true
	}
	m, ok1 := two(s[i+1 : i+3])
	sec, ok2 := two(s[i+4 : i+6])
	if !ok1 || !ok2 {
		return
	}
	secs = h*3600 + m*60 + sec
	i += 6
	if i < len(s) {
		if s[i] != '.' || i+1 == len(s) {
			return
		}
		for k, ch := range s[i+1:] {
			if ch < '0' || ch > '9' {
				return
			}
			if k < 9 {
				nanos += int64(ch-'0') * pow10[8-k]
			} else if ch != '0' {
				cut = true
			}
		}
	}
	return neg, secs, nanos, cut, true
}

func (e timeEncoder) size() int {
	if e.is64 {
		return 8
	}
	return 4
}

// column decodes seconds (Time) or 10^-P second ticks (Time64(P)) into []time.Duration.
func (e timeEncoder) column(wrap shape) Column {
	if !e.is64 {
		return fixedColumn(wrap, 4, func(b []byte) time.Duration {
			return time.Duration(int32(binary.LittleEndian.Uint32(b))) * time.Second
		})
	}
	unit := pow10[9-e.precision]
	return fixedColumn(wrap, 8, func(b []byte) time.Duration {
		return time.Duration(int64(binary.LittleEndian.Uint64(b)) * unit)
	})
}
