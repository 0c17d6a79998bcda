package parse

import (
	"context"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/metrics"

	"github.com/ch-beam/pubsub-to-clickhouse/internal/events"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/convert"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/flow"
)

// BenchmarkParseEvents measures the parse DoFn's per-message work (metrics, conversion, the row
// copy) on the realistic event mix of internal/events: 0.3 to 2 KB, 20 columns. MB/s is payload
// bytes; allocs/op is per message.
func BenchmarkParseEvents(b *testing.B) {
	tracker := &convert.Tracker{Stage: "parse"}
	if err := tracker.Set(events.Table()); err != nil {
		b.Fatal(err)
	}
	gen := events.NewGenerator(1, time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC))
	msgs := make([]flow.Message, 4096)
	total := 0
	for i := range msgs {
		_, data := gen.Next()
		msgs[i] = flow.Message{ID: "id", Data: data}
		total += len(data)
	}
	b.SetBytes(int64(total / len(msgs)))
	f := &parseFn{tracker: tracker}
	ctx := metrics.SetBundleID(metrics.SetPTransformID(context.Background(), "parse"), "bundle")
	var rows, failed int
	emitRows := func(_ beam.EventTime, rs flow.Rows) { rows += len(rs.Rows) }
	emitDL := func(flow.DeadLetter) { failed++ }
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := f.ProcessElement(ctx, 0, flow.Messages{Messages: msgs[i%len(msgs) : i%len(msgs)+1]}, emitRows, emitDL); err != nil {
			b.Fatal(err)
		}
	}
	f.FinishBundle(emitRows, emitDL)
	if failed != 0 {
		b.Fatalf("%d of the generated events failed to parse", failed)
	}
}
