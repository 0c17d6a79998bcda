package pipeline

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/ch-beam/pubsub-to-clickhouse/transforms/secret"
	"github.com/google/go-cmp/cmp"
)

// testPassword is the password of the tests: it must never show in any output.
const testPassword = "s3cr3t-PW"

// allFlags are the template parameter names, in field order.
var allFlags = []string{
	"inputSubscription", "clickHouseUrl", "clickHouseDatabase", "clickHouseTable",
	"clickHouseUsername", "clickHousePassword", "clickHouseCaCertificate", "clickHouseClientCertificate",
	"clickHouseClientKey", "clickHouseCompression", "clickHouseDeadLetterTable", "deadLetterTopic", "windowSeconds", "batchRowCount", "batchByteSize", "maxInsertBlockSize", "maxRetries",
	"retryInitialBackoffMillis", "retryMaxBackoffMillis", "insertDeduplicate", "insertQuorum", "insertDistributedSync",
	"numShards", "shuffleCompression", "stopAfterIdle", "progressSeconds",
	"schemaRefreshSeconds", "metadataColumns", "unknownFieldsColumn", "routeBy", "routeTables", "routeUnlisted",
	"addNewColumns", "addNewColumnsMax", "addNewColumnsPattern", "addNewColumnsExcluded", "addNewColumnsOnCluster",
	"javascriptTextTransformGcsPath", "javascriptTextTransformFunctionName",
	"javascriptTextTransformReloadIntervalMinutes",
}

// validOptions returns parameters that pass Validate.
func validOptions() Options {
	o := Defaults()
	o.InputSubscription = "projects/my-project/subscriptions/events-sub"
	o.ClickHouseURL = "https://ch.example.com:8443"
	o.ClickHouseDatabase = "analytics"
	o.ClickHouseTable = "events"
	o.ClickHouseUsername = "default"
	o.ClickHousePassword = testPassword
	o.ClickHouseDeadLetterTable = "events_dead_letter"
	o.DeadLetterTopic = "projects/my-project/topics/events-dead-letter"
	return o
}

// parseFlags registers the flags on a new FlagSet and parses args.
func parseFlags(args ...string) (Options, *flag.FlagSet, error) {
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var o Options
	RegisterFlags(fs, &o)
	err := fs.Parse(args)
	return o, fs, err
}

// problems returns the ParamErrors joined in err, failing the test if err is
// not a join of *ParamError.
func problems(t *testing.T, err error) []*ParamError {
	t.Helper()
	if err == nil {
		return nil
	}
	j, ok := err.(interface{ Unwrap() []error })
	if !ok {
		t.Fatalf("Validate error %T is not from errors.Join: %v", err, err)
	}
	var out []*ParamError
	for _, e := range j.Unwrap() {
		var pe *ParamError
		if !errors.As(e, &pe) {
			t.Fatalf("joined error %T is not a *ParamError: %v", e, e)
		}
		out = append(out, pe)
	}
	return out
}

func params(ps []*ParamError) []string {
	var names []string
	for _, p := range ps {
		names = append(names, p.Param)
	}
	return names
}

func TestDefaults(t *testing.T) {
	want := Options{
		BatchByteSize:             16 << 20,
		MaxInsertBlockSize:        1000000,
		MaxRetries:                5,
		InsertDeduplicate:         true,
		InsertDistributedSync:     true,
		NumShards:                 0,
		RetryInitialBackoffMillis: 5000,
		RetryMaxBackoffMillis:     60000,
		ProgressSeconds:           5,
		SchemaRefreshSeconds:      60,
		AddNewColumnsMax:          50,
	}
	if diff := cmp.Diff(want, Defaults()); diff != "" {
		t.Errorf("Defaults() mismatch (-want +got):\n%s", diff)
	}
}

func TestRegisterFlagsDefinesEveryParameter(t *testing.T) {
	_, fs, err := parseFlags()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	fs.VisitAll(func(f *flag.Flag) { got = append(got, f.Name) })
	want := append([]string(nil), allFlags...)
	sort.Strings(want) // VisitAll visits in lexical order
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("flags mismatch (-want +got):\n%s", diff)
	}
}

func TestRegisterFlagsResetsToDefaults(t *testing.T) {
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	o := Options{ClickHouseTable: "stale", MaxRetries: 99, WindowSeconds: GivenInt(7)}
	RegisterFlags(fs, &o)
	if err := fs.Parse(nil); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(Defaults(), o); diff != "" {
		t.Errorf("after RegisterFlags and no args (-want +got):\n%s", diff)
	}
}

func TestRegisterFlagsNilPanics(t *testing.T) {
	for name, f := range map[string]func(){
		"nil FlagSet": func() { RegisterFlags(nil, &Options{}) },
		"nil Options": func() { RegisterFlags(flag.NewFlagSet("x", flag.ContinueOnError), nil) },
	} {
		t.Run(name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Error("no panic")
				}
			}()
			f()
		})
	}
}

func TestUsage(t *testing.T) {
	_, fs, _ := parseFlags()
	// Each flag's help line (usage plus what the flag package adds) must
	// tell its meaning, unit and default or whether it is required.
	want := map[string][]string{
		"inputSubscription":                            {"Pub/Sub", "projects/<project>/subscriptions/<name>", "Required"},
		"clickHouseUrl":                                {"http://host:8123", "https://host:8443 (ClickHouse Cloud)", "clickhouse://host:9000 (native protocol)", "Required"},
		"clickHouseDatabase":                           {"database", "Required"},
		"clickHouseTable":                              {"table", "Required"},
		"clickHouseUsername":                           {"user", "Required"},
		"clickHousePassword":                           {"password", "Optional, unset by default", "without a password"},
		"clickHouseDeadLetterTable":                    {"table", "Optional, unset by default"},
		"deadLetterTopic":                              {"projects/<project>/topics/<name>", "Optional, unset by default"},
		"windowSeconds":                                {"seconds", "positive", "Optional, unset by default"},
		"batchRowCount":                                {"rows", "positive", "Optional, unset by default"},
		"batchByteSize":                                {"bytes", "positive", "(default 16777216)"},
		"maxInsertBlockSize":                           {"max_insert_block_size", "rows", "(default 1000000)"},
		"maxRetries":                                   {"retried", "count", "(default 5)"},
		"insertDeduplicate":                            {"insert_deduplicate", "--insertDeduplicate=false", "(default true)"},
		"insertQuorum":                                 {"insert_quorum", "replicas", "0 disables", "Optional, unset by default"},
		"insertDistributedSync":                        {"insert_distributed_sync", "--insertDistributedSync=false", "(default true)"},
		"numShards":                                    {"INSERT streams", "0 = auto", "(default 0)"},
		"shuffleCompression":                           {"GroupByKey", "-shuffleCompression minlz", "minlz, s2 (what releases before minlz wrote) or zstd", "Optional, unset by default: minlz"},
		"retryInitialBackoffMillis":                    {"first retry", "milliseconds", "(default 5000)"},
		"retryMaxBackoffMillis":                        {"milliseconds", "(default 60000)"},
		"stopAfterIdle":                                {"Local runner only", "seconds", "Optional, unset by default"},
		"progressSeconds":                              {"Local runner only", "seconds", "0 = never", "(default 5)"},
		"schemaRefreshSeconds":                         {"schema", "seconds", "(default 60)"},
		"metadataColumns":                              {"KEY=column", "attribute.NAME", "Optional, unset by default"},
		"unknownFieldsColumn":                          {"column", "Map(String, String)", "Optional, unset by default"},
		"addNewColumns":                                {"ADD COLUMN", "(default false)"},
		"addNewColumnsMax":                             {"columns", "one worker", "(default 50)"},
		"addNewColumnsPattern":                         {"RE2", "regex", "Optional, unset by default: any name a column may have"},
		"addNewColumnsExcluded":                        {"names", "Optional, unset by default"},
		"addNewColumnsOnCluster":                       {"ON CLUSTER", "cluster", "Optional, unset by default: no ON CLUSTER"},
		"javascriptTextTransformGcsPath":               {"JavaScript", "gs://<bucket>/<object>", "local path", "Optional, unset by default"},
		"javascriptTextTransformFunctionName":          {"function", "Optional, unset by default"},
		"javascriptTextTransformReloadIntervalMinutes": {"minutes", "0 = never", "(default 0)"},
	}
	for _, name := range allFlags {
		var buf bytes.Buffer
		one := flag.NewFlagSet("one", flag.ContinueOnError)
		one.SetOutput(&buf)
		one.Var(fs.Lookup(name).Value, name, fs.Lookup(name).Usage)
		one.PrintDefaults()
		help := buf.String()
		for _, w := range want[name] {
			if !strings.Contains(help, w) {
				t.Errorf("help of -%s does not contain %q:\n%s", name, w, help)
			}
		}
	}
	// The defaults are also each flag's DefValue.
	for name, def := range map[string]string{
		"maxInsertBlockSize": "1000000", "maxRetries": "5", "batchByteSize": "16777216",
		"insertDeduplicate": "true", "insertDistributedSync": "true",
		"windowSeconds": "", "batchRowCount": "", "insertQuorum": "", "clickHousePassword": "",
	} {
		if got := fs.Lookup(name).DefValue; got != def {
			t.Errorf("-%s DefValue = %q, want %q", name, got, def)
		}
	}
}

