package pipeline

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/runtime/graphx"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"google.golang.org/protobuf/proto"
)

// stageNames are the names of the pipeline's stages in the Dataflow job, which an update of a
// running job (--update) matches between the old job and the new one: a release that renames one
// must be launched with --transform_name_mapping=OLD=NEW, or the update is refused
// (docs/deploy.md, "Updating a running job").
var stageNames = []string{"Read", "Parse", "Batch", "Write", "Rejected", "Flatten", "DeadLetters", "DeadLetters/Batch", "DeadLetter"}

// bufferingSteps are, by batching mode, the steps that hold rows between elements (a GroupByKey,
// or a ParDo with state or timers): what an update carries over from the old job to the new one,
// and what Dataflow's compatibility check looks for by name. Changing the batching mode changes
// them, which is why such a change needs a drain and a new job.
var bufferingSteps = map[string][]string{
	"fixed":    {"Batch/CoGBK", "DeadLetters/Batch/CoGBK"},
	"count":    {"Batch/batch.countFn", "DeadLetters/Batch/batch.lettersFn"},
	"combined": {"Batch/batch.countTimeFn", "DeadLetters/Batch/batch.lettersTimeFn"},
}

// TestStepNamesForUpdate builds the Dataflow graph (the model the runner stages) in every batching
// mode, with each dead-letter destination and with and without a JavaScript UDF, and checks that
// every stage of stageNames is there under its name (UDF too, with a UDF), and that each step of
// bufferingSteps is there and still buffers. Steps added later, buffering or not, do not fail
// it: an update maps old steps to new ones, and only an old step missing from the new job breaks
// it.
func TestStepNamesForUpdate(t *testing.T) {
	for _, mode := range []struct {
		name         string
		window, rows OptionalInt
	}{{"fixed", GivenInt(10), OptionalInt{}}, {"count", OptionalInt{}, GivenInt(100)}, {"combined", OptionalInt{}, OptionalInt{}}} {
		for _, dl := range []struct{ table, topic, udf string }{
			{"dead_letters", "", ""}, {"", "projects/my-project/topics/dead", ""}, {"dead_letters", "projects/my-project/topics/dead", "gs://b/udf.js"},
		} {
			o := graphOptions(dl.table, dl.topic, dl.udf, mode.window, mode.rows)
			transforms := dataflowModel(t, o)
			buffering := map[string]bool{}
			for _, tr := range transforms {
				if buffers(t, tr) {
					buffering[tr.GetUniqueName()] = true
				}
			}
			want := slices.Clone(stageNames)
			if dl.udf != "" {
				want = append(want, "UDF")
			}
			for _, name := range want {
				if _, ok := transforms[name]; !ok {
					t.Errorf("mode %s, dead letters %+v: the graph has no step %q, which a running job's update looks for", mode.name, dl, name)
				}
			}
			for _, name := range bufferingSteps[mode.name] {
				if !buffering[name] {
					t.Errorf("mode %s, dead letters %+v: %q is not a buffering step of the graph (its buffering steps: %v): "+
						"an update would drop what the running job holds there", mode.name, dl, name, keys(buffering))
				}
			}
		}
	}
}

// dataflowModel builds the pipeline for Dataflow with o and returns the transforms of its model
// (as the Dataflow runner marshals it), by unique name.
func dataflowModel(t *testing.T, o Options) map[string]*pipepb.PTransform {
	t.Helper()
	p, s := beam.NewPipelineWithRoot()
	Build(s, MustCheck(o), DataflowSource)
	edges, _, err := p.Build()
	if err != nil {
		t.Fatal(err)
	}
	env, err := graphx.CreateEnvironment(context.Background(), "beam:env:docker:v1", func(context.Context) string { return "image" })
	if err != nil {
		t.Fatal(err)
	}
	model, err := graphx.Marshal(edges, &graphx.Options{Environment: env})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*pipepb.PTransform{}
	for _, tr := range model.GetComponents().GetTransforms() {
		out[tr.GetUniqueName()] = tr
	}
	return out
}

