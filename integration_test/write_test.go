package integration_test

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"

	"github.com/ch-beam/pubsub-to-clickhouse/internal/chtest"
	"github.com/ch-beam/pubsub-to-clickhouse/internal/flowtest"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/batch"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/chclient"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/flow"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/parse"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/write"
)

// counters returns the pipeline's counters of the PubSubToClickHouse namespace, summed over steps.
func counters(res beam.PipelineResult) map[string]int64 {
	out := map[string]int64{}
	for _, c := range res.Metrics().AllMetrics().Counters() {
		if c.Key.Namespace == flow.Namespace {
			out[c.Key.Name] += c.Committed
		}
	}
	return out
}

// distribution is a distribution of the PubSubToClickHouse namespace, merged over steps.
type distribution struct{ Count, Sum, Min, Max int64 }

// distributions returns the pipeline's distributions of the PubSubToClickHouse namespace,
// merged over steps.
func distributions(res beam.PipelineResult) map[string]distribution {
	out := map[string]distribution{}
	for _, d := range res.Metrics().AllMetrics().Distributions() {
		if d.Key.Namespace != flow.Namespace || d.Committed.Count == 0 {
			continue
		}
		v, seen := out[d.Key.Name]
		if !seen {
			v = distribution{Min: d.Committed.Min, Max: d.Committed.Max}
		}
		v.Count += d.Committed.Count
		v.Sum += d.Committed.Sum
		v.Min, v.Max = min(v.Min, d.Committed.Min), max(v.Max, d.Committed.Max)
		out[d.Key.Name] = v
	}
	return out
}

// insertsInto counts the INSERTs into a MergeTree table: each makes one level-0 part, which
// system.parts lists (active or merged away) for 8 minutes.
func insertsInto(t *testing.T, srv *chtest.Server, table string) string {
	return srv.MustQuery(t, fmt.Sprintf("SELECT count() FROM system.parts WHERE database = '%s' AND table = '%s' AND level = 0", srv.Database, table))
}

// TestWriteBatches inserts a bounded set of rows through parse, batch and write, in count mode
// and with a small maxInsertBlockSize, and reads the rows and the INSERTs back from the server.
func TestWriteBatches(t *testing.T) {
	for _, tc := range []struct {
		name       string
		rows       int
		batchRows  int
		blockSize  int
		numShards  int
		anonEvery  int // every n-th row omits name, so its DEFAULT applies (0: none)
		wantInsert int
	}{
		{"batchRowCount=100 gives INSERTs of 100", 1000, 100, 1_000_000, 1, 0, 10},
		{"maxInsertBlockSize=250 gives INSERTs of 250", 1000, 5000, 250, 1, 0, 4},
		// Each batch holds exactly 100 rows (batchRowCount counts rows), a third of them omitting
		// name: two INSERTs per batch. (Before batches counted rows, prism fired the whole bounded
		// input as one pane, which gave 7 + 4.)
		{"rows omitting a DEFAULT column go in INSERTs of their own", 1000, 100, 1_000_000, 1, 3, 10 * 2},
		{"two shards", 1000, 100, 1_000_000, 2, 0, 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := chtest.New(t)
			srv.CreateTable(t, `CREATE TABLE {table} (id UInt32, name String DEFAULT 'anon', ts DateTime('UTC')) ENGINE = MergeTree ORDER BY id`, "events")
			var msgs []flow.Message
			for i := range tc.rows {
				payload := fmt.Sprintf(`{"id":%d,"name":"n%d","ts":"2024-05-01T10:00:00Z"}`, i, i)
				if tc.anonEvery > 0 && i%tc.anonEvery == 0 {
					payload = fmt.Sprintf(`{"id":%d,"ts":"2024-05-01T10:00:00Z"}`, i)
				}
				msgs = append(msgs, flow.Message{ID: strconv.Itoa(i), Data: []byte(payload)})
			}
			p, s := beam.NewPipelineWithRoot()
			cfg := srv.Config()
			rows, _ := parse.Parse(s, parse.Config{ClickHouse: cfg, Table: "events"}, beam.CreateList(s, flowtest.OneEach(msgs)))
			write.Write(s, write.Config{
				ClickHouse: cfg, Table: "events",
				Settings: chclient.Settings{Deduplicate: true, DistributedSync: true, MaxInsertBlockSize: tc.blockSize},
				Retry:    chclient.Retry{MaxRetries: 2, InitialBackoff: 10 * time.Millisecond, MaxBackoff: 50 * time.Millisecond},
				MaxRows:  tc.batchRows,
			}, batch.Rows(s, batch.Config{Mode: batch.Mode{Rows: tc.batchRows}, Shards: tc.numShards}, rows))
			res, err := flowtest.RunWithMetrics(p)
			if err != nil {
				t.Fatal(err)
			}
			got := srv.MustQuery(t, "SELECT count(), uniqExact(id), countIf(name = 'anon'), min(ts) FROM events")
			anon := 0
			if tc.anonEvery > 0 {
				anon = (tc.rows + tc.anonEvery - 1) / tc.anonEvery
			}
			want := fmt.Sprintf("%d\t%d\t%d\t2024-05-01 10:00:00", tc.rows, tc.rows, anon)
			if got != want {
				t.Errorf("rows in table: got %q, want %q", got, want)
			}
			c := counters(res)
			t.Logf("counters: %v", c)
			if c["rows-inserted"] != int64(tc.rows) {
				t.Errorf("rows-inserted = %d, want %d", c["rows-inserted"], tc.rows)
			}
			if c["insert-batches"] != int64(tc.wantInsert) {
				t.Errorf("insert-batches = %d, want %d", c["insert-batches"], tc.wantInsert)
			}
			if got := insertsInto(t, srv, "events"); got != strconv.Itoa(tc.wantInsert) {
				t.Errorf("the server saw %s INSERTs, want %d", got, tc.wantInsert)
			}
		})
	}
}
