package parse

import (
	"context"
	"runtime"
	"testing"
	"weak"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/metrics"

	"github.com/ch-beam/pubsub-to-clickhouse/transforms/convert"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/flow"
)

// pullBuffer stands for the buffer of a Pull response (pubsubio.DecodePullResponse) or of a
// decoded element, which the messages' payloads share.
type pullBuffer struct{ b [1 << 20]byte }

// TestBundleKeepsNoPayload checks that once a bundle has finished, nothing of the parse stage
// still references the buffer its messages' payloads were in: the converter's values of the
// last payload (its fields, group values and array cells, unknown fields) and the message's
// metadata pinned the whole buffer, a Pull response of up to 64 MiB on the local runner, for as
// long as the DoFn lived.
func TestBundleKeepsNoPayload(t *testing.T) {
	tb := tableOf(t, [][2]string{{"id", "UInt32"}, {"s", "String"}, {"n.a", "Array(UInt8)"}, {"n.b", "Array(String)"},
		{"mid", "Nullable(String)"}, {"k", "Nullable(String)"}, {"rest", "Map(String, String)"}})
	meta, err := convert.ParseMetadataColumns("message_id=mid,attribute.k=k")
	if err != nil {
		t.Fatal(err)
	}
	payloads := []string{
		`{"id":1,"s":"a","n":[{"a":1,"b":"x"},{"a":2,"b":"y"}],"other":"kept in rest"}`,
		`{"id":2,"s":"b","n":{"a":[3],"b":["z"]},"extra":{"deep":[1,2]}}`,
		`{"id":-1,"s":"bad","n":[{"a":1000,"b":"x"}]}`, // a dead letter
		`{"id":3,"s":"c","n":[{"a":4,"b":"w"}],"more":"x"}`,
	}
	for _, tc := range []struct {
		name string
		o    convert.Options
	}{{"plain", convert.Options{}}, {"fromMessage", convert.Options{Metadata: meta, UnknownFields: "rest"}}} {
		t.Run(tc.name, func(t *testing.T) {
			tracker := &convert.Tracker{Stage: "parse", Options: tc.o}
			if err := tracker.Set(tb); err != nil {
				t.Fatal(err)
			}
			ctx := metrics.SetBundleID(metrics.SetPTransformID(context.Background(), "parse"), "bundle")
			f := &parseFn{tracker: tracker, Config: Config{FromMessage: tc.o}}
			var g gathered
			w := func() weak.Pointer[pullBuffer] {
				buf := new(pullBuffer)
				ms := flow.Messages{}
				at := 0
				for i, p := range payloads {
					n := copy(buf.b[at:], p)
					ms.Messages = append(ms.Messages, flow.Message{ID: string(rune('a' + i)), Data: buf.b[at : at+n : at+n],
						Attributes: map[string]string{"k": "v"}, AckID: "ack"})
					at += n
				}
				if err := f.ProcessElement(ctx, 1, ms, g.emitRows, g.emitDeadLetter); err != nil {
					t.Fatal(err)
				}
				f.FinishBundle(g.emitRows, g.emitDeadLetter)
				return weak.Make(buf)
			}()
			if len(g.dead) != 1 || len(g.elements) != 1 {
				t.Fatalf("emitted %q, dead letters %q, want one element of three rows and one dead letter", g.elements, g.dead)
			}
			runtime.GC()
			runtime.GC()
			if w.Value() != nil {
				t.Error("after FinishBundle, the parse stage still references the buffer of the bundle's payloads")
			}
			runtime.KeepAlive(f)
		})
	}
}
