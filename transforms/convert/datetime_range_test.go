package convert_test

import (
	"testing"

	"github.com/ch-beam/pubsub-to-clickhouse/transforms/convert"
)

// TestDateTimeRangeInZone: an ISO-8601 value out of a DateTime's or DateTime64's range is said
// with the type and its zone (the column's, or the server's), the range in UTC and in that zone,
// and the instant the value is in UTC when it is not written in UTC, so that a wall time of the
// zone ("1970-01-01 00:00:00" in Asia/Kolkata) does not read as inside the range. A column in UTC,
// and a value written in UTC, keep the short form. A time without Z or an offset that the zone
// skips or repeats says the same of its zone (before 2026-12-08, a column without a zone of its
// own named the server's zone as if the column's type did).
func TestDateTimeRangeInZone(t *testing.T) {
	for _, tc := range []struct {
		name, column, server, payload, want string
	}{
		{"the column's zone", "a DateTime('Asia/Kolkata')", "Etc/UTC", `{"a":"1970-01-01 00:00:00"}`,
			`column "a" (DateTime('Asia/Kolkata')): "1970-01-01 00:00:00" is out of range for DateTime('Asia/Kolkata') ` +
				`(1970-01-01 00:00:00 to 2106-02-07 06:28:15 UTC, which is 1970-01-01 05:30:00 to 2106-02-07 11:58:15 in Asia/Kolkata): ` +
				`read in Asia/Kolkata, as it has no Z or offset, it is 1969-12-31 18:30:00 UTC`},
		{"the server's zone", "a DateTime", "Asia/Kolkata", `{"a":"2106-02-07 12:00:00"}`,
			`column "a" (DateTime): "2106-02-07 12:00:00" is out of range for DateTime ` +
				`(1970-01-01 00:00:00 to 2106-02-07 06:28:15 UTC, which is 1970-01-01 05:30:00 to 2106-02-07 11:58:15 in the server's time zone, Asia/Kolkata): ` +
				`read in the server's time zone, as it has no Z or offset, it is 2106-02-07 06:30:00 UTC`},
		{"an offset", "a DateTime('UTC')", "Etc/UTC", `{"a":"1970-01-01T00:00:00+01:00"}`,
			`column "a" (DateTime('UTC')): "1970-01-01T00:00:00+01:00" is out of range for DateTime('UTC') (1970-01-01 00:00:00 to 2106-02-07 06:28:15 UTC): ` +
				`it is 1969-12-31 23:00:00 UTC`},
		{"UTC", "a DateTime('UTC')", "Etc/UTC", `{"a":"2106-02-07T06:28:16Z"}`,
			`column "a" (DateTime('UTC')): "2106-02-07T06:28:16Z" is out of range for DateTime('UTC') (1970-01-01 00:00:00 to 2106-02-07 06:28:15 UTC)`},
		{"UTC, the server's", "a DateTime", "Etc/UTC", `{"a":"1969-12-31 23:59:59"}`,
			`column "a" (DateTime): "1969-12-31 23:59:59" is out of range for DateTime (1970-01-01 00:00:00 to 2106-02-07 06:28:15 UTC)`},
		{"DateTime64 in the server's zone", "a DateTime64(3)", "America/New_York", `{"a":"2262-04-11 20:00:00.5"}`,
			`column "a" (DateTime64(3)): "2262-04-11 20:00:00.5" is out of range for DateTime64(3) ` +
				`(1900-01-01 00:00:00 to 2262-04-11 23:47:16.854 UTC, which is 1899-12-31 19:00:00 to 2262-04-11 19:47:16.854 in the server's time zone, America/New_York): ` +
				`read in the server's time zone, as it has no Z or offset, it is 2262-04-12 00:00:00.500 UTC`},
		{"a number is seconds in every zone", "a DateTime('Asia/Kolkata')", "Etc/UTC", `{"a":-1}`,
			`column "a" (DateTime('Asia/Kolkata')): -1 is out of range for DateTime (0 to 4294967295 seconds: 1970-01-01 00:00:00 to 2106-02-07 06:28:15 UTC)`},
		// A time the zone skips or repeats names the zone; for a column that names none, that it is
		// the server's, which the column takes.
		{"DateTime on the server's zone", "a DateTime", "Europe/Berlin", `{"a":"2024-03-31 02:30:00"}`,
			`column "a" (DateTime): "2024-03-31 02:30:00" does not exist in the server's time zone, Europe/Berlin, which the column takes as it names none (its clocks skip that time); give a UTC offset`},
		{"DateTime64 on the server's zone", "a DateTime64(3)", "America/New_York", `{"a":"2024-11-03 01:30:00.5"}`,
			`column "a" (DateTime64(3)): "2024-11-03 01:30:00.5" occurs twice in the server's time zone, America/New_York, which the column takes as it names none (its clocks go back); give a UTC offset`},
		{"the column's own zone", "a DateTime64(0, 'Asia/Kathmandu')", "Europe/Berlin", `{"a":"1986-01-01 00:10:00"}`,
			`column "a" (DateTime64(0, 'Asia/Kathmandu')): "1986-01-01 00:10:00" does not exist in time zone Asia/Kathmandu (its clocks skip that time); give a UTC offset`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tb := table(t, tc.column)
			tb.ServerTimeZone = tc.server
			c, err := convert.New(tb)
			if err != nil {
				t.Fatal(err)
			}
			_, err = c.Convert(nil, []byte(tc.payload))
			if err == nil || err.Error() != tc.want {
				t.Errorf("error\n%v\nwant\n%s", err, tc.want)
			}
		})
	}
}
