package flowtest_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"

	"github.com/ch-beam/pubsub-to-clickhouse/internal/flowtest"
)

func TestMain(m *testing.M) { os.Exit(flowtest.Main(m)) }

// countFn counts its elements in the counter named by Name.
type countFn struct{ Name string }

func (f *countFn) ProcessElement(ctx context.Context, v int) {
	beam.NewCounter("flowtest", f.Name).Inc(ctx, 1)
}

func init() { register.DoFn2x0[context.Context, int](&countFn{}) }

// TestRunWithMetricsAtOnce runs several pipelines at once, as the cases of a test marked
// t.Parallel do, and checks that each one ends and reports its own count. On Beam 2.77.0's
// ptest.RunWithMetrics, jobs staged at the same moment could end the binary with "fatal error:
// concurrent map writes" in prism's job server (as `go test -race` reports at once).
func TestRunWithMetricsAtOnce(t *testing.T) {
	const pipelines = 4
	var wg sync.WaitGroup
	for i := range pipelines {
		wg.Go(func() {
			p, s := beam.NewPipelineWithRoot()
			elems := make([]int, 10*(i+1))
			name := fmt.Sprintf("elements-%d", i)
			beam.ParDo0(s, &countFn{Name: name}, beam.CreateList(s, elems))
			res, err := flowtest.RunWithMetrics(p)
			if err != nil {
				t.Errorf("pipeline %d: %v", i, err)
				return
			}
			if res.JobID() == "" {
				t.Errorf("pipeline %d: no job id", i)
			}
			var got int64
			for _, c := range res.Metrics().AllMetrics().Counters() {
				if c.Key.Name == name {
					got += c.Committed
				}
			}
			if want := int64(len(elems)); got != want {
				t.Errorf("pipeline %d: counter %s = %d, want %d", i, name, got, want)
			}
		})
	}
	wg.Wait()
}

// TestRunWithMetricsFailure checks that a job that fails reports the failure as an error, the
// DoFn's own.
func TestRunWithMetricsFailure(t *testing.T) {
	p, s := beam.NewPipelineWithRoot()
	beam.ParDo0(s, failFn, beam.Create(s, 1))
	if _, err := flowtest.RunWithMetrics(p); err == nil || !strings.Contains(err.Error(), "element 1 fails on purpose") {
		t.Fatalf("a pipeline whose DoFn fails: %v, want the DoFn's error", err)
	}
}

func failFn(v int) error { return fmt.Errorf("element %d fails on purpose", v) }

func init() { register.Function1x1(failFn) }
