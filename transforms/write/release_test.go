package write

import (
	"runtime"
	"testing"
	"weak"

	"github.com/ch-beam/pubsub-to-clickhouse/transforms/convert"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/schema"
)

type batchBuffer struct{ b [1 << 20]byte }

// TestReleaseDropsBatch checks that release, which ProcessElement defers, leaves the stage with no
// reference to the buffer of the batch's last payload (the converter's values) nor its metadata.
func TestReleaseDropsBatch(t *testing.T) {
	tb := &schema.Table{Database: "db", Name: "t", ServerTimeZone: "Etc/UTC"}
	// A group (n.a, n.b), a metadata column and an unknown-fields column: the converter keeps
	// references into the payload for each.
	for _, c := range [][2]string{{"id", "UInt32"}, {"s", "String"}, {"n.a", "Array(UInt8)"}, {"n.b", "Array(String)"},
		{"mid", "String"}, {"rest", "Map(String, String)"}} {
		tb.Columns = append(tb.Columns, column(t, c[0], c[1], ""))
	}
	meta, err := convert.ParseMetadataColumns("message_id=mid")
	if err != nil {
		t.Fatal(err)
	}
	conv, err := convert.NewWith(tb, convert.Options{Metadata: meta, UnknownFields: "rest"})
	if err != nil {
		t.Fatal(err)
	}
	f := &insertFn{conv: conv}
	w := func() weak.Pointer[batchBuffer] {
		buf := new(batchBuffer)
		p := buf.b[:copy(buf.b[:], `{"id":1,"s":"x","n":[{"a":1,"b":"x"},{"a":2,"b":"y"}],"other":"z"}`)]
		f.meta = convert.Meta{ID: "m", Attributes: map[string]string{"a": "b"}}
		if _, err := f.conv.ConvertChecked(nil, p, &f.meta); err != nil {
			t.Fatal(err)
		}
		return weak.Make(buf)
	}()
	f.release()
	runtime.GC()
	runtime.GC()
	if w.Value() != nil {
		t.Error("after release, the write stage still references the buffer of the batch's last payload")
	}
	if f.meta.Attributes != nil || f.meta.ID != "" {
		t.Error("after release, the write stage still holds the last row's metadata")
	}
}
