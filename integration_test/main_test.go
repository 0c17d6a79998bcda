package integration_test

import (
	"flag"
	"fmt"
	"os"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/ch-beam/pubsub-to-clickhouse/internal/flowtest"
)

// watchdogAfter is how long the package's tests may run before the watchdog ends them: well
// under `make test`'s -timeout, whose report puts the names of the tests that hang at the top
// of a goroutine dump far longer than a CI log's tail.
const watchdogAfter = 20 * time.Minute

// TestMain runs the pipelines of these tests on prism, Beam's local runner, and removes the
// binary that the tests which run it built (launchBinary), with prism's bundle splits off
// (localrunner.Configure), and the cases marked t.Parallel up to parallelWidth at once. A
// watchdog names the tests still running after watchdogAfter, last, and ends the run.
func TestMain(m *testing.M) {
	flag.Parse()
	widenParallel()
	watchdog := time.AfterFunc(watchdogAfter, func() {
		fmt.Fprintf(os.Stderr, "integration tests: still running after %v: %v; ending the run\n", watchdogAfter, runningTests())
		os.Exit(3)
	})
	code := flowtest.Main(m)
	watchdog.Stop()
	if binaryDir != "" {
		os.RemoveAll(binaryDir)
	}
	os.Exit(code)
}

// parallelWidth is how many subtests marked t.Parallel run at once, unless -parallel is given.
// Such cases (parallelCases: each with a database and topics of its own) spend most of their time waiting
// for a window or stopAfterIdle, so more of them than the machine's cores fit; the default,
// GOMAXPROCS, would run two at a time on a machine of two cores.
const parallelWidth = 8

// widenParallel sets -parallel to parallelWidth when the command line did not give it.
func widenParallel() {
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	if !given {
		if err := flag.Set("test.parallel", strconv.Itoa(parallelWidth)); err != nil {
			panic(err)
		}
	}
}

var testFrame = regexp.MustCompile(`(?m)^\S+\.(Test[A-Za-z0-9_]+)[.(]`)

// runningTests returns the names of the test functions on any goroutine's stack.
func runningTests() []string {
	buf := make([]byte, 64<<20)
	buf = buf[:runtime.Stack(buf, true)]
	var names []string
	for _, m := range testFrame.FindAllSubmatch(buf, -1) {
		if name := string(m[1]); name != "TestMain" && !slices.Contains(names, name) {
			names = append(names, name)
		}
	}
	return names
}
