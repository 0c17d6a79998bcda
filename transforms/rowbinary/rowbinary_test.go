package rowbinary

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/ch-beam/pubsub-to-clickhouse/transforms/chtype"
)

func types(t *testing.T, names ...string) []*chtype.Type {
	var out []*chtype.Type
	for _, n := range names {
		ct, err := chtype.Parse(n)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, ct)
	}
	return out
}

func TestSplitAndColumns(t *testing.T) {
	ts := types(t, "Int16", "Nullable(String)", "Array(Nullable(Int8))", "String", "Array(Array(UInt8))", "DateTime")
	row := []byte{
		0, 0xfe, 0xff, // Int16 -2
		0, 0, 2, 'h', 'i', // Nullable(String) "hi"
		0, 2, 1, 0, 7, // Array(Nullable(Int8)) [NULL, 7]
		1,             // String: DEFAULT
		0, 2, 1, 9, 0, // Array(Array(UInt8)) [[9], []]
		0, 0x80, 0, 0, 0x65, // DateTime 0x65000080
	}
	spans, err := Split(ts, row, nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []any
	for i, s := range spans {
		if s == nil {
			got = append(got, "DEFAULT")
			continue
		}
		col, err := NewColumn(ts[i])
		if err != nil {
			t.Fatal(err)
		}
		if err := col.Append(s); err != nil {
			t.Fatalf("column %d: %v", i, err)
		}
		got = append(got, col.Values())
	}
	hi, seven := "hi", int8(7)
	want := []any{[]int16{-2}, []*string{&hi}, [][]*int8{{nil, &seven}}, "DEFAULT", [][][]uint8{{{9}, {}}}, []time.Time{time.Unix(0x65000080, 0).UTC()}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestSplitRejectsCorruptRows(t *testing.T) {
	ts := types(t, "UInt32", "String")
	for name, row := range map[string][]byte{
		"cut short":        {0, 1, 2},
		"bad default flag": {2, 1, 2, 3, 4, 0, 0},
		"string too long":  {0, 1, 2, 3, 4, 0, 5, 'a'},
		"bytes after row":  {0, 1, 2, 3, 4, 1, 9},
		"missing a column": {0, 1, 2, 3, 4},
	} {
		if _, err := Split(ts, row, nil); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: %v, want ErrCorrupt", name, err)
		}
	}
}
