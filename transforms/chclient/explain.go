package chclient

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"strings"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/secret"
)

// ConfigError is a connection failure explained in one sentence that names the part of the
// Config to fix and what to check. Unwrap gives the driver's error. Its text names the field in
// plain words (`ClickHouse URL: nothing listens at ...`); pipeline.Labelled names the template
// parameter instead (`clickHouseUrl: nothing listens at ...`).
type ConfigError struct {
	Field Field // the part of the Config to look at, e.g. FieldURL
	Hint  Hint  // what is wrong and what to check, naming other fields as Fields
	Err   error
}

func (e *ConfigError) Error() string { return e.Text(Field.String) }
func (e *ConfigError) Unwrap() error { return e.Err }

// Text returns the error's text with each field named by name, its own first:
// "name(Field): hint (driver's error)". Error names them in plain words (Field.String);
// pipeline.Labelled by their template parameters.
func (e *ConfigError) Text(name func(Field) string) string {
	return name(e.Field) + ": " + e.Hint.Text(name) + " (" + e.Err.Error() + ")"
}

// Hint is a sentence of what is wrong and what to check: a format of package fmt and its
// arguments, among which a Field stands for the name of that field, so that one sentence names
// a field in plain words or as its template parameter ("check %s" with FieldUsername).
type Hint struct {
	Format string
	Args   []any
}

// Hintf returns the Hint of format and args.
func Hintf(format string, args ...any) Hint { return Hint{format, args} }

// Text returns the hint with each Field among its arguments named by name.
func (h Hint) Text(name func(Field) string) string {
	args := make([]any, len(h.Args))
	for i, a := range h.Args {
		if f, ok := a.(Field); ok {
			a = name(f)
		}
		args[i] = a
	}
	return fmt.Sprintf(h.Format, args...)
}

// Field is a part of a Config that a ConfigError is about.
type Field int

// The fields of a Config that a ConfigError, or a rule (URLRule, CompressionRule), names.
const (
	FieldURL               Field = iota + 1 // Config.URL
	FieldDatabase                           // Config.Database
	FieldUsername                           // Config.Username
	FieldPassword                           // Config.Password
	FieldCACertificate                      // Config.CACertificate
	FieldClientCertificate                  // Config.ClientCertificate
	FieldClientKey                          // Config.ClientKey
	FieldCompression                        // Config.Compression
)

// Fields are the fields of a Config that a ConfigError or a rule names, in the order of Config.
var Fields = []Field{FieldURL, FieldDatabase, FieldUsername, FieldPassword, FieldCACertificate, FieldClientCertificate, FieldClientKey, FieldCompression}

var fieldNames = map[Field]string{
	FieldURL:               "ClickHouse URL",
	FieldDatabase:          "ClickHouse database",
	FieldUsername:          "ClickHouse user",
	FieldPassword:          "ClickHouse password",
	FieldCACertificate:     "ClickHouse CA certificate",
	FieldClientCertificate: "ClickHouse client certificate",
	FieldClientKey:         "ClickHouse client key",
	FieldCompression:       "ClickHouse compression",
}

// String names the field in plain words: "ClickHouse URL".
func (f Field) String() string {
	if n, ok := fieldNames[f]; ok {
		return n
	}
	return fmt.Sprintf("chclient.Field(%d)", int(f))
}

