package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/metrics"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/options/gcpopts"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/runners"

	"github.com/ch-beam/pubsub-to-clickhouse/pipeline/localrunner"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/flow"
)

// launch is how this run of the binary launches the pipeline, from Beam's flags:
//
//   - under the Flex Template launcher (--template_location=gs://.../job_object, or
//     FLEX_TEMPLATE_GO_BINARY set and no --runner): the Dataflow runner stages the worker binary
//     and the model, writes the v1b3 job there for the launcher to submit, and returns a nil
//     result; the command prints where the job is and exits 0;
//   - directly on Dataflow (--runner=dataflow): the job is submitted asynchronously (a streaming
//     job never completes, so waiting would never end), the command prints the job id and the
//     console URL and exits 0;
//   - a dry run (--dry_run): the runner prints the job and submits nothing;
//   - on a local runner (prism, the default): the pipeline runs here until it ends
//     (stopAfterIdle) and the command prints its metrics.
type launch struct {
	runner   string // Beam's runner name: "prism", "dataflow", ...
	dataflow bool   // the Dataflow runner
	template string // --template_location: where the Dataflow runner writes the job
	dryRun   bool   // --dry_run
	project  string // --project (Dataflow)
	region   string // --region (Dataflow)
}

// knownRunners are the runners the binary holds (those beamx registers), by the name --runner
// gives them once launchFromFlags has lowered it and dropped a "Runner" suffix (PrismRunner).
var knownRunners = []string{"prism", "dataflow", "direct", "dot", "flink", "spark", "universal", "portable"}

// launchFromFlags reads the launch from Beam's flags and the environment. A run without
// --runner is a Dataflow one when FLEX_TEMPLATE_GO_BINARY is set (the Flex Template launcher
// sets it, and may start the binary without --runner), and a prism one otherwise; it sets
// Beam's --runner accordingly.
//
// It refuses the direct runner (it has no splittable DoFns, state or timers, which the pipeline
// needs), a runner the binary does not hold (a misspelt name) and a dry run off Dataflow (the local runners would run the pipeline for real).
func launchFromFlags(ctx context.Context) (launch, error) {
	runner := strings.TrimSuffix(strings.ToLower(*runners.Runner), "runner") // DataflowRunner, PrismRunner
	if runner == "" && os.Getenv("FLEX_TEMPLATE_GO_BINARY") != "" {
		runner = "dataflow"
	}
	if runner == "" {
		runner = "prism"
	}
	if runner == "direct" {
		return launch{}, fmt.Errorf("--runner=%s: the direct runner cannot run this pipeline (it has no splittable DoFns, state or timers); use prism, the default, or dataflow", *runners.Runner)
	}
	if !slices.Contains(knownRunners, runner) {
		// Beam would find no runner of that name only after the start-up checks, and end the
		// process with a log line of its own ("Runner prsim not registered. Forgot to _ import
		// it?") and exit status 1.
		hint := "use prism, the default, or dataflow"
		for _, r := range []string{"prism", "dataflow"} {
			if editDistance(runner, r) <= 2 {
				hint = "did you mean --runner=" + r + "?"
			}
		}
		return launch{}, fmt.Errorf("--runner=%s: no runner of that name (%s); nothing was started", *runners.Runner, hint)
	}
	*runners.Runner = runner
	l := launch{
		runner:   runner,
		dataflow: runner == "dataflow",
		template: stringFlag("template_location"),
		dryRun:   stringFlag("dry_run") == "true",
	}
	if l.dryRun && !l.dataflow {
		return launch{}, fmt.Errorf("--dry_run is for the Dataflow runner (it prints the job without submitting it); on %s the pipeline would run for real: drop --dry_run, or add --runner=dataflow", runner)
	}
	if l.dataflow {
		l.project = gcpopts.GetProjectFromFlagOrEnvironment(ctx)
		l.region = gcpopts.GetRegion(ctx)
	}
	return l, nil
}

// submits reports whether the run submits a Dataflow job itself (not a template, not a dry run).
func (l launch) submits() bool { return l.dataflow && l.template == "" && !l.dryRun }

// String names the launch for the start-up log.
func (l launch) String() string {
	switch {
	case l.dryRun:
		return "dry run: the job is printed, not submitted"
	case l.dataflow && l.template != "":
		return "Flex Template launch: the job is written to " + l.template + " for the launcher to submit"
	case l.dataflow:
		return "direct Dataflow launch: the job is submitted asynchronously"
	default:
		return "local run on " + l.runner + " until the pipeline ends (with the runner's bundle splits off: --experiments=" + localrunner.DisableSplits + ")"
	}
}

// sameNameLine begins what the Go SDK's Dataflow runner (v2.77.0, dataflowlib.Execute) logs when
// the service refused an asynchronous launch's job (409) because an active job has its name: it
// then returns that job as the launch's result, as if it had been submitted.
const sameNameLine = "Unable to submit job because job with same name is already actively running"

