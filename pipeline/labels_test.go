package pipeline

import (
	"errors"
	"flag"
	"fmt"
	"strings"
	"testing"

	"github.com/ClickHouse/clickhouse-go/v2"

	"github.com/ch-beam/pubsub-to-clickhouse/transforms/chclient"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/convert"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/psclient"
)

func TestLabelled(t *testing.T) {
	sub, _ := psclient.ParseSubscription("projects/my-project/subscriptions/events")
	topic, _ := psclient.ParseTopic("projects/my-project/topics/dead")
	config := &chclient.ConfigError{Field: chclient.FieldPassword, Hint: chclient.Hintf("refused"), Err: errors.New("code 516")}
	// A hint naming other fields names them as the field itself is named: by parameter here,
	// in plain words unlabelled.
	naming := &chclient.ConfigError{Field: chclient.FieldPassword, Err: errors.New("code 516"),
		Hint: chclient.Hintf("user %q refused at %s: check %s and %s", "ingest", "clickhouse://h:9000", chclient.FieldUsername, chclient.FieldPassword)}
	if got, want := naming.Error(), `ClickHouse password: user "ingest" refused at clickhouse://h:9000: check ClickHouse user and ClickHouse password (code 516)`; got != want {
		t.Errorf("unlabelled: %q, want %q", got, want)
	}
	for _, tc := range []struct {
		err   error
		param string
		want  string
	}{
		{&psclient.CheckError{Name: sub, Err: errors.New(sub.String() + " does not exist")}, "clickHouseTable",
			"inputSubscription projects/my-project/subscriptions/events does not exist"},
		{&psclient.CheckError{Name: topic, Err: errors.New(topic.String() + " does not exist")}, "",
			"deadLetterTopic projects/my-project/topics/dead does not exist"},
		{config, "clickHouseTable", "clickHousePassword: refused (code 516)"},
		{fmt.Errorf("dead letter: %w", config), "", "dead letter: clickHousePassword: refused (code 516)"},
		{naming, "", `clickHousePassword: user "ingest" refused at clickhouse://h:9000: check clickHouseUsername and clickHousePassword (code 516)`},
		{errors.New("table db.t does not exist"), "clickHouseTable", "clickHouseTable: table db.t does not exist"},
		{errors.New("connection refused"), "", "connection refused"},
	} {
		got := Labelled(tc.err, tc.param)
		if got.Error() != tc.want || !errors.Is(got, tc.err) {
			t.Errorf("Labelled(%q, %q) = %q, want %q wrapping the error", tc.err, tc.param, got, tc.want)
		}
	}
	if Labelled(nil, "clickHouseTable") != nil {
		t.Error("Labelled(nil) is not nil")
	}
}

// TestLabelledSettings: a ClickHouse exception on a connection's first query, when the URL has
// options that are sent as settings, names clickHouseUrl and them (over HTTP,
// max_execution_time=abc gave code 72, reported as clickHouseTable's at the launch and unlabelled
// by check); without such options it is left as it is, and the password's and the unknown
// setting's keep their own texts. An exception 115 that names no setting the URL can have sent
// (18.16 read "\x00" after max_threads=-1, sent as an unsigned number over the native protocol)
// says the server misread them.
func TestLabelledSettings(t *testing.T) {
	value := &clickhouse.Exception{Code: 72, Name: "CANNOT_PARSE_NUMBER", Message: "Cannot read floating point value here: abc."}
	busy := &clickhouse.Exception{Code: 202, Name: "TOO_MANY_SIMULTANEOUS_QUERIES", Message: "Too many simultaneous queries."}
	unknown := &clickhouse.Exception{Code: 115, Message: "Unknown setting 'no_such'"}
	password := &chclient.ConfigError{Field: chclient.FieldPassword, Hint: chclient.Hintf("refused"), Err: &clickhouse.Exception{Code: 516}}
	withSettings := Options{ClickHouseURL: "http://127.0.0.1:8123?max_execution_time=abc&dial_timeout=5s&load_balancing=random"}
	plain := Options{ClickHouseURL: "http://127.0.0.1:8123?dial_timeout=5s"}
	for _, tc := range []struct {
		err  error
		o    Options
		want string
	}{
		{fmt.Errorf("sendQuery: [HTTP 400] %w", value), withSettings, "clickHouseUrl: the server refused a setting of the URL (load_balancing, max_execution_time: " +
			"the options that are not clickhouse-go's are sent to the server as settings): check their values (sendQuery: [HTTP 400] code: 72, message: Cannot read floating point value here: abc.)"},
		{busy, plain, busy.Error()},
		{busy, withSettings, busy.Error()},
		{&clickhouse.Exception{Code: 212, Message: "Unknown load balancing: bogus"}, withSettings, "clickHouseUrl: the server refused a setting of the URL (load_balancing, max_execution_time: "},
		{unknown, withSettings, "clickHouseUrl: the server has no setting of that name"},
		{&clickhouse.Exception{Code: 115, Message: "Unknown setting \x00"}, withSettings, "clickHouseUrl: the server misread the settings of the URL: " +
			"over the native protocol, clickhouse-go sends each setting as an unsigned number"},
		{&clickhouse.Exception{Code: 115, Message: "Unknown setting "}, plain, "clickHouseUrl: the server misread the settings of the URL: "},
		{password, withSettings, "clickHousePassword: refused"},
		{errors.New("connection refused"), withSettings, "connection refused"},
	} {
		got := LabelledSettings(tc.err, tc.o)
		if !strings.HasPrefix(got.Error(), tc.want) || !errors.Is(got, tc.err) || strings.ContainsRune(got.Error(), 0) {
			t.Errorf("LabelledSettings(%q, %s) = %q, want %q wrapping the error", tc.err, tc.o.ClickHouseURL, got, tc.want)
		}
	}
	if LabelledSettings(nil, withSettings) != nil {
		t.Error("LabelledSettings(nil) is not nil")
	}
}

// TestClickHouseParams: each field of chclient.Config that a ConfigError names has its own
// template parameter, each convert.Option is named as its parameter, and the unlabelled text names the field in plain words.
func TestClickHouseParams(t *testing.T) {
	fs := flag.NewFlagSet("params", flag.ContinueOnError)
	var o Options
	RegisterFlags(fs, &o)
	seen := map[string]chclient.Field{}
	for _, f := range chclient.Fields {
		p := ClickHouseParam(f)
		if fs.Lookup(p) == nil {
			t.Errorf("%v: parameter %q is not a flag", f, p)
		}
		if g, ok := seen[p]; ok {
			t.Errorf("%v and %v: both parameter %q", g, f, p)
		}
		seen[p] = f
	}
	for _, o := range []convert.Option{convert.OptionMetadata, convert.OptionUnknownFields} {
		if fs.Lookup(o.String()) == nil {
			t.Errorf("convert option %d: %q is not a flag", int(o), o)
		}
	}
	err := &chclient.ConfigError{Field: chclient.FieldURL, Hint: chclient.Hintf("nothing listens at clickhouse://h:1"), Err: errors.New("connection refused")}
	if got, want := err.Error(), "ClickHouse URL: nothing listens at clickhouse://h:1 (connection refused)"; got != want {
		t.Errorf("unlabelled: %q, want %q", got, want)
	}
}
