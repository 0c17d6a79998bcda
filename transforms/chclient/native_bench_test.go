package chclient

import (
	"encoding/binary"
	"fmt"
	"testing"

	chcolumn "github.com/ClickHouse/clickhouse-go/v2/lib/column"
)

// BenchmarkReadNative measures a String or Nullable(String) column of 5,000 rows reaching the
// driver's column: "ReadNative" as Insert does, "Decode" the driver's own Decode of the same
// Native bytes, after reserveStrings, through the pooled reader (for a Nullable(String), the same
// path: ReadNative takes it). The Nullable(String) columns are NULL for nine rows in ten (the
// Wikipedia edits' geo fields) or for one in ten. ns/op is per row. Handing a Nullable(String)
// column to the driver as Go strings (a []*string, nil for NULL) was measured with it on
// 2026-12-04, at 1.6 to 1.9 times the Decode's time, and left out. For a String column the two
// read about the same here, but on the demo's batches (BenchmarkBlockToDriver in transforms/write)
// the driver's Decode of every String column took 8-10% longer than ReadNative's Go strings.
func BenchmarkReadNative(b *testing.B) {
	const rows = 5000
	for _, tc := range []struct {
		typ       string
		nullEvery int // a NULL every that many rows; 1: all but every tenth
		size      int // the values' length in bytes, about
	}{{"String", 0, 10}, {"String", 0, 100}, {"Nullable(String)", 1, 10}, {"Nullable(String)", 10, 10}} {
		var head, values []byte
		for i := range rows {
			null := tc.nullEvery == 1 && i%10 != 0 || tc.nullEvery > 1 && i%tc.nullEvery == 0
			v := fmt.Sprintf("Città %0*d", tc.size-6, i)
			if null {
				v = ""
			}
			if tc.typ != "String" {
				head = append(head, 0)
				if null {
					head[i] = 1
				}
			}
			values = binary.AppendUvarint(values, uint64(len(v)))
			values = append(values, v...)
		}
		n := Native{Head: head, Values: values, Rows: rows, Type: tc.typ}
		newColumn := func() chcolumn.Interface {
			col, err := chcolumn.Type(n.Type).Column("c", &chcolumn.ServerContext{})
			if err != nil {
				b.Fatal(err)
			}
			return col
		}
		name := fmt.Sprintf("%s/null-every-%d/%d-bytes", tc.typ, tc.nullEvery, tc.size)
		b.Run(name+"/ReadNative", func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i += rows {
				if err := ReadNative(newColumn(), n); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(name+"/Decode", func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i += rows {
				col := newColumn()
				reserveStrings(col, n.Values)
				r := nativeReaders.Get().(*nativeReader)
				r.src.parts = [2][]byte{n.Head, n.Values}
				if err := col.Decode(r.Reader, n.Rows); err != nil {
					b.Fatal(err)
				}
				nativeReaders.Put(r)
			}
		})
	}
}
