package flow

import (
	"context"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
)

// TableMetrics are the metrics of one table of a routed pipeline (routeBy): a counter or a
// distribution name of the stage is also counted as "<name>:<table>" in Namespace, so that each
// table's rows, batches, dead letters and sizes read apart (rows-inserted:clicks,
// insert-batch-rows:clicks). A nil *TableMetrics counts nothing: a pipeline with one table has
// the stage's metrics alone.
type TableMetrics struct {
	counters      map[string]beam.Counter
	distributions map[string]beam.Distribution
}

// NewTableMetrics returns the counters and distributions "<name>:<table>" of the names given
// when routed, else nil.
func NewTableMetrics(routed bool, table string, counters, distributions []string) *TableMetrics {
	if !routed {
		return nil
	}
	m := &TableMetrics{counters: make(map[string]beam.Counter, len(counters)), distributions: make(map[string]beam.Distribution, len(distributions))}
	for _, n := range counters {
		m.counters[n] = beam.NewCounter(Namespace, n+":"+table)
	}
	for _, n := range distributions {
		m.distributions[n] = beam.NewDistribution(Namespace, n+":"+table)
	}
	return m
}

// Inc adds n to the table's counter name; nothing when m is nil.
func (m *TableMetrics) Inc(ctx context.Context, name string, n int64) {
	if m != nil {
		m.counters[name].Inc(ctx, n)
	}
}

// Update adds v to the table's distribution name; nothing when m is nil.
func (m *TableMetrics) Update(ctx context.Context, name string, v int64) {
	if m != nil {
		m.distributions[name].Update(ctx, v)
	}
}
