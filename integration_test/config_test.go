package integration_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/ch-beam/pubsub-to-clickhouse/internal/chtest"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/chclient"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/secret"
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

// silentServer returns the address (host:port) of a port that accepts connections and never
// answers, until the test ends: a server too slow to say its hello.
func silentServer(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	return l.Addr().String()
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
	// A port that accepts connections and never answers: a server too slow to say its hello.
	silent := silentServer(t)
	o := e.opts
	base := connectionFlags(o.InputSubscription, o.ClickHouseURL, o.ClickHouseDatabase)
	base["deadLetterTopic"] = o.DeadLetterTopic
	checkStartupFailures(t, bin, base, []startupFailure{
		{"nothing listens at the port", map[string]string{"clickHouseUrl": "clickhouse://127.0.0.1:1"}, "clickHouseUrl: nothing listens at clickhouse://127.0.0.1:1"},
		// A second host that nothing answers at: warned of, though the launch took the first (it
		// then stops at the missing table).
		{"a second host that does not answer", map[string]string{"clickHouseUrl": o.ClickHouseURL + ",127.0.0.1:1", "clickHouseTable": "missing_table"},
			`msg="clickHouseUrl: a host does not answer; the job's connections go to the other hosts while it does not (check its name and port if it should)" host=127.0.0.1:1 position="2 of 2"`},
		{"a server that does not answer", map[string]string{"clickHouseUrl": "clickhouse://" + silent + "?dial_timeout=1s"},
			"clickHouseUrl: the server at clickhouse://" + silent + "?dial_timeout=1s accepted the connection but did not answer the native protocol's handshake in time"},
		{"the host does not resolve", map[string]string{"clickHouseUrl": "clickhouse://no-such-host.invalid:9000"}, "clickHouseUrl: the host of clickhouse://no-such-host.invalid:9000 does not resolve"},
		{"native protocol to the HTTP port", map[string]string{"clickHouseUrl": "clickhouse://127.0.0.1:8123"}, "clickHouseUrl: clickhouse://127.0.0.1:8123 uses the native protocol (clickhouse://), but 127.0.0.1:8123 is ClickHouse's HTTP interface (it answers GET /ping): use http://127.0.0.1:8123, or the native port (9000) with clickhouse://"},
		{"https to a plain port", map[string]string{"clickHouseUrl": "https://127.0.0.1:8123"}, "clickHouseUrl: https://127.0.0.1:8123 uses https://, but the server answers plain HTTP"},
		{"https to the native port", map[string]string{"clickHouseUrl": "https://127.0.0.1:9000"}, "clickHouseUrl: https://127.0.0.1:9000 uses https://, but that port speaks ClickHouse's native protocol without TLS: use clickhouse://"},
		{"dead-letter topic the input reads", map[string]string{"deadLetterTopic": e.topic}, "deadLetterTopic " + e.topic + " is the topic of the input subscription " + o.InputSubscription + ": every dead letter published there would come back"},
		{"http to a TLS port", map[string]string{"clickHouseUrl": "http://" + tlsHost}, "uses http://, but the server expects TLS on that port: use https://"},
		{"http to the native port", map[string]string{"clickHouseUrl": "http://127.0.0.1:9000"}, "that port speaks ClickHouse's native protocol: use clickhouse://"},
		{"a proxy that does not answer", map[string]string{"clickHouseUrl": "http://127.0.0.1:8123?http_proxy=http%3A%2F%2F127.0.0.1%3A1"},
			"clickHouseUrl: the proxy of http://127.0.0.1:8123?http_proxy=http%3A%2F%2F127.0.0.1%3A1 (its http_proxy option) could not be reached, so ClickHouse was not tried"},
		{"http to a server too old for it", map[string]string{"clickHouseUrl": "http://127.0.0.1:8123"}, "too old for clickhouse-go's HTTP protocol: use the native protocol, clickhouse://host:9000"},
		{"a URL option that is no setting", map[string]string{"clickHouseUrl": "clickhouse://127.0.0.1:9000?no_such_setting=1"}, "clickHouseUrl: the server has no setting of that name"},
		{"a URL option of text that is none of the driver's", map[string]string{"clickHouseUrl": "clickhouse://127.0.0.1:9000?load_balancing=random"},
			"clickHouseUrl: the option load_balancing of the URL is none of clickhouse-go's, so it is sent to the server as a setting, and clickhouse-go sends no setting of text over the native protocol"},
		{"wrong password", map[string]string{"clickHousePassword": configPassword}, `clickHousePassword: ClickHouse refused the password of user "default"`},
		{"password in the URL", map[string]string{"clickHouseUrl": "clickhouse://default:" + configPassword + "@127.0.0.1:1"}, "clickHouseUrl: nothing listens at clickhouse://default:xxxxx@127.0.0.1:1"},
		{"wrong password in the URL", map[string]string{"clickHouseUrl": strings.Replace(o.ClickHouseURL, "://", "://default:"+configPassword+"@", 1)},
			`clickHouseUrl: ClickHouse refused the password of user "default" at clickhouse://default:xxxxx@`},
		{"unknown user", map[string]string{"clickHouseUsername": "nobody"}, `clickHouseUsername: ClickHouse at`},
		{"missing database", map[string]string{"clickHouseDatabase": "no_such_db"}, `clickHouseDatabase: database "no_such_db" does not exist`},
		{"missing table", map[string]string{"clickHouseTable": "nope"}, "clickHouseTable: table " + o.ClickHouseDatabase + ".nope does not exist"},
		{"a table in another letter case", map[string]string{"clickHouseTable": " " + strings.ToUpper(o.ClickHouseTable)},
			fmt.Sprintf("check the database and table names, and that the user may read the table; the database has the table %q: names are compared byte for byte", o.ClickHouseTable)},
		{"missing dead-letter table", map[string]string{"clickHouseDeadLetterTable": "nope"}, "clickHouseDeadLetterTable: table " + o.ClickHouseDatabase + ".nope does not exist (no columns in system.columns): check the database and table names, and that the user may read the table; create it with: CREATE TABLE `" + o.ClickHouseDatabase + "`.`nope` (raw_message String"},
		{"missing dead-letter topic", map[string]string{"deadLetterTopic": "projects/test-project/topics/nope"}, "deadLetterTopic projects/test-project/topics/nope does not exist"},
		{"missing subscription", map[string]string{"inputSubscription": "projects/test-project/subscriptions/nope"}, "inputSubscription projects/test-project/subscriptions/nope does not exist"},
	})
	checkUsageFailures(t, bin, base, []startupFailure{
		{"invalid parameters", map[string]string{"inputSubscription": "my-sub", "windowSeconds": "0"}, `inputSubscription "my-sub"`},
	})
}