func TestParseFlags(t *testing.T) {
	with := func(f func(o *Options)) Options {
		o := Defaults()
		f(&o)
		return o
	}
	tests := []struct {
		name string
		args []string
		want Options
	}{
		{"no flags", nil, Defaults()},
		{
			"every flag, as Dataflow passes them",
			[]string{
				"--inputSubscription=projects/my-project/subscriptions/events-sub",
				"--clickHouseUrl=clickhouse://default:" + testPassword + "@ch.example.com:9000/analytics",
				"--clickHouseDatabase=analytics",
				"--clickHouseTable=events",
				"--clickHouseUsername=default",
				"--clickHousePassword=" + testPassword,
				"--clickHouseDeadLetterTable=events_dead_letter",
				"--deadLetterTopic=projects/my-project/topics/events-dead-letter",
				"--windowSeconds=30",
				"--batchRowCount=5000",
				"--batchByteSize=1048576",
				"--maxInsertBlockSize=500000",
				"--maxRetries=0",
				"--insertDeduplicate=false",
				"--insertQuorum=2",
				"--insertDistributedSync=false",
				"--numShards=4",
				"--retryInitialBackoffMillis=100",
				"--retryMaxBackoffMillis=2000",
				"--stopAfterIdle=60",
				"--schemaRefreshSeconds=0",
			},
			Options{
				InputSubscription:         "projects/my-project/subscriptions/events-sub",
				ClickHouseURL:             "clickhouse://default:" + testPassword + "@ch.example.com:9000/analytics",
				ClickHouseDatabase:        "analytics",
				ClickHouseTable:           "events",
				ClickHouseUsername:        "default",
				ClickHousePassword:        testPassword,
				ClickHouseDeadLetterTable: "events_dead_letter",
				DeadLetterTopic:           "projects/my-project/topics/events-dead-letter",
				WindowSeconds:             GivenInt(30),
				BatchRowCount:             GivenInt(5000),
				BatchByteSize:             1 << 20,
				MaxInsertBlockSize:        500000,
				MaxRetries:                0,
				InsertDeduplicate:         false,
				InsertQuorum:              GivenInt(2),
				InsertDistributedSync:     false,
				NumShards:                 4,
				RetryInitialBackoffMillis: 100,
				RetryMaxBackoffMillis:     2000,
				StopAfterIdle:             GivenInt(60),
				ProgressSeconds:           5,
				SchemaRefreshSeconds:      0,
				AddNewColumnsMax:          50,
			},
		},
		{
			"single dash and separate values",
			[]string{"-clickHouseTable", "events", "-windowSeconds", "10", "-maxRetries", "3"},
			with(func(o *Options) { o.ClickHouseTable = "events"; o.WindowSeconds = GivenInt(10); o.MaxRetries = 3 }),
		},
		{"insertQuorum=0 is given", []string{"--insertQuorum=0"}, with(func(o *Options) { o.InsertQuorum = GivenInt(0) })},
		{"insertQuorum absent is unset", []string{"--maxRetries=1"}, with(func(o *Options) { o.MaxRetries = 1 })},
		{"windowSeconds=0 is given", []string{"--windowSeconds=0"}, with(func(o *Options) { o.WindowSeconds = GivenInt(0) })},
		{"batchRowCount=-1 is given", []string{"--batchRowCount=-1"}, with(func(o *Options) { o.BatchRowCount = GivenInt(-1) })},
		{"empty optional ints are unset", []string{"--windowSeconds=", "--batchRowCount=", "--insertQuorum="}, Defaults()},
		{"blank optional int is unset", []string{"--windowSeconds= "}, Defaults()},
		{"empty after a value unsets", []string{"--windowSeconds=5", "--windowSeconds="}, Defaults()},
		{"ints in decimal", []string{"--batchRowCount=10", "--maxInsertBlockSize=100", "--insertQuorum=3"},
			with(func(o *Options) {
				o.BatchRowCount = GivenInt(10)
				o.MaxInsertBlockSize = 100
				o.InsertQuorum = GivenInt(3)
			})},
		{"empty defaulted int is the default", []string{"--maxInsertBlockSize=", "--maxRetries="}, Defaults()},
		{"empty after a value is the default", []string{"--maxRetries=1", "--maxRetries="}, Defaults()},
		{"booleans =false", []string{"--insertDeduplicate=false", "--insertDistributedSync=false"},
			with(func(o *Options) { o.InsertDeduplicate = false; o.InsertDistributedSync = false })},
		{"booleans =true", []string{"--insertDeduplicate=true", "--insertDistributedSync=true"}, Defaults()},
		{"booleans as strconv.ParseBool", []string{"--insertDeduplicate=0", "--insertDistributedSync=F"},
			with(func(o *Options) { o.InsertDeduplicate = false; o.InsertDistributedSync = false })},
		{"bare boolean is true", []string{"--insertDeduplicate=false", "--insertDeduplicate"}, Defaults()},
		{"empty boolean is the default", []string{"--insertDeduplicate=", "--insertDistributedSync="}, Defaults()},
		{"empty password", []string{"--clickHousePassword="}, Defaults()},
		{"empty dead-letter parameters", []string{"--clickHouseDeadLetterTable=", "--deadLetterTopic="}, Defaults()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, _, err := parseFlags(tt.args...)
			if err != nil {
				t.Fatalf("Parse(%q): %v", tt.args, err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Parse(%q) mismatch (-want +got):\n%s", tt.args, diff)
			}
		})
	}
}

func TestParseFlagsErrors(t *testing.T) {
	tests := []struct {
		arg  string
		want string // in the error
	}{
		{"--windowSeconds=abc", "-windowSeconds: not a whole number"},
		{"--windowSeconds=1.5", "-windowSeconds: not a whole number"},
		// Not "has a leading 0", which they said: that is 010's.
		{"--windowSeconds=0.5", "-windowSeconds: not a whole number in decimal digits"},
		{"--batchRowCount=0x10", "-batchRowCount: not a whole number in decimal digits"},
		{"--batchRowCount=010", "-batchRowCount: has a leading 0: give the number in decimal digits without it"},
		{"--batchRowCount=ten", "-batchRowCount: not a whole number"},
		{"--insertQuorum=all", "-insertQuorum: not a whole number"},
		// Beyond an int: the parameter's own rule, not an int's range, which let negatives seem fine.
		{"--insertQuorum=99999999999999999999", "-insertQuorum: must be at most 1000 replicas"},
		{"--windowSeconds=99999999999999999999", "-windowSeconds: must be at most 31536000 seconds (365 days)"},
		{"--windowSeconds=-99999999999999999999", "-windowSeconds: must be a positive number of seconds (leave it empty for unset)"},
		{"--maxRetries=-99999999999999999999", "-maxRetries: must be 0 or more retries (0 = no retry; default 5)"},
		{"--retryMaxBackoffMillis=-99999999999999999999", "-retryMaxBackoffMillis: must be a positive number of milliseconds (default 60000)"},
		// As the template's form (metadata.json's regex), and so Dataflow's launch, refuses them.
		{"--retryMaxBackoffMillis= 1", "-retryMaxBackoffMillis: has spaces around it: give the number alone"},
		{"--retryMaxBackoffMillis=1 ", "-retryMaxBackoffMillis: has spaces around it"},
		{"--retryMaxBackoffMillis=+1", "-retryMaxBackoffMillis: has a leading +: give the number without it"},
		{"--windowSeconds=+10", "-windowSeconds: has a leading +"},
		{"--windowSeconds= 10", "-windowSeconds: has spaces around it"},
		{"--maxRetries=-0", "-maxRetries: is -0: give 0"},
		// -0 where 0 breaks the rule too: the rule, not "give 0".
		{"--batchRowCount=-0", "-batchRowCount: must be a positive number of rows (leave it empty for unset)"},
		{"--batchByteSize=-0", "-batchByteSize: must be a positive number of bytes (default 16777216)"},
		{"--windowSeconds=-0", "-windowSeconds: must be a positive number of seconds"},
		{"--insertDeduplicate= false", "-insertDeduplicate: has spaces around it: give true or false alone"},
		{"--insertDistributedSync=true ", "-insertDistributedSync: has spaces around it"},
		{"--maxInsertBlockSize=1e6", "-maxInsertBlockSize: not a whole number"},
		{"--maxRetries=many", "-maxRetries: not a whole number"},
		{"--insertDeduplicate=maybe", "-insertDeduplicate: not true or false"},
		{"--insertDistributedSync=yes", "-insertDistributedSync: not true or false"},
		{"--clickHouseTabel=events", "-clickHouseTabel"},
	}
	for _, tt := range tests {
		t.Run(tt.arg, func(t *testing.T) {
			_, _, err := parseFlags(tt.arg)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Parse(%q) error = %v, want one containing %q", tt.arg, err, tt.want)
			}
		})
	}
}

func TestOptionalInt(t *testing.T) {
	tests := []struct {
		in      string
		want    OptionalInt
		wantErr bool
	}{
		{"", OptionalInt{}, false},
		{"   ", OptionalInt{}, false},
		{"0", GivenInt(0), false},
		{"-3", GivenInt(-3), false},
		{" 42 ", OptionalInt{}, true}, // the form refuses spaces around it
		{"42 ", OptionalInt{}, true},
		{"010", OptionalInt{}, true}, // flag.Int's 8
		{"-07", OptionalInt{}, true},
		{"+0", OptionalInt{}, true}, // the form refuses a +
		{"+7", OptionalInt{}, true},
		{"-0", OptionalInt{}, true},
		{"0x10", OptionalInt{}, true},
		{"0b11", OptionalInt{}, true},
		{"0o17", OptionalInt{}, true},
		{"1_000", OptionalInt{}, true},
		{"abc", OptionalInt{}, true},
		{"1.5", OptionalInt{}, true},
		{"99999999999999999999", OptionalInt{}, true},
	}
	for _, tt := range tests {
		t.Run(strconv.Quote(tt.in), func(t *testing.T) {
			var v OptionalInt
			err := v.Set(tt.in)
			if (err != nil) != tt.wantErr {
				t.Fatalf("Set(%q) error = %v, want error %t", tt.in, err, tt.wantErr)
			}
			if err != nil {
				return
			}
			if v != tt.want {
				t.Errorf("Set(%q) = %+v, want %+v", tt.in, v, tt.want)
			}
			wantString, wantGet := "", any(nil)
			if tt.want.Given {
				wantString, wantGet = strconv.Itoa(tt.want.Value), tt.want.Value
			}
			if got := v.String(); got != wantString {
				t.Errorf("String() = %q, want %q", got, wantString)
			}
			if got := v.Get(); got != wantGet {
				t.Errorf("Get() = %v, want %v", got, wantGet)
			}
		})
	}
	var nilp *OptionalInt
	if got := nilp.String(); got != "" {
		t.Errorf("(*OptionalInt)(nil).String() = %q", got)
	}
}

