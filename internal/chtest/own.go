package chtest

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// OwnServer is a ClickHouse server of the test's own, started with scripts/clickhouse.sh on
// free ports with a data directory in the test's temporary directory, so that a test may stop and
// start it, or configure it (TLS, users), without disturbing the tests that share the main
// server.
type OwnServer struct {
	*Server
	Dir        string // its configuration, data and logs
	TCPPort    int    // the native protocol
	HTTPPort   int    // HTTP
	SecurePort int    // the native protocol over TLS (tcp_port_secure); 0 without TLS
	HTTPSPort  int    // HTTP over TLS (https_port); 0 without TLS
	env        []string
}

// Own says how to start a server of the test's own.
type Own struct {
	// Env adds variables for scripts/clickhouse.sh, such as CLICKHOUSE_MAX_MEMORY_USAGE=100000000.
	Env []string
	// TLS, when set, makes the server serve the native protocol and HTTP over TLS as well.
	TLS *TLS
}

// TLS is the TLS configuration of a server of the test's own: ClickHouse's openSSL.server
// section, which serves tcp_port_secure and https_port alike.
type TLS struct {
	CertFile, KeyFile string // the server's certificate and private key, PEM
	// CAFile is the authority that the server trusts for client certificates (caConfig); ""
	// for none.
	CAFile string
	// Verification is the server's verificationMode: "none" (no client certificate asked for,
	// the default), "relaxed" (asked for, verified when given) or "strict" (required).
	Verification string
}

// StartOwn starts a server of the test's own and returns it with a fresh database; it is
// stopped when the test ends. env adds variables for scripts/clickhouse.sh, such as
// CLICKHOUSE_MAX_MEMORY_USAGE=100000000.
func StartOwn(t testing.TB, env ...string) *OwnServer {
	t.Helper()
	return StartOwnWith(t, Own{Env: env})
}

// StartOwnWith starts a server of the test's own as o says, waits until its plain native port
// answers, and returns it with a fresh database (made through its plain HTTP port, as the user
// default); it is stopped when the test ends. CLICKHOUSE_URL and CLICKHOUSE_HTTP point at its
// plain ports for the rest of the test.
//
// Without a ClickHouse server binary on the machine, the test is skipped, unless it runs in CI
// (CI=true), where it fails.
func StartOwnWith(t testing.TB, o Own) *OwnServer {
	t.Helper()
	requireServerBinary(t)
	ports := freePorts(t, 4)
	s := &OwnServer{Dir: t.TempDir(), TCPPort: ports[0], HTTPPort: ports[1]}
	s.env = append(append(os.Environ(), o.Env...),
		"CLICKHOUSE_DIR="+s.Dir,
		fmt.Sprintf("CLICKHOUSE_TCP_PORT=%d", s.TCPPort),
		fmt.Sprintf("CLICKHOUSE_HTTP_PORT=%d", s.HTTPPort),
	)
	if o.TLS != nil {
		s.SecurePort, s.HTTPSPort = ports[2], ports[3]
		writeFile(t, filepath.Join(s.Dir, "config.d", "tls.xml"), tlsConfig(*o.TLS, s.SecurePort, s.HTTPSPort))
	}
	s.Start(t)
	t.Cleanup(func() { s.kill(t) })
	t.Setenv("CLICKHOUSE_URL", fmt.Sprintf("clickhouse://127.0.0.1:%d", s.TCPPort))
	t.Setenv("CLICKHOUSE_HTTP", fmt.Sprintf("http://127.0.0.1:%d", s.HTTPPort))
	s.Server = New(t)
	return s
}

// tlsConfig returns the config.d file that turns TLS on: ClickHouse merges it into the
// config.xml that scripts/clickhouse.sh writes (whose openSSL section names files that do not
// exist, among them a dhParamsFile, which an empty one replaces: the server then uses its
// built-in parameters).
func tlsConfig(o TLS, securePort, httpsPort int) string {
	mode := o.Verification
	if mode == "" {
		mode = "none"
	}
	ca := ""
	if o.CAFile != "" {
		ca = "\n      <caConfig>" + o.CAFile + "</caConfig>"
	}
	return fmt.Sprintf(`<yandex>
  <tcp_port_secure>%d</tcp_port_secure>
  <https_port>%d</https_port>
  <openSSL>
    <server>
      <certificateFile>%s</certificateFile>
      <privateKeyFile>%s</privateKeyFile>
      <dhParamsFile></dhParamsFile>%s
      <verificationMode>%s</verificationMode>
      <loadDefaultCAFile>false</loadDefaultCAFile>
    </server>
  </openSSL>
</yandex>
`, securePort, httpsPort, o.CertFile, o.KeyFile, ca, mode)
}

