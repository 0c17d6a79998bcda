// Package chclient opens connections to ClickHouse through clickhouse-go/v2 from the template's
// connection parameters. It is the one place that turns clickHouseUrl into a protocol, an address
// and TLS settings; the schema fetch and the write stage share it. It also builds every INSERT the
// write and dead-letter stages send (Insert, in insert.go): one statement, one identifier
// quoting (QuoteIdent) and one deduplication token (DeduplicationToken).
//
// URL forms (see pipeline.Options):
//   - http://host[:8123]   clickhouse-go's HTTP protocol, plain text
//   - https://host[:8443]  HTTP protocol over TLS with certificate verification (ClickHouse Cloud)
//   - clickhouse://host[:9000]  the native protocol (needed for ClickHouse servers older than 21.x:
//     clickhouse-go's HTTP transport sends the setting client_protocol_version, unknown to them)
package chclient

import (
	"context"
	"fmt"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
)

// Config is what a worker needs to reach the ClickHouse server. It is serialised into DoFns, so
// its fields are exported; String redacts the password.
type Config struct {
	URL      string // clickHouseUrl: http://, https:// or clickhouse://
	Database string // clickHouseDatabase
	Username string // clickHouseUsername
	Password string // clickHousePassword; never printed
}

// String prints the configuration with the password replaced by "xxxxx".
func (c Config) String() string {
	return fmt.Sprintf("{URL:%s Database:%s Username:%s Password:%s}", RedactURL(c.URL), c.Database, c.Username, redacted(c.Password))
}

// GoString is String, so that %#v cannot print the password either.
func (c Config) GoString() string { return "chclient.Config" + c.String() }

func redacted(s string) string {
	if s == "" {
		return `""`
	}
	return "xxxxx"
}

// Options translates c into clickhouse-go options: c.URL read by clickhouse-go's own DSN parser
// (every option it may carry honoured or refused, see url.go), several comma-separated hosts
// tried in order, default ports 8123 for http, 8443 for https, 9000 for clickhouse, the
// credentials and database of c's fields. Errors name the parameter clickHouseUrl and never
// contain the password.
func (c Config) Options() (*clickhouse.Options, error) {
	return parseURL(c)
}

// Open opens a connection pool and pings the server. Errors name the server address and the
// user, never the password; a likely misconfiguration (wrong port or scheme, wrong password,
// missing database) is a *ConfigError that says which parameter to fix.
func Open(ctx context.Context, c Config) (driver.Conn, error) {
	o, err := c.Options()
	if err != nil {
		return nil, err
	}
	conn, err := clickhouse.Open(o)
	if err != nil {
		return nil, explain(fmt.Errorf("clickhouse %s: %w", RedactURL(c.URL), err), c)
	}
	pctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := conn.Ping(pctx); err != nil {
		conn.Close()
		return nil, explain(fmt.Errorf("clickhouse %s as user %q: %w", RedactURL(c.URL), c.Username, err), c)
	}
	return conn, nil
}
