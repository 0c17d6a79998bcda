package pipeline

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/options/jobopts"

	"github.com/ch-beam/pubsub-to-clickhouse/pipeline/localrunner"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/flow"
)

// TestBuildEveryMode builds the graph for each batching mode, source and dead-letter
// destination, with and without a JavaScript UDF, so that a windowing mistake (such as a Flatten of differently windowed inputs)
// fails here rather than at launch.
func TestBuildEveryMode(t *testing.T) {
	for _, src := range []Source{LocalSource, DataflowSource} {
		for _, mode := range []struct{ window, rows OptionalInt }{
			{GivenInt(10), OptionalInt{}}, {OptionalInt{}, GivenInt(100)}, {GivenInt(10), GivenInt(100)}, {},
		} {
			for _, dl := range []struct{ table, topic, udf string }{
				{"dead_letters", "", ""}, {"", "projects/my-project/topics/dead", ""}, {"dead_letters", "projects/my-project/topics/dead", ""},
				{"dead_letters", "", "gs://bucket/udf.js"}, {"", "projects/my-project/topics/dead", "/tmp/udf.js"},
			} {
				o := graphOptions(dl.table, dl.topic, dl.udf, mode.window, mode.rows)
				func() {
					defer func() {
						if r := recover(); r != nil {
							t.Errorf("source %v, mode %v, dead letters and UDF %+v: Build panicked: %v", src, o.Mode(), dl, r)
						}
					}()
					p, s := beam.NewPipelineWithRoot()
					Build(s, MustCheck(o), src)
					if _, _, err := p.Build(); err != nil {
						t.Errorf("source %v, mode %v, dead letters and UDF %+v: %v", src, o.Mode(), dl, err)
					}
				}()
			}
		}
	}
}

// graphOptions returns valid options for building the graph: the given dead-letter table and
// topic, JavaScript UDF file ("" for none) and batching.
func graphOptions(table, topic, udf string, window, rows OptionalInt) Options {
	o := Defaults()
	o.InputSubscription = "projects/my-project/subscriptions/events"
	o.ClickHouseURL = "clickhouse://127.0.0.1:9000"
	o.ClickHouseDatabase, o.ClickHouseTable, o.ClickHouseUsername = "db", "events", "default"
	o.ClickHouseDeadLetterTable, o.DeadLetterTopic = table, topic
	o.WindowSeconds, o.BatchRowCount = window, rows
	if udf != "" {
		o.JavascriptTextTransformGcsPath, o.JavascriptTextTransformFunctionName = udf, "transform"
	}
	return o
}

// Build takes only options that Check accepted: the zero Checked panics, and Check refuses
// invalid options with Validate's problems.
func TestBuildTakesCheckedOptions(t *testing.T) {
	func() {
		defer func() {
			if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), "not checked") {
				t.Errorf("Build of the zero Checked: recovered %v, want a panic saying the options are not checked", r)
			}
		}()
		_, s := beam.NewPipelineWithRoot()
		Build(s, Checked{}, LocalSource)
	}()
	o := graphOptions("dead_letters", "", "", OptionalInt{}, OptionalInt{})
	if c, err := o.Check(); err != nil || c.Options().ClickHouseTable != o.ClickHouseTable {
		t.Errorf("Check of valid options = %+v, %v", c.Options(), err)
	}
	o.InputSubscription = "my-sub"
	var pe *ParamError
	if _, err := o.Check(); !errors.As(err, &pe) || pe.Param != "inputSubscription" {
		t.Errorf("Check of an invalid subscription = %v, want the ParamError of inputSubscription", err)
	}
}

// A pipeline built for the local runner carries prism's experiment that turns off its splits of
// running bundles (localrunner.Configure), whoever builds it; one built for Dataflow does not
// need it and is left alone.
func TestBuildFromTurnsOffPrismSplits(t *testing.T) {
	saved := *jobopts.Experiments
	t.Cleanup(func() { *jobopts.Experiments = saved })
	for _, tc := range []struct {
		src  Source
		want bool
	}{{LocalSource, true}, {DataflowSource, false}} {
		*jobopts.Experiments = "some_other_experiment"
		p, s := beam.NewPipelineWithRoot()
		Build(s, MustCheck(graphOptions("dead_letters", "", "", GivenInt(10), GivenInt(100))), tc.src)
		if _, _, err := p.Build(); err != nil {
			t.Fatal(err)
		}
		got := jobopts.GetExperiments()
		if slices.Contains(got, localrunner.DisableSplits) != tc.want || !slices.Contains(got, "some_other_experiment") {
			t.Errorf("source %v: experiments %q; want %s: %v, and the experiment given kept", tc.src, got, localrunner.DisableSplits, tc.want)
		}
	}
}