// AddUser declares a user in a users.d file of the server, with a password (stored as its
// SHA-256), allowed from loopback only, with the settings profile and quota default, and, when
// databases are given, only those databases (and system, which ClickHouse 18.16 leaves open to
// every user); it waits until the user can log in. users.d files are read again while the
// server runs.
func (s *OwnServer) AddUser(t testing.TB, name, password string, databases ...string) {
	t.Helper()
	sum := sha256.Sum256([]byte(password))
	var allow string
	if len(databases) > 0 {
		allow = "\n      <allow_databases>"
		for _, db := range databases {
			allow += "<database>" + db + "</database>"
		}
		allow += "</allow_databases>"
	}
	writeFile(t, filepath.Join(s.Dir, "users.d", name+".xml"), fmt.Sprintf(`<yandex>
  <users>
    <%[1]s>
      <password_sha256_hex>%[2]s</password_sha256_hex>
      <networks><ip>127.0.0.1</ip><ip>::1</ip></networks>
      <profile>default</profile>
      <quota>default</quota>%[3]s
    </%[1]s>
  </users>
</yandex>
`, name, hex.EncodeToString(sum[:]), allow))
	deadline := time.Now().Add(15 * time.Second)
	for {
		_, err := s.Query("SELECT 1", "user="+name, "password="+password)
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("ClickHouse user %s of %s: %v", name, s.Dir, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func (s *OwnServer) script(t testing.TB, verb string) {
	t.Helper()
	cmd := exec.Command(filepath.Join(moduleRoot(), "scripts", "clickhouse.sh"), verb)
	cmd.Env = s.env
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("scripts/clickhouse.sh %s: %v\n%s", verb, err, out)
	}
}

// Start starts the server and waits until it answers.
func (s *OwnServer) Start(t testing.TB) { s.script(t, "start") }

// Stop stops the server, as an operator would (SIGTERM, then waiting for it to exit).
func (s *OwnServer) Stop(t testing.TB) { s.script(t, "stop") }

// kill ends the server at the end of the test: with SIGKILL, which takes no time (a graceful
// stop takes seconds, and the data is thrown away), then waits until it has gone.
func (s *OwnServer) kill(t testing.TB) {
	t.Helper()
	pidFile := filepath.Join(s.Dir, "server.pid")
	b, err := os.ReadFile(pidFile)
	if err != nil {
		return // not running (a test stopped it)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 {
		t.Errorf("%s: %q is not a process id", pidFile, b)
		return
	}
	syscall.Kill(pid, syscall.SIGKILL)
	for deadline := time.Now().Add(10 * time.Second); syscall.Kill(pid, 0) == nil; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Errorf("the ClickHouse server %d of %s is still running 10 s after SIGKILL", pid, s.Dir)
			return
		}
	}
	os.Remove(pidFile)
}

// requireServerBinary skips the test when no ClickHouse server binary is installed, except in CI
// (CI=true), where a missing server is a failure: CI installs it (.ci/run).
func requireServerBinary(t testing.TB) {
	t.Helper()
	if _, err := exec.LookPath("clickhouse-server"); err == nil {
		return
	}
	if _, err := os.Stat("/usr/sbin/clickhouse-server"); err == nil {
		return
	}
	if strings.EqualFold(os.Getenv("CI"), "true") {
		t.Fatal("no clickhouse-server binary (PATH, /usr/sbin): CI must install it (scripts/clickhouse.sh install)")
	}
	t.Skip("no clickhouse-server binary (PATH, /usr/sbin): install it with scripts/clickhouse.sh install")
}

// freePorts returns n distinct TCP ports on loopback that were free a moment ago.
func freePorts(t testing.TB, n int) []int {
	t.Helper()
	var ports []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports
}

func writeFile(t testing.TB, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