// sameNameReturned is set (runnerFilter) when the runner logs sameNameLine: the launch submitted
// nothing, and the job id it got back is the other job's.
var sameNameReturned atomic.Bool

// report prints the outcome of beam.Run to w. It never reads the metrics of a Dataflow result:
// the runner returns a nil result for a template or a dry run, and an asynchronous result, whose
// metrics are nil (reading them panics), for a direct launch.
func report(w io.Writer, res beam.PipelineResult, l launch) error {
	switch {
	case l.dryRun:
		fmt.Fprintln(w, "dry run: nothing submitted")
	case l.dataflow && l.template != "":
		fmt.Fprintf(w, "job written to %s (the Flex Template launcher submits it)\n", l.template)
	case l.dataflow:
		if isNil(res) || res.JobID() == "" {
			return fmt.Errorf("the Dataflow runner returned no job id: the job may not have been submitted; see the log above")
		}
		if sameNameReturned.Load() {
			// The check before staging (findRunningJob) found none: another launch of the name
			// (or an update of it) submitted its job while this one staged its files.
			return fmt.Errorf("--job_name=%s: nothing was submitted: while this launch staged its files, a job of that name became active in "+
				"projects/%s/locations/%s (id %s, another launch's, with its own parameters), and "+oneActiveJob+
				" (gcloud dataflow jobs drain %s --region=%s --project=%s)",
				stringFlag("job_name"), l.project, l.region, res.JobID(), res.JobID(), l.region, l.project)
		}
		id := res.JobID()
		fmt.Fprintf(w, "Dataflow job submitted: %s\n", id)
		fmt.Fprintf(w, "console: https://console.cloud.google.com/dataflow/jobs/%s/%s?project=%s\n", l.region, id, l.project)
		fmt.Fprintf(w, "stop it with: gcloud dataflow jobs drain %s --region=%s --project=%s\n", id, l.region, l.project)
	case isNil(res):
		fmt.Fprintln(w, "the pipeline ended (the runner returned no metrics)")
	default:
		if line := metricsLine(res); line != "" {
			fmt.Fprintln(w, line)
		}
	}
	return nil
}

// isNil reports whether res is nil, or an interface holding a nil pointer (the Dataflow runner
// returns a typed nil *dataflowPipelineResult for a template).
func isNil(res beam.PipelineResult) bool {
	if res == nil {
		return true
	}
	v := reflect.ValueOf(res)
	return v.Kind() == reflect.Pointer && v.IsNil()
}

// failedMetricsLine returns the metricsLine of the result that a failed local run returns with
// its error: the metrics counted until it failed, or "" for a result without them (the runner
// could not read them, or failed before the job ran; its Metrics method then panics).
func failedMetricsLine(res beam.PipelineResult) (line string) {
	if isNil(res) {
		return ""
	}
	defer func() {
		if recover() != nil {
			line = ""
		}
	}()
	return metricsLine(res)
}

// metricsLine formats the pipeline's metrics on one line, "metrics: name=value ...",
// distributions as count/sum/min/max; "" when there are none. A metric that several steps report
// (a routed pipeline's stages, one set per table) is one entry: counters summed, distributions
// merged.
func metricsLine(res beam.PipelineResult) string {
	all := res.Metrics().AllMetrics()
	counters := map[string]int64{}
	for _, c := range all.Counters() {
		if c.Key.Namespace == flow.Namespace {
			counters[c.Key.Name] += c.Result()
		}
	}
	var parts []string
	for name, v := range counters {
		parts = append(parts, fmt.Sprintf("%s=%d", name, v))
	}
	dists := map[string]metrics.DistributionValue{}
	for _, d := range all.Distributions() {
		if d.Key.Namespace != flow.Namespace {
			continue
		}
		r, seen := d.Result(), dists[d.Key.Name]
		if seen.Count > 0 {
			r = metrics.DistributionValue{Count: seen.Count + r.Count, Sum: seen.Sum + r.Sum, Min: min(seen.Min, r.Min), Max: max(seen.Max, r.Max)}
		}
		dists[d.Key.Name] = r
	}
	for name, r := range dists {
		parts = append(parts, fmt.Sprintf("%s=count:%d,sum:%d,min:%d,max:%d", name, r.Count, r.Sum, r.Min, r.Max))
	}
	if len(parts) == 0 {
		return ""
	}
	sort.Strings(parts)
	return "metrics: " + strings.Join(parts, " ")
}

// stringFlag returns the value of the global flag name, "" when it is not defined.
func stringFlag(name string) string {
	if f := flag.Lookup(name); f != nil {
		return f.Value.String()
	}
	return ""
}

// intFlag returns the value of the global integer flag name, 0 when it is not defined.
func intFlag(name string) int {
	n, _ := strconv.Atoi(stringFlag(name))
	return n
}
