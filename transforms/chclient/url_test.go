package chclient

import (
	"crypto/tls"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
)

// TestURLOptionsHonoured: every option a clickHouseUrl may carry reaches clickhouse-go.
func TestURLOptionsHonoured(t *testing.T) {
	const pw = "S3cr3t-pw"
	for _, tc := range []struct {
		url   string
		c     Config
		check func(*clickhouse.Options) string
	}{
		{"clickhouse://h:9440?secure=true", Config{Username: "u"}, func(o *clickhouse.Options) string {
			// The server name is left to Go's TLS dialer, which takes it from each address.
			if o.TLS == nil || o.TLS.ServerName != "" || o.TLS.InsecureSkipVerify || o.TLS.MinVersion != tls.VersionTLS12 || o.Protocol != clickhouse.Native {
				return "want TLS 1.2+ on the native protocol, verified, the server name of each host"
			}
			return ""
		}},
		{"https://h?tls_server_name=other.example.com", Config{Username: "u"}, func(o *clickhouse.Options) string {
			if o.TLS == nil || o.TLS.ServerName != "other.example.com" {
				return "want the TLS server name of tls_server_name"
			}
			return ""
		}},
		{"clickhouse://h?compress=lz4", Config{Username: "u"}, func(o *clickhouse.Options) string {
			if o.Compression == nil || o.Compression.Method != clickhouse.CompressionLZ4 {
				return "want LZ4 compression"
			}
			return ""
		}},
		{"clickhouse://h?compress=zstd&dial_timeout=3s&read_timeout=1m&max_open_conns=9", Config{Username: "u"}, func(o *clickhouse.Options) string {
			if o.Compression == nil || o.Compression.Method != clickhouse.CompressionZSTD || o.DialTimeout != 3*time.Second ||
				o.ReadTimeout != time.Minute || o.MaxOpenConns != 9 {
				return "want ZSTD, dial 3s, read 1m, 9 connections"
			}
			return ""
		}},
		{"clickhouse://h?max_execution_time=60", Config{Username: "u"}, func(o *clickhouse.Options) string {
			if o.Settings["max_execution_time"] != 60 {
				return "want the setting max_execution_time=60"
			}
			return ""
		}},
		{"clickhouse://u:" + pw + "@h/db", Config{Username: "u", Database: "db"}, func(o *clickhouse.Options) string {
			if o.Auth.Username != "u" || o.Auth.Password != pw || o.Auth.Database != "db" {
				return "want the URL's password when clickHousePassword is empty"
			}
			return ""
		}},
		{"clickhouse://[::1],[fe80::1]:9001", Config{Username: "u"}, func(o *clickhouse.Options) string {
			if !slices.Equal(o.Addr, []string{"[::1]:9000", "[fe80::1]:9001"}) {
				return "want the IPv6 addresses in brackets, the first with the default port"
			}
			return ""
		}},
		{"clickhouse://h", Config{Username: "u", Password: pw, Database: "db"}, func(o *clickhouse.Options) string {
			if o.Auth.Password != pw || o.DialTimeout != 10*time.Second || o.Compression == nil || o.Compression.Method != clickhouse.CompressionLZ4 {
				return "want the parameters' password and the template's defaults (LZ4)"
			}
			return ""
		}},
	} {
		c := tc.c
		c.URL = tc.url
		o, err := c.Options()
		if err != nil {
			t.Errorf("%s: %v", RedactURL(tc.url), err)
			continue
		}
		if msg := tc.check(o); msg != "" {
			t.Errorf("%s: %s; got %+v", RedactURL(tc.url), msg, *o)
		}
	}
}

