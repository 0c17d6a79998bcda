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
	return byTable(routed, table, beam.NewCounter, names)
}

// Inc adds n to the table's counter name; nothing when c is nil.
func (c TableCounters) Inc(ctx context.Context, name string, n int64) {
	if c != nil {
		c[name].Inc(ctx, n)
	}
}

// TableDistributions are the distributions of one table of a routed pipeline, named as
// TableCounters name its counters (insert-batch-rows:clicks). A nil TableDistributions updates
// nothing.
type TableDistributions map[string]beam.Distribution

// NewTableDistributions returns the distributions "<name>:<table>" of names when routed, else
// nil.
func NewTableDistributions(routed bool, table string, names ...string) TableDistributions {
	return byTable(routed, table, beam.NewDistribution, names)
}

// Update adds v to the table's distribution name; nothing when d is nil.
func (d TableDistributions) Update(ctx context.Context, name string, v int64) {
	if d != nil {
		d[name].Update(ctx, v)
	}
}

// byTable returns the metrics "<name>:<table>" of names in Namespace, made by newMetric, when
// routed; else nil.
func byTable[M any](routed bool, table string, newMetric func(namespace, name string) M, names []string) map[string]M {
	if !routed {
		return nil
	}
	m := make(map[string]M, len(names))
	for _, n := range names {
		m[n] = newMetric(Namespace, n+":"+table)
	}
	return m
}