func TestValidateAcceptsValid(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(o *Options)
	}{
		{"as is", func(o *Options) {}},
		{"empty password (default user)", func(o *Options) { o.ClickHousePassword = "" }},
		{"dead-letter table only", func(o *Options) { o.DeadLetterTopic = "" }},
		{"dead-letter topic only", func(o *Options) { o.ClickHouseDeadLetterTable = "" }},
		{"clickHouseTable the dead-letter table, never written (routeUnlisted=deadLetter)", func(o *Options) {
			o.RouteBy, o.RouteTables, o.RouteUnlisted, o.ClickHouseTable = "field:type", "a=b", "deadLetter", "events_dead_letter"
		}},
		{"http URL", func(o *Options) { o.ClickHouseURL = "http://localhost:8123" }},
		{"URL without port", func(o *Options) { o.ClickHouseURL = "http://ch.example.com" }},
		{"upper-case scheme, query", func(o *Options) { o.ClickHouseURL = "HTTPS://ch.example.com:8443/?secure=true" }},
		{"native URL, userinfo, hosts, path", func(o *Options) {
			o.ClickHouseURL = "clickhouse://default@h1.example.com:9000,h2.example.com:9000/analytics?dial_timeout=5s"
		}},
		{"IPv6 host", func(o *Options) { o.ClickHouseURL = "clickhouse://[::1]:9000" }},
		{"domain-scoped project", func(o *Options) {
			o.InputSubscription = "projects/example.com:my-project/subscriptions/events"
			o.DeadLetterTopic = "projects/example.com:my-project/topics/dead"
		}},
		{"project of 6 and 30 characters", func(o *Options) {
			o.InputSubscription = "projects/abcdef/subscriptions/events"
			o.DeadLetterTopic = "projects/" + strings.Repeat("a", 29) + "1/topics/dead"
		}},
		{"names of every allowed character", func(o *Options) {
			o.InputSubscription = "projects/my-project/subscriptions/A-_.~+%z09"
			o.DeadLetterTopic = "projects/my-project/topics/Goog" // only lower-case "goog" is reserved
		}},
		{"names of 3 and 255 characters", func(o *Options) {
			o.InputSubscription = "projects/my-project/subscriptions/abc"
			o.DeadLetterTopic = "projects/my-project/topics/" + strings.Repeat("t", 255)
		}},
		{"names with hyphen and unicode", func(o *Options) {
			o.ClickHouseDatabase = "analytics-2024"
			o.ClickHouseTable = "événements"
			o.ClickHouseDeadLetterTable = "dead letters"
		}},
		{"smallest given ints", func(o *Options) {
			o.WindowSeconds, o.BatchRowCount, o.MaxInsertBlockSize = GivenInt(1), GivenInt(1), 1
			o.MaxRetries, o.InsertQuorum = 0, GivenInt(0)
		}},
		{"larger ints", func(o *Options) {
			o.WindowSeconds, o.BatchRowCount, o.InsertQuorum = GivenInt(60), GivenInt(100000), GivenInt(2)
		}},
		{"addNewColumnsMax and the UDF reload at their defaults, without addNewColumns or a UDF", func(o *Options) {
			o.AddNewColumns, o.AddNewColumnsMax = false, 50
			o.JavascriptTextTransformGcsPath, o.JavascriptTextTransformReloadIntervalMinutes = "", 0
		}},
		{"largest ints", func(o *Options) {
			o.WindowSeconds, o.BatchRowCount, o.InsertQuorum = GivenInt(31536000), GivenInt(2147483647), GivenInt(1000)
			o.BatchByteSize, o.MaxInsertBlockSize, o.MaxRetries, o.NumShards = 2147483647, 2147483647, 10000, 1024
			o.RetryInitialBackoffMillis, o.RetryMaxBackoffMillis = 31536000000, 31536000000
			o.StopAfterIdle, o.ProgressSeconds, o.SchemaRefreshSeconds = GivenInt(31536000), 31536000, 31536000
			o.AddNewColumns, o.AddNewColumnsMax = true, 10000
		}},
		{"UDF in Cloud Storage, reloaded", func(o *Options) {
			o.JavascriptTextTransformGcsPath, o.JavascriptTextTransformFunctionName = "gs://my-bucket/udfs/transform.js", "transform"
			o.JavascriptTextTransformReloadIntervalMinutes = 5
		}},
		{"UDF in a local file, function of every allowed character", func(o *Options) {
			o.JavascriptTextTransformGcsPath, o.JavascriptTextTransformFunctionName = "udfs/my udf.js", "$reshape_2"
		}},
		{"metadata and unknown fields columns", func(o *Options) {
			o.MetadataColumns, o.UnknownFieldsColumn = "message_id=msg_id,publish_time=published_at,attribute.source=src,attributes=attrs", "unknown fields"
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := validOptions()
			tt.mutate(&o)
			if err := o.Validate(); err != nil {
				t.Errorf("Validate() = %v, want nil", err)
			}
		})
	}
}

