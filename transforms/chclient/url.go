package chclient

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"

	"github.com/ch-beam/pubsub-to-clickhouse/transforms/secret"
)

// This file is the one owner of clickHouseUrl: its rules (URLRule), its translation into
// clickhouse-go options (Config.Options) and its redaction (RedactURL).
//
// The URL is read by clickhouse-go's own DSN parser (clickhouse.ParseDSN), so every option it
// may carry is either honoured as the driver documents it or refused here with a sentence naming
// it (https://clickhouse.com/docs/integrations/go#connection-settings):
//
//   - userinfo (user:password@), a path (/database) and the query options username, password
//     and database: honoured when they agree with clickHouseUsername, clickHousePassword and
//     clickHouseDatabase (the password of the URL is used when clickHousePassword is empty);
//     refused when they disagree, and a password refused when clickHousePassword is a Secret
//     Manager secret version;
//   - secure (TLS on the native protocol, as clickhouse://host:9440?secure=true),
//     tls_server_name, compress (true, lz4, zstd, gzip, deflate, br, none), compress_level,
//     dial_timeout, read_timeout, max_open_conns, max_idle_conns, conn_max_lifetime,
//     connection_open_strategy, block_buffer_size, max_compression_buffer, hosts, alt_hosts,
//     http_proxy, http_path, client_info_product: honoured;
//   - skip_verify (certificate verification off) and debug (protocol traces, with the data, on
//     standard output): refused;
//   - the settings that the pipeline sends with every INSERT (insertSettingSources:
//     insert_deduplicate, max_insert_block_size, ...), which would override the URL's: refused,
//     naming the parameter that sets them;
//   - any other query option: a ClickHouse setting sent with every query, as the driver does
//     (the server refuses an unknown one at the first query, so a misspelt option stops the
//     start-up).

// acceptedURLForms lists the clickHouseUrl forms, for error messages.
const acceptedURLForms = "use http://host:8123, https://host:8443 (ClickHouse Cloud) or clickhouse://host:9000 (native protocol)"

// Default ports by scheme, when the URL gives none.
var defaultPorts = map[string]string{"http": "8123", "https": "8443", "clickhouse": "9000"}

// URLRule returns the rule that clickHouseUrl raw breaks, or "" when it is valid: its syntax
// (scheme, hosts, ports) and its options (see the file comment), against the other connection
// parameters, naming each of them by name (Field.String, or pipeline.ClickHouseParam). The text
// quotes no part of the URL that could hold a password.
func URLRule(raw, username string, password secret.String, database string, name func(Field) string) string {
	if rule := syntaxRule(raw); rule != "" {
		return rule
	}
	_, err := parseURL(Config{URL: raw, Username: username, Password: password, Database: database})
	var re *urlError
	if errors.As(err, &re) {
		return re.rule.Text(name)
	}
	if err != nil {
		return err.Error()
	}
	return ""
}

// urlError is a rule that clickHouseUrl breaks, naming the other fields it is about as Fields.
type urlError struct{ rule Hint }

func (e *urlError) Error() string { return FieldURL.String() + ": " + e.rule.Text(Field.String) }

func urlRefused(format string, args ...any) error { return &urlError{Hintf(format, args...)} }

