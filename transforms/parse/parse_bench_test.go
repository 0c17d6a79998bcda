package parse

import (
	"context"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/metrics"

	"github.com/ch-beam/pubsub-to-clickhouse/internal/events"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/chtype"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/convert"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/flow"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/schema"
)

// eventsTable is events.DDL's schema, without a server.
func eventsTable(b testing.TB) *schema.Table {
	cols := []struct{ name, typ, def string }{
		{"event_id", "String", ""}, {"event_type", "String", ""}, {"user_id", "UInt64", ""},
		{"session_id", "String", ""}, {"seq", "Int64", ""}, {"ts", "DateTime('UTC')", ""},
		{"received_at", "DateTime('UTC')", ""}, {"event_date", "Date", ""}, {"page", "String", ""},
		{"device", "String", ""}, {"geo", "String", ""}, {"tags", "Array(String)", ""},
		{"scores", "Array(Float64)", ""}, {"duration_ms", "UInt32", ""}, {"revenue", "Nullable(Float64)", ""},
		{"is_logged_in", "UInt8", ""}, {"items", "String", ""}, {"experiment", "Nullable(String)", ""},
		{"app_version", "String", ""}, {"source", "String", "DEFAULT"},
	}
	t := &schema.Table{Database: "db", Name: "events", ServerTimeZone: "Etc/UTC"}
	for _, c := range cols {
		ct, err := chtype.Parse(c.typ)
		if err != nil {
			b.Fatal(err)
		}
		t.Columns = append(t.Columns, schema.Column{Name: c.name, TypeName: c.typ, Type: ct, DefaultKind: c.def})
	}
	return t
}

// BenchmarkParseEvents measures the parse DoFn's per-message work (metrics, conversion, the row
// copy) on the realistic event mix of internal/events: 0.3 to 2 KB, 20 columns. MB/s is payload
// bytes; allocs/op is per message.
func BenchmarkParseEvents(b *testing.B) {
	tracker := &convert.Tracker{Stage: "parse"}
	if err := tracker.Set(eventsTable(b)); err != nil {
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