func TestValidateRules(t *testing.T) {
	long := strings.Repeat("a", 31)
	tests := []struct {
		name   string
		mutate func(o *Options)
		param  string
		value  string // the value as the error shows it
		rule   string // part of the rule
	}{
		// Required parameters.
		{"inputSubscription empty", func(o *Options) { o.InputSubscription = "" }, "inputSubscription", "", "is required"},
		{"inputSubscription blank", func(o *Options) { o.InputSubscription = "   " }, "inputSubscription", "   ", "is required"},
		{"clickHouseUrl empty", func(o *Options) { o.ClickHouseURL = "" }, "clickHouseUrl", "", "is required"},
		{"clickHouseDatabase blank", func(o *Options) { o.ClickHouseDatabase = " " }, "clickHouseDatabase", " ", "is required"},
		{"clickHouseTable empty", func(o *Options) { o.ClickHouseTable = "" }, "clickHouseTable", "", "is required"},
		{"clickHouseUsername blank", func(o *Options) { o.ClickHouseUsername = "\t" }, "clickHouseUsername", "\t", "is required"},

		// Dead letters.
		{"no dead letter", func(o *Options) { o.ClickHouseDeadLetterTable, o.DeadLetterTopic = "", "" },
			"clickHouseDeadLetterTable", "", "so is deadLetterTopic: set at least one"},
		{"dead-letter table blank", func(o *Options) { o.ClickHouseDeadLetterTable = "  " },
			"clickHouseDeadLetterTable", "  ", "is blank"},
		{"dead-letter topic blank", func(o *Options) { o.DeadLetterTopic = " " }, "deadLetterTopic", " ", "is blank"},

		// inputSubscription.
		{"subscription bare name", func(o *Options) { o.InputSubscription = "events-sub" },
			"inputSubscription", "events-sub", "must have the form projects/<project>/subscriptions/<name>"},
		{"subscription is a topic", func(o *Options) { o.InputSubscription = "projects/my-project/topics/events" },
			"inputSubscription", "projects/my-project/topics/events", "is the name of a Pub/Sub topic, not of a subscription"},
		{"subscription trailing slash", func(o *Options) { o.InputSubscription = "projects/my-project/subscriptions/events/" },
			"inputSubscription", "projects/my-project/subscriptions/events/", "must have the form"},
		{"subscription full URL", func(o *Options) {
			o.InputSubscription = "https://pubsub.googleapis.com/v1/projects/my-project/subscriptions/events"
		}, "inputSubscription", "https://pubsub.googleapis.com/v1/projects/my-project/subscriptions/events", "must have the form"},
		{"subscription ID empty", func(o *Options) { o.InputSubscription = "projects/my-project/subscriptions/" },
			"inputSubscription", "projects/my-project/subscriptions/", `subscription ID "" must not be empty`},
		{"project empty", func(o *Options) { o.InputSubscription = "projects//subscriptions/events" },
			"inputSubscription", "projects//subscriptions/events", `project ID "" must not be empty`},
		{"project too short", func(o *Options) { o.InputSubscription = "projects/abcde/subscriptions/events" },
			"inputSubscription", "projects/abcde/subscriptions/events", `project ID "abcde" must be 6 to 30 characters long (not 5)`},
		{"project too long", func(o *Options) { o.InputSubscription = "projects/" + long + "/subscriptions/events" },
			"inputSubscription", "projects/" + long + "/subscriptions/events", "must be 6 to 30 characters long (not 31)"},
		{"project upper case", func(o *Options) { o.InputSubscription = "projects/My-Project/subscriptions/events" },
			"inputSubscription", "projects/My-Project/subscriptions/events", "must start with a lowercase letter"},
		{"project starts with digit", func(o *Options) { o.InputSubscription = "projects/1project/subscriptions/events" },
			"inputSubscription", "projects/1project/subscriptions/events", "must start with a lowercase letter"},
		{"project underscore", func(o *Options) { o.InputSubscription = "projects/my_project/subscriptions/events" },
			"inputSubscription", "projects/my_project/subscriptions/events", "may hold only lowercase letters, digits and hyphens"},
		{"project ends with hyphen", func(o *Options) { o.InputSubscription = "projects/my-project-/subscriptions/events" },
			"inputSubscription", "projects/my-project-/subscriptions/events", "must not end with a hyphen"},
		{"project bad domain", func(o *Options) { o.InputSubscription = "projects/example:my-project/subscriptions/events" },
			"inputSubscription", "projects/example:my-project/subscriptions/events", "invalid domain"},
		{"domain-scoped project too short", func(o *Options) { o.InputSubscription = "projects/example.com:abc/subscriptions/events" },
			"inputSubscription", "projects/example.com:abc/subscriptions/events", "must be 6 to 30 characters long (not 3)"},
		{"subscription ID too short", func(o *Options) { o.InputSubscription = "projects/my-project/subscriptions/ab" },
			"inputSubscription", "projects/my-project/subscriptions/ab", `subscription ID "ab" must be 3 to 255 characters long (not 2)`},
		{"subscription ID too long", func(o *Options) {
			o.InputSubscription = "projects/my-project/subscriptions/" + strings.Repeat("s", 256)
		}, "inputSubscription", "projects/my-project/subscriptions/" + strings.Repeat("s", 256), "(not 256)"},
		{"subscription ID starts with digit", func(o *Options) { o.InputSubscription = "projects/my-project/subscriptions/1events" },
			"inputSubscription", "projects/my-project/subscriptions/1events", "must start with a letter"},
		{"subscription ID bad character", func(o *Options) { o.InputSubscription = "projects/my-project/subscriptions/events!" },
			"inputSubscription", "projects/my-project/subscriptions/events!", "may hold only letters, digits and - _ . ~ + %"},
		{"subscription ID with space", func(o *Options) { o.InputSubscription = "projects/my-project/subscriptions/events sub" },
			"inputSubscription", "projects/my-project/subscriptions/events sub", "may hold only letters"},
		{"subscription ID goog", func(o *Options) { o.InputSubscription = "projects/my-project/subscriptions/goog-events" },
			"inputSubscription", "projects/my-project/subscriptions/goog-events", `must not start with "goog"`},

		// deadLetterTopic.
		{"topic bare name", func(o *Options) { o.DeadLetterTopic = "dead-letters" },
			"deadLetterTopic", "dead-letters", "must have the form projects/<project>/topics/<name>"},
		{"topic is a subscription", func(o *Options) { o.DeadLetterTopic = "projects/my-project/subscriptions/dead" },
			"deadLetterTopic", "projects/my-project/subscriptions/dead", "is the name of a Pub/Sub subscription, not of a topic"},
		{"topic project", func(o *Options) { o.DeadLetterTopic = "projects/proj/topics/dead" },
			"deadLetterTopic", "projects/proj/topics/dead", `project ID "proj" must be 6 to 30`},
		{"topic ID goog", func(o *Options) { o.DeadLetterTopic = "projects/my-project/topics/google-dead" },
			"deadLetterTopic", "projects/my-project/topics/google-dead", `topic ID "google-dead" must not start with "goog"`},
		{"topic ID too short", func(o *Options) { o.DeadLetterTopic = "projects/my-project/topics/dl" },
			"deadLetterTopic", "projects/my-project/topics/dl", "must be 3 to 255 characters long (not 2)"},

		// clickHouseUrl.
		{"URL tcp", func(o *Options) { o.ClickHouseURL = "tcp://ch.example.com:9000" },
			"clickHouseUrl", "tcp://ch.example.com:9000", `scheme "tcp" is not supported; ` + acceptedURLForms},
		{"URL no scheme", func(o *Options) { o.ClickHouseURL = "ch.example.com:8123" },
			"clickHouseUrl", "ch.example.com:8123", "has no scheme; " + acceptedURLForms},
		{"URL JDBC", func(o *Options) { o.ClickHouseURL = "jdbc:clickhouse://ch.example.com:8123/analytics" },
			"clickHouseUrl", "jdbc:clickhouse://ch.example.com:8123/analytics", `is a JDBC URL, which is not supported; drop the "jdbc:" prefix`},
		{"URL ftp", func(o *Options) { o.ClickHouseURL = "ftp://ch.example.com" },
			"clickHouseUrl", "ftp://ch.example.com", `scheme "ftp" is not supported`},
		{"URL empty scheme", func(o *Options) { o.ClickHouseURL = "://ch.example.com" },
			"clickHouseUrl", "://ch.example.com", "has no valid scheme; " + acceptedURLForms},
		{"URL empty host", func(o *Options) { o.ClickHouseURL = "http://:8123" },
			"clickHouseUrl", "http://:8123", "has an empty host; " + acceptedURLForms},
		{"URL no host", func(o *Options) { o.ClickHouseURL = "http://" },
			"clickHouseUrl", "http://", "has no host; " + acceptedURLForms},
		{"URL path only", func(o *Options) { o.ClickHouseURL = "https:///analytics" },
			"clickHouseUrl", "https:///analytics", "has no host"},
		{"URL userinfo only", func(o *Options) { o.ClickHouseURL = "clickhouse://default@/analytics" },
			"clickHouseUrl", "clickhouse://default@/analytics", "has no host"},
		{"URL empty host among hosts", func(o *Options) { o.ClickHouseURL = "clickhouse://h1:9000,:9000" },
			"clickHouseUrl", "clickhouse://h1:9000,:9000", "has an empty host"},
		{"URL bad port", func(o *Options) { o.ClickHouseURL = "http://ch.example.com:80a" },
			"clickHouseUrl", "http://ch.example.com:80a", "has an invalid port"},
		{"URL port 0", func(o *Options) { o.ClickHouseURL = "http://ch.example.com:0" },
			"clickHouseUrl", "http://ch.example.com:0", "has an invalid port"},
		{"URL port beyond 65535", func(o *Options) { o.ClickHouseURL = "clickhouse://ch.example.com:90000" },
			"clickHouseUrl", "clickhouse://ch.example.com:90000", "has an invalid port (give a number from 1 to 65535 after the host's \":\")"},
		{"URL leading space", func(o *Options) { o.ClickHouseURL = " http://ch.example.com:8123" },
			"clickHouseUrl", " http://ch.example.com:8123", "must not begin or end with spaces"},
		{"URL tcp with password", func(o *Options) { o.ClickHouseURL = "tcp://default:" + testPassword + "@ch.example.com:9000" },
			"clickHouseUrl", "tcp://default:xxxxx@ch.example.com:9000", `scheme "tcp" is not supported`},
		{"URL password with slash", func(o *Options) { o.ClickHouseURL = "http://default:s3cr3t/PW@ch.example.com:8123" },
			"clickHouseUrl", "http://default:xxxxx@ch.example.com:8123", "password must be percent-encoded"},

		// The password: a Secret Manager name must be a secret version's.
		{"password a secret, not a version", func(o *Options) { o.ClickHousePassword = "projects/p/secrets/ch" },
			"clickHousePassword", "xxxxx", "is not a secret version's: give projects/<project>/secrets/<secret>/versions/<version|latest>"},
		{"password a regional secret", func(o *Options) { o.ClickHousePassword = "projects/p/locations/eu/secrets/ch/versions/1" },
			"clickHousePassword", "xxxxx", "regional secrets"},
		{"password in URL and a secret version", func(o *Options) {
			o.ClickHousePassword = "projects/p/secrets/ch/versions/latest"
			o.ClickHouseURL = "https://default:" + testPassword + "@ch.example.com:8443"
		}, "clickHouseUrl", "https://default:xxxxx@ch.example.com:8443", "holds a password, which the job graph would carry"},

		// The TLS parameters.
		{"CA for a plain URL", func(o *Options) {
			o.ClickHouseURL = "clickhouse://ch.example.com:9000"
			o.ClickHouseCaCertificate = "gs://certs/ca.pem"
		}, "clickHouseCaCertificate", "gs://certs/ca.pem", "clickHouseUrl does not use TLS"},
		{"CA for secure=false", func(o *Options) {
			o.ClickHouseURL = "clickhouse://ch.example.com:9440?secure=false"
			o.ClickHouseCaCertificate = "/etc/ca.pem"
		}, "clickHouseCaCertificate", "/etc/ca.pem", "clickHouseUrl does not use TLS"},
		{"CA for a URL that is wrong anyway", func(o *Options) {
			o.ClickHouseURL = "tcp://ch.example.com:9440"
			o.ClickHouseCaCertificate = "gs://certs/ca.pem"
		}, "clickHouseUrl", "tcp://ch.example.com:9440", `scheme "tcp" is not supported`},
		{"CA a bucket", func(o *Options) { o.ClickHouseCaCertificate = "gs://certs" },
			"clickHouseCaCertificate", "gs://certs", "must be gs://<bucket>/<object>"},
		{"CA a secret, not a version", func(o *Options) { o.ClickHouseCaCertificate = "projects/p/secrets/ca" },
			"clickHouseCaCertificate", "projects/p/secrets/ca", "is not a secret version's"},
		{"client certificate without key", func(o *Options) { o.ClickHouseClientCertificate = "gs://certs/client.pem" },
			"clickHouseClientCertificate", "gs://certs/client.pem", "clickHouseClientKey is not"},
		{"client key without certificate", func(o *Options) { o.ClickHouseClientKey = "projects/p/secrets/key/versions/2" },
			"clickHouseClientKey", "projects/p/secrets/key/versions/2", "clickHouseClientCertificate is not"},
		{"client key as PEM text", func(o *Options) {
			o.ClickHouseClientCertificate = "gs://certs/client.pem"
			o.ClickHouseClientKey = "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC"
		}, "clickHouseClientKey", "xxxxx", "holds PEM text"},

		// Compression.
		{"compression unknown", func(o *Options) { o.ClickHouseCompression = "gzip" },
			"clickHouseCompression", "gzip", "must be lz4, zstd or none"},
		{"compression against the URL", func(o *Options) {
			o.ClickHouseURL = "clickhouse://ch.example.com:9000?compress=zstd"
			o.ClickHouseCompression = "lz4"
		}, "clickHouseCompression", "lz4", "clickHouseUrl's option compress=zstd says otherwise"},

		// Plain names.
		{"database with dot", func(o *Options) { o.ClickHouseDatabase = "analytics.prod" },
			"clickHouseDatabase", "analytics.prod", "must be a database name without a dot"},
		{"database with backtick", func(o *Options) { o.ClickHouseDatabase = "ana`lytics" },
			"clickHouseDatabase", "ana`lytics", "must not contain a backtick"},
		{"database with NUL", func(o *Options) { o.ClickHouseDatabase = "analytics\x00" },
			"clickHouseDatabase", "analytics\x00", "must not contain a NUL character"},
		{"table with dot", func(o *Options) { o.ClickHouseTable = "analytics.events" },
			"clickHouseTable", "analytics.events", "put the database in clickHouseDatabase"},
		{"table with backtick", func(o *Options) { o.ClickHouseTable = "`events`" },
			"clickHouseTable", "`events`", "must not contain a backtick"},
		{"table with parentheses", func(o *Options) { o.ClickHouseTable = "a(b)" },
			"clickHouseTable", "a(b)", "must not contain a backtick, a backslash or a parenthesis"},
		{"table with a SETTINGS clause", func(o *Options) { o.ClickHouseTable = "events settings max_threads=1" },
			"clickHouseTable", "events settings max_threads=1", `must not hold "settings max_threads=" after whitespace`},
		{"table with NUL", func(o *Options) { o.ClickHouseTable = "ev\x00ents" },
			"clickHouseTable", "ev\x00ents", "must not contain a NUL character"},
		{"dead-letter table with dot", func(o *Options) { o.ClickHouseDeadLetterTable = "analytics.dead" },
			"clickHouseDeadLetterTable", "analytics.dead", "the dead-letter table is in clickHouseDatabase"},
		{"dead-letter table with backtick", func(o *Options) { o.ClickHouseDeadLetterTable = "dead`" },
			"clickHouseDeadLetterTable", "dead`", "must not contain a backtick"},
		{"dead-letter table with NUL", func(o *Options) { o.ClickHouseDeadLetterTable = "\x00" },
			"clickHouseDeadLetterTable", "\x00", "must not contain a NUL character"},

		// Numbers.
		{"windowSeconds 0", func(o *Options) { o.WindowSeconds = GivenInt(0) },
			"windowSeconds", "0", "must be a positive number of seconds"},
		{"windowSeconds negative", func(o *Options) { o.WindowSeconds = GivenInt(-5) },
			"windowSeconds", "-5", "must be a positive number of seconds"},
		{"batchRowCount 0", func(o *Options) { o.BatchRowCount = GivenInt(0) },
			"batchRowCount", "0", "must be a positive number of rows"},
		// Beyond what a time.Duration or Beam's int32 count trigger holds: they wrapped around, or panicked.
		{"windowSeconds beyond a year", func(o *Options) { o.WindowSeconds = GivenInt(9300000000) },
			"windowSeconds", "9300000000", "must be at most 31536000 seconds (365 days)"},
		{"stopAfterIdle beyond a year", func(o *Options) { o.StopAfterIdle = GivenInt(18446744074) },
			"stopAfterIdle", "18446744074", "must be at most 31536000 seconds (365 days)"},
		{"batchRowCount beyond int32", func(o *Options) { o.BatchRowCount = GivenInt(2147483648) },
			"batchRowCount", "2147483648", "must be at most 2147483647 rows"},
		{"schemaRefreshSeconds beyond a year", func(o *Options) { o.SchemaRefreshSeconds = 31536001 },
			"schemaRefreshSeconds", "31536001", "must be at most 31536000 seconds (365 days)"},
		{"retryMaxBackoffMillis beyond a year", func(o *Options) { o.RetryMaxBackoffMillis = 9300000000000000 },
			"retryMaxBackoffMillis", "9300000000000000", "must be at most 31536000000 milliseconds (365 days)"},
		{"javascriptTextTransformReloadIntervalMinutes beyond a year", func(o *Options) { o.JavascriptTextTransformReloadIntervalMinutes = 307445735 },
			"javascriptTextTransformReloadIntervalMinutes", "307445735", "must be at most 525600 minutes (365 days)"},
		// The bounds of the parameters that had none: numShards=200000 stalled the local runner.
		{"numShards beyond 1024", func(o *Options) { o.NumShards = 200000 }, "numShards", "200000", "must be at most 1024 shards"},
		{"maxRetries beyond 10000", func(o *Options) { o.MaxRetries = 10001 }, "maxRetries", "10001", "must be at most 10000 retries"},
		{"insertQuorum beyond 1000", func(o *Options) { o.InsertQuorum = GivenInt(1001) }, "insertQuorum", "1001", "must be at most 1000 replicas"},
		{"addNewColumnsMax beyond 10000", func(o *Options) { o.AddNewColumns, o.AddNewColumnsMax = true, 10001 },
			"addNewColumnsMax", "10001", "must be at most 10000 columns"},
		{"maxInsertBlockSize beyond int32", func(o *Options) { o.MaxInsertBlockSize = 2147483648 },
			"maxInsertBlockSize", "2147483648", "must be at most 2147483647 rows"},
		{"batchByteSize beyond 2 GiB", func(o *Options) { o.BatchByteSize = 1 << 31 },
			"batchByteSize", "2147483648", "must be at most 2147483647 bytes"},
		{"progressSeconds beyond a year", func(o *Options) { o.ProgressSeconds = 31536001 },
			"progressSeconds", "31536001", "must be at most 31536000 seconds (365 days)"},
		{"retryInitialBackoffMillis beyond a year", func(o *Options) { o.RetryInitialBackoffMillis, o.RetryMaxBackoffMillis = 31536000001, 31536000000 },
			"retryInitialBackoffMillis", "31536000001", "must be at most 31536000000 milliseconds (365 days)"},
		{"batchByteSize 0", func(o *Options) { o.BatchByteSize = 0 },
			"batchByteSize", "0", "must be a positive number of bytes (default 16777216)"},
		{"maxInsertBlockSize 0", func(o *Options) { o.MaxInsertBlockSize = 0 },
			"maxInsertBlockSize", "0", "must be a positive number of rows (default 1000000)"},
		{"maxInsertBlockSize negative", func(o *Options) { o.MaxInsertBlockSize = -1 },
			"maxInsertBlockSize", "-1", "must be a positive number of rows"},
		{"maxRetries negative", func(o *Options) { o.MaxRetries = -1 },
			"maxRetries", "-1", "must be 0 or more retries"},
		{"numShards negative", func(o *Options) { o.NumShards = -1 },
			"numShards", "-1", "must be a positive number of shards, or 0"},
		{"shuffleCompression unknown", func(o *Options) { o.ShuffleCompression = "snappy" },
			"shuffleCompression", "snappy", "must be minlz (fast, the default), s2 (as fast, more bytes; what releases before minlz wrote) or zstd (fewer bytes, more CPU)"},
		{"shuffleCompression upper case", func(o *Options) { o.ShuffleCompression = "ZSTD" },
			"shuffleCompression", "ZSTD", "must be minlz"},
		{"retryInitialBackoffMillis zero", func(o *Options) { o.RetryInitialBackoffMillis = 0; o.RetryMaxBackoffMillis = 10 },
			"retryInitialBackoffMillis", "0", "must be a positive number of milliseconds"},
		{"retryMaxBackoffMillis below the initial backoff", func(o *Options) { o.RetryMaxBackoffMillis = 100 },
			"retryMaxBackoffMillis", "100", "must be at least retryInitialBackoffMillis (5000)"},
		{"schemaRefreshSeconds negative", func(o *Options) { o.SchemaRefreshSeconds = -1 },
			"schemaRefreshSeconds", "-1", "must be 0 (never) or more seconds"},
		{"stopAfterIdle zero", func(o *Options) { o.StopAfterIdle = GivenInt(0) },
			"stopAfterIdle", "0", "must be a positive number of seconds"},
		{"insertQuorum negative", func(o *Options) { o.InsertQuorum = GivenInt(-1) },
			"insertQuorum", "-1", "must be 0 or more replicas"},

		// Columns from the message.
		{"metadataColumns malformed", func(o *Options) { o.MetadataColumns = "message_id=a,publish_time" },
			"metadataColumns", "message_id=a,publish_time", `pair "publish_time" has no "="; give KEY=column`},
		{"metadataColumns unknown key", func(o *Options) { o.MetadataColumns = "attribute=a" },
			"metadataColumns", "attribute=a", `pair "attribute=a" has the unknown key "attribute"; KEY is one of message_id, publish_time, ordering_key, attributes and attribute.NAME`},
		{"metadataColumns a column twice", func(o *Options) { o.MetadataColumns = "message_id=a,ordering_key=a" },
			"metadataColumns", "message_id=a,ordering_key=a", `pair "ordering_key=a" names the column "a", which "message_id=a" already fills; a column takes one value`},
		{"unknownFieldsColumn blank", func(o *Options) { o.UnknownFieldsColumn = " " }, "unknownFieldsColumn", " ", "is blank"},
		{"unknownFieldsColumn spaced", func(o *Options) { o.UnknownFieldsColumn = "u " }, "unknownFieldsColumn", "u ", "must not start or end with spaces"},
		{"unknownFieldsColumn a metadata column", func(o *Options) { o.MetadataColumns, o.UnknownFieldsColumn = "attributes=u", "u" },
			"unknownFieldsColumn", "u", "is also named in metadataColumns (attributes=u); a column takes one value"},

		// Routing.
		{"routeBy a header", func(o *Options) { o.RouteBy, o.RouteTables = "header:x", "a=b" },
			"routeBy", "header:x", `"header:x" must be attribute:<name> (a Pub/Sub attribute of the message) or field:<name>`},
		{"routeBy without a name", func(o *Options) { o.RouteBy, o.RouteTables = "field:", "a=b" }, "routeBy", "field:", `"field:" names no field`},
		{"routeBy blank", func(o *Options) { o.RouteBy, o.RouteTables = " ", "a=b" }, "routeBy", " ", "is blank"},
		{"routeBy without routeTables", func(o *Options) { o.RouteBy = "field:type" }, "routeBy", "field:type", "is set, but routeTables is not"},
		{"routeTables without routeBy", func(o *Options) { o.RouteTables = "a=b" }, "routeTables", "a=b", "is set, but routeBy is not"},
		{"routeTables a pair without =", func(o *Options) { o.RouteBy, o.RouteTables = "field:type", "click=clicks,orders" },
			"routeTables", "click=clicks,orders", `the pair "orders" has no '='`},
		{"routeTables a value twice", func(o *Options) { o.RouteBy, o.RouteTables = "field:type", "click=a,click=b" },
			"routeTables", "click=a,click=b", `the value "click" is listed twice`},
		{"routeTables a dotted table", func(o *Options) { o.RouteBy, o.RouteTables = "field:type", "click=db.clicks" },
			"routeTables", "click=db.clicks", `the pair "click=db.clicks": the table "db.clicks" must be a bare table name without a dot`},
		{"routeTables the dead-letter table", func(o *Options) { o.RouteBy, o.RouteTables = "field:type", "bad=events_dead_letter" },
			"routeTables", "bad=events_dead_letter", `the pair "bad=events_dead_letter" names clickHouseDeadLetterTable`},
		{"clickHouseTable the dead-letter table", func(o *Options) { o.ClickHouseTable = "events_dead_letter" },
			"clickHouseTable", "events_dead_letter", "is also clickHouseDeadLetterTable, which holds dead letters, not rows"},
		{"clickHouseTable the dead-letter table, unlisted values to it", func(o *Options) {
			o.RouteBy, o.RouteTables, o.ClickHouseTable = "field:type", "a=b", "events_dead_letter"
		}, "clickHouseTable", "events_dead_letter", "is also clickHouseDeadLetterTable, which holds dead letters, not rows"},
		{"routeBy a name with a trailing space", func(o *Options) { o.RouteBy, o.RouteTables = "attribute:event_type ", "a=b" },
			"routeBy", "attribute:event_type ", `"attribute:event_type " has spaces around the name "event_type "`},
		{"routeBy a name with a leading tab", func(o *Options) { o.RouteBy, o.RouteTables = "field:\ttype", "a=b" },
			"routeBy", "field:\ttype", `has spaces around the name`},
		{"routeUnlisted unknown", func(o *Options) { o.RouteBy, o.RouteTables, o.RouteUnlisted = "field:type", "a=b", "drop" },
			"routeUnlisted", "drop", "must be clickHouseTable (unlisted values go to that table) or deadLetter"},
		{"routeUnlisted without routeBy", func(o *Options) { o.RouteUnlisted = "deadLetter" }, "routeUnlisted", "deadLetter", "is set, but routeBy is not"},
		{"addNewColumnsMax 0", func(o *Options) { o.AddNewColumns, o.AddNewColumnsMax = true, 0 }, "addNewColumnsMax", "0", "must be a positive number of columns (default 50)"},
		{"addNewColumnsPattern not RE2", func(o *Options) { o.AddNewColumns, o.AddNewColumnsPattern = true, "^[a-z" }, "addNewColumnsPattern", "^[a-z",
			"is not an RE2 regular expression: error parsing regexp: missing closing ]"},
		{"addNewColumnsPattern blank", func(o *Options) { o.AddNewColumns, o.AddNewColumnsPattern = true, " " }, "addNewColumnsPattern", " ", "is blank"},
		{"addNewColumnsPattern without addNewColumns", func(o *Options) { o.AddNewColumnsPattern = "^a" }, "addNewColumnsPattern", "^a",
			"is set, but addNewColumns is not"},
		{"addNewColumnsExcluded empty name", func(o *Options) { o.AddNewColumns, o.AddNewColumnsExcluded = true, "a,,b" }, "addNewColumnsExcluded", "a,,b",
			"name 2 of 3 is empty"},
		{"addNewColumnsExcluded spaced", func(o *Options) { o.AddNewColumns, o.AddNewColumnsExcluded = true, "debug, trace" }, "addNewColumnsExcluded", "debug, trace",
			`name 2 of 2, " trace", starts or ends with a space: names are matched exactly, so it would never match the field "trace"`},
		{"addNewColumnsExcluded without addNewColumns", func(o *Options) { o.AddNewColumnsExcluded = "debug" }, "addNewColumnsExcluded", "debug",
			"is set, but addNewColumns is not"},
		{"addNewColumnsOnCluster spaced", func(o *Options) { o.AddNewColumns, o.AddNewColumnsOnCluster = true, "c " }, "addNewColumnsOnCluster", "c ",
			"must not start or end with spaces"},
		{"addNewColumnsOnCluster without addNewColumns", func(o *Options) { o.AddNewColumnsOnCluster = "c" }, "addNewColumnsOnCluster", "c",
			"is set, but addNewColumns is not: it names the cluster on which addNewColumns runs its ALTER TABLE"},
		{"addNewColumnsPattern without addNewColumns says what it does", func(o *Options) { o.AddNewColumnsPattern = "^a" }, "addNewColumnsPattern", "^a",
			"is set, but addNewColumns is not: it says which field names addNewColumns makes columns"},
		// Ignored before, without a word; the default (50) still passes (TestValidateAcceptsValid).
		{"addNewColumnsMax without addNewColumns", func(o *Options) { o.AddNewColumnsMax = 7 }, "addNewColumnsMax", "7",
			"is set, but addNewColumns is not: it bounds how many columns addNewColumns adds"},

		// The JavaScript UDF.
		{"UDF path without a function", func(o *Options) { o.JavascriptTextTransformGcsPath = "gs://b/udf.js" },
			"javascriptTextTransformFunctionName", "", "is unset but javascriptTextTransformGcsPath is set"},
		{"UDF function without a path", func(o *Options) { o.JavascriptTextTransformFunctionName = "transform" },
			"javascriptTextTransformGcsPath", "", "is unset but javascriptTextTransformFunctionName is set"},
		{"UDF path a bucket", func(o *Options) {
			o.JavascriptTextTransformGcsPath, o.JavascriptTextTransformFunctionName = "gs://bucket", "transform"
		}, "javascriptTextTransformGcsPath", "gs://bucket", "must be gs://<bucket>/<object>"},
		{"UDF path a folder", func(o *Options) {
			o.JavascriptTextTransformGcsPath, o.JavascriptTextTransformFunctionName = "gs://bucket/udfs/", "transform"
		}, "javascriptTextTransformGcsPath", "gs://bucket/udfs/", "must be gs://<bucket>/<object>"},
		{"UDF path blank", func(o *Options) {
			o.JavascriptTextTransformGcsPath, o.JavascriptTextTransformFunctionName = "  ", "transform"
		}, "javascriptTextTransformGcsPath", "  ", "is blank"},
		{"UDF path with a trailing space", func(o *Options) {
			o.JavascriptTextTransformGcsPath, o.JavascriptTextTransformFunctionName = "/tmp/udf.js ", "transform"
		}, "javascriptTextTransformGcsPath", "/tmp/udf.js ", "must not start or end with spaces"},
		{"UDF function not an identifier", func(o *Options) {
			o.JavascriptTextTransformGcsPath, o.JavascriptTextTransformFunctionName = "gs://b/udf.js", "1transform"
		}, "javascriptTextTransformFunctionName", "1transform", "must be the name of a global JavaScript function"},
		{"UDF function a call", func(o *Options) {
			o.JavascriptTextTransformGcsPath, o.JavascriptTextTransformFunctionName = "gs://b/udf.js", "transform()"
		}, "javascriptTextTransformFunctionName", "transform()", "must be the name of a global JavaScript function"},
		{"UDF reload negative", func(o *Options) { o.JavascriptTextTransformReloadIntervalMinutes = -1 },
			"javascriptTextTransformReloadIntervalMinutes", "-1", "must be 0 (never) or more minutes (default 0)"},
		// Ignored before, without a word; 0, the default, still passes.
		{"UDF reload without a UDF", func(o *Options) { o.JavascriptTextTransformReloadIntervalMinutes = 7 },
			"javascriptTextTransformReloadIntervalMinutes", "7", "is set, but javascriptTextTransformGcsPath is not"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := validOptions()
			tt.mutate(&o)
			ps := problems(t, o.Validate())
			if len(ps) != 1 {
				t.Fatalf("Validate() gave %d problems, want 1: %v", len(ps), ps)
			}
			p := ps[0]
			want := &ParamError{Param: tt.param, Value: tt.value}
			if diff := cmp.Diff(want, p, cmp.FilterPath(func(p cmp.Path) bool {
				return p.Last().String() == ".Rule"
			}, cmp.Ignore())); diff != "" {
				t.Errorf("problem mismatch (-want +got):\n%s", diff)
			}
			if !strings.Contains(p.Rule, tt.rule) {
				t.Errorf("rule %q does not contain %q", p.Rule, tt.rule)
			}
			msg := p.Error()
			prefix := tt.param + " " + quoteCut(tt.value) + ": "
			if !strings.HasPrefix(msg, prefix) {
				t.Errorf("Error() = %q, want it to start with %q", msg, prefix)
			}
		})
	}
}

