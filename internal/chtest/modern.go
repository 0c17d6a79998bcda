package chtest

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// ModernServer is the test's own stand-in of ClickHouse's HTTP interface over the ClickHouse 26
// engine (integration_test/chmodern: every statement executed by the engine), on a free loopback
// port with its tables in the test's temporary directory.
type ModernServer struct {
	*Server        // URL and HTTP are both the stand-in's http:// URL
	Version string // the engine's version(), such as 26.7.2.1
}

// StartModern starts a stand-in for the test and returns it with a fresh database; it is stopped
// when the test ends. The binary is built once per test process (go build -tags chdb, into the
// module's bin/). CLICKHOUSE_URL and CLICKHOUSE_HTTP point at it for the rest of the test.
//
// Without the engine's library (scripts/chdb.sh path fails), the test is skipped, unless it runs
// in CI (CI=true), where it fails: CI installs it (.ci/run).
func StartModern(t testing.TB) *ModernServer {
	t.Helper()
	root := moduleRoot()
	lib, err := exec.Command(filepath.Join(root, "scripts", "chdb.sh"), "path").Output()
	if err != nil {
		msg := "the ClickHouse 26 engine is not installed (scripts/chdb.sh install)"
		if ee, ok := err.(*exec.ExitError); ok {
			msg = strings.TrimSpace(string(ee.Stderr))
		}
		if strings.EqualFold(os.Getenv("CI"), "true") {
			t.Fatalf("%s: CI must install it", msg)
		}
		t.Skip(msg)
	}
	bin := modernBinary(t, root)
	cmd := exec.Command(bin, "-listen", "127.0.0.1:0", "-path", filepath.Join(t.TempDir(), "data"))
	cmd.Env = append(os.Environ(), "CHDB_LIB_PATH="+strings.TrimSpace(string(lib)))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("%s: %v", bin, err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	// It prints "chmodern: serving ClickHouse <version> on http://<address> (tables in <dir>)"
	// once it listens.
	ready := make(chan []string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if m := servingLine.FindStringSubmatch(sc.Text()); m != nil {
				ready <- m
			}
		}
		close(ready)
	}()
	var m []string
	select {
	case m = <-ready:
	case <-time.After(60 * time.Second):
	}
	if m == nil {
		t.Fatalf("%s did not start serving within 60 s; its standard error:\n%s", bin, stderr.String())
	}
	t.Setenv("CLICKHOUSE_URL", m[2])
	t.Setenv("CLICKHOUSE_HTTP", m[2])
	s := &ModernServer{Server: New(t), Version: m[1]}
	s.modern = true
	return s
}

var servingLine = regexp.MustCompile(`^chmodern: serving ClickHouse (\S+) on (http://\S+) `)

var (
	buildOnce sync.Once
	buildErr  error
)

// modernBinary builds the stand-in once per process into the module's bin/chmodern (through a
// file of the process's own, renamed into place, so that test processes that build it at the same
// time do not disturb each other) and returns its path.
func modernBinary(t testing.TB, root string) string {
	t.Helper()
	bin := filepath.Join(root, "bin", "chmodern")
	buildOnce.Do(func() {
		if buildErr = os.MkdirAll(filepath.Dir(bin), 0o755); buildErr != nil {
			return
		}
		tmp := fmt.Sprintf("%s.%d", bin, os.Getpid())
		cmd := exec.Command("go", "build", "-tags", "chdb", "-o", tmp, "./integration_test/chmodern")
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build -tags chdb ./integration_test/chmodern: %v\n%s", err, out)
			return
		}
		buildErr = os.Rename(tmp, bin)
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return bin
}

// moduleRoot is the repository's root, found from this file's place in it.
func moduleRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}