// explain turns a failure to open a connection into a ConfigError when its cause is a likely
// misconfiguration; other errors are returned as they are. askedForCert tells that the server
// asked for a client certificate during the TLS handshake. The texts never hold the password.
func explain(err error, c Config, askedForCert bool) error {
	if err == nil {
		return nil
	}
	url := RedactURL(c.URL)
	scheme, _, _ := strings.Cut(strings.ToLower(c.URL), "://")
	msg := err.Error()
	if tlsErr := explainTLS(err, c, url, scheme, askedForCert); tlsErr != nil {
		return tlsErr
	}
	ex, isEx := serverException(err)
	var httpErr *clickhouse.HTTPError
	var dns *net.DNSError
	proxy := proxyAnswer(err, c, scheme, isEx)
	switch {
	case isEx && (ex.Code == 193 || ex.Code == 516) && c.Password == "" && passwordInURL(c.URL):
		// The password given only in the URL (user:password@ or ?password=), which parseURL uses.
		return &ConfigError{FieldURL, Hintf("ClickHouse refused the password of user %q at %s, which the URL holds (%s is not set): check %s and the password in %s",
			c.Username, url, FieldPassword, FieldUsername, FieldURL), err}
	case isEx && (ex.Code == 193 || ex.Code == 516):
		return &ConfigError{FieldPassword, Hintf("ClickHouse refused the password of user %q at %s: check %s and %s", c.Username, url, FieldUsername, FieldPassword), err}
	case isEx && ex.Code == 194 && c.Password.IsVersion():
		// The secret version was read, and held nothing but perhaps a newline (Resolve).
		return &ConfigError{FieldPassword, Hintf("ClickHouse at %s requires a password of user %q, and the Secret Manager secret version %s that %s names "+
			"holds an empty one (a trailing newline is dropped): add a version that holds the password", url, c.Username, c.Password, FieldPassword), err}
	case isEx && ex.Code == 194:
		return &ConfigError{FieldPassword, Hintf("ClickHouse at %s requires a password of user %q, and none was given: set %s", url, c.Username, FieldPassword), err}
	case isEx && ex.Code == 192:
		return &ConfigError{FieldUsername, Hintf("ClickHouse at %s has no user %q: check %s", url, c.Username, FieldUsername), err}
	case isEx && (ex.Code == 291 || ex.Code == 497) && c.Database != "":
		return &ConfigError{FieldDatabase, Hintf("ClickHouse at %s refused user %q the database %q: check %s, and the user's grants on it", url, c.Username, c.Database, FieldDatabase), err}
	case isEx && ex.Code == 81:
		return &ConfigError{FieldDatabase, Hintf("database %q does not exist on %s: check %s", c.Database, url, FieldDatabase), err}
	case proxy == http.StatusProxyAuthRequired:
		return &ConfigError{FieldURL, Hintf("the proxy of %s (its http_proxy option) asks for credentials (HTTP 407 Proxy Authentication Required), so ClickHouse "+
			"was not reached: give the proxy's user and password in http_proxy (http_proxy=http://user:password@host:port)", url), err}
	case proxy == http.StatusBadGateway || proxy == http.StatusServiceUnavailable || proxy == http.StatusGatewayTimeout:
		return &ConfigError{FieldURL, Hintf("the proxy of %s (its http_proxy option), or a gateway behind it, could not reach ClickHouse (HTTP %d %s): check the "+
			"host and port of %s, that the server runs, and that the proxy may reach it", url, proxy, http.StatusText(proxy), FieldURL), err}
	case proxy != 0 && scheme == "https":
		// The proxy's answer to CONNECT: ClickHouse was not reached, so no credential was read.
		return &ConfigError{FieldURL, Hintf("the proxy of %s (its http_proxy option) refused to connect to ClickHouse (HTTP %d %s): check that the proxy "+
			"allows connections to that host and port", url, proxy, http.StatusText(proxy)), err}
	case !isEx && errors.As(err, &httpErr) && (httpErr.StatusCode == http.StatusUnauthorized || httpErr.StatusCode == http.StatusForbidden):
		// A refusal of the credentials whose body says no ClickHouse code: a proxy in front of
		// the server, or a server whose text is of neither form serverException reads.
		in := "the server at " + url
		if proxy != 0 {
			in += " or the proxy of its http_proxy option"
		}
		return &ConfigError{FieldPassword, Hintf("%s refused user %q (HTTP %d %s) without a ClickHouse error code, which ClickHouse gives with each of its refusals: "+
			"a proxy, load balancer or firewall in front of ClickHouse may refuse this machine, or the user name or the password is wrong, or the user "+
			"may not log in from here: check %s and %s", in, c.Username, httpErr.StatusCode, http.StatusText(httpErr.StatusCode), FieldUsername, FieldPassword), err}
	case strings.Contains(msg, `invalid header field value for "X-Clickhouse-Key"`):
		// Over https:// clickhouse-go sends the password in a header, which net/http refuses
		// to send with a control character (a line break, NUL, DEL; a tab passes) before
		// dialling; http:// sends it as Basic authentication, the native protocol in its login.
		field := FieldPassword
		if c.Password == "" {
			field = FieldURL // the password of the URL, which parseURL uses
		}
		return &ConfigError{field, Hintf("the password holds a line break or another control character, which https:// cannot send: clickhouse-go sends " +
			"the password over https:// in an HTTP header (X-ClickHouse-Key), where control characters are not allowed; use the native protocol over " +
			"TLS (clickhouse://host:9440?secure=true), or a password without control characters"), err}
	case errors.As(err, &dns):
		return &ConfigError{FieldURL, Hintf("the host of %s does not resolve: check the host name", url), err}
	case strings.Contains(msg, "proxyconnect"):
		// net/http's error for the proxy of http_proxy, before ClickHouse is reached.
		return &ConfigError{FieldURL, Hintf("the proxy of %s (its http_proxy option) could not be reached, so ClickHouse was not tried: check the proxy's host and port, and that it runs", url), err}
	case scheme == "http" && (strings.Contains(msg, "connection reset") || strings.HasSuffix(msg, "EOF")):
		return &ConfigError{FieldURL, Hintf("the server at %s closed the connection on a plain HTTP request: is this a TLS port? Use https:// for the HTTPS port (8443), "+
			"or clickhouse://...?secure=true for the native protocol's TLS port (9440); else check the port (HTTP 8123)", url), err}
	case strings.Contains(msg, "connection refused"):
		return &ConfigError{FieldURL, Hintf("nothing listens at %s: check the host and the port (native protocol 9000, or 9440 with TLS and ?secure=true; HTTP 8123; HTTPS 8443) and that the server runs", url), err}
	case strings.Contains(msg, "HTTP request to an HTTPS server") || strings.Contains(msg, "plain HTTP request was sent to HTTPS"):
		return &ConfigError{FieldURL, Hintf("%s uses http://, but the server expects TLS on that port: use https://", url), err}
	case strings.Contains(msg, "is for clickhouse-client program") && scheme == "https":
		return &ConfigError{FieldURL, Hintf("%s uses https://, but that port speaks ClickHouse's native protocol with TLS: use clickhouse://...?secure=true with it, or the HTTPS port (8443)", url), err}
	case strings.Contains(msg, "is for clickhouse-client program"):
		return &ConfigError{FieldURL, Hintf("%s uses http://, but that port speaks ClickHouse's native protocol: use clickhouse:// with it, or the HTTP port (8123, 8443 with TLS)", url), err}
	case strings.Contains(msg, "Unknown setting client_protocol_version"):
		return &ConfigError{FieldURL, Hintf("the server at %s is too old for clickhouse-go's HTTP protocol: use the native protocol, clickhouse://host:9000", url), err}
	case scheme == "clickhouse" && strings.Contains(msg, "handshake") && strings.Contains(msg, "i/o timeout"):
		// A server that accepts the connection but answers too slowly: overloaded, or a slow
		// network, as often as a wrong port (a job's connections opened after the first say this).
		return &ConfigError{FieldURL, Hintf("the server at %s accepted the connection but did not answer the native protocol's handshake in time: "+
			"it may be overloaded, or the network slow (the ?dial_timeout= option waits longer); if it never answered, check that this is "+
			"the native port (9000, or 9440 with ?secure=true)", url), err}
	case scheme != "clickhouse" && errors.Is(err, clickhouse.ErrAcquireConnTimeout):
		// Over HTTP clickhouse-go gives the dial and its first query the dial timeout, and says
		// its end as a full pool ("you can increase the number of max open conn"): at Open the
		// pool is empty, so the server did not answer.
		return &ConfigError{FieldURL, Hintf("the server at %s did not answer within the dial timeout (10 s unless the URL's ?dial_timeout= says otherwise): "+
			"check the host and the port (HTTP 8123, HTTPS 8443), that ClickHouse runs there, and that no firewall drops the connection; an overloaded "+
			"server or a slow network may need a longer ?dial_timeout=", url), err}
	case scheme == "clickhouse" && strings.Contains(msg, "handshake") && !UsesTLS(c.URL):
		return &ConfigError{FieldURL, Hintf("the server at %s did not complete the native protocol's handshake: is this the native protocol's TLS port (9440)? Add ?secure=true for it. An HTTP port (8123, 8443)? Use http:// or https://. Else give the native port (9000)", url), err}
	case scheme == "clickhouse" && strings.Contains(msg, "handshake"):
		return &ConfigError{FieldURL, Hintf("the server at %s completed TLS but not the native protocol's handshake: is this the HTTPS port (8443)? Use https:// for it, or the native protocol's TLS port (9440)", url), err}
	}
	return err
}