func TestValidateReportsEveryProblem(t *testing.T) {
	t.Run("zero Options", func(t *testing.T) {
		err := Options{}.Validate()
		got := params(problems(t, err))
		want := []string{
			"inputSubscription", "clickHouseUrl", "clickHouseDatabase", "clickHouseTable",
			"clickHouseUsername", "clickHouseDeadLetterTable", "batchByteSize", "maxInsertBlockSize",
			"retryInitialBackoffMillis", "retryMaxBackoffMillis", "addNewColumnsMax",
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("problems mismatch (-want +got):\n%s", diff)
		}
	})
	t.Run("several bad values", func(t *testing.T) {
		o := validOptions()
		o.InputSubscription = "projects/my-project/topics/events"
		o.ClickHouseURL = "tcp://default:" + testPassword + "@ch.example.com:9000"
		o.ClickHouseTable = "analytics.events"
		o.DeadLetterTopic = "dead"
		o.WindowSeconds = GivenInt(0)
		o.MaxRetries = -2
		o.InsertQuorum = GivenInt(-1)
		err := o.Validate()
		ps := problems(t, err)
		want := []string{
			"inputSubscription", "clickHouseUrl", "clickHouseTable", "deadLetterTopic",
			"windowSeconds", "maxRetries", "insertQuorum",
		}
		if diff := cmp.Diff(want, params(ps)); diff != "" {
			t.Errorf("problems mismatch (-want +got):\n%s", diff)
		}
		// The joined message has one line per problem, each naming its
		// parameter and value.
		lines := strings.Split(err.Error(), "\n")
		if len(lines) != len(want) {
			t.Fatalf("error has %d lines, want %d:\n%v", len(lines), len(want), err)
		}
		for i, p := range ps {
			if lines[i] != p.Error() {
				t.Errorf("line %d = %q, want %q", i, lines[i], p.Error())
			}
			if !strings.HasPrefix(lines[i], want[i]+` "`) {
				t.Errorf("line %d = %q does not start with the parameter and quoted value", i, lines[i])
			}
		}
		var pe *ParamError
		if !errors.As(err, &pe) || pe.Param != "inputSubscription" {
			t.Errorf("errors.As found %v, want the inputSubscription problem", pe)
		}
	})
}

