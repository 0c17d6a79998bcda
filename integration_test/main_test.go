package integration_test

import (
	"fmt"
	"os"
	"regexp"
	"runtime"
	"slices"
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
// (localrunner.Configure). A watchdog names the tests still
// running after watchdogAfter, last, and ends the run.
func TestMain(m *testing.M) {
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
