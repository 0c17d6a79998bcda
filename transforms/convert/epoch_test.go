package convert_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/ch-beam/pubsub-to-clickhouse/transforms/convert"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// exactCase is a conversion whose error, when it fails, is compared in full.
type exactCase struct {
	name    string
	columns []string
	payload string
	want    []any  // decoded values, one per writable column, when it converts
	wantErr string // the whole error text; "" when the payload converts
}

func runExact(t *testing.T, cases []exactCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := convertRow(t, table(t, tc.columns...), tc.payload)
			gotErr := ""
			if err != nil {
				gotErr = err.Error()
			}
			if diff := cmp.Diff(tc.wantErr, gotErr); diff != "" {
				t.Fatalf("payload %s: error (-want +got):\n%s", tc.payload, diff)
			}
			if err != nil {
				return
			}
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateNaNs(), valueComparers); diff != "" {
				t.Errorf("payload %s (-want +got):\n%s", tc.payload, diff)
			}
		})
	}
}

const (
	isoDateTimeRule = `is not an ISO-8601 date-time (YYYY-MM-DD or YYYY-MM-DD[T ]hh:mm:ss[.fraction][Z|±hh:mm|±hhmm|±hh])`
	dateRange       = `is out of range for Date (0 to 65535 days: 1970-01-01 to 2149-06-06)`
	dateTimeRange   = `is out of range for DateTime (0 to 4294967295 seconds: 1970-01-01 00:00:00 to 2106-02-07 06:28:15 UTC)`
	// asMillis is what follows dateTimeRange for a number that fits a DateTime as milliseconds,
	// after "it reads " and the instant.
	asMillis = ` UTC: send %d, or divide it by 1000 in a JavaScript UDF, javascriptTextTransformGcsPath (milliseconds are never guessed)`
)

