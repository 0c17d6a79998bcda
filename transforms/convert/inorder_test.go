package convert_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/ch-beam/pubsub-to-clickhouse/internal/shared"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/chtype"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/convert"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/schema"
)

// withGroup returns t with two more columns, zz.a and zz.b: a Nested structure, which no payload
// here names. A table with such a group is converted field by field after the scan, one without
// also while scanning (as long as the fields come in table order); both must give the same row,
// but for the two empty arrays at its end, and the same errors.
func withGroup(tb testing.TB, t *schema.Table) *schema.Table {
	out := *t
	out.Columns = append([]schema.Column(nil), t.Columns...)
	for _, name := range []string{"zz.a", "zz.b"} {
		typ, err := chtype.Parse("Array(UInt8)")
		if err != nil {
			tb.Fatal(err)
		}
		out.Columns = append(out.Columns, schema.Column{Name: name, TypeName: "Array(UInt8)", Type: typ})
	}
	return &out
}

// FuzzInOrder checks the converter's two ways through a payload against each other, on the
// tables of the demo events and the Wikipedia edits, and one with names longer than the 16 bytes
// compared as words (keyWords): every payload that does not mention zz gives
// the same row, or the same error, with and without a group in the table (withGroup). Seeded with
// messages of both corpora, the demo events as ClickHouse 18.16 takes them and the shared cases.
func FuzzInOrder(f *testing.F) {
	for _, name := range []string{"demo", "demo_stringified", "wikipedia_edits"} {
		msgs := loadCorpus(f, name).msgs
		for i := 0; i < len(msgs); i += len(msgs) / 50 {
			f.Add(msgs[i])
		}
	}
	for _, c := range shared.Cases(f) {
		f.Add(c.Data())
	}
	f.Add([]byte(`{"a_column_with_a_long_name":"v","x":-1,"another_column_with_a_long_name":2.5}`))
	f.Add([]byte(`{"a_column_with_a_long_name":"v","x":1,"another_column_with_a_long_nam":2.5}`))
	long := table(f, "a_column_with_a_long_name String", "x Int32", "another_column_with_a_long_name Nullable(Float64)")
	type pair struct{ plain, grouped *convert.Converter }
	var pairs []pair
	for _, t := range []*schema.Table{corpusTable(f, "demo"), corpusTable(f, "wikipedia_edits"), long} {
		plain, err := convert.New(t)
		if err != nil {
			f.Fatal(err)
		}
		grouped, err := convert.New(withGroup(f, t))
		if err != nil {
			f.Fatal(err)
		}
		pairs = append(pairs, pair{plain, grouped})
	}
	emptyArrays := []byte{0, 0, 0, 0} // zz.a and zz.b: not DEFAULT, no elements
	f.Fuzz(func(t *testing.T, payload []byte) {
		if bytes.Contains(payload, []byte("zz")) {
			return
		}
		for _, p := range pairs {
			row, err := p.plain.Convert(nil, payload)
			want, wantErr := p.grouped.Convert(nil, payload)
			switch {
			case (err == nil) != (wantErr == nil):
				t.Fatalf("payload %q: error %v, with a group in the table %v", payload, err, wantErr)
			case err != nil && err.Error() != wantErr.Error():
				t.Fatalf("payload %q: error\n%v\nwith a group in the table\n%v", payload, err, wantErr)
			case err != nil:
				var pe *convert.PayloadError
				if !errors.As(err, &pe) && !bytes.Equal(append(row, emptyArrays...), want) {
					t.Fatalf("payload %q: the row before the error is %x, with a group in the table %x", payload, row, want)
				}
			case !bytes.Equal(append(row, emptyArrays...), want):
				t.Fatalf("payload %q: row %x, with a group in the table %x", payload, row, want)
			}
		}
	})
}

// members splits a flat JSON object into its "key":value members, in order.
func members(t *testing.T, msg []byte) []string {
	dec := json.NewDecoder(bytes.NewReader(msg))
	if _, err := dec.Token(); err != nil {
		t.Fatal(err)
	}
	var out []string
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			t.Fatal(err)
		}
		k, _ := json.Marshal(key)
		out = append(out, string(k)+":"+string(v))
	}
	return out
}

// TestFieldOrder checks that the order of a message's fields changes nothing: each corpus message
// with its fields shuffled, with a field given twice, with a value no column takes, gives the row or
// the error of the message in table order with the same change.
func TestFieldOrder(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, name := range []string{"demo", "demo_stringified", "wikipedia_edits"} {
		c := loadCorpus(t, name)
		conv, err := convert.New(c.table)
		if err != nil {
			t.Fatal(err)
		}
		convertOf := func(fields []string) string {
			row, err := conv.Convert(nil, []byte("{"+strings.Join(fields, ",")+"}"))
			if err != nil {
				return "error: " + err.Error()
			}
			return string(row)
		}
		for i := 0; i < len(c.msgs); i += 97 {
			fields := members(t, c.msgs[i])
			variants := [][]string{fields}
			k := r.IntN(len(fields))
			twice := append(append([]string(nil), fields...), fields[k])                 // a field given twice
			bad := append([]string(nil), fields...)                                      // a value its column does not take
			bad[k] = bad[k][:strings.IndexByte(bad[k], ':')+1] + `{"not":["a","value"]}` // unless the column is a String
			variants = append(variants, twice, bad)
			for _, in := range variants {
				want := convertOf(in)
				for range 3 {
					shuffled := append([]string(nil), in...)
					r.Shuffle(len(shuffled), func(a, b int) { shuffled[a], shuffled[b] = shuffled[b], shuffled[a] })
					if got := convertOf(shuffled); got != want {
						t.Fatalf("%s message %d with the fields in the order\n%s\ngives\n%q\nand in table order\n%q", name, i, strings.Join(shuffled, ","), got, want)
					}
				}
			}
		}
	}
}