// TestURLOptionsRefused: an option that cannot be honoured is refused with a sentence naming
// it, never silently dropped, and the sentence never shows the password.
func TestURLOptionsRefused(t *testing.T) {
	const pw = "S3cr3t-pw"
	for _, tc := range []struct {
		url  string
		c    Config
		want string
	}{
		{"https://h?skip_verify=true", Config{}, `option "skip_verify" turns certificate verification off`},
		{"clickhouse://h?debug=true", Config{}, `option "debug"`},
		{"clickhouse://other@h", Config{Username: "u"}, `names the user "other", but ClickHouse user is "u"`},
		{"clickhouse://u:" + pw + "@h", Config{Username: "u", Password: "another"}, "holds a password that differs from ClickHouse password"},
		{"clickhouse://h?password=" + pw, Config{Username: "u", Password: "another"}, "holds a password that differs from ClickHouse password"},
		{"clickhouse://h/other", Config{Username: "u", Database: "db"}, `names the database "other", but ClickHouse database is "db"`},
		{"clickhouse://h?database=other", Config{Username: "u", Database: "db"}, `names the database "other"`},
		{"clickhouse://h?dial_timeout=soon", Config{Username: "u"}, "dial timeout"},
		{"http://h?secure=true", Config{Username: "u"}, "option secure=true asks for TLS, which http:// does not speak: use https://"},
		{"https://h?secure=false", Config{Username: "u"}, "option secure=false turns TLS off, which https:// always uses: use http://"},
		{"tcp://h:9000", Config{}, `scheme "tcp" is not supported`},
		{"clickhouse://h?compress=foo", Config{Username: "u"}, `option "compress" takes lz4`},
		{"clickhouse://h:9440?secure=yes", Config{Username: "u"}, `option "secure" takes true or false (also 1, 0, t, f, TRUE, FALSE), not "yes"`},
		{"http://h:8123?secure", Config{Username: "u"}, "option secure=true asks for TLS, which http:// does not speak"},
		{"clickhouse://h?compress=LZ4", Config{Username: "u"}, `option "compress" takes lz4`},
		{"clickhouse://h?compress=lz4&compress=zstd", Config{Username: "u"}, `gives the option "compress" 2 times`},
		{"clickhouse://h?compress=lz4;dial_timeout=1s", Config{Username: "u"}, "does not parse"},
		{"clickhouse://h?password=" + pw + ";x=1", Config{Username: "u"}, "does not parse"},
		{"clickhouse://h?&=1", Config{Username: "u"}, "an option without a name"},
		{"clickhouse://h?connection_open_strategy=bogus", Config{Username: "u"}, "takes in_order, round_robin or random"},
		{"clickhouse://h?max_open_conns=-3", Config{Username: "u"}, "must be a positive number"},
		{"clickhouse://h?dial_timeout=-5s", Config{Username: "u"}, "must be a positive duration"},
		{"clickhouse://h?conn_max_lifetime=999us", Config{Username: "u"}, `option "conn_max_lifetime" must be a duration of 1ms or more such as 1h`},
		{"clickhouse://h?conn_max_lifetime=0s", Config{Username: "u"}, `option "conn_max_lifetime" must be a duration of 1ms or more such as 1h`},
		{"clickhouse://h?http_path=/x", Config{Username: "u"}, "the native protocol (clickhouse://) ignores it"},
		{"clickhouse://h#frag", Config{Username: "u"}, "has a fragment"},
		{"clickhouse://h?compress=gzip", Config{Username: "u"}, `option "compress" gzip is for http:// and https:// URLs`},
		// An IPv6 address without brackets was accepted, and dialled as [::1:9000]:9000.
		{"clickhouse://u:" + pw + "@::1:9000", Config{}, "an IPv6 address goes in brackets, as clickhouse://[::1]:9000"},
		{"http://fe80::1", Config{Username: "u"}, "an IPv6 address goes in brackets"},
		{"http://fe80::abcd", Config{Username: "u"}, "an IPv6 address goes in brackets"}, // "abcd" is no port
		{"clickhouse://[::1]:9000,::2:9000", Config{Username: "u"}, "an IPv6 address goes in brackets"},
		// Two of one credential in the URL, which the driver would resolve without a word.
		{"clickhouse://u:other@h:9000?password=" + pw, Config{}, "holds two passwords that differ, in user:password@ and in ?password=: give the password once"},
		{"clickhouse://u@h:9000?username=v", Config{}, `names two users, "u" in user@ and "v" in ?username=: give the user once`},
		// The settings each INSERT carries replaced these without a word.
		{"http://h?insert_deduplicate=0", Config{Username: "u"}, `option "insert_deduplicate" is a setting that the pipeline sends with every INSERT in place of the URL's, from the parameter insertDeduplicate: give it there`},
		{"https://h?deduplicate_insert=disable", Config{Username: "u"}, "from the parameter insertDeduplicate"},
		{"clickhouse://h?max_insert_block_size=7", Config{Username: "u"}, "from the parameter maxInsertBlockSize"},
		{"http://h?insert_distributed_sync=0", Config{Username: "u"}, "from the parameter insertDistributedSync"},
		{"http://h?distributed_foreground_insert=0", Config{Username: "u"}, "as insert_distributed_sync, from the parameter insertDistributedSync"},
		{"http://h?insert_quorum=2", Config{Username: "u"}, "when the parameter insertQuorum is set"},
		{"http://h?wait_for_async_insert=0", Config{Username: "u"}, `option "wait_for_async_insert" is a setting that the pipeline sends with every INSERT in place of the URL's, as 1`},
		{"http://h?insert_deduplication_token=x", Config{Username: "u"}, "derived from the INSERT's messages: remove it"},
	} {
		c := tc.c
		c.URL = tc.url
		_, err := c.Options()
		rule := URLRule(tc.url, c.Username, c.Password, c.Database, Field.String)
		if err == nil || rule == "" {
			t.Errorf("%s: accepted, want %q", RedactURL(tc.url), tc.want)
			continue
		}
		for _, s := range []string{err.Error(), rule} {
			if !strings.Contains(s, tc.want) || strings.Contains(s, pw) {
				t.Errorf("%s: %q, want %q and no password", RedactURL(tc.url), s, tc.want)
			}
		}
	}
}

