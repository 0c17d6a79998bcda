package integration_test

import (
	"os"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"
)

// TestMain runs the pipelines of these tests on prism, Beam's local runner, and removes the
// binary that the tests which run it built (launchBinary).
func TestMain(m *testing.M) {
	code := ptest.MainRet(m)
	if binaryDir != "" {
		os.RemoveAll(binaryDir)
	}
	os.Exit(code)
}