// parseURL turns c into clickhouse-go options, reading c.URL with the driver's own parser.
func parseURL(c Config) (*clickhouse.Options, error) {
	if rule := syntaxRule(c.URL); rule != "" {
		return nil, urlRefused("%s", rule)
	}
	scheme, rest, _ := strings.Cut(c.URL, "://")
	scheme = strings.ToLower(scheme)
	dsn := scheme + "://" + rest
	if rule := queryRule(scheme, rest); rule != "" {
		return nil, urlRefused("%s", rule)
	}
	q := queryOf(rest)
	if scheme == "https" && !q.Has("secure") {
		dsn = withQuery(dsn, "secure=true") // the driver's https needs it said
	}
	// The driver takes ?password= over user:password@ (and ?username= over user@) without a word.
	user, pw, hasPW := userinfoOf(rest)
	switch {
	case hasPW && q.Has("password") && q.Get("password") != pw:
		return nil, urlRefused("holds two passwords that differ, in user:password@ and in ?password=: give the password once (in %s)", FieldPassword)
	case user != "" && q.Has("username") && q.Get("username") != user:
		return nil, urlRefused("names two users, %q in user@ and %q in ?username=: give the user once (in %s)", user, q.Get("username"), FieldUsername)
	}
	for _, refused := range []struct{ key, why string }{
		{"skip_verify", "turns certificate verification off, which the template never does; give the server's certificate authority instead"},
		{"debug", "prints the driver's protocol traces, rows included, to the log; it is not supported"},
	} {
		if q.Has(refused.key) {
			return nil, urlRefused("option %q %s", refused.key, refused.why)
		}
	}
	o, err := clickhouse.ParseDSN(dsn)
	if err != nil {
		return nil, urlRefused("%s", c.Password.Hide(strings.TrimPrefix(err.Error(), "clickhouse [dsn parse]: ")))
	}
	// Credentials and database: from the parameters, or from the URL when they agree.
	fromSecret := c.Password.IsVersion()
	switch {
	case o.Auth.Username != "" && c.Username != "" && o.Auth.Username != c.Username:
		return nil, urlRefused("names the user %q, but %[3]s is %[2]q: give the user once, in %[3]s", o.Auth.Username, c.Username, FieldUsername)
	case o.Auth.Password != "" && fromSecret:
		return nil, urlRefused("holds a password, which the job graph would carry: %s names a Secret Manager secret version, which keeps the password out of it; remove the password from the URL", FieldPassword)
	case o.Auth.Password != "" && c.Password != "" && o.Auth.Password != c.Password.Reveal():
		return nil, urlRefused("holds a password that differs from %[1]s: give the password once, in %[1]s", FieldPassword)
	case o.Auth.Database != "" && c.Database != "" && o.Auth.Database != c.Database:
		return nil, urlRefused("names the database %q, but %[3]s is %[2]q: give the database once, in %[3]s", o.Auth.Database, c.Database, FieldDatabase)
	}
	if c.Username != "" {
		o.Auth.Username = c.Username
	}
	if p := c.Password.Text(); p != "" {
		o.Auth.Password = p // a secret version's password is read by Resolve
	}
	if c.Database != "" {
		o.Auth.Database = c.Database
	}
	for i, addr := range o.Addr {
		if _, _, err := net.SplitHostPort(addr); err != nil {
			o.Addr[i] = net.JoinHostPort(strings.Trim(addr, "[]"), defaultPorts[scheme])
		}
	}
	if o.TLS != nil {
		// Verified against the system's roots until Resolve builds the configuration of the
		// TLS parameters (tlsConfig). The server name is tls_server_name's, or left empty, so
		// that Go's TLS dialer and HTTP transport take each host's own from the address.
		o.TLS = &tls.Config{ServerName: o.TLS.ServerName, MinVersion: tls.VersionTLS12}
	}
	// The template's defaults where the URL says nothing. Dial and read timeouts bound how long
	// a dead server stalls a bundle; an INSERT of a large block can legitimately take long,
	// hence the generous read timeout.
	if o.DialTimeout == 0 {
		o.DialTimeout = 10 * time.Second
	}
	if o.ReadTimeout == 0 {
		o.ReadTimeout = 5 * time.Minute
	}
	if o.MaxOpenConns == 0 {
		o.MaxOpenConns = 4
	}
	if o.MaxIdleConns == 0 {
		o.MaxIdleConns = 4
	}
	if o.ConnMaxLifetime == 0 {
		o.ConnMaxLifetime = time.Hour
	}
	if len(o.Settings) == 0 {
		o.Settings = nil
	}
	if scheme == "http" || scheme == "https" {
		// Every answer of 200 OK checked for a failure it may carry (answers.go).
		o.TransportFunc = func(t *http.Transport) (http.RoundTripper, error) { return checkedAnswers{next: t}, nil }
	}
	if rule := compressionRule(q, c.Compression, Field.String); rule != "" {
		return nil, errors.New(FieldCompression.String() + ": " + rule)
	}
	if method, ok := compressionMethods[c.Compression]; ok || !q.Has("compress") {
		if !ok {
			method = clickhouse.CompressionLZ4
		}
		if o.Compression == nil {
			o.Compression = &clickhouse.Compression{}
		}
		o.Compression.Method = method
	}
	return o, nil
}

