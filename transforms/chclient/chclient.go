// Package chclient opens connections to ClickHouse through clickhouse-go/v2 from the template's
// connection parameters. It is the one place that turns clickHouseUrl into a protocol, an address
// and TLS settings; the schema fetch and the write stage share it.
//
// URL forms (see pipeline.Options):
//   - http://host[:8123]   clickhouse-go's HTTP protocol, plain text
//   - https://host[:8443]  HTTP protocol over TLS with certificate verification (ClickHouse Cloud)
//   - clickhouse://host[:9000]  the native protocol (needed for ClickHouse servers older than 21.x:
//     clickhouse-go's HTTP transport sends the setting client_protocol_version, unknown to them)
package chclient

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/url"
	"strings"
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

// RedactURL returns raw with the password of its userinfo, if any, replaced by "xxxxx". A value
// that does not parse as a URL is returned as "<unparseable URL>" since it may hold a password.
func RedactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "<unparseable URL>"
	}
	return u.Redacted()
}

// Options translates c into clickhouse-go options. Default ports: 8123 for http, 8443 for https,
// 9000 for clickhouse. Errors name the parameter clickHouseUrl and never contain the password.
func (c Config) Options() (*clickhouse.Options, error) {
	u, err := url.Parse(c.URL)
	if err != nil {
		return nil, fmt.Errorf("clickHouseUrl %q does not parse as a URL", RedactURL(c.URL))
	}
	host := u.Hostname()
	if host == "" {
		return nil, fmt.Errorf("clickHouseUrl %q has no host", u.Redacted())
	}
	port := u.Port()
	o := &clickhouse.Options{
		Auth: clickhouse.Auth{Database: c.Database, Username: c.Username, Password: c.Password},
		// Dial and read timeouts bound how long a dead server stalls a bundle; an INSERT of
		// a large block can legitimately take long, hence the generous read timeout.
		DialTimeout:      10 * time.Second,
		ReadTimeout:      5 * time.Minute,
		MaxOpenConns:     4,
		MaxIdleConns:     4,
		ConnMaxLifetime:  time.Hour,
		ConnOpenStrategy: clickhouse.ConnOpenInOrder,
	}
	switch strings.ToLower(u.Scheme) {
	case "http":
		o.Protocol = clickhouse.HTTP
		if port == "" {
			port = "8123"
		}
	case "https":
		o.Protocol = clickhouse.HTTP
		o.TLS = &tls.Config{ServerName: host, MinVersion: tls.VersionTLS12}
		if port == "" {
			port = "8443"
		}
	case "clickhouse":
		o.Protocol = clickhouse.Native
		if port == "" {
			port = "9000"
		}
	default:
		return nil, fmt.Errorf("clickHouseUrl %q: scheme %q is not one of http://host:8123, https://host:8443 (ClickHouse Cloud), clickhouse://host:9000 (native protocol)", u.Redacted(), u.Scheme)
	}
	o.Addr = []string{net.JoinHostPort(host, port)}
	return o, nil
}

// Open opens a connection pool and pings the server. Errors name the server address and the
// user, never the password.
func Open(ctx context.Context, c Config) (driver.Conn, error) {
	o, err := c.Options()
	if err != nil {
		return nil, err
	}
	conn, err := clickhouse.Open(o)
	if err != nil {
		return nil, fmt.Errorf("clickhouse %s: %w", RedactURL(c.URL), err)
	}
	pctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := conn.Ping(pctx); err != nil {
		conn.Close()
		return nil, fmt.Errorf("clickhouse %s as user %q: %w", RedactURL(c.URL), c.Username, err)
	}
	return conn, nil
}
