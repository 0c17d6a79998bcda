package integration_test

import (
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

var (
	binaryOnce sync.Once
	binaryPath string
	binaryErr  error
)

// pipelineBinary builds the pipeline's binary once per test run.
func pipelineBinary(t *testing.T) string {
	t.Helper()
	binaryOnce.Do(func() {
		dir, err := os.MkdirTemp("", "pubsub-to-clickhouse-bin")
		if err != nil {
			binaryErr = err
			return
		}
		binaryPath = filepath.Join(dir, "pubsub-to-clickhouse")
		if out, err := exec.Command("go", "build", "-o", binaryPath, "../flex-template").CombinedOutput(); err != nil {
			binaryErr = err
			t.Logf("%s", out)
		}
	})
	if binaryErr != nil {
		t.Fatalf("building the pipeline: %v", binaryErr)
	}
	return binaryPath
}

// TestConfigurationErrors launches the pipeline with one mistake at a time and checks that it
// stops at once with one clear sentence naming the parameter and what to check, and never shows
// the password.
func TestConfigurationErrors(t *testing.T) {
	bin := pipelineBinary(t)
	e := newE2E(t, `CREATE TABLE {table} (id UInt32) ENGINE = MergeTree ORDER BY id`)
	tlsPort := httptest.NewTLSServer(http.NotFoundHandler())
	defer tlsPort.Close()
	tlsHost := strings.TrimPrefix(tlsPort.URL, "https://")
	o := e.opts
	base := map[string]string{
		"inputSubscription": o.InputSubscription, "clickHouseUrl": o.ClickHouseURL, "clickHouseDatabase": o.ClickHouseDatabase,
		"clickHouseTable": "events", "clickHouseUsername": "default", "clickHousePassword": "",
		"clickHouseDeadLetterTable": "dead_letters", "deadLetterTopic": o.DeadLetterTopic,
	}
	const secret = "s3cr3t-PW"
	for _, tc := range []struct {
		name string
		set  map[string]string
		want string
	}{
		{"nothing listens at the port", map[string]string{"clickHouseUrl": "clickhouse://127.0.0.1:1"}, "clickHouseUrl: nothing listens at clickhouse://127.0.0.1:1"},
		{"the host does not resolve", map[string]string{"clickHouseUrl": "clickhouse://no-such-host.invalid:9000"}, "clickHouseUrl: the host of clickhouse://no-such-host.invalid:9000 does not resolve"},
		{"native protocol to the HTTP port", map[string]string{"clickHouseUrl": "clickhouse://127.0.0.1:8123"}, "clickHouseUrl: the server at clickhouse://127.0.0.1:8123 did not complete the native protocol's handshake"},
		{"https to a plain port", map[string]string{"clickHouseUrl": "https://127.0.0.1:8123"}, "clickHouseUrl: https://127.0.0.1:8123 uses https://, but the server answers plain HTTP"},
		{"http to a TLS port", map[string]string{"clickHouseUrl": "http://" + tlsHost}, "uses http://, but the server expects TLS on that port: use https://"},
		{"http to the native port", map[string]string{"clickHouseUrl": "http://127.0.0.1:9000"}, "that port speaks ClickHouse's native protocol: use clickhouse://"},
		{"http to a server too old for it", map[string]string{"clickHouseUrl": "http://127.0.0.1:8123"}, "too old for clickhouse-go's HTTP protocol: use the native protocol, clickhouse://host:9000"},
		{"wrong password", map[string]string{"clickHousePassword": secret}, `clickHousePassword: ClickHouse refused the password of user "default"`},
		{"password in the URL", map[string]string{"clickHouseUrl": "clickhouse://default:" + secret + "@127.0.0.1:1"}, "clickHouseUrl: nothing listens at clickhouse://default:xxxxx@127.0.0.1:1"},
		{"unknown user", map[string]string{"clickHouseUsername": "nobody"}, `clickHouseUsername: ClickHouse at`},
		{"missing database", map[string]string{"clickHouseDatabase": "no_such_db"}, `clickHouseDatabase: database "no_such_db" does not exist`},
		{"missing table", map[string]string{"clickHouseTable": "nope"}, "clickHouseTable: table " + o.ClickHouseDatabase + ".nope does not exist"},
		{"missing dead-letter table", map[string]string{"clickHouseDeadLetterTable": "nope"}, "clickHouseDeadLetterTable: table " + o.ClickHouseDatabase + ".nope does not exist (no columns in system.columns): check the database and table names, and that the user may read the table; create it with: CREATE TABLE `" + o.ClickHouseDatabase + "`.`nope` (raw_message String"},
		{"missing dead-letter topic", map[string]string{"deadLetterTopic": "projects/test-project/topics/nope"}, "deadLetterTopic projects/test-project/topics/nope does not exist"},
		{"missing subscription", map[string]string{"inputSubscription": "projects/test-project/subscriptions/nope"}, "inputSubscription projects/test-project/subscriptions/nope does not exist"},
		{"invalid parameters", map[string]string{"inputSubscription": "my-sub", "windowSeconds": "0"}, `inputSubscription "my-sub"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			flags := map[string]string{}
			for k, v := range base {
				flags[k] = v
			}
			for k, v := range tc.set {
				flags[k] = v
			}
			args := []string{"--runner=prism"}
			for k, v := range flags {
				args = append(args, "--"+k+"="+v)
			}
			cmd := exec.Command(bin, args...)
			cmd.Env = append(os.Environ(), "PUBSUB_EMULATOR_HOST="+e.ps.Addr)
			done := make(chan struct{})
			var out []byte
			var err error
			go func() { out, err = cmd.CombinedOutput(); close(done) }()
			select {
			case <-done:
			case <-time.After(90 * time.Second):
				cmd.Process.Kill()
				t.Fatal("the launch did not stop within 90 s")
			}
			if strings.Contains(string(out), "pubsub-to-clickhouse: clickHouseTable: clickHouse") {
				t.Errorf("the error names two parameters:\n%s", out)
			}
			if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
				t.Fatalf("exit: %v, want status 1; output:\n%s", err, out)
			}
			var last string
			for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
				if strings.HasPrefix(l, "pubsub-to-clickhouse: ") {
					last = l
				}
			}
			if !strings.Contains(last, tc.want) && !strings.Contains(string(out), tc.want) {
				t.Errorf("output does not contain %q:\n%s", tc.want, out)
			}
			if strings.Contains(string(out), secret) {
				t.Errorf("output shows the password:\n%s", out)
			}
			t.Logf("%s", last)
		})
	}
}
