// Package chclient opens connections to ClickHouse through clickhouse-go/v2 from the template's
// connection parameters. It is the one place that turns clickHouseUrl into a protocol, an address
// and TLS settings (url.go; the TLS configuration, one for both protocols, in tls.go), and that
// reads the password and the certificates kept outside the job graph (Config.Resolve); the
// schema fetch and the write stage share it. It also builds every INSERT the
// write and dead-letter stages send (Insert, in insert.go): one statement, one identifier
// quoting (QuoteIdent) and one deduplication token (DeduplicationToken).
//
// URL forms (see pipeline.Options):
//   - http://host[:8123]   clickhouse-go's HTTP protocol, plain text
//   - https://host[:8443]  HTTP protocol over TLS with certificate verification (ClickHouse Cloud)
//   - clickhouse://host[:9000]  the native protocol (needed for ClickHouse servers older than 21.x:
//     clickhouse-go's HTTP transport sends the setting client_protocol_version, unknown to them)
//   - clickhouse://host:9440?secure=true  the native protocol over TLS, verified as https:// is
package chclient

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/ch-beam/pubsub-to-clickhouse/transforms/secret"
)

// Config is what a worker needs to reach the ClickHouse server. It is serialised into DoFns, so
// its fields are exported, and it holds no secret that a Secret Manager secret version can keep
// instead: Resolve reads those, in a DoFn's Setup. String redacts a password given as text.
type Config struct {
	URL      string // clickHouseUrl: http://, https:// or clickhouse://
	Database string // clickHouseDatabase
	Username string // clickHouseUsername
	// Password is clickHousePassword: the name of the Secret Manager secret version that holds
	// the password (projects/<p>/secrets/<s>/versions/<v|latest>, read by Resolve), or the
	// password itself, which then travels with the DoFns (as JSON, see secret.String); never
	// printed.
	Password secret.String
	// CACertificate is clickHouseCaCertificate: where the PEM certificates of the authorities
	// that may sign the server's certificate are, a file path, a gs:// object or a Secret
	// Manager secret version (see package secret); "" verifies against the system's roots.
	CACertificate string
	// ClientCertificate and ClientKey are clickHouseClientCertificate and clickHouseClientKey:
	// where the PEM certificate and private key that the pipeline presents to a server that
	// asks for one (mutual TLS) are, in the same forms; both or neither.
	ClientCertificate string
	ClientKey         string
	// Compression is clickHouseCompression: how the blocks the pipeline sends are compressed,
	// "lz4", "zstd" or "none" (see CompressionRule); "" is the compress option of URL, or LZ4
	// when the URL has none.
	Compression string
}

// String prints the configuration with a password given as text replaced by "xxxxx" (a secret
// version's name shows as it is).
func (c Config) String() string {
	return fmt.Sprintf("{URL:%s Database:%s Username:%s Password:%s CACertificate:%s ClientCertificate:%s ClientKey:%s Compression:%s}",
		RedactURL(c.URL), c.Database, c.Username, quotedIfEmpty(c.Password.String()), secret.ShownRef(c.CACertificate), secret.ShownRef(c.ClientCertificate), secret.ShownRef(c.ClientKey), c.Compression)
}

// GoString is String, so that %#v cannot print the password either.
func (c Config) GoString() string { return "chclient.Config" + c.String() }

// quotedIfEmpty shows the empty string as "".
func quotedIfEmpty(s string) string {
	if s == "" {
		return `""`
	}
	return s
}

// PasswordAsText reports whether c holds a secret itself, and so the DoFns and the job graph
// do: TextSecrets is not empty.
func (c Config) PasswordAsText() bool { return len(c.TextSecrets()) > 0 }

