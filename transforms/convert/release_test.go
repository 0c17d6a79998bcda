package convert

import (
	"runtime"
	"strings"
	"testing"
	"weak"

	"github.com/ch-beam/pubsub-to-clickhouse/transforms/chtype"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/schema"
)

// payloadBuffer stands for the buffer a payload shares: a Pull response, a decoded element.
type payloadBuffer struct{ b [4 << 20]byte }

// TestReleaseDropsPayload checks that after Release the Converter references nothing of the
// last payload it converted (its fields' values, a group's value and its array cells, the unknown
// fields), nor its metadata, and keeps no scratch buffer grown for a large payload; and that it
// converts as before afterwards.
func TestReleaseDropsPayload(t *testing.T) {
	meta, err := ParseMetadataColumns("message_id=mid")
	if err != nil {
		t.Fatal(err)
	}
	c, err := NewWith(releaseTable(t),
		Options{Metadata: meta, UnknownFields: "rest"})
	if err != nil {
		t.Fatal(err)
	}
	payload := `{"id":1,"s":"` + strings.Repeat(`\n`, maxKeptScratch+1) + `","n":[{"a":1,"b":"x"},{"a":2,"b":"y"}],"other":{"x":[1, 2]}}`
	convertIn := func() (weak.Pointer[payloadBuffer], []byte) {
		buf := new(payloadBuffer)
		p := buf.b[:copy(buf.b[:], payload)]
		row, err := c.ConvertMessage(nil, p, &Meta{ID: "m1"})
		if err != nil {
			t.Fatal(err)
		}
		return weak.Make(buf), row
	}
	w, want := convertIn()
	c.Release()
	runtime.GC()
	runtime.GC()
	if w.Value() != nil {
		t.Error("after Release, the Converter still references the buffer of the last payload")
	}
	if c.meta != nil {
		t.Error("after Release, the Converter still references the last message's metadata")
	}
	if cap(c.scratch) > maxKeptScratch || cap(c.synth) > maxKeptScratch || cap(c.unknownBuf) > maxKeptScratch {
		t.Errorf("after Release, scratch buffers of %d, %d, %d bytes are kept, want at most %d", cap(c.scratch), cap(c.synth), cap(c.unknownBuf), maxKeptScratch)
	}
	if _, got := convertIn(); string(got) != string(want) {
		t.Error("the row converted after Release differs from the one before")
	}
}

func releaseTable(t *testing.T) *schema.Table {
	tb := &schema.Table{Database: "db", Name: "t", ServerTimeZone: "Etc/UTC"}
	for _, c := range [][2]string{{"id", "UInt32"}, {"s", "String"}, {"n.a", "Array(UInt8)"}, {"n.b", "Array(String)"},
		{"mid", "String"}, {"rest", "Map(String, String)"}} {
		ct, err := chtype.Parse(c[1])
		if err != nil {
			t.Fatal(err)
		}
		tb.Columns = append(tb.Columns, schema.Column{Name: c[0], TypeName: c[1], Type: ct})
	}
	return tb
}
