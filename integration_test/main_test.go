package integration_test

import (
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"
)

// TestMain runs the pipelines of these tests on prism, Beam's local runner.
func TestMain(m *testing.M) { ptest.Main(m) }
