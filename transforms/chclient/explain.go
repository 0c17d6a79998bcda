package chclient

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strings"

	"github.com/ClickHouse/clickhouse-go/v2"
)

// ConfigError is a connection failure explained in one sentence that names the template
// parameter to fix and what to check. Unwrap gives the driver's error.
type ConfigError struct {
	Param string // the template parameter to look at, e.g. "clickHouseUrl"
	Hint  string // what is wrong and what to check
	Err   error
}

func (e *ConfigError) Error() string { return e.Param + ": " + e.Hint + " (" + e.Err.Error() + ")" }
func (e *ConfigError) Unwrap() error { return e.Err }

// explain turns a failure to open a connection into a ConfigError when its cause is a likely
// misconfiguration; other errors are returned as they are. The texts never hold the password.
func explain(err error, c Config) error {
	if err == nil {
		return nil
	}
	url := RedactURL(c.URL)
	scheme, _, _ := strings.Cut(strings.ToLower(c.URL), "://")
	msg := err.Error()
	var ex *clickhouse.Exception
	var dns *net.DNSError
	var recordErr tls.RecordHeaderError
	switch {
	case errors.As(err, &ex) && (ex.Code == 193 || ex.Code == 516):
		return &ConfigError{"clickHousePassword", fmt.Sprintf("ClickHouse refused the password of user %q at %s: check clickHouseUsername and clickHousePassword", c.Username, url), err}
	case errors.As(err, &ex) && ex.Code == 192:
		return &ConfigError{"clickHouseUsername", fmt.Sprintf("ClickHouse at %s has no user %q: check clickHouseUsername", url, c.Username), err}
	case errors.As(err, &ex) && ex.Code == 81:
		return &ConfigError{"clickHouseDatabase", fmt.Sprintf("database %q does not exist on %s: check clickHouseDatabase", c.Database, url), err}
	case errors.As(err, &dns):
		return &ConfigError{"clickHouseUrl", fmt.Sprintf("the host of %s does not resolve: check the host name", url), err}
	case strings.Contains(msg, "connection refused"):
		return &ConfigError{"clickHouseUrl", fmt.Sprintf("nothing listens at %s: check the host and the port (native protocol 9000; HTTP 8123; HTTPS 8443) and that the server runs", url), err}
	case strings.Contains(msg, "server gave HTTP response to HTTPS client") || errors.As(err, &recordErr):
		return &ConfigError{"clickHouseUrl", fmt.Sprintf("%s uses https://, but the server answers plain HTTP on that port: use http://, or the server's HTTPS port (8443 on ClickHouse Cloud)", url), err}
	case strings.Contains(msg, "HTTP request to an HTTPS server") || strings.Contains(msg, "plain HTTP request was sent to HTTPS"):
		return &ConfigError{"clickHouseUrl", fmt.Sprintf("%s uses http://, but the server expects TLS on that port: use https://", url), err}
	case strings.Contains(msg, "is for clickhouse-client program"):
		return &ConfigError{"clickHouseUrl", fmt.Sprintf("%s uses http://, but that port speaks ClickHouse's native protocol: use clickhouse:// with it, or the HTTP port (8123, 8443 with TLS)", url), err}
	case strings.Contains(msg, "Unknown setting client_protocol_version"):
		return &ConfigError{"clickHouseUrl", fmt.Sprintf("the server at %s is too old for clickhouse-go's HTTP protocol: use the native protocol, clickhouse://host:9000", url), err}
	case scheme == "clickhouse" && strings.Contains(msg, "handshake"):
		return &ConfigError{"clickHouseUrl", fmt.Sprintf("the server at %s did not complete the native protocol's handshake: is this an HTTP port (8123, 8443) or a TLS port? Use http:// or https:// for those, or the native port (9000)", url), err}
	}
	return err
}