func TestParamErrorCutsLongValues(t *testing.T) {
	tests := []struct {
		name  string
		value string
		want  string
	}{
		{"short", "abc", `x "abc": rule`},
		{"100 characters", strings.Repeat("a", 100), `x "` + strings.Repeat("a", 100) + `": rule`},
		{"101 characters", strings.Repeat("a", 101), `x "` + strings.Repeat("a", 100) + `"... (101 characters in all): rule`},
		{"multi-byte", strings.Repeat("é", 150), `x "` + strings.Repeat("é", 100) + `"... (150 characters in all): rule`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := (&ParamError{Param: "x", Value: tt.value, Rule: "rule"}).Error()
			if got != tt.want {
				t.Errorf("Error() = %q, want %q", got, tt.want)
			}
		})
	}

	o := validOptions()
	o.ClickHouseTable = strings.Repeat("t", 1000) + ".x"
	msg := o.Validate().Error()
	if len(msg) > 400 || !strings.Contains(msg, "(1002 characters in all)") {
		t.Errorf("Validate() error for a 1002-character table is not cut: %d bytes: %.200s", len(msg), msg)
	}
}

func TestRedactedURL(t *testing.T) {
	tests := []struct {
		url, password, want string
	}{
		{"", "", ""},
		{"http://ch.example.com:8123", testPassword, "http://ch.example.com:8123"},
		{"http://default@ch.example.com:8123", testPassword, "http://default@ch.example.com:8123"},
		{"http://default:pw@ch.example.com:8123/db", "", "http://default:xxxxx@ch.example.com:8123/db"},
		{"http://default:@ch.example.com:8123", "", "http://default:xxxxx@ch.example.com:8123"},
		{"https://u:p@ss@ch.example.com:8443", "", "https://u:xxxxx@ch.example.com:8443"},
		{"https://u:p%40ss@ch.example.com:8443", "", "https://u:xxxxx@ch.example.com:8443"},
		{"http://u:pa/ss@h:8123", "", "http://u:xxxxx@h:8123"},
		{"http://u:pa?ss@h:8123", "", "http://u:xxxxx@h:8123"},
		{"clickhouse://h:9000/db?username=u&password=pw&secure=true", "", "clickhouse://h:9000/db?username=u&password=xxxxx&secure=true"},
		{"clickhouse://h:9000?PASSWORD=p@w&x=1", "", "clickhouse://h:9000?PASSWORD=xxxxx&x=1"},
		{"clickhouse://h:9000?password=a&b&x=1", "", "clickhouse://h:9000?password=xxxxx&x=1"},
		{"http://h:8123?http_proxy=http%3A%2F%2Fu%3Apw%40proxy%3A3128", "",
			"http://h:8123?http_proxy=" + "http%3A%2F%2Fu%3Axxxxx%40proxy%3A3128"},
		{"u:pw@h:9000", "", "u:xxxxx@h:9000"},
		{"jdbc:clickhouse://u:pw@h:8123", "", "jdbc:clickhouse://u:xxxxx@h:8123"},
		// The password given as clickHousePassword is hidden wherever it is.
		{"http://" + testPassword + "@h:8123", testPassword, "http://xxxxx@h:8123"},
		{"http://h:8123/" + testPassword, testPassword, "http://h:8123/xxxxx"},
		// In doubt, too much is hidden: an "@" after the port.
		{"http://h:8123/?q=a@b", "", "http://h:xxxxx@b"},
	}
	for _, tt := range tests {
		o := Options{ClickHouseURL: tt.url, ClickHousePassword: secret.String(tt.password)}
		if got := o.RedactedURL(); got != tt.want {
			t.Errorf("RedactedURL(%q) = %q, want %q", tt.url, got, tt.want)
		}
	}
}