// compressionMethods are the values of clickHouseCompression. clickhouse-go compresses the
// blocks of both protocols with them (the native protocol's compressed blocks; on HTTP the same
// blocks, with the URL parameter decompress=1).
var compressionMethods = map[string]clickhouse.CompressionMethod{
	"lz4":  clickhouse.CompressionLZ4,
	"zstd": clickhouse.CompressionZSTD,
	"none": clickhouse.CompressionNone,
}

// CompressionRule returns the rule that clickHouseCompression value breaks with clickHouseUrl
// raw, or "": it is lz4, zstd or none, and a URL whose compress option names a method names the
// same one (compress=true is lz4, compress=false is none). It names the fields by name
// (Field.String, or pipeline.ClickHouseParam).
func CompressionRule(raw, value string, name func(Field) string) string {
	_, rest, _ := strings.Cut(raw, "://")
	return compressionRule(queryOf(rest), value, name)
}

// compressionRule is CompressionRule for the URL's query q.
func compressionRule(q url.Values, value string, name func(Field) string) string {
	if value == "" {
		return ""
	}
	if _, ok := compressionMethods[value]; !ok {
		return fmt.Sprintf("must be lz4, zstd or none, not %q", value)
	}
	if !q.Has("compress") {
		return ""
	}
	inURL := q.Get("compress")
	switch inURL {
	case "true", "1":
		inURL = "lz4"
	case "false", "0":
		inURL = "none"
	}
	if inURL != value {
		return Hintf("is %s, but %s's option compress=%s says otherwise: give the compression once, in %s", value, FieldURL, q.Get("compress"), FieldCompression).Text(name)
	}
	return ""
}

// compressValues are the compress values clickhouse-go knows (it ignores any other).
var compressValues = map[string]bool{"true": true, "false": true, "1": true, "0": true, "lz4": true, "zstd": true,
	"gzip": true, "deflate": true, "br": true, "none": true}