// TestDatabaseTheUserMayNotUse: ClickHouse 18.16 closes the connection, without an error, when a
// user limited by allow_databases (as docs/deploy.md sets one up) asks for another database, one
// that exists or not. The pipeline says the database is the matter, as it does for the user
// default and a database that does not exist, not that the port may be wrong; and a user given
// no password is told to set one.
func TestDatabaseTheUserMayNotUse(t *testing.T) {
	const user, password = "limited", "Limited-pw-7f3e"
	srv := chtest.StartOwn(t)
	srv.AddUser(t, user, password, srv.Database)
	srv.MustExec(t, "CREATE DATABASE elsewhere")
	for _, db := range []string{"elsewhere", "no_such_db"} {
		cfg := chclient.Config{URL: srv.URL, Database: db, Username: user, Password: secret.String(password)}
		r, err := cfg.Resolve(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		_, err = r.Open(context.Background())
		var ce *chclient.ConfigError
		if !errors.As(err, &ce) || ce.Field != chclient.FieldDatabase || !strings.Contains(err.Error(), fmt.Sprintf("database %q", db)) ||
			!strings.Contains(err.Error(), "may not use") {
			t.Errorf("database %s: %v, want a ConfigError of the database, saying the user may not use it", db, err)
		}
		if strings.Contains(err.Error(), password) {
			t.Errorf("the error shows the password: %v", err)
		}
	}
	// The database given in the URL's path, not clickHouseDatabase.
	cfg := chclient.Config{URL: srv.URL + "/elsewhere", Username: user, Password: secret.String(password)}
	r, err := cfg.Resolve(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if _, err = r.Open(context.Background()); err == nil || !strings.Contains(err.Error(), `database "elsewhere"`) || !strings.Contains(err.Error(), "may not use") {
		t.Errorf("database elsewhere in the URL: %v, want it named as the matter", err)
	}
	// No password for a user that has one: the password is the matter.
	cfg = chclient.Config{URL: srv.URL, Database: srv.Database, Username: user}
	r, err = cfg.Resolve(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	_, err = r.Open(context.Background())
	var ce *chclient.ConfigError
	if !errors.As(err, &ce) || ce.Field != chclient.FieldPassword || !strings.Contains(err.Error(), "requires a password") {
		t.Errorf("no password: %v, want a ConfigError of the password", err)
	}
	// The database the user may use opens.
	cfg.Password = secret.String(password)
	r, err = cfg.Resolve(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	conn, err := r.Open(context.Background())
	if err != nil {
		t.Fatalf("the user's own database: %v", err)
	}
	conn.Close()
}