func TestString(t *testing.T) {
	o := validOptions()
	o.ClickHouseURL = "https://default:" + testPassword + "@ch.example.com:8443"
	o.BatchRowCount = GivenInt(5000)
	o.InsertQuorum = GivenInt(0)
	want := `inputSubscription="projects/my-project/subscriptions/events-sub" ` +
		`clickHouseUrl="https://default:xxxxx@ch.example.com:8443" ` +
		`clickHouseDatabase="analytics" clickHouseTable="events" clickHouseUsername="default" ` +
		`clickHousePassword="xxxxx" clickHouseCaCertificate="" clickHouseClientCertificate="" clickHouseClientKey="" clickHouseCompression="" ` +
		`clickHouseDeadLetterTable="events_dead_letter" ` +
		`deadLetterTopic="projects/my-project/topics/events-dead-letter" ` +
		`windowSeconds=unset batchRowCount=5000 batchByteSize=16777216 maxInsertBlockSize=1000000 maxRetries=5 ` +
		`retryInitialBackoffMillis=5000 retryMaxBackoffMillis=60000 insertDeduplicate=true insertQuorum=0 insertDistributedSync=true ` +
		`numShards=0 shuffleCompression="" stopAfterIdle=unset progressSeconds=5 schemaRefreshSeconds=60 ` +
		`metadataColumns="" unknownFieldsColumn="" routeBy="" routeTables="" routeUnlisted="" ` +
		`addNewColumns=false addNewColumnsMax=50 addNewColumnsPattern="" addNewColumnsExcluded="" addNewColumnsOnCluster="" ` +
		`javascriptTextTransformGcsPath="" javascriptTextTransformFunctionName="" javascriptTextTransformReloadIntervalMinutes=0`
	if got := o.String(); got != want {
		t.Errorf("String() =\n%s\nwant\n%s", got, want)
	}
	for _, name := range allFlags {
		if !strings.Contains(want, name+"=") {
			t.Errorf("String() lacks %s", name)
		}
	}

	o.ClickHousePassword = ""
	if got := o.String(); !strings.Contains(got, `clickHousePassword="" `) {
		t.Errorf("String() with an empty password = %s", got)
	}

	gs := validOptions().GoString()
	for _, w := range []string{"pipeline.Options{", `ClickHousePassword:"xxxxx"`, `ClickHouseTable:"events"`,
		"WindowSeconds:pipeline.OptionalInt{Value:0, Given:false}"} {
		if !strings.Contains(gs, w) {
			t.Errorf("GoString() = %s\nlacks %s", gs, w)
		}
	}
	if got := fmt.Sprintf("%#v", validOptions()); got != gs {
		t.Errorf("%%#v = %s, want GoString() %s", got, gs)
	}
}