// proxyAnswer returns the HTTP status of an answer that may not have come from ClickHouse, when
// c's URL (of scheme) goes through an http_proxy: an http:// request's error response without a
// ClickHouse exception (the proxy's, or the server's behind it), or the proxy's refusal of an
// https:// CONNECT, which net/http's Transport gives as the status text alone ("Proxy
// Authentication Required"; its dialConn). Not an https:// error response: it came through the
// proxy's tunnel, from the far end. 0 for none.
func proxyAnswer(err error, c Config, scheme string, isEx bool) int {
	opts, optErr := c.Options()
	if isEx || optErr != nil || opts.HTTPProxyURL == nil {
		return 0
	}
	var httpErr *clickhouse.HTTPError
	switch {
	case errors.As(err, &httpErr) && scheme == "https":
		return 0
	case errors.As(err, &httpErr):
		return httpErr.StatusCode
	case scheme != "https":
		return 0
	}
	for code := 400; code < 600; code++ {
		if t := http.StatusText(code); t != "" && strings.HasSuffix(err.Error(), ": "+t) {
			return code
		}
	}
	return 0
}

// serverException returns the server's exception that err holds, and whether it holds one: the
// *clickhouse.Exception of either protocol, or, over HTTP, the one of an error response whose body
// clickhouse-go reads as no exception, that of older servers (18.16 answers a wrong password with
// HTTP 401 and "Code: 193, e.displayText() = DB::Exception: Wrong password for user default,
// e.what() = DB::Exception", where later ones write "Code: 516. DB::Exception: ..."), so that a
// refusal reads the same over both protocols.
func serverException(err error) (*clickhouse.Exception, bool) {
	var ex *clickhouse.Exception
	if errors.As(err, &ex) {
		return ex, true
	}
	var httpErr *clickhouse.HTTPError
	if !errors.As(err, &httpErr) || httpErr.Err == nil {
		return nil, false
	}
	// clickhouse-go keeps such a body quoted: `response body: "Code: 193, e.displayText() = ..."`.
	m := legacyHTTPException.FindStringSubmatch(httpErr.Err.Error())
	if m == nil {
		return nil, false
	}
	code, err := strconv.ParseInt(m[1], 10, 32)
	if err != nil || code <= 0 {
		return nil, false
	}
	msg := m[2]
	if unquoted, err := strconv.Unquote(`"` + msg + `"`); err == nil {
		msg = unquoted
	}
	return &clickhouse.Exception{Code: int32(code), Name: "DB::Exception", Message: msg}, true
}