// buffers reports whether tr holds elements across bundles: a GroupByKey, or a ParDo with state
// or timers.
func buffers(t *testing.T, tr *pipepb.PTransform) bool {
	switch tr.GetSpec().GetUrn() {
	case "beam:transform:group_by_key:v1":
		return true
	case "beam:transform:pardo:v1":
		var pd pipepb.ParDoPayload
		if err := proto.Unmarshal(tr.GetSpec().GetPayload(), &pd); err != nil {
			t.Fatalf("%s: its ParDoPayload: %v", tr.GetUniqueName(), err)
		}
		return len(pd.GetStateSpecs()) > 0 || len(pd.GetTimerFamilySpecs()) > 0
	}
	return false
}

func keys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// TestRoutedStepNames builds the Dataflow graph of a routed pipeline (routeBy) in every batching
// mode: the routing stage is Route, and each table's stages are those of stageNames under
// Tables/<table>, with their own buffering steps, so that each table's names stay stable across
// releases and adding a table adds steps without renaming the others'.
func TestRoutedStepNames(t *testing.T) {
	for mode, window := range map[string]OptionalInt{"fixed": GivenInt(10), "combined": {}} {
		o := graphOptions("dead_letters", "", "", window, OptionalInt{})
		o.RouteBy, o.RouteTables = "attribute:event_type", "click=clicks,order=orders"
		transforms := dataflowModel(t, o)
		buffering := map[string]bool{}
		for name, tr := range transforms {
			if buffers(t, tr) {
				buffering[name] = true
			}
		}
		want := []string{"Read", "Route", "Flatten", "DeadLetters", "DeadLetters/Batch", "DeadLetter"}
		for _, table := range []string{"clicks", "orders", o.ClickHouseTable} {
			for _, stage := range []string{"Parse", "Batch", "Write", "Rejected"} {
				want = append(want, "Tables/"+table+"/"+stage)
			}
			for _, step := range bufferingSteps[mode] {
				if step, ok := strings.CutPrefix(step, "Batch/"); ok && !buffering["Tables/"+table+"/Batch/"+step] {
					t.Errorf("mode %s: Tables/%s/Batch/%s is not a buffering step (the buffering steps: %v)", mode, table, step, keys(buffering))
				}
			}
		}
		for _, name := range want {
			if _, ok := transforms[name]; !ok {
				t.Errorf("mode %s: the routed graph has no step %q", mode, name)
			}
		}
		if _, ok := transforms["Parse"]; ok {
			t.Errorf("mode %s: the routed graph has a step Parse outside Tables/", mode)
		}
	}
}

// TestRoutingATableAdded: adding a table to a running job's routing (routeTables, then --update)
// keeps every step of the old graph under its name, in every batching mode, also across the
// routing's groups of tables (beyond 124): beam.Partition named its step after the number of
// tables (Route/Partition(2)), which a table added renamed.
func TestRoutingATableAdded(t *testing.T) {
	pairs := func(n int) string {
		var p []string
		for i := range n {
			p = append(p, fmt.Sprintf("v%d=t%d", i, i))
		}
		return strings.Join(p, ",")
	}
	for mode, window := range map[string]OptionalInt{"fixed": GivenInt(10), "combined": {}} {
		for _, n := range []int{2, 123, 200} {
			steps := func(tables int) map[string]*pipepb.PTransform {
				o := graphOptions("dead_letters", "", "", window, OptionalInt{})
				o.RouteBy, o.RouteTables = "attribute:event_type", pairs(tables)
				return dataflowModel(t, o)
			}
			before, after := steps(n), steps(n+1)
			for name := range before {
				if _, ok := after[name]; !ok {
					t.Errorf("mode %s: with a table added to %d, the step %q is gone", mode, n, name)
				}
			}
		}
	}
}