// TestEpochStrings: a JSON string that holds exactly the text of a JSON integer (for DateTime64
// also with a fraction) means what that number means in Date, Date32, DateTime and DateTime64;
// every other string keeps the ISO-8601 rules and their errors.
func TestEpochStrings(t *testing.T) {
	runExact(t, []exactCase{
		// Accepted: the meaning of the same JSON number.
		{"Date: days", []string{"a Date", "b Date", "c Date", "d Date"}, `{"a":"19782","b":"0","c":"65535","d":"-0"}`,
			[]any{utc("2024-02-29 00:00:00"), utc("1970-01-01 00:00:00"), utc("2149-06-06 00:00:00"), utc("1970-01-01 00:00:00")}, ""},
		{"Date: escaped digits are digits", []string{"a Date"}, `{"a":"\u0031\u0039\u0037\u0038\u0032"}`, []any{utc("2024-02-29 00:00:00")}, ""},
		{"Date32: negative days", []string{"a Date32", "b Date32", "c Date32", "d Date32"}, `{"a":"-1","b":"-25567","c":"120529","d":"0"}`,
			[]any{utc("1969-12-31 00:00:00"), utc("1900-01-01 00:00:00"), utc("2299-12-31 00:00:00"), utc("1970-01-01 00:00:00")}, ""},
		{"DateTime: seconds, whatever the column's zone", []string{"a DateTime('UTC')", "b DateTime('Asia/Tokyo')", "c DateTime", "d DateTime('UTC')"},
			`{"a":"1704067200","b":"1704067200","c":"0","d":"4294967295"}`,
			[]any{utc("2024-01-01 00:00:00"), utc("2024-01-01 00:00:00"), utc("1970-01-01 00:00:00"), utc("2106-02-07 06:28:15")}, ""},
		{"DateTime: eight digits are seconds, not YYYYMMDD", []string{"a DateTime('UTC')"}, `{"a":"20240101"}`, []any{utc("1970-08-23 06:15:01")}, ""},
		{"DateTime64: seconds with a fraction, cut to P digits", []string{"a DateTime64(3, 'UTC')", "b DateTime64(3, 'UTC')", "c DateTime64(9, 'UTC')", "d DateTime64(0, 'UTC')", "e DateTime64(1, 'UTC')"},
			`{"a":"1704067200.123","b":"1704067200.123456","c":"1704067200","d":"-1.5","e":"0.19"}`,
			[]any{utcNano("2024-01-01 00:00:00.123"), utcNano("2024-01-01 00:00:00.123"), utc("2024-01-01 00:00:00"), utc("1969-12-31 23:59:58"), utcNano("1970-01-01 00:00:00.1")}, ""},
		{"DateTime64: range edges", []string{"a DateTime64(3, 'UTC')", "b DateTime64(9, 'UTC')", "c DateTime64(0, 'UTC')"},
			`{"a":"-2208988800","b":"9223372036.854775807","c":"-0.5"}`,
			[]any{utc("1900-01-01 00:00:00"), utcNano("2262-04-11 23:47:16.854775807"), utc("1969-12-31 23:59:59")}, ""},
		{"in Nullable, Array, Tuple and as a Map key", []string{"a Nullable(Date)", "b Array(DateTime('UTC'))", "c Tuple(Date, DateTime('UTC'))", "m Map(Date, Int8)"},
			`{"a":"19782","b":["0","1704067200",1704067200],"c":["19782","1704067200"],"m":{"19782":1}}`,
			[]any{ptr(utc("2024-02-29 00:00:00")), []time.Time{utc("1970-01-01 00:00:00"), utc("2024-01-01 00:00:00"), utc("2024-01-01 00:00:00")},
				[]any{utc("2024-02-29 00:00:00"), utc("2024-01-01 00:00:00")}, &convert.Map{Keys: []any{utc("2024-02-29 00:00:00")}, Values: []any{int8(1)}}}, ""},
		{"ISO strings are unchanged", []string{"a Date", "b DateTime('UTC')", "c Date32", "d DateTime64(3, 'UTC')"},
			`{"a":"2024-02-29","b":"2024-01-01T00:00:00Z","c":"1900-01-01","d":"2024-01-01 00:00:00.5"}`,
			[]any{utc("2024-02-29 00:00:00"), utc("2024-01-01 00:00:00"), utc("1900-01-01 00:00:00"), utcNano("2024-01-01 00:00:00.5")}, ""},

		// Epoch strings out of range: the number's errors, quoting the string.
		{"Date: seconds are not guessed", []string{"a Date"}, `{"a":"1704067200"}`, nil, `column "a" (Date): "1704067200" ` + dateRange},
		{"Date: negative", []string{"a Date"}, `{"a":"-1"}`, nil, `column "a" (Date): "-1" ` + dateRange},
		{"Date: beyond int64", []string{"a Date"}, `{"a":"99999999999999999999"}`, nil, `column "a" (Date): "99999999999999999999" ` + dateRange},
		{"Date32: before 1900", []string{"a Date32"}, `{"a":"-25568"}`, nil, `column "a" (Date32): "-25568" is out of range for Date32 (1900-01-01 to 2299-12-31)`},
		{"Date32: beyond int64", []string{"a Date32"}, `{"a":"-99999999999999999999"}`, nil, `column "a" (Date32): "-99999999999999999999" is out of range for Date32 (1900-01-01 to 2299-12-31)`},
		{"DateTime: milliseconds are not guessed", []string{"a DateTime('UTC')"}, `{"a":"1704067200000"}`, nil, `column "a" (DateTime('UTC')): "1704067200000" ` + dateTimeRange +
			`, and as Unix milliseconds it reads 2024-01-01 00:00:00.000` + fmt.Sprintf(asMillis, 1704067200)},
		// The hint's edges: the last millisecond a DateTime holds, and one beyond it.
		{"DateTime: the last millisecond", []string{"a DateTime('UTC')"}, `{"a":4294967295999}`, nil, `column "a" (DateTime('UTC')): 4294967295999 ` + dateTimeRange +
			`, and as Unix milliseconds it reads 2106-02-07 06:28:15.999` + fmt.Sprintf(asMillis, 4294967295)},
		{"DateTime: beyond it as milliseconds too", []string{"a DateTime('UTC')"}, `{"a":4294967296000}`, nil, `column "a" (DateTime('UTC')): 4294967296000 ` + dateTimeRange},
		{"DateTime: beyond 2106", []string{"a DateTime('UTC')"}, `{"a":"4294967296"}`, nil, `column "a" (DateTime('UTC')): "4294967296" ` + dateTimeRange},
		{"DateTime: before 1970", []string{"a DateTime('UTC')"}, `{"a":"-1"}`, nil, `column "a" (DateTime('UTC')): "-1" ` + dateTimeRange},
		{"DateTime64: before 1900", []string{"a DateTime64(3, 'UTC')"}, `{"a":"-2208988801"}`, nil,
			`column "a" (DateTime64(3, 'UTC')): "-2208988801" is out of range for DateTime64(3, 'UTC') (1900-01-01 00:00:00 to 2262-04-11 23:47:16.854 UTC)`},
		{"DateTime64: after 2262", []string{"a DateTime64(9, 'UTC')"}, `{"a":"9223372036.854775808"}`, nil,
			`column "a" (DateTime64(9, 'UTC')): "9223372036.854775808" is out of range for DateTime64(9, 'UTC') (1900-01-01 00:00:00 to 2262-04-11 23:47:16.854775807 UTC)`},
		// Milliseconds, as ClickHouse 26's JSONEachRow reads a number into DateTime64(3), are said,
		// as for DateTime, with the seconds to send; not guessed. For every P, as a number and as
		// an epoch string; the hint's edges: the last millisecond a DateTime64 holds, and one beyond.
		{"DateTime64(3): milliseconds are not guessed", []string{"a DateTime64(3, 'UTC')"}, `{"a":1710072000123}`, nil,
			`column "a" (DateTime64(3, 'UTC')): 1710072000123 is out of range for DateTime64(3, 'UTC') (1900-01-01 00:00:00 to 2262-04-11 23:47:16.854 UTC)` +
				`, and as Unix milliseconds it reads 2024-03-10 12:00:00.123 UTC: send 1710072000.123, or divide it by 1000 in a JavaScript UDF, javascriptTextTransformGcsPath (milliseconds are never guessed)`},
		{"DateTime64(9): milliseconds as an epoch string", []string{"a DateTime64(9, 'UTC')"}, `{"a":"1710072000005"}`, nil,
			`column "a" (DateTime64(9, 'UTC')): "1710072000005" is out of range for DateTime64(9, 'UTC') (1900-01-01 00:00:00 to 2262-04-11 23:47:16.854775807 UTC)` +
				`, and as Unix milliseconds it reads 2024-03-10 12:00:00.005 UTC: send 1710072000.005, or divide it by 1000 in a JavaScript UDF, javascriptTextTransformGcsPath (milliseconds are never guessed)`},
		{"DateTime64(0): the last millisecond", []string{"a DateTime64(0, 'UTC')"}, `{"a":9223372036854}`, nil,
			`column "a" (DateTime64(0, 'UTC')): 9223372036854 is out of range for DateTime64(0, 'UTC') (1900-01-01 00:00:00 to 2262-04-11 23:47:16 UTC)` +
				`, and as Unix milliseconds it reads 2262-04-11 23:47:16.854 UTC: send 9223372036.854, or divide it by 1000 in a JavaScript UDF, javascriptTextTransformGcsPath (milliseconds are never guessed)`},
		{"DateTime64(3): beyond it as milliseconds too", []string{"a DateTime64(3, 'UTC')"}, `{"a":9223372036855}`, nil,
			`column "a" (DateTime64(3, 'UTC')): 9223372036855 is out of range for DateTime64(3, 'UTC') (1900-01-01 00:00:00 to 2262-04-11 23:47:16.854 UTC)`},
		{"DateTime64(3): a fraction is no millisecond count", []string{"a DateTime64(3, 'UTC')"}, `{"a":1710072000123.5}`, nil,
			`column "a" (DateTime64(3, 'UTC')): 1710072000123.5 is out of range for DateTime64(3, 'UTC') (1900-01-01 00:00:00 to 2262-04-11 23:47:16.854 UTC)`},

		// Not epoch strings: the ISO-8601 rules and their errors, as before.
		{"Date: a fraction", []string{"a Date"}, `{"a":"1.5"}`, nil, `column "a" (Date): "1.5" is not an ISO-8601 date (YYYY-MM-DD)`},
		{"Date: a leading zero", []string{"a Date"}, `{"a":"019782"}`, nil, `column "a" (Date): "019782" is not an ISO-8601 date (YYYY-MM-DD)`},
		{"Date: a plus sign", []string{"a Date"}, `{"a":"+19782"}`, nil, `column "a" (Date): "+19782" is not an ISO-8601 date (YYYY-MM-DD)`},
		{"Date: a leading space", []string{"a Date"}, `{"a":" 19782"}`, nil, `column "a" (Date): " 19782" is not an ISO-8601 date (YYYY-MM-DD)`},
		{"Date: a trailing space", []string{"a Date"}, `{"a":"19782 "}`, nil, `column "a" (Date): "19782 " is not an ISO-8601 date (YYYY-MM-DD)`},
		{"Date: an exponent", []string{"a Date"}, `{"a":"1e3"}`, nil, `column "a" (Date): "1e3" is not an ISO-8601 date (YYYY-MM-DD)`},
		{"Date: empty", []string{"a Date"}, `{"a":""}`, nil, `column "a" (Date): "" is not an ISO-8601 date (YYYY-MM-DD)`},
		{"Date: a minus alone", []string{"a Date"}, `{"a":"-"}`, nil, `column "a" (Date): "-" is not an ISO-8601 date (YYYY-MM-DD)`},
		{"Date: two minus signs", []string{"a Date"}, `{"a":"--1"}`, nil, `column "a" (Date): "--1" is not an ISO-8601 date (YYYY-MM-DD)`},
		{"Date: Arabic-Indic digits", []string{"a Date"}, `{"a":"١٩٧٨٢"}`, nil, `column "a" (Date): "١٩٧٨٢" is not an ISO-8601 date (YYYY-MM-DD)`},
		{"Date: full-width digits", []string{"a Date"}, `{"a":"１９７８２"}`, nil, `column "a" (Date): "１９７８２" is not an ISO-8601 date (YYYY-MM-DD)`},
		{"Date: hexadecimal", []string{"a Date"}, `{"a":"0x4d46"}`, nil, `column "a" (Date): "0x4d46" is not an ISO-8601 date (YYYY-MM-DD)`},
		{"Date: a lone surrogate", []string{"a Date"}, `{"a":"\ud800"}`, nil, `column "a" (Date): "\ud800" holds \uD800, a lone UTF-16 surrogate that has no UTF-8 form`},
		{"Date32: a fraction", []string{"a Date32"}, `{"a":"-1.5"}`, nil, `column "a" (Date32): "-1.5" is not an ISO-8601 date (YYYY-MM-DD)`},
		{"Date32: a leading zero", []string{"a Date32"}, `{"a":"-01"}`, nil, `column "a" (Date32): "-01" is not an ISO-8601 date (YYYY-MM-DD)`},
		{"DateTime: a fraction", []string{"a DateTime('UTC')"}, `{"a":"1704067200.5"}`, nil, `column "a" (DateTime('UTC')): "1704067200.5" ` + isoDateTimeRule},
		{"DateTime: a whole fraction", []string{"a DateTime('UTC')"}, `{"a":"1704067200.0"}`, nil, `column "a" (DateTime('UTC')): "1704067200.0" ` + isoDateTimeRule},
		{"DateTime: leading zeros", []string{"a DateTime('UTC')"}, `{"a":"01704067200"}`, nil, `column "a" (DateTime('UTC')): "01704067200" ` + isoDateTimeRule},
		{"DateTime: an exponent", []string{"a DateTime('UTC')"}, `{"a":"1.7040672e9"}`, nil, `column "a" (DateTime('UTC')): "1.7040672e9" ` + isoDateTimeRule},
		{"DateTime: a leading space", []string{"a DateTime('UTC')"}, `{"a":" 1704067200"}`, nil, `column "a" (DateTime('UTC')): " 1704067200" ` + isoDateTimeRule},
		{"DateTime: a trailing newline", []string{"a DateTime('UTC')"}, `{"a":"1704067200\n"}`, nil, `column "a" (DateTime('UTC')): "1704067200\n" ` + isoDateTimeRule},
		{"DateTime: a plus sign", []string{"a DateTime('UTC')"}, `{"a":"+1704067200"}`, nil, `column "a" (DateTime('UTC')): "+1704067200" ` + isoDateTimeRule},
		{"DateTime: a zone letter", []string{"a DateTime('UTC')"}, `{"a":"1704067200Z"}`, nil, `column "a" (DateTime('UTC')): "1704067200Z" ` + isoDateTimeRule},
		{"DateTime: digit groups", []string{"a DateTime('UTC')"}, `{"a":"1,704,067,200"}`, nil, `column "a" (DateTime('UTC')): "1,704,067,200" ` + isoDateTimeRule},
		{"DateTime64: a point without digits", []string{"a DateTime64(3, 'UTC')"}, `{"a":"1704067200."}`, nil, `column "a" (DateTime64(3, 'UTC')): "1704067200." ` + isoDateTimeRule},
		{"DateTime64: a fraction alone", []string{"a DateTime64(3, 'UTC')"}, `{"a":".5"}`, nil, `column "a" (DateTime64(3, 'UTC')): ".5" ` + isoDateTimeRule},
		{"DateTime64: leading zeros", []string{"a DateTime64(3, 'UTC')"}, `{"a":"00.5"}`, nil, `column "a" (DateTime64(3, 'UTC')): "00.5" ` + isoDateTimeRule},
		{"DateTime64: an exponent", []string{"a DateTime64(3, 'UTC')"}, `{"a":"1.7e9"}`, nil, `column "a" (DateTime64(3, 'UTC')): "1.7e9" ` + isoDateTimeRule},
		{"DateTime64: a comma for the point", []string{"a DateTime64(3, 'UTC')"}, `{"a":"1704067200,5"}`, nil, `column "a" (DateTime64(3, 'UTC')): "1704067200,5" ` + isoDateTimeRule},
		{"DateTime64: a space", []string{"a DateTime64(3, 'UTC')"}, `{"a":"1704067200 .5"}`, nil, `column "a" (DateTime64(3, 'UTC')): "1704067200 .5" ` + isoDateTimeRule},
		{"in an Array the element's path is named", []string{"a Array(DateTime('UTC'))"}, `{"a":["0","-5"]}`, nil, `column "a" (Array(DateTime('UTC'))): element [1]: "-5" ` + dateTimeRange},
	})
}