// TextSecrets returns the secrets c holds as text, each as the driver reads it (percent-decoded):
// clickHousePassword given as text rather than as a Secret Manager secret version, and from
// clickHouseUrl the password of its userinfo (user:password@), the values of query options whose
// names say they hold a secret (password, token, ...: secret.SecretName), and the password of an
// http_proxy option's userinfo (http://user:password@proxy:3128, which clickhouse-go sends to the
// proxy). nil when c names its password in Secret Manager and the URL holds none of these.
func (c Config) TextSecrets() []string {
	var out []string
	if p := c.Password.Text(); p != "" {
		out = append(out, p)
	}
	for _, s := range urlSecrets(c.URL) {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// Options translates c into clickhouse-go options without any I/O: c.URL read by clickhouse-go's
// own DSN parser (every option it may carry honoured or refused, see url.go), several
// comma-separated hosts tried in order, default ports 8123 for http, 8443 for https, 9000 for
// clickhouse, the credentials and database of c's fields. A password of a Secret Manager secret
// version is not read (Auth.Password stays empty) and TLS, when the URL asks for it, verifies
// against the system's roots: Resolve reads those. Errors name the parameter clickHouseUrl and
// never contain the password.
func (c Config) Options() (*clickhouse.Options, error) {
	return parseURL(c)
}

// Resolved is a Config with what it names read: the password of a Secret Manager secret version,
// and the TLS configuration with its certificates and key. Its fields are unexported, so it is
// never serialised; its String is the Config's, so it never prints them. A DoFn resolves its
// Config once, in Setup, and opens connections with Open as often as it needs; Renew reads the
// values again when the server refuses them, for the connections opened after. Its methods may
// be called from several goroutines at once.
type Resolved struct {
	cfg Config
	cur *atomic.Pointer[values] // the values in use; Renew replaces them
}

// values are what a Resolved read of its Config's names.
type values struct {
	password string      // the password read from Secret Manager; "" when Config.Password is the password
	tls      *tls.Config // when the URL asks for TLS
	// askedForCert is set once a server asked for a client certificate (see tlsConfig).
	askedForCert *atomic.Bool
	pem          [3][]byte // the PEM text of TLSParams, as read (nil where unset)
}

// secretPassword is the password a Secret Manager payload holds: the payload without one
// trailing "\n" or "\r\n", the line end that `echo` or an editor adds (a lone "\r" stays).
func secretPassword(payload []byte) string {
	p := string(payload)
	if rest, ok := strings.CutSuffix(p, "\n"); ok {
		return strings.TrimSuffix(rest, "\r")
	}
	return p
}

// Resolve reads what c names outside itself: the password, when clickHousePassword is a Secret
// Manager secret version, and, when clickHouseUrl asks for TLS (https://, or clickhouse:// with
// secure=true), the certificates and key of clickHouseCaCertificate, clickHouseClientCertificate
// and clickHouseClientKey, from which it builds the TLS configuration (see tlsConfig). A single
// trailing newline of the password's payload (as `echo pw | gcloud secrets versions add
// --data-file=-` stores it, or "\r\n") is dropped (secretPassword). Errors are *ConfigError naming the field to fix and,
// for Secret Manager, the permission secretmanager.versions.access; none holds the password or
// the key.
func (c Config) Resolve(ctx context.Context) (*Resolved, error) {
	o, err := parseURL(c)
	if err != nil {
		return nil, err
	}
	r := &Resolved{cfg: c, cur: new(atomic.Pointer[values])}
	v := &values{}
	if v.password, err = c.readPassword(ctx); err != nil {
		return nil, err
	}
	if c.Password.IsVersion() {
		LogOnce(FieldPassword.String()+" read from Secret Manager", "version", c.Password)
	}
	if o.TLS == nil {
		for _, p := range c.TLSParams() {
			if p.Ref != "" {
				return nil, &ConfigError{p.Field, Hintf("is set, but %s %s does not use TLS: use https://, or clickhouse://host:9440?secure=true", FieldURL, RedactURL(c.URL)), errNoTLS}
			}
		}
		r.cur.Store(v)
		return r, nil
	}
	if err := c.readTLS(ctx, o.TLS, v); err != nil {
		return nil, err
	}
	r.cur.Store(v)
	return r, nil
}

// readPassword returns the password of the Secret Manager secret version that clickHousePassword
// names; "" when it names none.
func (c Config) readPassword(ctx context.Context) (string, error) {
	if !c.Password.IsVersion() {
		return "", nil
	}
	b, err := secret.Access(ctx, c.Password.Reveal())
	if err != nil {
		return "", readError(FieldPassword, err)
	}
	return secretPassword(b), nil
}

// readTLS reads the PEM text of the TLS parameters into v and builds v's TLS configuration on
// base, the URL's.
func (c Config) readTLS(ctx context.Context, base *tls.Config, v *values) error {
	var err error
	for i, p := range c.TLSParams() {
		if p.Ref == "" {
			continue
		}
		if v.pem[i], err = secret.Read(ctx, p.Ref); err != nil {
			return readError(p.Field, err)
		}
	}
	v.tls, v.askedForCert, err = tlsConfig(base, v.pem[0], v.pem[1], v.pem[2])
	return err
}

// Renew reads again what r's Config names outside itself, as Resolve does, after a connection
// failed with err, when err is a refusal that a newer value there may cure, and reports whether
// the values read differ from those in use: they then take their place for the connections Open
// opens from then on (a pool opened before keeps using the old ones: the caller opens a new
// one). The refusals, and what is read again:
//   - the server refused the password (ClickHouse codes 193 WRONG_PASSWORD, 194
//     REQUIRED_PASSWORD, 516 AUTHENTICATION_FAILED; HTTP 401 or 403 without a code), when
//     clickHousePassword names a Secret Manager secret version: the password (a rotation, a new
//     version that versions/latest names, reaches a running job this way);
//   - the server's certificate is not signed by the authority of clickHouseCaCertificate (the
//     server's certificate replaced by one of another authority), or the server refused the
//     client certificate, when these are given: the certificates and the key.
//
// Any other error reads nothing and returns false and nil. A failed read keeps the values in use
// and returns its error, a *ConfigError as Resolve's: a secret version disabled or destroyed
// while the job runs leaves the job the password it read, which the server may still take.
func (r *Resolved) Renew(ctx context.Context, err error) (bool, error) {
	field, ok := r.renewable(err)
	if !ok {
		return false, nil
	}
	old := r.cur.Load()
	v := *old
	changed := false
	if field == FieldPassword {
		p, err := r.cfg.readPassword(ctx)
		if err != nil {
			return false, err
		}
		v.password, changed = p, p != old.password
	} else {
		o, err := parseURL(r.cfg)
		if err != nil {
			return false, err
		}
		v.pem = [3][]byte{}
		if err := r.cfg.readTLS(ctx, o.TLS, &v); err != nil {
			return false, err
		}
		for i := range v.pem {
			changed = changed || !bytes.Equal(v.pem[i], old.pem[i])
		}
	}
	if !changed || !r.cur.CompareAndSwap(old, &v) {
		// Unchanged, or another goroutine renewed them meanwhile (with values read as recently).
		return changed, nil
	}
	slog.Info("ClickHouse refused a connection, and what "+field.String()+" names, read again, has changed: new connections use the new value",
		"name", r.shownRef(field))
	return true, nil
}

// Values identifies the values a Resolved uses (the password, the TLS configuration), which
// Renew, and Open through it, replace. A stage that keeps a pool notes the Values it opened it
// with (Current, after Open) and opens a new pool when Current differs: Renew reports a change
// once, to the caller that read it, while another caller (Explain's Open, or an Open after a
// change that failed) may have taken the new values up without the pool.
type Values struct{ v *values }

// Current returns the Values r uses now.
func (r *Resolved) Current() Values { return Values{r.cur.Load()} }

// Reopen is what a stage does with its pool conn after an INSERT's failure err: Renew (read again
// what the server refused), then, when r's values differ from opened (those conn was opened with:
// a change Renew reports, or an earlier one whose Open failed, since Renew reports a change once),
// open a new pool with them and close conn. It returns the pool to use and the values it was
// opened with: conn and opened as they came when nothing changed, or when the read or the open
// failed, which is logged as a warning naming stage and table (the next attempt tells).
func (r *Resolved) Reopen(ctx context.Context, err error, conn driver.Conn, opened Values, stage, table string) (driver.Conn, Values) {
	if _, err := r.Renew(ctx, err); err != nil {
		slog.Warn(stage+": reading ClickHouse's secrets again failed; keeping those read before", "table", table, "error", err)
		return conn, opened
	}
	if r.Current() == opened {
		return conn, opened
	}
	fresh, err := r.Open(ctx)
	if err != nil {
		slog.Warn(stage+": connecting to ClickHouse with the secrets read again failed", "table", table, "error", err)
		return conn, opened
	}
	conn.Close()
	return fresh, r.Current()
}

// renewable returns the field whose values Renew reads again after err, and whether there is one.
func (r *Resolved) renewable(err error) (Field, bool) {
	if err == nil {
		return 0, false
	}
	var ce *ConfigError
	if !errors.As(err, &ce) {
		asked := r.cur.Load().askedForCert
		if !errors.As(explain(err, r.cfg, asked != nil && asked.Load()), &ce) {
			return 0, false
		}
	}
	c := r.cfg
	switch ce.Field {
	case FieldPassword:
		return FieldPassword, c.Password.IsVersion()
	case FieldCACertificate:
		return FieldCACertificate, c.CACertificate != "" && UsesTLS(c.URL)
	case FieldClientCertificate, FieldClientKey:
		return FieldClientCertificate, c.ClientCertificate != "" && UsesTLS(c.URL)
	}
	return 0, false
}

// shownRef is the name of what field names, as messages show it.
func (r *Resolved) shownRef(field Field) string {
	switch field {
	case FieldPassword:
		return r.cfg.Password.String()
	case FieldCACertificate:
		return secret.ShownRef(r.cfg.CACertificate)
	}
	return secret.ShownRef(r.cfg.ClientCertificate)
}

var errNoTLS = errors.New("no TLS")

// TLSParam is one of the TLS parameters of a Config: its field and its value, the name of what
// holds the PEM text.
type TLSParam struct {
	Field Field
	Ref   string
}

// TLSParams returns the CA certificate, the client certificate and the client key, in this
// order.
func (c Config) TLSParams() []TLSParam {
	return []TLSParam{
		{FieldCACertificate, c.CACertificate},
		{FieldClientCertificate, c.ClientCertificate},
		{FieldClientKey, c.ClientKey},
	}
}

// readError is a failure to read what the field f names, as a *ConfigError.
func readError(f Field, err error) error {
	var se *secret.Error
	if errors.As(err, &se) {
		return &ConfigError{f, Hintf("%s", se.Reason), se.Err}
	}
	return &ConfigError{f, Hintf("cannot be read"), err}
}

// String is the Config's String: no password, no key.
func (r Resolved) String() string { return r.cfg.String() }

// GoString is String, so that %#v prints neither the password nor the key.
func (r Resolved) GoString() string { return "chclient.Resolved" + r.cfg.String() }

// Format implements fmt.Formatter, so that no verb prints the unexported fields.
func (r Resolved) Format(f fmt.State, verb rune) {
	_, _ = fmt.Fprintf(f, fmt.FormatString(f, verb), r.String())
}

// Config returns the configuration r was resolved from.
func (r *Resolved) Config() Config { return r.cfg }

// options returns the clickhouse-go options of r: those of Config.Options with the password read
// and the TLS configuration built, of the values in use.
func (r *Resolved) options() (*clickhouse.Options, error) { return r.optionsOf(r.cur.Load()) }

// optionsOf is options with the values v.
func (r *Resolved) optionsOf(v *values) (*clickhouse.Options, error) {
	o, err := parseURL(r.cfg)
	if err != nil {
		return nil, err
	}
	if v.password != "" {
		o.Auth.Password = v.password
	}
	if o.TLS != nil {
		o.TLS = v.tls.Clone()
	}
	withIdleTimeout(o)
	if checked := o.TransportFunc; checked != nil && o.TLS != nil && o.Auth.Password == "" && r.cfg.ClientCertificate == "" {
		o.TransportFunc = func(t *http.Transport) (http.RoundTripper, error) {
			next, err := checked(t)
			return passwordAuth{next}, err
		}
	}
	return o, nil
}

// passwordAuth is the round tripper of an https:// connection without a password and without a
// client certificate. clickhouse-go v2.51.0 sends every request over https:// without a
// password with the header X-ClickHouse-SSL-Certificate-Auth: on, which asks the server to
// authenticate the user by its client certificate instead of a password (ClickHouse's
// authenticateUserByHTTP.cpp); with no certificate presented the server refuses every request,
// code 516 AUTHENTICATION_FAILED ("SSL certificate authentication requires nonempty
// certificate's Common Name or Subject Alternative Name"), so that a user without a password
// (ClickHouse's default user) could not connect over https://. passwordAuth sends the requests
// without that header: the server then authenticates the user of X-ClickHouse-User with the
// empty password, as over http://. With a client certificate the header stays: that is
// authentication by the certificate, of a user IDENTIFIED WITH ssl_certificate.
type passwordAuth struct{ next http.RoundTripper }

// certificateAuthHeader is the header by which a client asks ClickHouse to authenticate the
// user by its TLS client certificate ("on").
const certificateAuthHeader = "X-ClickHouse-SSL-Certificate-Auth"

func (t passwordAuth) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Header.Get(certificateAuthHeader) != "" {
		req = req.Clone(req.Context()) // a RoundTripper does not change the request it is given
		req.Header.Del(certificateAuthHeader)
	}
	return t.next.RoundTrip(req)
}

// Open opens a connection pool and pings the server. Errors name the server address and the
// user, never the password; a likely misconfiguration (wrong port or scheme, wrong password,
// missing database, a certificate that does not verify) is a *ConfigError that says which
// field to fix. When the server refuses what r read (Renew: a password of Secret Manager, the
// certificates), Open reads it again and, if it has changed, opens with the new values; an error
// of that read is added to the refusal's.
func (r *Resolved) Open(ctx context.Context) (driver.Conn, error) {
	conn, err := r.open(ctx)
	if err == nil {
		return conn, nil
	}
	changed, renewErr := r.Renew(ctx, err)
	switch {
	case changed:
		return r.open(ctx)
	case renewErr != nil:
		return nil, fmt.Errorf("%w; reading it again failed: %v", err, renewErr)
	}
	return nil, err
}

// Explain returns why a new connection cannot be opened, after err, the failure of a connection
// in use, that is no answer of the server (a TLS handshake that fails, a connection closed in the
// native protocol's handshake, refused, timed out): the *ConfigError of Open, which names the
// parameter to fix (a certificate that no longer verifies, a database the user may no longer use on
// ClickHouse 18.16, which closes the connection rather than say so). nil when err is the server's
// answer (a ClickHouse exception, which names its cause), when ctx has ended, when a connection
// opens, or when Open fails without an explanation.
func (r *Resolved) Explain(ctx context.Context, err error) error {
	if _, isEx := serverException(err); err == nil || isEx || ctx.Err() != nil {
		return nil
	}
	conn, err := r.Open(ctx)
	if err == nil {
		conn.Close()
		return nil
	}
	var ce *ConfigError
	if !errors.As(err, &ce) {
		return nil
	}
	return err
}

// open is Open with the values in use.
func (r *Resolved) open(ctx context.Context) (driver.Conn, error) {
	c := r.cfg
	v := r.cur.Load()
	o, err := r.optionsOf(v)
	if err != nil {
		return nil, err
	}
	asked := v.askedForCert != nil && v.askedForCert.Load()
	conn, err := clickhouse.Open(o)
	if err != nil {
		return nil, explain(fmt.Errorf("clickhouse %s: %w", RedactURL(c.URL), err), c, asked)
	}
	pctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := r.ping(pctx, conn, o); err != nil {
		conn.Close()
		var ce *ConfigError
		if errors.As(err, &ce) {
			return nil, err
		}
		if refused := r.databaseRefused(ctx, err, o); refused != nil {
			return nil, refused
		}
		asked = v.askedForCert != nil && v.askedForCert.Load()
		return nil, explain(fmt.Errorf("clickhouse %s as user %q: %w", RedactURL(c.URL), c.Username, err), c, asked)
	}
	return conn, nil
}

// databaseRefused tells a database the user may not use from a wrong port, after a Ping over
// the native protocol failed in the handshake: ClickHouse 18.16 closes the connection without an
// error when a user limited by allow_databases asks for another database (code 291 in the
// server's log), as a TLS port does to a plain handshake. When the same user gets in asking for
// database system (which 18.16 leaves open to every user), the database is the matter: a
// *ConfigError of FieldDatabase. nil otherwise, and when the probe fails too.
func (r *Resolved) databaseRefused(ctx context.Context, pingErr error, o *clickhouse.Options) error {
	c := r.cfg
	db := o.Auth.Database // clickHouseDatabase, or the URL's path
	scheme, _, _ := strings.Cut(strings.ToLower(c.URL), "://")
	if scheme != "clickhouse" || db == "" || db == "system" || !handshakeFailed(pingErr) {
		return nil
	}
	in := func(database string) error {
		probe := *o
		probe.Auth.Database = database
		conn, err := clickhouse.Open(&probe)
		if err != nil {
			return err
		}
		defer conn.Close()
		pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		return conn.Ping(pctx)
	}
	// The database once more: a connection cut once (a server restarting) is no refusal.
	if in("system") != nil || !handshakeFailed(in(db)) {
		return nil
	}
	url := RedactURL(c.URL)
	return &ConfigError{FieldDatabase, Hintf("the server at %s closed the connection when user %q asked for database %q, and let the same user "+
		"in to database system: the database does not exist, or the user may not use it (allow_databases in the user's settings; "+
		"ClickHouse 18.16 closes the connection rather than say which): check %s", url, c.Username, db, FieldDatabase),
		fmt.Errorf("clickhouse %s as user %q: %w", url, c.Username, pingErr)}
}

// handshakeFailed reports whether err is a failure of the native protocol's handshake.
func handshakeFailed(err error) bool { return err != nil && strings.Contains(err.Error(), "handshake") }

// httpProbeAfter is how long a Ping over the native protocol may take before Open asks whether
// the port is ClickHouse's HTTP interface.
const httpProbeAfter = time.Second

// ping pings the server. Over the native protocol, a Ping that has not answered within
// httpProbeAfter may be talking to the HTTP port (8123), or with secure=true to the HTTPS port
// (8443), which waits for an HTTP request and never answers the handshake: the dial timeout (10 s
// by default) would pass before the error. So Open then sends GET /ping to each address (over
// TLS with the connection's own verified configuration when the URL asks for TLS), and returns
// at once a *ConfigError that says so when one answers HTTP 200 (a native port answers an HTTP
// request otherwise, or not).
func (r *Resolved) ping(ctx context.Context, conn driver.Conn, o *clickhouse.Options) error {
	scheme, _, _ := strings.Cut(strings.ToLower(r.cfg.URL), "://")
	if scheme != "clickhouse" {
		return conn.Ping(ctx)
	}
	done := make(chan error, 1)
	go func() { done <- conn.Ping(ctx) }()
	select {
	case err := <-done:
		return err
	case <-time.After(httpProbeAfter):
	}
	for _, addr := range o.Addr {
		if !answersHTTP(ctx, addr, o.TLS) {
			continue
		}
		// The texts without TLS, and their variations with it.
		native, iface, over, scheme, port := "the native protocol (clickhouse://)", "HTTP", "", "http", "the native port (9000) with clickhouse://"
		if o.TLS != nil {
			native, iface, over, scheme, port = "the native protocol over TLS (clickhouse://...?secure=true)", "HTTPS", " over TLS", "https",
				"the native protocol's TLS port (9440) with clickhouse://...?secure=true"
		}
		url := RedactURL(r.cfg.URL)
		return &ConfigError{FieldURL, Hintf("%s uses %s, but %s is ClickHouse's %s interface (it answers GET /ping%s): use %s://%s, or %s",
			url, native, addr, iface, over, scheme, addr, port),
			fmt.Errorf("clickhouse %s: the %s interface answered GET /ping on %s", url, iface, addr)}
	}
	return <-done
}

// answersHTTP reports whether addr answers GET /ping with HTTP 200, as ClickHouse's HTTP
// interface does, within 2 s: over TLS with tlsConf when it is not nil (the connection's own
// configuration, so the server's certificate is verified as for the connection).
func answersHTTP(ctx context.Context, addr string, tlsConf *tls.Config) bool {
	d := net.Dialer{Timeout: 2 * time.Second}
	var c net.Conn
	var err error
	if tlsConf != nil {
		c, err = (&tls.Dialer{NetDialer: &d, Config: tlsConf.Clone()}).DialContext(ctx, "tcp", addr)
	} else {
		c, err = d.DialContext(ctx, "tcp", addr)
	}
	if err != nil {
		return false
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := io.WriteString(c, "GET /ping HTTP/1.0\r\n\r\n"); err != nil {
		return false
	}
	status, err := bufio.NewReader(c).ReadString('\n')
	return err == nil && strings.HasPrefix(status, "HTTP/1.") && strings.Contains(status, " 200 ")
}

// Open resolves c (Config.Resolve) and opens a connection pool (Resolved.Open): for a one-off
// connection. A DoFn resolves once in Setup instead.
func Open(ctx context.Context, c Config) (driver.Conn, error) {
	r, err := c.Resolve(ctx)
	if err != nil {
		return nil, err
	}
	return r.Open(ctx)
}
