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

// RedactURL returns raw with the password of its userinfo, if any, replaced by "xxxxx".
func RedactURL(raw string) string {
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok {
		return raw
	}
	end := len(rest)
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		end = i
	}
	at := strings.LastIndex(rest[:end], "@")
	if at < 0 {
		return raw
	}
	user, _, hasPassword := strings.Cut(rest[:at], ":")
	if !hasPassword {
		return raw
	}
	return scheme + "://" + user + ":xxxxx" + rest[at:]
}

// Options translates c into clickhouse-go options. The URL's host part may list several
// comma-separated hosts (clickhouse-go tries them in order); default ports: 8123 for http, 8443
// for https, 9000 for clickhouse. Credentials come from c's fields, not the URL. Errors name the
// parameter clickHouseUrl and never contain the password.
func (c Config) Options() (*clickhouse.Options, error) {
	scheme, rest, ok := strings.Cut(c.URL, "://")
	if !ok {
		return nil, fmt.Errorf("clickHouseUrl %q has no scheme; use http://host:8123, https://host:8443 (ClickHouse Cloud) or clickhouse://host:9000 (native protocol)", RedactURL(c.URL))
	}
	authority := rest
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		authority = rest[:i]
	}
	if i := strings.LastIndex(authority, "@"); i >= 0 {
		authority = authority[i+1:]
	}
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
	var defaultPort string
	switch strings.ToLower(scheme) {
	case "http":
		o.Protocol, defaultPort = clickhouse.HTTP, "8123"
	case "https":
		o.Protocol, defaultPort = clickhouse.HTTP, "8443"
	case "clickhouse":
		o.Protocol, defaultPort = clickhouse.Native, "9000"
	default:
		return nil, fmt.Errorf("clickHouseUrl %q: scheme %q is not one of http://host:8123, https://host:8443 (ClickHouse Cloud), clickhouse://host:9000 (native protocol)", RedactURL(c.URL), scheme)
	}
	var firstHost string
	for _, hp := range strings.Split(authority, ",") {
		host, port, err := net.SplitHostPort(hp)
		if err != nil { // no port
			host, port = strings.Trim(hp, "[]"), defaultPort
		}
		if host == "" {
			return nil, fmt.Errorf("clickHouseUrl %q has an empty host", RedactURL(c.URL))
		}
		if firstHost == "" {
			firstHost = host
		}
		o.Addr = append(o.Addr, net.JoinHostPort(host, port))
	}
	if strings.EqualFold(scheme, "https") {
		o.TLS = &tls.Config{ServerName: firstHost, MinVersion: tls.VersionTLS12}
	}
	return o, nil
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