// queryRule returns the rule that the query of the text after "scheme://" breaks, or "": each
// option given once, with a name, in "&"-separated form, no fragment, and values the driver
// would not silently ignore.
func queryRule(scheme, rest string) string {
	if strings.Contains(rest, "#") {
		return "has a fragment (#...), which the driver drops; remove it, or percent-encode a \"#\" in a value as %23"
	}
	_, query, ok := strings.Cut(rest, "?")
	if !ok {
		return ""
	}
	v, err := url.ParseQuery(query)
	if err != nil {
		return "has a query that does not parse (options are name=value separated by \"&\"; a \";\" or a bad %-escape is not allowed)"
	}
	for name, values := range v {
		switch {
		case name == "":
			return "has an option without a name"
		case len(values) > 1:
			return fmt.Sprintf("gives the option %q %d times; give it once", name, len(values))
		}
		val := values[0]
		switch name {
		case "secure":
			// The driver refuses both with a phrase of its own ("http with TLS specify").
			on, err := strconv.ParseBool(val)
			if val == "" { // the driver takes a bare secure as true
				on, err = true, nil
			}
			switch {
			case err != nil:
				return fmt.Sprintf("option \"secure\" takes true or false (also 1, 0, t, f, TRUE, FALSE), not %q", val)
			case err == nil && on && scheme == "http":
				return "option secure=true asks for TLS, which http:// does not speak: use https:// (port 8443) for TLS over HTTP, or drop the option"
			case err == nil && !on && scheme == "https":
				return "option secure=false turns TLS off, which https:// always uses: use http:// (port 8123) for plain HTTP, or drop the option"
			}
		case "compress":
			if !compressValues[val] {
				return fmt.Sprintf("option \"compress\" takes lz4, zstd, gzip, deflate, br, none, true or false, not %q", val)
			}
			if scheme == "clickhouse" && (val == "gzip" || val == "deflate" || val == "br") {
				return fmt.Sprintf("option \"compress\" %s is for http:// and https:// URLs; the native protocol (clickhouse://) takes lz4, zstd, none, true or false", val)
			}
		case "connection_open_strategy":
			if val != "in_order" && val != "round_robin" && val != "random" {
				return fmt.Sprintf("option \"connection_open_strategy\" takes in_order, round_robin or random, not %q", val)
			}
		case "dial_timeout", "read_timeout":
			if d, err := time.ParseDuration(val); err == nil && d <= 0 {
				return fmt.Sprintf("option %q must be a positive duration such as 10s, not %q", name, val)
			}
		case "conn_max_lifetime":
			// clickhouse-go (v2.51.0, newConnPool) closes the connections past their lifetime on
			// a ticker of that period: one of nanoseconds spins, and holds up the job.
			if d, err := time.ParseDuration(val); err == nil && d < time.Millisecond {
				return fmt.Sprintf("option \"conn_max_lifetime\" must be a duration of 1ms or more such as 1h (clickhouse-go checks the connections' age on a ticker of that period), not %q", val)
			}
		case "max_open_conns", "max_idle_conns":
			if n, err := strconv.Atoi(val); err == nil && n <= 0 {
				return fmt.Sprintf("option %q must be a positive number, not %q", name, val)
			}
		case "http_path", "http_proxy":
			if scheme == "clickhouse" {
				return fmt.Sprintf("option %q is for http:// and https:// URLs; the native protocol (clickhouse://) ignores it", name)
			}
		}
		if source, ok := insertSettingSources[name]; ok {
			return fmt.Sprintf("option %q is a setting that the pipeline sends with every INSERT in place of the URL's, %s", name, source)
		}
	}
	return ""
}

// queryOf returns the query of the text after "scheme://", as net/url reads it ("" when it
// does not parse: the driver's parser then reports it).
func queryOf(rest string) url.Values {
	_, query, ok := strings.Cut(rest, "?")
	if !ok {
		return url.Values{}
	}
	query, _, _ = strings.Cut(query, "#")
	v, _ := url.ParseQuery(query)
	return v
}

// withQuery adds kv to the query of raw.
func withQuery(raw, kv string) string {
	base, frag, hasFrag := strings.Cut(raw, "#")
	sep := "?"
	if strings.Contains(base, "?") {
		sep = "&"
	}
	base += sep + kv
	if hasFrag {
		base += "#" + frag
	}
	return base
}

// syntaxRule returns the rule that a non-blank clickHouseUrl's text breaks, or "". It reads the
// URL as text rather than with net/url, which refuses some forms that the ClickHouse driver
// takes (several hosts, host:port,host:port). The returned text quotes no part of the URL that
// could hold a password.
func syntaxRule(raw string) string {
	if strings.TrimSpace(raw) != raw {
		return "must not begin or end with spaces"
	}
	i := strings.Index(raw, "://")
	if i < 0 {
		return "has no scheme; " + acceptedURLForms
	}
	scheme := strings.ToLower(raw[:i])
	switch {
	case scheme == "http" || scheme == "https" || scheme == "clickhouse":
	case strings.HasPrefix(scheme, "jdbc:"):
		return "is a JDBC URL, which is not supported; drop the \"jdbc:\" prefix and " + acceptedURLForms
	case scheme == "tcp":
		return "scheme \"tcp\" is not supported; " + acceptedURLForms
	case isSchemeName(scheme):
		// As given, not lowercased, so that hide can find a password in it.
		return fmt.Sprintf("scheme %q is not supported; %s", raw[:i], acceptedURLForms)
	default:
		return "has no valid scheme; " + acceptedURLForms
	}

	// As net/url does: the fragment and query end the authority, and the
	// authority ends at the first "/"; the host follows the last "@".
	rest, _, _ := strings.Cut(raw[i+len("://"):], "#")
	rest, _, _ = strings.Cut(rest, "?")
	authority, _, _ := strings.Cut(rest, "/")
	hosts := authority[strings.LastIndex(authority, "@")+1:]
	if hosts == "" {
		return "has no host; " + acceptedURLForms
	}
	for _, hostPort := range strings.Split(hosts, ",") {
		if !strings.HasPrefix(hostPort, "[") && strings.Count(hostPort, ":") > 1 {
			// An IPv6 address without brackets: its last group would be taken for the port, or
			// the whole address for a host name, and the dial fails with a mangled address.
			// Checked before the port, which a last group such as "abcd" is not.
			rule := "has a host with more than one \":\" (an IPv6 address goes in brackets, as clickhouse://[::1]:9000)"
			if strings.Contains(raw, "@") {
				rule += `; a "/", "?", "#" or "@" in the user name or password must be percent-encoded`
			}
			return rule
		}
		host, port, hasPort := splitHostPort(hostPort)
		if host == "" {
			return "has an empty host; " + acceptedURLForms
		}
		if hasPort && !isPort(port) {
			rule := "has an invalid port (give a number from 1 to 65535 after the host's \":\")"
			if strings.Contains(raw, "@") {
				rule += `; a "/", "?", "#" or "@" in the user name or password must be percent-encoded`
			}
			return rule
		}
	}
	return ""
}

