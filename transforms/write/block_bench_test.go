package write

import (
	"testing"
	"time"

	"github.com/ClickHouse/ch-go/proto"
	chcolumn "github.com/ClickHouse/clickhouse-go/v2/lib/column"

	"github.com/ch-beam/pubsub-to-clickhouse/internal/events"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/chclient"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/convert"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/flow"
)

// BenchmarkBlockValues measures the write stage's work on a batch before the driver takes it,
// per row of the demo's events (internal/events, 0.3 to 2 KB, 20 columns): converting the payload
// again, splitting the rows into blocks (Blocks) and building each block's columns as the driver
// takes them (Block.values: the Native format for the demo's every column). MB/s is payload bytes.
func BenchmarkBlockValues(b *testing.B) {
	tracker := &convert.Tracker{Stage: "write"}
	if err := tracker.Set(events.Table()); err != nil {
		b.Fatal(err)
	}
	conv, columns := tracker.Converter(), tracker.Schema().Writable()
	gen := events.NewGenerator(1, time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC))
	const batch = 1000
	rows := make([]flow.Row, batch)
	total := 0
	for i := range rows {
		_, data := gen.Next()
		rows[i] = flow.Row{MessageID: "id", Payload: data}
		total += len(data)
	}
	b.SetBytes(int64(total / batch))
	b.ReportAllocs()
	b.ResetTimer()
	for n := 0; n < b.N; n += batch {
		arena := make([]byte, 0, total) // as insertRows makes it
		batchRows := make([]*Row, batch)
		for i := range rows {
			start := len(arena)
			var err error
			if arena, err = conv.Convert(arena, rows[i].Payload); err != nil {
				b.Fatal(err)
			}
			batchRows[i] = &Row{Row: &rows[i], Data: arena[start:len(arena):len(arena)]}
		}
		blocks, err := Blocks(columns, batchRows, batch)
		if err != nil {
			b.Fatal(err)
		}
		for _, blk := range blocks {
			_, release, err := blk.values(nil)
			if err != nil {
				b.Fatal(err)
			}
			release()
		}
	}
}

// BenchmarkBlockToDriver is BenchmarkBlockValues and then what clickhouse-go does with the
// columns before it compresses them: its column of each type reads them (the Native format) or
// takes them (Go values), and writes the block's columns as it sends them to the server.
func BenchmarkBlockToDriver(b *testing.B) {
	tracker := &convert.Tracker{Stage: "write"}
	if err := tracker.Set(events.Table()); err != nil {
		b.Fatal(err)
	}
	conv, columns := tracker.Converter(), tracker.Schema().Writable()
	gen := events.NewGenerator(1, time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC))
	const batch = 5000
	rows := make([]flow.Row, batch)
	total := 0
	for i := range rows {
		_, data := gen.Next()
		rows[i] = flow.Row{MessageID: "id", Payload: data}
		total += len(data)
	}
	b.SetBytes(int64(total / batch))
	b.ReportAllocs()
	b.ResetTimer()
	var out proto.Buffer
	for n := 0; n < b.N; n += batch {
		arena := make([]byte, 0, total) // as insertRows makes it
		batchRows := make([]*Row, batch)
		for i := range rows {
			start := len(arena)
			var err error
			if arena, err = conv.Convert(arena, rows[i].Payload); err != nil {
				b.Fatal(err)
			}
			batchRows[i] = &Row{Row: &rows[i], Data: arena[start:len(arena):len(arena)]}
		}
		blocks, err := Blocks(columns, batchRows, batch)
		if err != nil {
			b.Fatal(err)
		}
		for _, blk := range blocks {
			values, release, err := blk.values(nil)
			if err != nil {
				b.Fatal(err)
			}
			out.Reset()
			for j, v := range values {
				col, err := chcolumn.Type(blk.Columns[j].TypeName).Column(blk.Columns[j].Name, &chcolumn.ServerContext{})
				if err != nil {
					b.Fatal(err)
				}
				switch v := v.(type) {
				case chclient.Native:
					err = chclient.ReadNative(col, v)
				case chclient.Typed:
					_, err = col.Append(v.Values)
				}
				if err != nil {
					b.Fatal(err)
				}
				col.Encode(&out)
			}
			release()
		}
	}
}