// The local source's cap on unacknowledged bytes: at least 256 MiB; twice what every batcher
// (each shard of each table, and of the dead letters) holds one message short of a full batch;
// only in the combined mode, with a byte bound.
func TestMaxOutstandingBytes(t *testing.T) {
	for _, tc := range []struct {
		name         string
		window, rows OptionalInt
		bytes        int
		shards       int
		want         int64
	}{
		{"the default mode", OptionalInt{}, OptionalInt{}, 16 << 20, 0, 256 << 20},
		{"combined mode, batches of 64 MiB on 2 shards", GivenInt(5), GivenInt(1000), 64 << 20, 2, 2 * 4 * (64<<20 + 10_000_000)},
		// The dead letters' count trigger could wait forever for messages the cap holds back.
		{"count mode", OptionalInt{}, GivenInt(1000), 16 << 20, 0, 0},
		{"no byte bound", GivenInt(5), GivenInt(1000), 0, 0, 0},
		{"fixed windows", GivenInt(10), OptionalInt{}, 16 << 20, 0, 0},
	} {
		o := graphOptions("dead_letters", "", "", tc.window, tc.rows)
		o.BatchByteSize, o.NumShards = tc.bytes, tc.shards
		if got := o.maxOutstandingBytes(LocalSource); got != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, got, tc.want)
		}
	}
}

// The local source's cap on unacknowledged messages: at least 10,000; a full batch of every
// batcher (each shard of each table, and of the dead letters), so that some batch can always fill
// by count however the rows fall among them.
func TestMaxOutstanding(t *testing.T) {
	for _, tc := range []struct {
		name          string
		window, rows  OptionalInt
		shards        int
		route, tables string
		want          int
	}{
		{"the default mode", OptionalInt{}, OptionalInt{}, 0, "", "", 10_000},
		{"count mode, 2 shards", OptionalInt{}, GivenInt(4000), 2, "", "", 2 * 2 * 4000},
		// Three routed tables and the dead letters, each a few rows short of 4,000: 10,000 held
		// them all, and nothing was inserted again.
		{"count mode, 3 routed tables", OptionalInt{}, GivenInt(4000), 1, "field:kind", "click=clicks,order=orders", 4 * 4000},
		{"combined mode, 3 shards", GivenInt(5), GivenInt(3000), 3, "", "", 2 * 3 * 3000},
		{"fixed windows", GivenInt(10), OptionalInt{}, 3, "field:kind", "click=clicks", 10_000},
	} {
		o := graphOptions("dead_letters", "", "", tc.window, tc.rows)
		o.NumShards, o.RouteBy, o.RouteTables = tc.shards, tc.route, tc.tables
		if err := o.Validate(); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got := o.maxOutstanding(LocalSource); got != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, got, tc.want)
		}
	}
}

// TestBuildPassesShuffleCompression: in every batching mode, each step of the graph that packs
// rows for the GroupByKey or the batcher's state (a DoFn with a field Compression, outside the
// dead letters' steps) has the shuffleCompression given, and at least one step has it.
func TestBuildPassesShuffleCompression(t *testing.T) {
	for _, src := range []Source{LocalSource, DataflowSource} {
		for _, mode := range []struct{ window, rows OptionalInt }{
			{GivenInt(10), OptionalInt{}}, {OptionalInt{}, GivenInt(100)}, {GivenInt(10), GivenInt(100)}, {},
		} {
			for _, c := range []flow.Compression{flow.S2, flow.Zstd} {
				o := graphOptions("dead_letters", "", "", mode.window, mode.rows)
				o.ShuffleCompression = c.String()
				p, s := beam.NewPipelineWithRoot()
				Build(s, MustCheck(o), src)
				edges, _, err := p.Build()
				if err != nil {
					t.Fatal(err)
				}
				found := 0
				for _, e := range edges {
					if e.DoFn == nil || inScope(e.Scope(), "DeadLetters") { // dead letters do not travel as rows
						continue
					}
					v := reflect.Indirect(reflect.ValueOf(e.DoFn.Recv))
					if v.Kind() != reflect.Struct {
						continue
					}
					f := v.FieldByName("Compression")
					if !f.IsValid() || f.Type() != reflect.TypeFor[flow.Compression]() {
						continue
					}
					found++
					if got := f.Interface().(flow.Compression); got != c {
						t.Errorf("source %v, mode %v: step %s compresses with %v, want %v", src, o.Mode(), e.Name(), got, c)
					}
				}
				if found < 2 && mode.rows.Given || found < 1 {
					t.Errorf("source %v, mode %v, %v: %d steps with a Compression, want the keying step (and the batcher in the count and combined modes)", src, o.Mode(), c, found)
				}
			}
		}
	}
}

// inScope reports whether s or one of its parents is labelled label.
func inScope(s *graph.Scope, label string) bool {
	for ; s != nil; s = s.Parent {
		if s.Label == label {
			return true
		}
	}
	return false
}
