package integration_test

import (
	"maps"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// startupFailure is a launch that must stop at start-up: the template parameters it changes and
// what it must say.
type startupFailure struct {
	name string
	set  map[string]string
	want string
}

// connectionFlags returns the template parameters of a launch that reads subscription and
// inserts into the table events of database on the server of url, as the user default without a
// password, with the dead-letter table dead_letters.
func connectionFlags(subscription, url, database string) map[string]string {
	return map[string]string{
		"inputSubscription": subscription, "clickHouseUrl": url, "clickHouseDatabase": database,
		"clickHouseTable": "events", "clickHouseUsername": "default", "clickHousePassword": "",
		"clickHouseDeadLetterTable": "dead_letters",
	}
}

// checkStartupFailures runs the binary on the local runner once per failure, with the template
// parameters of base changed by its set, and checks that it stops at start-up with status 1,
// saying what it must, and never naming two parameters at once; runLaunch holds every output to
// the test secrets.
func checkStartupFailures(t *testing.T, bin string, base map[string]string, failures []startupFailure) {
	t.Helper()
	checkFailures(t, bin, base, failures, "exit status 1")
}

// checkUsageFailures is checkStartupFailures for a command line that is wrong (a template
// parameter that breaks its rule), which stops before any check with status 2.
func checkUsageFailures(t *testing.T, bin string, base map[string]string, failures []startupFailure) {
	t.Helper()
	checkFailures(t, bin, base, failures, "exit status 2")
}

func checkFailures(t *testing.T, bin string, base map[string]string, failures []startupFailure, status string) {
	t.Helper()
	for _, f := range failures {
		t.Run(f.name, func(t *testing.T) {
			flags := maps.Clone(base)
			maps.Copy(flags, f.set)
			out, err := launchOnPrism(t, bin, flags)
			if err == nil || err.Error() != status {
				t.Errorf("the launch: %v, want %s; output:\n%s", err, status, out)
			}
			if !strings.Contains(out, f.want) {
				t.Errorf("the output does not say %q:\n%s", f.want, out)
			}
			if strings.Contains(out, "pubsub-to-clickhouse: clickHouseTable: clickHouse") {
				t.Errorf("the error names two parameters:\n%s", out)
			}
			if i := strings.LastIndex(out, "pubsub-to-clickhouse: "); i >= 0 {
				t.Logf("%s", strings.TrimSpace(out[i:]))
			}
		})
	}
}

// configPassword is the wrong password that TestConfigurationErrors gives.
const configPassword = "s3cr3t-PW"

// TestConfigurationErrors launches the pipeline with one mistake at a time and checks that it
// stops at once with one clear sentence naming the parameter and what to check, and never shows
// the password.
func TestConfigurationErrors(t *testing.T) {
	bin, _ := launchBinary(t)
	e := newE2E(t, `CREATE TABLE {table} (id UInt32) ENGINE = MergeTree ORDER BY id`)
	tlsPort := httptest.NewTLSServer(http.NotFoundHandler())
	defer tlsPort.Close()
	tlsHost := strings.TrimPrefix(tlsPort.URL, "https://")
	o := e.opts
	base := connectionFlags(o.InputSubscription, o.ClickHouseURL, o.ClickHouseDatabase)
	base["deadLetterTopic"] = o.DeadLetterTopic
	checkStartupFailures(t, bin, base, []startupFailure{
		{"nothing listens at the port", map[string]string{"clickHouseUrl": "clickhouse://127.0.0.1:1"}, "clickHouseUrl: nothing listens at clickhouse://127.0.0.1:1"},
		{"the host does not resolve", map[string]string{"clickHouseUrl": "clickhouse://no-such-host.invalid:9000"}, "clickHouseUrl: the host of clickhouse://no-such-host.invalid:9000 does not resolve"},
		{"native protocol to the HTTP port", map[string]string{"clickHouseUrl": "clickhouse://127.0.0.1:8123"}, "clickHouseUrl: clickhouse://127.0.0.1:8123 uses the native protocol (clickhouse://), but 127.0.0.1:8123 is ClickHouse's HTTP interface (it answers GET /ping): use http://127.0.0.1:8123, or the native port (9000) with clickhouse://"},
		{"https to a plain port", map[string]string{"clickHouseUrl": "https://127.0.0.1:8123"}, "clickHouseUrl: https://127.0.0.1:8123 uses https://, but the server answers plain HTTP"},
		{"http to a TLS port", map[string]string{"clickHouseUrl": "http://" + tlsHost}, "uses http://, but the server expects TLS on that port: use https://"},
		{"http to the native port", map[string]string{"clickHouseUrl": "http://127.0.0.1:9000"}, "that port speaks ClickHouse's native protocol: use clickhouse://"},
		{"http to a server too old for it", map[string]string{"clickHouseUrl": "http://127.0.0.1:8123"}, "too old for clickhouse-go's HTTP protocol: use the native protocol, clickhouse://host:9000"},
		{"a URL option that is no setting", map[string]string{"clickHouseUrl": "clickhouse://127.0.0.1:9000?no_such_setting=1"}, "clickHouseUrl: the server has no setting of that name"},
		{"wrong password", map[string]string{"clickHousePassword": configPassword}, `clickHousePassword: ClickHouse refused the password of user "default"`},
		{"password in the URL", map[string]string{"clickHouseUrl": "clickhouse://default:" + configPassword + "@127.0.0.1:1"}, "clickHouseUrl: nothing listens at clickhouse://default:xxxxx@127.0.0.1:1"},
		{"unknown user", map[string]string{"clickHouseUsername": "nobody"}, `clickHouseUsername: ClickHouse at`},
		{"missing database", map[string]string{"clickHouseDatabase": "no_such_db"}, `clickHouseDatabase: database "no_such_db" does not exist`},
		{"missing table", map[string]string{"clickHouseTable": "nope"}, "clickHouseTable: table " + o.ClickHouseDatabase + ".nope does not exist"},
		{"missing dead-letter table", map[string]string{"clickHouseDeadLetterTable": "nope"}, "clickHouseDeadLetterTable: table " + o.ClickHouseDatabase + ".nope does not exist (no columns in system.columns): check the database and table names, and that the user may read the table; create it with: CREATE TABLE `" + o.ClickHouseDatabase + "`.`nope` (raw_message String"},
		{"missing dead-letter topic", map[string]string{"deadLetterTopic": "projects/test-project/topics/nope"}, "deadLetterTopic projects/test-project/topics/nope does not exist"},
		{"missing subscription", map[string]string{"inputSubscription": "projects/test-project/subscriptions/nope"}, "inputSubscription projects/test-project/subscriptions/nope does not exist"},
	})
	checkUsageFailures(t, bin, base, []startupFailure{
		{"invalid parameters", map[string]string{"inputSubscription": "my-sub", "windowSeconds": "0"}, `inputSubscription "my-sub"`},
	})
}