// TestCompression: clickHouseCompression sets the method on both protocols, the URL's compress
// option is honoured when the parameter is unset, LZ4 is the default, and a parameter that
// disagrees with the URL, or names no method, is refused naming clickHouseCompression.
func TestCompression(t *testing.T) {
	for _, tc := range []struct {
		url, param string
		want       string // the method's name; "unset" when no compression is set
	}{
		{"clickhouse://h", "", "lz4"},
		{"https://h", "", "lz4"},
		{"clickhouse://h", "zstd", "zstd"},
		{"http://h", "zstd", "zstd"},
		{"clickhouse://h", "none", "none"},
		{"clickhouse://h?compress=zstd", "", "zstd"},
		{"clickhouse://h?compress=zstd", "zstd", "zstd"},
		{"clickhouse://h?compress=true", "lz4", "lz4"},
		{"clickhouse://h?compress=false", "", "unset"},
		{"clickhouse://h?compress=false", "none", "none"},
		{"http://h?compress=gzip", "", "gzip"},
	} {
		o, err := Config{URL: tc.url, Username: "u", Compression: tc.param}.Options()
		if err != nil {
			t.Errorf("%s with %q: %v", tc.url, tc.param, err)
			continue
		}
		got := "unset"
		if o.Compression != nil {
			got = o.Compression.Method.String()
		}
		if got != tc.want {
			t.Errorf("%s with clickHouseCompression %q: method %s, want %s", tc.url, tc.param, got, tc.want)
		}
	}
	for _, tc := range []struct{ url, param, want string }{
		{"clickhouse://h", "LZ4", `ClickHouse compression: must be lz4, zstd or none, not "LZ4"`},
		{"clickhouse://h", "gzip", `must be lz4, zstd or none, not "gzip"`},
		{"clickhouse://h?compress=zstd", "lz4", "ClickHouse compression: is lz4, but ClickHouse URL's option compress=zstd says otherwise"},
		{"clickhouse://h?compress=false", "lz4", "compress=false says otherwise"},
		{"clickhouse://h?compress=1", "none", "compress=1 says otherwise"},
	} {
		_, err := Config{URL: tc.url, Username: "u", Compression: tc.param}.Options()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s with %q: error %v, want %q", tc.url, tc.param, err, tc.want)
		}
		if rule := CompressionRule(tc.url, tc.param, Field.String); rule == "" || !strings.Contains(FieldCompression.String()+": "+rule, tc.want) {
			t.Errorf("CompressionRule(%s, %q) = %q, want %q", tc.url, tc.param, rule, tc.want)
		}
	}
}