// TestImpossibleDateTimesNamed: a text of an accepted ISO-8601 layout whose day, hour, minute,
// second or offset is no calendar or clock value is a dead letter whose error names the part and
// the rule it breaks, rather than saying the text is not in the layout it is in; a text of
// another layout keeps the layout's error, even when its day is impossible too.
func TestImpossibleDateTimesNamed(t *testing.T) {
	runExact(t, []exactCase{
		{"February 29 of a year that is no leap year", []string{"a DateTime('UTC')"}, `{"a":"2100-02-29 12:00:00"}`, nil,
			`column "a" (DateTime('UTC')): "2100-02-29 12:00:00" has day 29 in February 2100, which has 28 days (2100 is not a leap year)`},
		{"February 29 of a leap year is a day", []string{"a DateTime('UTC')", "b Date", "c Date32", "d DateTime64(3, 'UTC')"},
			`{"a":"2000-02-29 12:00:00","b":"2024-02-29","c":"1904-02-29","d":"2024-02-29T00:00:00.5Z"}`,
			[]any{utc("2000-02-29 12:00:00"), utc("2024-02-29 00:00:00"), utc("1904-02-29 00:00:00"), utcNano("2024-02-29 00:00:00.5")}, ""},
		{"day 31 of April", []string{"a Date"}, `{"a":"2024-04-31"}`, nil,
			`column "a" (Date): "2024-04-31" has day 31 in April 2024, which has days 01 to 30`},
		{"day 00", []string{"a Date32"}, `{"a":"2024-01-00"}`, nil,
			`column "a" (Date32): "2024-01-00" has day 00 in January 2024, which has days 01 to 31`},
		{"month 13", []string{"a DateTime64(3, 'UTC')"}, `{"a":"2024-13-01T00:00:00Z"}`, nil,
			`column "a" (DateTime64(3, 'UTC')): "2024-13-01T00:00:00Z" has month 13; months are 01 to 12`},
		{"minute 60", []string{"a DateTime"}, `{"a":"2024-01-01 10:60:00"}`, nil,
			`column "a" (DateTime): "2024-01-01 10:60:00" has minute 60; minutes are 00 to 59`},
		{"second 61", []string{"a DateTime64(0, 'UTC')"}, `{"a":"2024-01-01T10:00:61Z"}`, nil,
			`column "a" (DateTime64(0, 'UTC')): "2024-01-01T10:00:61Z" has second 61; seconds are 00 to 59`},
		{"a leap second into DateTime64", []string{"a DateTime64(3, 'UTC')"}, `{"a":"2016-12-31T23:59:60.5Z"}`, nil,
			`column "a" (DateTime64(3, 'UTC')): "2016-12-31T23:59:60.5Z" has second 60, a leap second, which no ClickHouse date-time holds (seconds are 00 to 59, as in Unix time); it is not moved to a second next to it`},
		{"hour 24 into Date", []string{"a Date"}, `{"a":"2024-01-01T24:00:00Z"}`, nil,
			`column "a" (Date): "2024-01-01T24:00:00Z" has hour 24; hours are 00 to 23 (write the next day's 00:00:00)`},
		{"an offset of 24 hours", []string{"a DateTime('UTC')"}, `{"a":"2024-01-01T10:00:00+24:00"}`, nil,
			`column "a" (DateTime('UTC')): "2024-01-01T10:00:00+24:00" has the UTC offset +24:00; an offset's hours are 00 to 23 and its minutes 00 to 59`},
		{"an offset of 60 minutes", []string{"a DateTime('UTC')"}, `{"a":"2024-01-01T10:00:00-0560"}`, nil,
			`column "a" (DateTime('UTC')): "2024-01-01T10:00:00-0560" has the UTC offset -0560; an offset's hours are 00 to 23 and its minutes 00 to 59`},
		{"the first impossible part is named", []string{"a DateTime('UTC')"}, `{"a":"2023-02-29T24:00:00Z"}`, nil,
			`column "a" (DateTime('UTC')): "2023-02-29T24:00:00Z" has day 29 in February 2023, which has 28 days (2023 is not a leap year)`},
		{"another layout keeps the layout's error", []string{"a DateTime('UTC')", "b Date"}, `{"a":"2023-02-29T12:00","b":"2023-02-30x"}`, nil,
			`column "a" (DateTime('UTC')): "2023-02-29T12:00" ` + isoDateTimeRule + `; column "b" (Date): "2023-02-30x" is not an ISO-8601 date (YYYY-MM-DD)`},
		{"inside an array and a map key", []string{"a Array(Date)", "b Map(DateTime('UTC'), UInt8)"}, `{"a":["2024-02-29","2023-02-29"],"b":{"2024-06-31 00:00:00":1}}`, nil,
			`column "a" (Array(Date)): element [1]: "2023-02-29" has day 29 in February 2023, which has 28 days (2023 is not a leap year); ` +
				`column "b" (Map(DateTime('UTC'), UInt8)): element ["2024-06-31 00:00:00"] (the key): "2024-06-31 00:00:00" has day 31 in June 2024, which has days 01 to 30`},
	})
}