// splitHostPort splits host[:port] or [ipv6][:port].
func splitHostPort(s string) (host, port string, hasPort bool) {
	if strings.HasPrefix(s, "[") {
		end := strings.IndexByte(s, ']')
		if end < 0 {
			return "", "", false
		}
		host, rest := s[1:end], s[end+1:]
		if rest == "" {
			return host, "", false
		}
		if !strings.HasPrefix(rest, ":") {
			return host, rest, true // not a port: refused by isPort
		}
		return host, rest[1:], true
	}
	if c := strings.LastIndexByte(s, ':'); c >= 0 {
		return s[:c], s[c+1:], true
	}
	return s, "", false
}

// isPort reports whether s is a TCP port number, 1 to 65535.
func isPort(s string) bool {
	if s == "" || len(s) > 5 || strings.Trim(s, "0123456789") != "" {
		return false
	}
	n, _ := strconv.Atoi(s)
	return n >= 1 && n <= 65535
}

// isSchemeName reports whether s is a URL scheme as RFC 3986 spells it,
// safe to quote in an error.
func isSchemeName(s string) bool {
	if s == "" || len(s) > 32 || s[0] < 'a' || s[0] > 'z' {
		return false
	}
	return strings.Trim(s, "abcdefghijklmnopqrstuvwxyz0123456789+-.") == ""
}

// RedactURL returns raw with its passwords replaced by "xxxxx": the password of the userinfo
// (user:password@), the value of a "password" query parameter (or of another whose name says it
// holds a secret, such as token) and the password in an "http_proxy" query parameter (both of
// which clickhouse-go reads). It reads the URL as text so
// as to work on malformed URLs too; when in doubt it hides too much rather than too little (for
// example, everything from the first ":" after the scheme up to an "@" found later in the
// path). It is the one redactor of ClickHouse URLs: the template parameters, the errors and the
// logs all use it.
func RedactURL(raw string) string {
	s := raw
	// The query first: a value in it may hold an unescaped "@", which the
	// userinfo step below would take as the end of the userinfo.
	if q := strings.IndexByte(s, '?'); q >= 0 {
		s = s[:q+1] + redactQuery(s[q+1:])
	}
	start := 0
	if i := strings.Index(s, "://"); i >= 0 {
		start = i + len("://")
	}
	// The last "@", because a password may hold an unescaped "@".
	if at := strings.LastIndexByte(s[start:], '@'); at >= 0 {
		at += start
		if colon := strings.IndexByte(s[start:at], ':'); colon >= 0 {
			s = s[:start+colon+1] + secret.Mask + s[at:]
		}
	}
	return s
}

