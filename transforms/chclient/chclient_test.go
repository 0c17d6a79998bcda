package chclient

import (
	"strings"
	"testing"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/google/go-cmp/cmp"
)

func TestOptions(t *testing.T) {
	for _, tc := range []struct {
		url      string
		protocol clickhouse.Protocol
		addr     []string
		tls      bool
	}{
		{"clickhouse://127.0.0.1", clickhouse.Native, []string{"127.0.0.1:9000"}, false},
		{"clickhouse://ch:9001/db", clickhouse.Native, []string{"ch:9001"}, false},
		{"http://ch", clickhouse.HTTP, []string{"ch:8123"}, false},
		{"https://abc.clickhouse.cloud:8443", clickhouse.HTTP, []string{"abc.clickhouse.cloud:8443"}, true},
		{"HTTPS://abc.clickhouse.cloud", clickhouse.HTTP, []string{"abc.clickhouse.cloud:8443"}, true},
		{"clickhouse://u:pw@h1:9000,h2,[::1]:9440", clickhouse.Native, []string{"h1:9000", "h2:9000", "[::1]:9440"}, false},
	} {
		o, err := Config{URL: tc.url, Database: "db", Username: "u", Password: "pw"}.Options()
		if err != nil {
			t.Errorf("%s: %v", tc.url, err)
			continue
		}
		if o.Protocol != tc.protocol || (o.TLS != nil) != tc.tls || o.Auth.Password != "pw" || o.Auth.Database != "db" {
			t.Errorf("%s: protocol %v, TLS %v, auth %+v", tc.url, o.Protocol, o.TLS != nil, o.Auth)
		}
		if diff := cmp.Diff(tc.addr, o.Addr); diff != "" {
			t.Errorf("%s: addresses (-want +got):\n%s", tc.url, diff)
		}
	}
	for _, bad := range []string{"tcp://h:9000", "h:9000", "http://", "clickhouse://user:s3cr3t-PW@:9000"} {
		_, err := Config{URL: bad}.Options()
		if err == nil {
			t.Errorf("%s: no error", bad)
			continue
		}
		if !strings.HasPrefix(err.Error(), "ClickHouse URL: ") || strings.Contains(err.Error(), "s3cr3t-PW") {
			t.Errorf("%s: error %q should name the ClickHouse URL and hide the password", bad, err)
		}
	}
}

func TestRedact(t *testing.T) {
	for in, want := range map[string]string{
		"https://u:s3cr3t@h:8443/x?y":                      "https://u:xxxxx@h:8443/x?y",
		"https://u@h:8443":                                 "https://u@h:8443",
		"clickhouse://h:9000":                              "clickhouse://h:9000",
		"clickhouse://h:9000?password=s3cr3t&compress=lz4": "clickhouse://h:9000?password=xxxxx&compress=lz4",
		// Options that are none of clickhouse-go's, whose names say they hold a secret.
		"clickhouse://h:9000?token=s3cr3t&Pass=s3cr3t&x_secret=s3cr3t&pwd=s3cr3t&secure=true": "clickhouse://h:9000?token=xxxxx&Pass=xxxxx&x_secret=xxxxx&pwd=xxxxx&secure=true",
	} {
		if got := RedactURL(in); got != want {
			t.Errorf("RedactURL(%q) = %q, want %q", in, got, want)
		}
	}
	c := Config{URL: "https://u:s3cr3t@h?password=s3cr3t", Password: "s3cr3t"}
	for _, s := range []string{c.String(), c.GoString()} {
		if strings.Contains(s, "s3cr3t") {
			t.Errorf("%s shows the password", s)
		}
	}
}
