package write

import (
	"fmt"
	"testing"
	"time"

	"github.com/ClickHouse/ch-go/proto"
	chcolumn "github.com/ClickHouse/clickhouse-go/v2/lib/column"

	"github.com/ch-beam/pubsub-to-clickhouse/internal/events"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/chclient"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/convert"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/flow"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/schema"
)

// BenchmarkBlockValues measures the write stage's work on a batch before the driver takes it,
// per row of the demo's events (internal/events, 0.3 to 2 KB, 20 columns): converting the payload
// again, splitting the rows into blocks (Blocks) and building each block's columns as the driver
// takes them (Block.values: Go strings pointing into the rows for its String columns, the Native
// format for every other column of the demo). MB/s is payload bytes.
func BenchmarkBlockValues(b *testing.B) {
	d := newDemoBatch(b, 1000)
	for n := 0; n < b.N; n += len(d.rows) {
		for _, blk := range d.blocks(b) {
			_, release, err := blk.values()
			if err != nil {
				b.Fatal(err)
			}
			release()
		}
	}
}

// BenchmarkBlockToDriver is BenchmarkBlockValues, on batches of 5,000 rows, and then what
// clickhouse-go does with the columns before it compresses them: its column of each type reads
// them (the Native format) or takes them (Go strings, Go values), and writes the block's columns
// as it sends them to the server.
func BenchmarkBlockToDriver(b *testing.B) {
	d := newDemoBatch(b, 5000)
	var out proto.Buffer
	for n := 0; n < b.N; n += len(d.rows) {
		for _, blk := range d.blocks(b) {
			values, release, err := blk.values()
			if err != nil {
				b.Fatal(err)
			}
			out.Reset()
			toDriver(b, blk, values, &out)
			release()
		}
	}
}

// BenchmarkColumns measures what the write stage does with a converted batch before the driver
// compresses it, on a batch of 5,000 demo rows converted and split into blocks beforehand, per
// row: values builds each block's columns as the driver takes them (Block.values); driver also
// has clickhouse-go's column of each type read or take them and write them as it sends them, as
// BenchmarkBlockToDriver does. MB/s is payload bytes.
func BenchmarkColumns(b *testing.B) {
	for _, withDriver := range []bool{false, true} {
		name := "values"
		if withDriver {
			name = "driver"
		}
		b.Run(name, func(b *testing.B) {
			d := newDemoBatch(b, 5000)
			b.StopTimer()
			blocks := d.blocks(b)
			b.StartTimer()
			var out proto.Buffer
			for n := 0; n < b.N; n += len(d.rows) {
				for _, blk := range blocks {
					values, release, err := blk.values()
					if err != nil {
						b.Fatal(err)
					}
					if withDriver {
						out.Reset()
						toDriver(b, blk, values, &out)
					}
					release()
				}
			}
		})
	}
}

// toDriver has a clickhouse-go column of each of blk's columns read or take its values, and
// write them to out, as the driver does when it sends the block.
func toDriver(b *testing.B, blk *Block, values []any, out *proto.Buffer) {
	for j, v := range values {
		col, err := chcolumn.Type(blk.Columns[j].TypeName).Column(blk.Columns[j].Name, &chcolumn.ServerContext{})
		if err != nil {
			b.Fatal(err)
		}
		switch v := v.(type) {
		case chclient.Native:
			err = chclient.ReadNative(col, v)
		case chclient.Strings:
			err = chclient.ReadStrings(col, v)
		case chclient.Typed:
			_, err = col.Append(v.Values)
		}
		if err != nil {
			b.Fatal(err)
		}
		col.Encode(out)
	}
}

// demoBatch is a batch of the demo's events as the write stage gets it.
type demoBatch struct {
	conv    *convert.Converter
	columns []schema.Column
	rows    []flow.Row
	total   int // payload bytes
}

// newDemoBatch makes a batch of n demo events, sets b's bytes per operation to a row's average
// payload, and resets its timer.
func newDemoBatch(b *testing.B, n int) *demoBatch {
	tracker := &convert.Tracker{Stage: "write"}
	if err := tracker.Set(events.Table()); err != nil {
		b.Fatal(err)
	}
	d := &demoBatch{conv: tracker.Converter(), columns: tracker.Schema().Writable(), rows: make([]flow.Row, n)}
	gen := events.NewGenerator(1, time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC))
	for i := range d.rows {
		_, data := gen.Next()
		d.rows[i] = flow.Row{MessageID: "id", Payload: data}
		d.total += len(data)
	}
	b.SetBytes(int64(d.total / n))
	b.ReportAllocs()
	b.ResetTimer()
	return d
}

// blocks converts the batch's payloads again, into one arena as insertRows does, and splits the
// rows into blocks.
func (d *demoBatch) blocks(b *testing.B) []*Block {
	arena := make([]byte, 0, d.total)
	rows := make([]*Row, len(d.rows))
	for i := range d.rows {
		start := len(arena)
		var err error
		if arena, err = d.conv.Convert(arena, d.rows[i].Payload); err != nil {
			b.Fatal(err)
		}
		rows[i] = &Row{Row: &d.rows[i], Data: arena[start:len(arena):len(arena)]}
	}
	blocks, err := Blocks(d.columns, rows, len(rows), 0)
	if err != nil {
		b.Fatal(err)
	}
	return blocks
}

// BenchmarkDeduplicationToken measures the insert_deduplication_token of a block of 5,000 demo
// rows (chclient.DeduplicationToken over the rows' message ids and RowBinary), which the write
// stage computes for every INSERT on a server that takes the token (ClickHouse 22.2 and newer;
// not 18.16). ns/op is per row, MB/s payload bytes. GODEBUG=cpu.sha=off measures crypto/sha256
// (the hash of the token's first scheme) as on a CPU without SHA extensions; BLAKE3 does not
// use them.
func BenchmarkDeduplicationToken(b *testing.B) {
	d := newDemoBatch(b, 5000)
	b.StopTimer()
	for i := range d.rows {
		d.rows[i].MessageID = fmt.Sprintf("%017d", 12000000000000000+i)
	}
	blocks := d.blocks(b)
	b.StartTimer()
	for n := 0; n < b.N; n += len(d.rows) {
		for _, blk := range blocks {
			if blk.DeduplicationToken() == "" {
				b.Fatal("no token")
			}
		}
	}
}
