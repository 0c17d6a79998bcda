package integration_test

import (
	"sync"
	"testing"

	"github.com/ch-beam/pubsub-to-clickhouse/internal/leak"
)

// The secrets of the tests: every password that a test gives the binary or keeps in the Secret
// Manager stand-in, and every private key a test makes. Whatever the binary prints, in every
// test that runs it, is scanned for all of them (checkOutput): as text and in base64.
var (
	secretsMu   sync.Mutex
	testSecrets = []string{launchPassword, configPassword}
)

// addSecret adds s to the secrets that no output may hold.
func addSecret(s string) {
	secretsMu.Lock()
	defer secretsMu.Unlock()
	testSecrets = append(testSecrets, s)
}

// checkOutput fails the test when out, what the binary printed, holds a test secret.
func checkOutput(t *testing.T, what string, out []byte) {
	t.Helper()
	secretsMu.Lock()
	secrets := append([]string(nil), testSecrets...)
	secretsMu.Unlock()
	leak.Check(t, what, out, secrets...)
}
