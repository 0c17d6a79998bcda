package integration_test

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/ch-beam/pubsub-to-clickhouse/internal/chtest"
)

// variantEvidence is one JSON value inserted into a Variant or Dynamic column by the ClickHouse 26
// engine's own JSONEachRow input, and the member type it chose with the value it stored
// ("variantType toString", or "error N").
type variantEvidence struct {
	typ, settings, value, want string
}

// variantEvidences are the evidence docs/conversion.md ("Types refused at start-up") gives for
// refusing Variant and Dynamic: the type the server picks for a JSON value depends on its input
// settings, on the other member types, and for a date even on the current year, and it differs
// from the pipeline's rules for the same value in a column of one type. {year} is the engine's
// current year.
var variantEvidences = []variantEvidence{
	{"Dynamic", "", `42`, "Int64 42"},
	{"Dynamic", "input_format_try_infer_integers=0", `42`, "Float64 42"},
	{"Dynamic", "", `"42"`, "String 42"},
	{"Dynamic", "input_format_json_try_infer_numbers_from_strings=1", `"42"`, "Int64 42"},
	{"Dynamic", "", `"2024-01-01"`, "Date 2024-01-01"},
	{"Dynamic", "input_format_try_infer_dates=0", `"2024-01-01"`, "DateTime 2024-01-01 00:00:00"},
	{"Dynamic", "", `18446744073709551616`, "String 18446744073709551616"},
	{"Dynamic", "", `{"a":1}`, "Tuple(a Int64) (1)"},
	{"Variant(UInt8, String, Array(UInt8))", "", `300`, "String 300"},
	{"Variant(UInt8, String, Array(UInt8))", "input_format_json_read_numbers_as_strings=0", `300`, "error 117"},
	{"Variant(UInt8, String, Array(UInt8))", "", `true`, "UInt8 1"},
	{"Variant(UInt8, String, Array(UInt8))", "", `"42"`, "UInt8 42"},
	{"Variant(Int64, Float64, String, Bool)", "", `0`, "Bool false"},
	{"Variant(Int64, Float64, String, Bool)", "", `42`, "Int64 42"},
	{"Variant(Int64, Float64, String, Bool)", "", `18446744073709551615`, "Float64 18446744073709552000"},
	{"Variant(Int64, UInt64)", "", `18446744073709551615`, "UInt64 18446744073709551615"},
	{"Variant(DateTime64(3, 'UTC'), String)", "", `42`, "DateTime64(3, 'UTC') 1970-01-01 00:00:00.042"},
	{"Variant(DateTime64(3, 'UTC'), String)", "", `"10/03/2024"`, "DateTime64(3, 'UTC') 2024-03-10 00:00:00.000"},
	{"Variant(DateTime64(3, 'UTC'), String)", "", `"1.5"`, "DateTime64(3, 'UTC') {year}-05-01 00:00:00.000"},
}

// engineErrorCode finds the code in the text of the engine's error, "Code: 117. DB::Exception: ...".
var engineErrorCode = regexp.MustCompile(`Code: (\d+)\.`)

// TestVariantEvidenceOnModern inserts each value of variantEvidences through the ClickHouse 26
// engine's INSERT ... FORMAT JSONEachRow and reads back the member type it chose and the value.
func TestVariantEvidenceOnModern(t *testing.T) {
	srv := chtest.StartModern(t)
	year := srv.MustQuery(t, "SELECT toYear(today())")
	var want, got []string
	for i, e := range variantEvidences {
		table := fmt.Sprintf("variant_%d", i)
		srv.MustExec(t, "CREATE TABLE "+table+" (id UInt8, x "+e.typ+") ENGINE = MergeTree ORDER BY id")
		var settings []string
		if e.settings != "" {
			settings = []string{e.settings}
		}
		result := ""
		if _, err := srv.Post("INSERT INTO "+table+" FORMAT JSONEachRow", []byte(`{"id":1,"x":`+e.value+`}`), settings...); err != nil {
			result = err.Error()
			if m := engineErrorCode.FindStringSubmatch(result); m != nil {
				result = "error " + m[1]
			}
		} else {
			which := "variantType(x)"
			if e.typ == "Dynamic" {
				which = "dynamicType(x)"
			}
			result = srv.MustQuery(t, "SELECT concat("+which+", ' ', toString(x)) FROM "+table+" FORMAT TabSeparatedRaw")
		}
		line := fmt.Sprintf("%s %s, %s:", e.typ, e.settings, e.value)
		want = append(want, line+" "+strings.ReplaceAll(e.want, "{year}", year))
		got = append(got, line+" "+result)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("what JSONEachRow stores (-docs/conversion.md +ClickHouse %s):\n%s", srv.Version, diff)
	}
}