// legacyHTTPException matches the body of an older server's HTTP error as clickhouse-go quotes it,
// and gives its code and message.
var legacyHTTPException = regexp.MustCompile(`^response body: "Code: (\d+), e\.displayText\(\) = DB::\w*Exception: (.*?)(?:, e\.what\(\) = [\w:]+)?(?:\\n)?"$`)

// nativeException is the first byte of the native protocol's exception packet (ServerCodes
// Exception = 2, ClickHouse's src/Core/Protocol.h), which a native port sends in answer to a
// TLS client's hello.
const nativeException = 2

// explainTLS explains a failure of the TLS handshake as a *ConfigError naming the field to
// fix, or returns nil when err is not one. The server's certificate is verified by Go's TLS
// client (x509's errors); the client certificate by the server, whose refusal arrives as a TLS
// alert ("remote error: tls: ...") or, from a server that asked for a certificate and got none or
// one it refused, as a connection closed right after the handshake (TLS 1.3 completes the client's side of the
// handshake before the server has checked its certificate).
func explainTLS(err error, c Config, url, scheme string, askedForCert bool) error {
	msg := err.Error()
	var unknown x509.UnknownAuthorityError
	var host x509.HostnameError
	var invalid x509.CertificateInvalidError
	var record tls.RecordHeaderError
	// A connection the server closed right after the handshake (see above).
	closed := askedForCert && (strings.Contains(msg, "connection reset") || strings.Contains(msg, "EOF") || strings.Contains(msg, "broken pipe"))
	switch {
	case scheme == "https" && errors.As(err, &record) && record.RecordHeader[0] == nativeException:
		// The native protocol's server answers a TLS hello with an exception packet.
		return &ConfigError{FieldURL, Hintf("%s uses https://, but that port speaks ClickHouse's native protocol without TLS: use clickhouse:// with it, or the HTTPS port (8443)", url), err}
	case strings.Contains(msg, "server gave HTTP response to HTTPS client") || (scheme == "https" && errors.As(err, &record)):
		return &ConfigError{FieldURL, Hintf("%s uses https://, but the server answers plain HTTP on that port: use http://, or the server's HTTPS port (8443 on ClickHouse Cloud)", url), err}
	case errors.As(err, &record):
		return &ConfigError{FieldURL, Hintf("%s asks for TLS (secure=true), but the server answers without TLS on that port: give the native protocol's TLS port (tcp_port_secure, 9440 by default), or drop secure=true", url), err}
	case errors.As(err, &unknown) || strings.Contains(msg, "x509: certificate signed by unknown authority"):
		if c.CACertificate == "" {
			return &ConfigError{FieldCACertificate, Hintf("the certificate of the server at %s is not signed by an authority this machine trusts (%[2]s is unset, so the system's roots): give the certificate of the authority that signed it in %[2]s", url, FieldCACertificate), err}
		}
		return &ConfigError{FieldCACertificate, Hintf("the certificate of the server at %s is not signed by the authority of %s %s: give the certificate of the authority that signed the server's", url, FieldCACertificate, secret.ShownRef(c.CACertificate)), err}
	case errors.As(err, &host):
		return &ConfigError{FieldURL, Hintf("the certificate of the server at %s is not valid for the host %q (%s): give a host name the certificate holds in %s, or that name as tls_server_name=<name>", url, host.Host, certNames(host.Certificate), FieldURL), err}
	case errors.As(err, &invalid) && invalid.Reason == x509.Expired:
		return &ConfigError{FieldURL, Hintf("the certificate of the server at %s, or of an authority that signed it, has expired or is not yet valid (%s): the server needs a valid certificate; the pipeline never skips the check", url, invalid.Detail), err}
	case errors.As(err, &invalid):
		return &ConfigError{FieldURL, Hintf("the certificate of the server at %s does not verify (%v): the server needs a certificate fit for TLS servers; the pipeline never skips the check", url, invalid), err}
	case strings.Contains(msg, "remote error: tls: certificate required"),
		c.ClientCertificate == "" && strings.Contains(msg, "remote error: tls: handshake failure"),
		c.ClientCertificate == "" && closed:
		return &ConfigError{FieldClientCertificate, Hintf("the server at %s requires a client certificate (mutual TLS): give it in %s, and its key in %s", url, FieldClientCertificate, FieldClientKey), err}
	case c.ClientCertificate != "" && strings.Contains(msg, "remote error: tls:"),
		// The alert can be lost: under TLS 1.3 the client writes its first message before the
		// server has checked the certificate, and the write then meets the closed connection.
		c.ClientCertificate != "" && closed:
		return &ConfigError{FieldClientCertificate, Hintf("the server at %s refused the client certificate %s: give one signed by an authority that the server trusts (its openSSL.server.caConfig)", url, secret.ShownRef(c.ClientCertificate)), err}
	}
	return nil
}

// certNames returns the names a certificate is valid for, for messages.
func certNames(cert *x509.Certificate) string {
	if cert == nil {
		return "no certificate"
	}
	var names []string
	names = append(names, cert.DNSNames...)
	for _, ip := range cert.IPAddresses {
		names = append(names, ip.String())
	}
	if len(names) == 0 {
		return "it names no host"
	}
	return "it is valid for " + strings.Join(names, ", ")
}
