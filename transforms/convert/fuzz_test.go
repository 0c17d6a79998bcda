package convert_test

import (
	"errors"
	"testing"

	"github.com/ch-beam/pubsub-to-clickhouse/internal/shared"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/chtype"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/convert"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/rowbinary"
)

// FuzzConvert feeds arbitrary payloads to a converter over a table of every supported type
// family. Every input must either convert into a row that decodes over the table's columns, or
// fail with a *convert.PayloadError or a *convert.RowError whose every error names a column.
// Seeded with the payloads of ../shared/cases.
func FuzzConvert(f *testing.F) {
	for _, c := range shared.Cases(f) {
		f.Add(c.Data())
	}
	f.Add([]byte(`{"i8":-128,"u64":"18446744073709551615","f32":"NaN","s":{"a":[1, 2]},"d":"2024-02-29","dt":"2024-01-01T00:00:00.5+01:00","a":[[1],[null]],"n":null,"lc":"x"}`))
	tb := table(f, "i8 Int8", "u64 UInt64", "f32 Float32", "f64 Float64", "s String", "d Date",
		"dt DateTime('Asia/Tokyo')", "dts DateTime", "a Array(Array(Nullable(Int16)))", "n Nullable(UInt32)",
		"lc LowCardinality(Nullable(String))", "def String DEFAULT 'x'", "as Array(String)")
	conv, err := convert.New(tb)
	if err != nil {
		f.Fatal(err)
	}
	var types []*chtype.Type
	for _, c := range tb.Writable() {
		types = append(types, c.Type)
	}
	f.Fuzz(func(t *testing.T, payload []byte) {
		row, err := conv.Convert(nil, payload)
		if err == nil {
			if _, err := rowbinary.Split(types, row, nil); err != nil {
				t.Fatalf("payload %q: row %x does not decode: %v", payload, row, err)
			}
			return
		}
		var pe *convert.PayloadError
		var re *convert.RowError
		switch {
		case errors.As(err, &pe):
		case errors.As(err, &re):
			for _, ve := range re.Errs {
				if ve.Column == "" || ve.Rule == "" {
					t.Fatalf("payload %q: error without a column or a rule: %#v", payload, ve)
				}
			}
		default:
			t.Fatalf("payload %q: error of type %T: %v", payload, err, err)
		}
	})
}
