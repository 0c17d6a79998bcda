package flowtest

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
)

func discard(int) {}

func init() { register.Function1x0(discard) }

// TestSubmitOneAtATime: pipelines run at once are staged one at a time, whatever the timing
// (TestRunWithMetricsAtOnce meets prism's unlocked map of staged artifacts only under -race): no
// two jobs are ever between their staging and their submission together.
func TestSubmitOneAtATime(t *testing.T) {
	var in, most atomic.Int32
	staged = func() {
		n := in.Add(1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		time.Sleep(50 * time.Millisecond) // long enough for the others to be staged meanwhile, were they let
		in.Add(-1)
	}
	defer func() { staged = nil }()
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			p, s := beam.NewPipelineWithRoot()
			beam.ParDo0(s, discard, beam.Create(s, 1, 2, 3))
			if _, err := RunWithMetrics(p); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if got := most.Load(); got != 1 {
		t.Errorf("%d jobs were staged at once, want 1", got)
	}
}
