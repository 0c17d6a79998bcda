// Package localrunner holds what a run on Beam's local runner, prism (Beam 2.77.0), needs to be
// correct: the binary's local runs and every test that runs a pipeline call Configure.
package localrunner

import (
	"os"
	"slices"
	"strings"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/options/jobopts"
)

// DisableSplits is the prism experiment that stops the runner from splitting bundles in
// flight. prism enables those splits for every stage, not only splittable DoFns: a bundle that
// makes no progress between two progress reports (an INSERT waiting on the server, a loaded
// machine) is split, and the split of a stateful stage's bundle gives the residual's keys back
// to the scheduler while the primary still holds their state, so a second bundle of the same key
// runs at once and one bundle's state overwrites the other's: rows were inserted twice or never
// (see prism's engine.stageState.splitBundle). The pipeline's own source never needs a runner
// split (it checkpoints itself, see transforms/source).
const DisableSplits = "prism_disable_sdf_split"

// Configure adds DisableSplits to Beam's --experiments flag unless it is there. Call it after the
// flags are parsed and before the pipeline runs on prism; it is a no-op for other runners, which
// ignore the experiment.
func Configure() {
	have := jobopts.GetExperiments()
	if slices.Contains(have, DisableSplits) {
		return
	}
	*jobopts.Experiments = strings.Join(append(have, DisableSplits), ",")
}

// TempDir makes a new directory the process's temporary directory ($TMPDIR, which os.TempDir
// reads and the processes it starts inherit) and returns the func that removes it, with what it
// holds, and puts $TMPDIR back. Beam 2.77.0's universal runner, which runs a pipeline on prism in
// loopback mode, creates an empty file beamloopbackworker-* in os.TempDir() at each run and never
// removes it (runnerlib.Execute; its TODO names apache/beam#27569): without this, each local run
// left one behind in /tmp. When the directory cannot be made, nothing changes and the func does
// nothing.
func TempDir() (remove func()) {
	dir, err := os.MkdirTemp("", "pubsub-to-clickhouse-")
	if err != nil {
		return func() {}
	}
	old, had := os.LookupEnv("TMPDIR")
	os.Setenv("TMPDIR", dir)
	return func() {
		if had {
			os.Setenv("TMPDIR", old)
		} else {
			os.Unsetenv("TMPDIR")
		}
		os.RemoveAll(dir)
	}
}