// redactQuery hides the value of "password" parameters (and of any other whose name says it
// may be a secret, secret.SecretName: token, pass, ...) and the password in "http_proxy"
// parameters of a raw query. Keys are compared unescaped and
// without regard to case.
func redactQuery(query string) string {
	segments := strings.Split(query, "&")
	out := make([]string, 0, len(segments))
	inPassword := false
	for _, seg := range segments {
		rawKey, key, value, hasValue := queryOption(seg)
		switch {
		case hasValue && secret.SecretName(key): // password, and ?token=, ?pass=, ...
			seg, inPassword = rawKey+"="+secret.Mask, true
		case hasValue && key == "http_proxy":
			if proxy, err := url.QueryUnescape(value); err == nil {
				seg = rawKey + "=" + url.QueryEscape(RedactURL(proxy))
			} else {
				seg = rawKey + "=" + secret.Mask
			}
			inPassword = false
		case inPassword && !hasValue:
			// The rest of a password after an unescaped "&".
			continue
		default:
			inPassword = false
		}
		out = append(out, seg)
	}
	return strings.Join(out, "&")
}

// urlSecrets returns the secrets raw holds, each as the driver reads it (percent-decoded) and,
// where raw escapes it, also as written: the userinfo's password, the values of query options
// whose names say they hold a secret (password, token, ...: secret.SecretName) and the password
// of an http_proxy option's userinfo. It reads the URL as text, as RedactURL does, so as to work
// on malformed URLs too.
func urlSecrets(raw string) []string {
	var out []string
	rest := raw
	if i := strings.Index(rest, "://"); i >= 0 {
		rest = rest[i+len("://"):]
	}
	if _, password, ok := userinfoOf(rest); ok && password != "" {
		out = append(out, password)
		authority, _, _ := strings.Cut(rest, "?")
		authority, _, _ = strings.Cut(authority, "/")
		userinfo := authority[:strings.LastIndexByte(authority, '@')]
		if _, written, _ := strings.Cut(userinfo, ":"); written != password {
			out = append(out, written)
		}
	}
	_, query, _ := strings.Cut(raw, "?")
	query, _, _ = strings.Cut(query, "#")
	for _, seg := range strings.Split(query, "&") {
		_, key, value, hasValue := queryOption(seg)
		if !hasValue || value == "" {
			continue
		}
		val := value
		if v, err := url.QueryUnescape(value); err == nil {
			val = v
		}
		switch {
		case secret.SecretName(key):
			out = append(out, val)
			if val != value {
				out = append(out, value)
			}
		case key == "http_proxy":
			out = append(out, urlSecrets(val)...)
		}
	}
	return out
}

// queryOption reads one "&"-separated segment of a raw query: the key as written (rawKey) and
// as the driver compares it (key: percent-decoded when it can be, then lower-cased), and the value
// as written, when there is an "=".
func queryOption(seg string) (rawKey, key, value string, hasValue bool) {
	rawKey, value, hasValue = strings.Cut(seg, "=")
	key = rawKey
	if k, err := url.QueryUnescape(rawKey); err == nil {
		key = k
	}
	return rawKey, strings.ToLower(key), value, hasValue
}

// passwordInURL reports whether rawURL, a clickHouseUrl, holds a password: in its userinfo
// (user:password@) or as a "password" query parameter.
func passwordInURL(rawURL string) bool {
	_, rest, _ := strings.Cut(rawURL, "://")
	_, _, hasPW := userinfoOf(rest)
	return hasPW || queryOf(rest).Has("password")
}

// userinfoOf returns the user and password of the userinfo of rest (what follows "://"),
// percent-decoded (as the driver decodes them): the text before the last "@" of the authority.
func userinfoOf(rest string) (user, password string, hasPassword bool) {
	authority, _, _ := strings.Cut(rest, "?")
	authority, _, _ = strings.Cut(authority, "/")
	at := strings.LastIndexByte(authority, '@')
	if at < 0 {
		return "", "", false
	}
	user, password, hasPassword = strings.Cut(authority[:at], ":")
	if u, err := url.PathUnescape(user); err == nil {
		user = u
	}
	if p, err := url.PathUnescape(password); err == nil {
		password = p
	}
	return user, password, hasPassword
}
