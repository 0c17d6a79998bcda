package flowtest

import (
	"flag"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"

	"github.com/ch-beam/pubsub-to-clickhouse/pipeline/localrunner"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/flow"
)

// Main runs the tests of a package whose pipelines run on prism, with prism's bundle splits off
// (localrunner.Configure), in a temporary directory of their own that is removed at the end
// (localrunner.TempDir), and the batch stage's released buffers overwritten (flow.PoisonReleased,
// so that a row read after its buffer was given back fails the test), and returns the exit code
// for os.Exit: a TestMain is `func TestMain(m *testing.M) { os.Exit(flowtest.Main(m)) }`.
func Main(m *testing.M) int {
	flag.Parse()
	localrunner.Configure()
	defer localrunner.TempDir()()
	flow.PoisonReleased(true)
	return ptest.MainRet(m)
}
