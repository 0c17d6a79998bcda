package flow

import (
	"context"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
)

// TableCounters are the counters of one table of a routed pipeline (routeBy): counter name of
// the stage is also counted as "<name>:<table>" in Namespace, so that each table's rows,
// batches and dead letters read apart (rows-inserted:clicks). A nil TableCounters counts
// nothing: a pipeline with one table has the stage's counters alone.
type TableCounters map[string]beam.Counter

// NewTableCounters returns the counters "<name>:<table>" of names when routed, else nil.
func NewTableCounters(routed bool, table string, names ...string) TableCounters {
	if !routed {
		return nil
	}
	c := make(TableCounters, len(names))
	for _, n := range names {
		c[n] = beam.NewCounter(Namespace, n+":"+table)
	}
	return c
}

// Inc adds n to the table's counter name; nothing when c is nil.
func (c TableCounters) Inc(ctx context.Context, name string, n int64) {
	if c != nil {
		c[name].Inc(ctx, n)
	}
}
