package flowtest

import (
	"flag"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"

	"github.com/ch-beam/pubsub-to-clickhouse/pipeline/localrunner"
)

// Main runs the tests of a package whose pipelines run on prism, with prism's bundle splits off
// (localrunner.Configure), and returns the exit code for os.Exit: a TestMain is
// `func TestMain(m *testing.M) { os.Exit(flowtest.Main(m)) }`.
func Main(m *testing.M) int {
	flag.Parse()
	localrunner.Configure()
	return ptest.MainRet(m)
}
