package integration_test

import (
	"testing"

	"github.com/ch-beam/pubsub-to-clickhouse/internal/chtest"
)

// TestEpochStringsEndToEnd inserts strings of digits into Date and DateTime columns of ClickHouse
// 18.16 and reads them back: "19782" is the same as the number 19782 (days), "1704067200" the same
// as 1704067200 (seconds). Date32 and DateTime64, which 18.16 lacks, are tested at the conversion
// level (transforms/convert/epoch_test.go).
func TestEpochStringsEndToEnd(t *testing.T) {
	srv := chtest.New(t)
	conn := srv.Conn(t)
	const iso = `is not an ISO-8601 date-time (YYYY-MM-DD or YYYY-MM-DD[T ]hh:mm:ss[.fraction][Z|±hh:mm|±hhmm|±hh])`
	runRowsCase(t, srv, conn, "epoch", rowsCase{
		ddl: "CREATE TABLE {table} (id UInt32, d Date DEFAULT toDate('2000-01-01'), t DateTime('UTC') DEFAULT toDateTime(0, 'UTC'), " +
			"k DateTime('Asia/Tokyo') DEFAULT toDateTime(0, 'UTC'), nd Nullable(Date), at Array(DateTime('UTC'))) ENGINE = MergeTree ORDER BY id",
		rows: []string{
			`{"id":1,"d":"19782","t":"1704067200","k":"1704067200","nd":"0","at":["0","4294967295"]}`,
			`{"id":2,"d":19782,"t":1704067200,"k":"2024-01-01 09:00:00","nd":null,"at":["1704067200",1704067200]}`,
			`{"id":3,"d":"65535","t":"20240101","k":"2024-01-01T00:00:00Z","nd":"49710","at":[]}`,
			`{"id":4,"d":"2024-02-29","t":"86400","k":"86400"}`,
		},
		want: map[string]string{
			// 18.16 prints day 65535 (2149-06-06) as 1970-01-01: compare numbers there.
			"toUInt16(d)":                    "19782\n19782\n65535\n19782",
			"toString(d) = '2024-02-29'":     "1\n1\n0\n1",
			"t":                              "2024-01-01 00:00:00\n2024-01-01 00:00:00\n1970-08-23 06:15:01\n1970-01-02 00:00:00",
			"toUInt32(t)":                    "1704067200\n1704067200\n20240101\n86400",
			"k":                              "2024-01-01 09:00:00\n2024-01-01 09:00:00\n2024-01-01 09:00:00\n1970-01-02 09:00:00",
			"toUnixTimestamp(k)":             "1704067200\n1704067200\n1704067200\n86400",
			"toUInt16(nd)":                   "0\n\\N\n49710\n\\N",
			"arrayMap(x -> toUInt32(x), at)": "[0,4294967295]\n[1704067200,1704067200]\n[]\n[]",
		},
		bad: map[string]string{
			`{"id":9,"d":"1704067200"}`: `column "d" (Date): "1704067200" is out of range for Date (0 to 65535 days: 1970-01-01 to 2149-06-06)`,
			`{"id":9,"d":"-1"}`:         `column "d" (Date): "-1" is out of range for Date (0 to 65535 days: 1970-01-01 to 2149-06-06)`,
			`{"id":9,"d":"019782"}`:     `column "d" (Date): "019782" is not an ISO-8601 date (YYYY-MM-DD)`,
			`{"id":9,"t":"1704067200000"}`: `column "t" (DateTime('UTC')): "1704067200000" is out of range for DateTime (0 to 4294967295 seconds: 1970-01-01 00:00:00 to 2106-02-07 06:28:15 UTC)` +
				`, and as Unix milliseconds it reads 2024-01-01 00:00:00.000 UTC: send 1704067200, or divide it by 1000 in a JavaScript UDF, javascriptTextTransformGcsPath (milliseconds are never guessed)`,
			`{"id":9,"t":"1704067200.5"}`: `column "t" (DateTime('UTC')): "1704067200.5" ` + iso,
			`{"id":9,"t":" 1704067200"}`:  `column "t" (DateTime('UTC')): " 1704067200" ` + iso,
			`{"id":9,"at":["1e9"]}`:       `column "at" (Array(DateTime('UTC'))): element [0]: "1e9" ` + iso,
		},
	})
	// The server's own reading of a string of ten digits into DateTime (JSONEachRow) is the same
	// count of seconds.
	srv.MustExec(t, `INSERT INTO epoch (id, t) FORMAT JSONEachRow {"id":100,"t":"1704067200"}`)
	if got := srv.MustQuery(t, "SELECT toUInt32(t) FROM epoch WHERE id = 100"); got != "1704067200" {
		t.Errorf("the server read \"1704067200\" into DateTime as %s, want 1704067200", got)
	}
}