// TestPasswordNeverShown checks every way of printing parameters for the
// password, whether given as clickHousePassword, in the URL's userinfo or
// query, or pasted into another parameter.
func TestPasswordNeverShown(t *testing.T) {
	scenarios := map[string]func(o *Options){
		"valid": func(o *Options) {},
		"valid, password also in URL userinfo": func(o *Options) {
			o.ClickHouseURL = "https://default:" + testPassword + "@ch.example.com:8443"
		},
		"password only in URL userinfo, bad scheme": func(o *Options) {
			o.ClickHousePassword = ""
			o.ClickHouseURL = "tcp://default:" + testPassword + "@ch.example.com:9000"
		},
		"password only in URL userinfo, bad port": func(o *Options) {
			o.ClickHousePassword = ""
			o.ClickHouseURL = "http://default:" + testPassword + "@ch.example.com:port"
		},
		"password only in URL userinfo with slash, bad port": func(o *Options) {
			o.ClickHousePassword = ""
			o.ClickHouseURL = "http://default:" + testPassword + "/x@ch.example.com:8123"
		},
		"password only in URL query, bad scheme": func(o *Options) {
			o.ClickHousePassword = ""
			o.ClickHouseURL = "jdbc:clickhouse://ch.example.com:8123/?user=default&password=" + testPassword
		},
		"password as scheme": func(o *Options) {
			o.ClickHouseURL = testPassword + "://ch.example.com:8123"
		},
		"password pasted into other parameters": func(o *Options) {
			o.InputSubscription = "projects/my-project/subscriptions/" + testPassword + "!"
			o.ClickHouseDatabase = testPassword + ".db"
			o.ClickHouseTable = "`" + testPassword
			o.ClickHouseUsername = testPassword
			o.ClickHouseDeadLetterTable = testPassword + "\x00"
			o.DeadLetterTopic = testPassword
		},
		"key pasted as PEM text": func(o *Options) {
			o.ClickHouseURL = "https://ch.example.com:8443"
			o.ClickHouseClientCertificate = "-----BEGIN CERTIFICATE-----\n" + testPassword
			o.ClickHouseClientKey = "-----BEGIN PRIVATE KEY-----\n" + testPassword
		},
		"URL pasted into database": func(o *Options) {
			o.ClickHousePassword = ""
			o.ClickHouseDatabase = "http://default:" + testPassword + "@ch.example.com:8123"
		},
		"everything wrong": func(o *Options) {
			*o = Options{ClickHousePassword: testPassword, ClickHouseURL: "tcp://u:" + testPassword + "@h",
				WindowSeconds: GivenInt(0), MaxRetries: -1}
		},
	}
	forbidden := []string{testPassword, "s3cr3t", hex.EncodeToString([]byte("s3cr3t"))}
	for name, mutate := range scenarios {
		t.Run(name, func(t *testing.T) {
			o := validOptions()
			mutate(&o)
			outputs := map[string]string{
				"String":      o.String(),
				"GoString":    o.GoString(),
				"RedactedURL": o.RedactedURL(),
			}
			for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%X", "%d", "%50.200s"} {
				outputs[verb] = fmt.Sprintf(verb, o)
				outputs["pointer "+verb] = fmt.Sprintf(verb, &o)
				outputs["field "+verb] = fmt.Sprintf(verb, struct{ O Options }{o})
			}
			outputs["Sprint"] = fmt.Sprint(o, &o)
			outputs["Sprintln slice"] = fmt.Sprintln([]Options{o})
			if err := o.Validate(); err != nil {
				outputs["Validate"] = err.Error()
				outputs["Validate %+v"] = fmt.Sprintf("%+v", err)
				for i, p := range problems(t, err) {
					outputs[fmt.Sprintf("problem %d %%#v", i)] = fmt.Sprintf("%#v", *p)
				}
			} else if name != "valid" && !strings.HasPrefix(name, "valid,") {
				t.Errorf("Validate() = nil, want problems")
			}
			for what, out := range outputs {
				for _, f := range forbidden {
					if strings.Contains(out, f) {
						t.Errorf("%s shows the password (%q):\n%s", what, f, out)
					}
				}
			}
		})
	}
}

// TestSecretVersionPassword: a password kept in Secret Manager is a name, which shows wherever
// the parameters are printed (it is no secret), and is what the stages' configuration holds.
func TestSecretVersionPassword(t *testing.T) {
	const version = "projects/my-project/secrets/ch-password/versions/latest"
	o, fs, err := parseFlags("--clickHousePassword=" + version)
	if err != nil {
		t.Fatal(err)
	}
	o.InputSubscription = "projects/my-project/subscriptions/events-sub"
	o.ClickHouseURL = "https://ch.example.com:8443"
	o.ClickHouseDatabase, o.ClickHouseTable, o.ClickHouseUsername = "analytics", "events", "ingest"
	o.ClickHouseDeadLetterTable = "dead"
	o.ClickHouseCaCertificate = "gs://certs/ca.pem"
	o.ClickHouseClientCertificate, o.ClickHouseClientKey = "/etc/client.pem", "projects/my-project/secrets/ch-key/versions/3"
	if err := o.Validate(); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	for what, out := range map[string]string{
		"String": o.String(), "GoString": o.GoString(), "flag": fs.Lookup("clickHousePassword").Value.String(),
		"ClickHouse()": o.ClickHouse().String(),
	} {
		if !strings.Contains(out, version) {
			t.Errorf("%s does not show the secret version: %s", what, out)
		}
	}
	c := o.ClickHouse()
	if c.Password != version || c.CACertificate != "gs://certs/ca.pem" || c.ClientCertificate != "/etc/client.pem" ||
		c.ClientKey != "projects/my-project/secrets/ch-key/versions/3" || c.PasswordAsText() {
		t.Errorf("ClickHouse() = %v, want the names of the parameters and no password as text", c)
	}
	o.ClickHousePassword = testPassword
	if !o.ClickHouse().PasswordAsText() {
		t.Error("a password given as text: PasswordAsText() = false")
	}
}

// TestFlagsNeverShowPassword checks the flag values that code listing the
// flags reads, as Beam's runners do to fill the job's pipeline options.
func TestFlagsNeverShowPassword(t *testing.T) {
	o, fs, err := parseFlags(
		"--clickHousePassword="+testPassword,
		"--clickHouseUrl=clickhouse://default:"+testPassword+"@ch.example.com:9000?password="+testPassword,
		"--clickHouseTable=events",
	)
	if err != nil {
		t.Fatal(err)
	}
	if o.ClickHousePassword != testPassword || !strings.Contains(o.ClickHouseURL, testPassword) {
		t.Fatalf("the fields must hold the real values: %q %q", o.ClickHousePassword, o.ClickHouseURL)
	}
	var out strings.Builder
	fs.Visit(func(f *flag.Flag) { fmt.Fprintf(&out, "%s=%s %q %v\n", f.Name, f.Value, f.DefValue, f.Value) })
	fs.SetOutput(&out)
	fs.PrintDefaults()
	if strings.Contains(out.String(), "s3cr3t") {
		t.Errorf("flag listing shows the password:\n%s", out.String())
	}
	if got := fs.Lookup("clickHousePassword").Value.String(); got != "xxxxx" {
		t.Errorf("password flag String() = %q, want xxxxx", got)
	}
	if got, want := fs.Lookup("clickHouseUrl").Value.String(), "clickhouse://default:xxxxx@ch.example.com:9000?password=xxxxx"; got != want {
		t.Errorf("URL flag String() = %q, want %q", got, want)
	}
	if got := fs.Lookup("clickHouseTable").Value.String(); got != "events" {
		t.Errorf("table flag String() = %q", got)
	}

	// An empty password prints as empty.
	_, fs, _ = parseFlags("--clickHousePassword=")
	if got := fs.Lookup("clickHousePassword").Value.String(); got != "" {
		t.Errorf("empty password flag String() = %q, want \"\"", got)
	}
}

// TestJSONKeepsPassword documents that Options keeps its plain JSON
// encoding: Beam serializes DoFn fields as JSON, and the workers need the
// password.
func TestJSONKeepsPassword(t *testing.T) {
	o := validOptions()
	o.WindowSeconds = GivenInt(10)
	o.InsertQuorum = GivenInt(0)
	b, err := json.Marshal(o)
	if err != nil {
		t.Fatal(err)
	}
	var got Options
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(o, got); diff != "" {
		t.Errorf("JSON round trip mismatch (-want +got):\n%s", diff)
	}
}

func TestFlagsThenValidate(t *testing.T) {
	base := []string{
		"--inputSubscription=projects/my-project/subscriptions/events-sub",
		"--clickHouseUrl=http://localhost:8123",
		"--clickHouseDatabase=analytics",
		"--clickHouseTable=events",
		"--clickHouseUsername=default",
		"--clickHousePassword=",
		"--deadLetterTopic=projects/my-project/topics/dead",
	}
	tests := []struct {
		extra []string
		want  []string // parameters with a problem
	}{
		{nil, nil},
		{[]string{"--windowSeconds=", "--batchRowCount=", "--insertQuorum="}, nil},
		{[]string{"--insertQuorum=0", "--maxRetries=0"}, nil},
		{[]string{"--windowSeconds=0"}, []string{"windowSeconds"}},
		{[]string{"--windowSeconds=0", "--batchRowCount=0", "--insertQuorum=-1", "--maxInsertBlockSize=0"},
			[]string{"windowSeconds", "batchRowCount", "maxInsertBlockSize", "insertQuorum"}},
		{[]string{"--deadLetterTopic="}, []string{"clickHouseDeadLetterTable"}},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.extra, " "), func(t *testing.T) {
			o, _, err := parseFlags(append(append([]string(nil), base...), tt.extra...)...)
			if err != nil {
				t.Fatal(err)
			}
			got := params(problems(t, o.Validate()))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("problems mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestShards(t *testing.T) {
	o := Defaults()
	for _, tc := range []struct {
		numShards, maxWorkers int
		src                   Source
		want                  int
	}{
		{0, 0, LocalSource, 1},
		{0, 50, LocalSource, 1},
		{0, 0, DataflowSource, 4},
		{0, 2, DataflowSource, 4},
		{0, 10, DataflowSource, 10},
		{0, 100, DataflowSource, 16},
		{3, 100, DataflowSource, 3},
		{7, 0, LocalSource, 7},
	} {
		o.NumShards = tc.numShards
		if got := o.Shards(tc.src, tc.maxWorkers); got != tc.want {
			t.Errorf("numShards %d, max_num_workers %d, %v: %d shards, want %d", tc.numShards, tc.maxWorkers, tc.src, got, tc.want)
		}
	}
}

// acceptedURLForms is the list of clickHouseUrl forms that chclient's rules end with.
const acceptedURLForms = "use http://host:8123, https://host:8443 (ClickHouse Cloud) or clickhouse://host:9000 (native protocol)"
