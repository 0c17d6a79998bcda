// Package write is the write stage: each batch of rows (a pane of package batch) is inserted into
// the ClickHouse table through clickhouse-go/v2's batch API, one columnar Append per column, in
// INSERTs of at most maxInsertBlockSize rows that each name their columns, with the template's
// insert settings, a deterministic insert_deduplication_token per INSERT, and bounded retries with
// exponential backoff. After every INSERT of a batch has succeeded, the batch's messages are
// acknowledged (local source only; see package ack).
//
// Metrics, in the Beam namespace PubSubToClickHouse: counters rows-inserted, insert-batches (one
// per INSERT that succeeded), insert-retries (one per retried attempt), insert-failures (one per
// INSERT whose retries were spent), and the distributions insert-batch-rows (rows per INSERT) and
// insert-latency-ms (milliseconds per successful INSERT, retries included).
package write

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"

	"github.com/ch-beam/pubsub-to-clickhouse/transforms/ack"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/chclient"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/parse"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/schema"
)

var (
	rowsInserted    = beam.NewCounter(parse.Namespace, "rows-inserted")
	insertBatches   = beam.NewCounter(parse.Namespace, "insert-batches")
	insertRetries   = beam.NewCounter(parse.Namespace, "insert-retries")
	insertFailures  = beam.NewCounter(parse.Namespace, "insert-failures")
	insertBatchRows = beam.NewDistribution(parse.Namespace, "insert-batch-rows")
	insertLatencyMS = beam.NewDistribution(parse.Namespace, "insert-latency-ms")
)

func init() {
	register.DoFn3x1[context.Context, int, func(*parse.Row) bool, error](&insertFn{})
	register.Iter1[parse.Row]()
}

// Config is what the write stage needs besides the rows.
type Config struct {
	ClickHouse chclient.Config
	Table      string
	Settings   chclient.Settings
	Retry      chclient.Retry
	// MaxRows caps the rows of one INSERT below Settings.MaxInsertBlockSize: batchRowCount when
	// given (a runner may fire a pane larger than the count trigger), else 0.
	MaxRows int
	// Subscription is the source subscription whose messages are acknowledged after their rows
	// are inserted; "" when the source acknowledges by itself (Dataflow).
	Subscription string
}

// Write inserts the batches of batches (a PCollection<KV<int, Iter<parse.Row>>> from
// batch.Batches) into cfg.Table. It panics at construction when cfg is incomplete.
func Write(s beam.Scope, cfg Config, batches beam.PCollection) {
	s = s.Scope("Write")
	if cfg.Table == "" || cfg.ClickHouse.URL == "" || cfg.Settings.MaxInsertBlockSize <= 0 {
		panic(fmt.Sprintf("write.Write: incomplete configuration %v", cfg.ClickHouse))
	}
	beam.ParDo0(s, &insertFn{Config: cfg}, batches)
}

// insertFn inserts one batch per call.
type insertFn struct {
	Config

	conn      driver.Conn
	columns   []schema.Column
	settings  clickhouse.Settings
	withToken bool
	acks      ack.Manager
}

// Setup opens the connection pool, reads the table's writable columns and which insert settings
// the server knows.
func (f *insertFn) Setup(ctx context.Context) error {
	_, err := chclient.SetupRetry.Do(ctx, func() error { return f.setup(ctx) }, func(n int, err error) {
		slog.Warn("write: connecting to ClickHouse failed; retrying", "table", f.Table, "attempt", n, "error", err)
	})
	return err
}

func (f *insertFn) setup(ctx context.Context) error {
	if f.conn != nil {
		f.conn.Close()
	}
	var err error
	if f.conn, err = chclient.Open(ctx, f.ClickHouse); err != nil {
		return err
	}
	t, err := schema.Fetch(ctx, f.conn, f.ClickHouse.Database, f.Table)
	if err != nil {
		return err
	}
	f.columns = t.Writable()
	var leftOut []string
	if f.settings, f.withToken, leftOut, err = chclient.ResolveSettings(ctx, f.conn, f.Settings); err != nil {
		return err
	}
	if len(leftOut) > 0 {
		chclient.LogOnce("insert settings left out: the server does not know them", "settings", strings.Join(leftOut, ", "))
	}
	if f.Subscription != "" {
		if f.acks, err = ack.ForSubscription(ctx, f.Subscription); err != nil {
			return err
		}
	}
	return nil
}

// Teardown closes the connection pool.
func (f *insertFn) Teardown() error {
	if f.conn != nil {
		return f.conn.Close()
	}
	return nil
}

// ProcessElement inserts one batch, then acknowledges its messages.
func (f *insertFn) ProcessElement(ctx context.Context, shard int, next func(*parse.Row) bool) error {
	var rows []*parse.Row
	for {
		r := new(parse.Row)
		if !next(r) {
			break
		}
		rows = append(rows, r)
	}
	if len(rows) == 0 {
		return nil
	}
	// The same pane retried by the runner yields the same INSERTs, hence the same tokens.
	slices.SortFunc(rows, func(a, b *parse.Row) int { return strings.Compare(a.MessageID, b.MessageID) })
	maxRows := f.Settings.MaxInsertBlockSize
	if f.MaxRows > 0 && f.MaxRows < maxRows {
		maxRows = f.MaxRows
	}
	blocks, err := Blocks(f.columns, rows, maxRows)
	if err != nil {
		return fmt.Errorf("table %s.%s: %w", f.ClickHouse.Database, f.Table, err)
	}
	for _, b := range blocks {
		if err := f.insert(ctx, b); err != nil {
			return err
		}
	}
	if f.acks != nil {
		ids := make([]string, 0, len(rows))
		for _, r := range rows {
			if r.AckID != "" {
				ids = append(ids, r.AckID)
			}
		}
		if err := f.acks.Ack(ctx, ids); err != nil {
			// The rows are in the table; a lost ack only means a redelivery, which the
			// deduplication token absorbs on servers that deduplicate.
			slog.Warn("acknowledging inserted rows failed; Pub/Sub will redeliver them", "rows", len(ids), "error", err)
		}
	}
	return nil
}

// insert sends one block with retries.
func (f *insertFn) insert(ctx context.Context, b *Block) error {
	settings := f.settings
	if f.withToken {
		settings = clickhouse.Settings{}
		for k, v := range f.settings {
			settings[k] = v
		}
		settings[chclient.TokenSetting] = b.DeduplicationToken()
	}
	start := time.Now()
	attempts, err := f.Retry.Do(ctx, func() error {
		return b.Insert(ctx, f.conn, f.ClickHouse.Database, f.Table, settings)
	}, func(n int, err error) {
		insertRetries.Inc(ctx, 1)
		slog.Warn("INSERT failed; retrying", "table", f.Table, "rows", len(b.Rows), "attempt", n, "error", err)
	})
	if err != nil {
		insertFailures.Inc(ctx, 1)
		return fmt.Errorf("INSERT of %d rows into %s.%s failed after %d attempts: %w", len(b.Rows), f.ClickHouse.Database, f.Table, attempts, err)
	}
	rowsInserted.Inc(ctx, int64(len(b.Rows)))
	insertBatches.Inc(ctx, 1)
	insertBatchRows.Update(ctx, int64(len(b.Rows)))
	insertLatencyMS.Update(ctx, time.Since(start).Milliseconds())
	return nil
}
