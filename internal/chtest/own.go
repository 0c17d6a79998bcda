package chtest

import (
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
)

// OwnServer is a ClickHouse server of the test's own, started with scripts/clickhouse.sh on
// free ports with a data directory in the test's temporary directory, so that a test may stop and
// start it without disturbing the tests that share the main server.
type OwnServer struct {
	*Server
	env []string
}

// StartOwn starts a server of the test's own and returns it with a fresh database; it is
// stopped when the test ends. env adds variables for scripts/clickhouse.sh, such as
// CLICKHOUSE_MAX_MEMORY_USAGE=100000000.
func StartOwn(t testing.TB, env ...string) *OwnServer {
	t.Helper()
	tcp := 20000 + rand.IntN(20000)
	http := tcp + 1
	s := &OwnServer{env: append(append(os.Environ(), env...),
		"CLICKHOUSE_DIR="+t.TempDir(),
		fmt.Sprintf("CLICKHOUSE_TCP_PORT=%d", tcp),
		fmt.Sprintf("CLICKHOUSE_HTTP_PORT=%d", http),
	)}
	s.Start(t)
	t.Cleanup(func() { s.Stop(t) })
	t.Setenv("CLICKHOUSE_URL", fmt.Sprintf("clickhouse://127.0.0.1:%d", tcp))
	t.Setenv("CLICKHOUSE_HTTP", fmt.Sprintf("http://127.0.0.1:%d", http))
	s.Server = New(t)
	return s
}

func (s *OwnServer) script(t testing.TB, verb string) {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	cmd := exec.Command(filepath.Join(filepath.Dir(file), "..", "..", "scripts", "clickhouse.sh"), verb)
	cmd.Env = s.env
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("scripts/clickhouse.sh %s: %v\n%s", verb, err, out)
	}
}

// Start starts the server and waits until it answers.
func (s *OwnServer) Start(t testing.TB) { s.script(t, "start") }

// Stop stops the server.
func (s *OwnServer) Stop(t testing.TB) { s.script(t, "stop") }
