package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/ch-beam/pubsub-to-clickhouse/pipeline"
)

// The Flex Template metadata, as the Dataflow API's TemplateMetadata and ParameterMetadata messages
// define it (https://cloud.google.com/dataflow/docs/guides/templates/configuring-flex-templates,
// "Metadata parameters"; the field names are those of the v1b3 API). Pointers tell a field that
// is absent from one set to its zero value. The file is decoded with unknown fields refused, so a
// misspelt field (which gcloud would drop without a word) fails the test.
type templateMetadata struct {
	Name                 string              `json:"name"`
	Description          string              `json:"description"`
	Streaming            *bool               `json:"streaming"`
	SupportsAtLeastOnce  *bool               `json:"supportsAtLeastOnce"`
	SupportsExactlyOnce  *bool               `json:"supportsExactlyOnce"`
	DefaultStreamingMode string              `json:"defaultStreamingMode"`
	Parameters           []parameterMetadata `json:"parameters"`
}

type parameterMetadata struct {
	Name                string            `json:"name"`
	Label               string            `json:"label"`
	HelpText            string            `json:"helpText"`
	IsOptional          *bool             `json:"isOptional"`
	Regexes             []string          `json:"regexes"`
	ParamType           string            `json:"paramType"`
	GroupName           string            `json:"groupName"`
	DefaultValue        string            `json:"defaultValue"`
	ParentName          string            `json:"parentName"`
	ParentTriggerValues []string          `json:"parentTriggerValues"`
	HiddenUI            *bool             `json:"hiddenUi"`
	CustomMetadata      map[string]string `json:"customMetadata"`
	EnumOptions         []enumOption      `json:"enumOptions"`
}

// enumOption is one choice of an ENUM parameter (the API's ParameterMetadataEnumOption).
type enumOption struct {
	Value       string `json:"value"`
	Label       string `json:"label"`
	Description string `json:"description"`
}

// groups are the parameter groups of the console form, in order.
var groups = pipeline.Groups()

// localOnly lists the flags of pipeline.RegisterFlags that are deliberately not template
// parameters, with the reason.
var localOnly = map[string]string{
	"stopAfterIdle": "it ends a run on the local runner (prism) once no message has arrived for a while; " +
		"on Dataflow the source is pubsubio.Read and the option is ignored (a streaming job is drained instead), " +
		"so offering it in the template would only mislead",
	"progressSeconds": "it sets how often a run on the local runner logs its progress; a Dataflow job's progress is in its console, so the option would do nothing there",
}

// noRegex lists the parameters without a validation regex, with the reason.
var noRegex = map[string]string{
	"clickHousePassword": "any text is a password, the empty one included",
}

// paramTypeByName gives the paramType of the parameters whose paramType is not their flag kind's (TEXT, NUMBER or BOOLEAN).
var paramTypeByName = map[string]string{
	"inputSubscription":              "PUBSUB_SUBSCRIPTION",
	"deadLetterTopic":                "PUBSUB_TOPIC",
	"javascriptTextTransformGcsPath": "JAVASCRIPT_UDF_FILE",
	"clickHouseCompression":          "ENUM",
	"routeUnlisted":                  "ENUM",
	"shuffleCompression":             "ENUM",
}

func readMetadata(t *testing.T) templateMetadata {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "metadata.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := checkNoDuplicateKeys(data); err != nil {
		t.Fatalf("metadata.json: %v", err)
	}
	if err := checkKeysExactly(data); err != nil {
		t.Fatalf("metadata.json: %v", err)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var m templateMetadata
	if err := dec.Decode(&m); err != nil {
		t.Fatalf("metadata.json is not valid Flex Template metadata: %v", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		t.Fatalf("metadata.json: text after the JSON object")
	}
	return m
}

// checkKeysExactly fails on a key that is not one of the spec's field names spelt exactly:
// encoding/json matches keys without regard to case, gcloud does not (it would drop "isoptional").
func checkKeysExactly(data []byte) error {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil {
		return err
	}
	if err := knownKeys(top, templateMetadata{}); err != nil {
		return err
	}
	var params []map[string]json.RawMessage
	if err := json.Unmarshal(top["parameters"], &params); err != nil {
		return fmt.Errorf("parameters: %v", err)
	}
	for i, p := range params {
		if err := knownKeys(p, parameterMetadata{}); err != nil {
			return fmt.Errorf("parameter %d: %v", i, err)
		}
	}
	return nil
}

// knownKeys checks that every key of obj is the json name of a field of the struct v.
func knownKeys(obj map[string]json.RawMessage, v any) error {
	rt := reflect.TypeOf(v)
	names := map[string]bool{}
	for i := range rt.NumField() {
		name, _, _ := strings.Cut(rt.Field(i).Tag.Get("json"), ",")
		names[name] = true
	}
	for k := range obj {
		if !names[k] {
			return fmt.Errorf("unknown field %q (field names are case-sensitive)", k)
		}
	}
	return nil
}

// checkNoDuplicateKeys fails on an object that repeats a key: encoding/json would keep the last.
func checkNoDuplicateKeys(data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	var walk func() error
	walk = func() error {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		switch tok {
		case json.Delim('{'):
			seen := map[string]bool{}
			for dec.More() {
				k, err := dec.Token()
				if err != nil {
					return err
				}
				key := k.(string)
				if seen[key] {
					return fmt.Errorf("key %q appears twice in one object", key)
				}
				seen[key] = true
				if err := walk(); err != nil {
					return err
				}
			}
			_, err = dec.Token()
			return err
		case json.Delim('['):
			for dec.More() {
				if err := walk(); err != nil {
					return err
				}
			}
			_, err = dec.Token()
			return err
		}
		return nil
	}
	return walk()
}

// templateFlags returns the flags of the template parameters, as the binary defines them.
func templateFlags() (*flag.FlagSet, *pipeline.Options) {
	fs := flag.NewFlagSet("pubsub-to-clickhouse", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var o pipeline.Options
	pipeline.RegisterFlags(fs, &o)
	return fs, &o
}

func flagNames(fs *flag.FlagSet) []string {
	var names []string
	fs.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
	return names
}

func TestMetadataFile(t *testing.T) {
	m := readMetadata(t)
	if m.Name == "" || m.Description == "" {
		t.Errorf("name %q and description %q must both be set", m.Name, m.Description)
	}
	if m.Streaming == nil || !*m.Streaming {
		t.Error(`"streaming" must be true: the pipeline reads an unbounded Pub/Sub source`)
	}
	if m.SupportsAtLeastOnce == nil || !*m.SupportsAtLeastOnce {
		t.Error(`"supportsAtLeastOnce" must be true: every write is idempotent or deduplicated, so at-least-once mode is safe`)
	}
	if m.SupportsExactlyOnce != nil && !*m.SupportsExactlyOnce {
		t.Error(`"supportsExactlyOnce" is false, but nothing in the pipeline prevents exactly-once mode`)
	}
	// Exactly-once by default: at-least-once is allowed (docs/deploy.md says what it costs in
	// duplicates), but a user who does not choose gets no duplicates from Dataflow itself.
	if m.DefaultStreamingMode != "EXACTLY_ONCE" {
		t.Errorf("defaultStreamingMode %q, want EXACTLY_ONCE", m.DefaultStreamingMode)
	}
	if len(m.Parameters) == 0 {
		t.Fatal("no parameters")
	}
	seen := map[string]bool{}
	lastGroup := -1
	for _, p := range m.Parameters {
		if p.Name == "" {
			t.Errorf("a parameter has no name: %+v", p)
			continue
		}
		if seen[p.Name] {
			t.Errorf("parameter %s is listed twice", p.Name)
		}
		seen[p.Name] = true
		// gcloud's flex-template build refuses a parameter without name, label or helpText.
		if strings.TrimSpace(p.Label) == "" || strings.TrimSpace(p.HelpText) == "" {
			t.Errorf("%s: label and helpText must both be set", p.Name)
		}
		if p.IsOptional == nil {
			t.Errorf("%s: isOptional must be given explicitly (absent means required)", p.Name)
		}
		switch p.ParamType {
		case "TEXT", "NUMBER", "BOOLEAN", "PUBSUB_SUBSCRIPTION", "PUBSUB_TOPIC", "JAVASCRIPT_UDF_FILE", "ENUM":
		case "":
			t.Errorf("%s: no paramType", p.Name)
		default:
			t.Errorf("%s: paramType %q is not one this template uses (TEXT, NUMBER, BOOLEAN, PUBSUB_SUBSCRIPTION, PUBSUB_TOPIC, JAVASCRIPT_UDF_FILE, ENUM)", p.Name, p.ParamType)
		}
		// An ENUM is a list of choices (enumOptions, each with a value); nothing else has them.
		if (p.ParamType == "ENUM") != (len(p.EnumOptions) > 0) {
			t.Errorf("%s: paramType %s with %d enumOptions: an ENUM needs them, and only an ENUM has them", p.Name, p.ParamType, len(p.EnumOptions))
		}
		seenValues := map[string]bool{}
		for _, e := range p.EnumOptions {
			if e.Value == "" || e.Label == "" || seenValues[e.Value] {
				t.Errorf("%s: enum option %+v: each needs a value of its own and a label", p.Name, e)
			}
			seenValues[e.Value] = true
		}
		g := slices.Index(groups, p.GroupName)
		switch {
		case g < 0:
			t.Errorf("%s: groupName %q is not one of %q", p.Name, p.GroupName, groups)
		case g < lastGroup:
			t.Errorf("%s: group %q comes after group %q; keep the parameters in group order %q", p.Name, p.GroupName, groups[lastGroup], groups)
		default:
			lastGroup = g
		}
		if p.ParentName != "" || len(p.ParentTriggerValues) > 0 || p.HiddenUI != nil || len(p.CustomMetadata) > 0 {
			t.Errorf("%s: uses fields this test does not check (parentName, parentTriggerValues, hiddenUi, customMetadata)", p.Name)
		}
	}
	for _, g := range groups {
		if !slices.ContainsFunc(m.Parameters, func(p parameterMetadata) bool { return p.GroupName == g }) {
			t.Errorf("group %q has no parameter", g)
		}
	}
}

// TestMetadataMatchesFlags checks that the template parameters and the binary's template flags
// agree one to one: every parameter is a flag (else the launcher's flag.Parse exits), and every
// flag a user may set is a parameter, except those of localOnly.
func TestMetadataMatchesFlags(t *testing.T) {
	m := readMetadata(t)
	fs, _ := templateFlags()
	params := map[string]bool{}
	for _, p := range m.Parameters {
		params[p.Name] = true
		if fs.Lookup(p.Name) == nil {
			t.Errorf("parameter %s is not a flag of the binary: the launcher's flag.Parse would fail", p.Name)
		}
	}
	for _, name := range flagNames(fs) {
		_, local := localOnly[name]
		switch {
		case local && params[name]:
			t.Errorf("flag %s is listed as local-only (%s) but is a template parameter", name, localOnly[name])
		case !local && !params[name]:
			t.Errorf("flag %s is not a template parameter: add it to metadata.json, or to localOnly with the reason", name)
		}
	}
	for name := range localOnly {
		if fs.Lookup(name) == nil {
			t.Errorf("localOnly lists %s, which is no longer a flag", name)
		}
	}
}

// baseline returns flag arguments that pass Options.Validate, with both dead-letter destinations
// set so that leaving either out keeps the options valid.
func baseline() map[string]string {
	return map[string]string{
		"inputSubscription":         "projects/my-project/subscriptions/my-sub",
		"clickHouseUrl":             "https://abc.clickhouse.cloud:8443",
		"clickHouseDatabase":        "default",
		"clickHouseTable":           "events",
		"clickHouseUsername":        "default",
		"clickHousePassword":        "s3cret",
		"clickHouseDeadLetterTable": "events_dead_letter",
		"deadLetterTopic":           "projects/my-project/topics/events-dead-letter",
	}
}

// parseAndValidate parses args (name → value; a name absent from args is not given at all) as
// the launcher does and validates the options. It returns the parameters the errors name.
func parseAndValidate(args map[string]string) (badParams []string, err error) {
	fs, o := templateFlags()
	var argv []string
	for name, v := range args {
		argv = append(argv, "--"+name+"="+v)
	}
	if err := fs.Parse(argv); err != nil {
		return nil, err
	}
	err = o.Validate()
	for _, e := range unjoin(err) {
		var pe *pipeline.ParamError
		if errors.As(e, &pe) {
			badParams = append(badParams, pe.Param)
		}
	}
	return badParams, err
}

func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	if err == nil {
		return nil
	}
	return []error{err}
}

// TestMetadataRequired checks isOptional against the binary: a parameter is required when
// Options.Validate fails without it, or when its flag's usage calls it required.
func TestMetadataRequired(t *testing.T) {
	if bad, err := parseAndValidate(baseline()); err != nil {
		t.Fatalf("the baseline arguments do not validate (%v): %v", bad, err)
	}
	m := readMetadata(t)
	fs, _ := templateFlags()
	var required []string
	for _, p := range m.Parameters {
		args := baseline()
		delete(args, p.Name)
		bad, _ := parseAndValidate(args)
		byValidate := slices.Contains(bad, p.Name)
		byUsage := strings.Contains(fs.Lookup(p.Name).Usage, "Required")
		isRequired := byValidate || byUsage
		if isRequired {
			required = append(required, p.Name)
		}
		if p.IsOptional == nil {
			continue // reported by TestMetadataFile
		}
		if *p.IsOptional == isRequired {
			t.Errorf("%s: isOptional is %v, but Validate requires it: %v, its usage says required: %v", p.Name, *p.IsOptional, byValidate, byUsage)
		}
	}
	// Not clickHousePassword: the console does not submit a required field left empty, and a user
	// without a password gives an empty one.
	want := []string{"inputSubscription", "clickHouseUrl", "clickHouseDatabase", "clickHouseTable", "clickHouseUsername"}
	slices.Sort(required)
	slices.Sort(want)
	if !slices.Equal(required, want) {
		t.Errorf("required parameters: %v, want %v", required, want)
	}
}

// TestMetadataDefaults checks that each parameter's default in metadata.json (defaultValue, which
// pre-fills the console form, and the help text) is the flag's default, and that an empty value,
// which the console may send for a field left empty, is accepted by every optional flag.
func TestMetadataDefaults(t *testing.T) {
	m := readMetadata(t)
	for _, p := range m.Parameters {
		fs, o := templateFlags()
		f := fs.Lookup(p.Name)
		if f == nil {
			continue // reported by TestMetadataMatchesFlags
		}
		if f.DefValue != "" {
			if p.DefaultValue != f.DefValue {
				t.Errorf("%s: defaultValue %q, but the flag's default is %q", p.Name, p.DefaultValue, f.DefValue)
			}
			if !strings.Contains(p.HelpText, "Default: "+f.DefValue+".") {
				t.Errorf("%s: helpText does not state the default (%q)", p.Name, "Default: "+f.DefValue+".")
			}
		} else {
			if p.DefaultValue != "" {
				t.Errorf("%s: defaultValue %q, but the flag has no default", p.Name, p.DefaultValue)
			}
			if strings.Contains(p.HelpText, "Default:") {
				t.Errorf("%s: helpText states a default, but the flag has none", p.Name)
			}
		}
		if p.IsOptional != nil && *p.IsOptional {
			if err := f.Value.Set(""); err != nil {
				t.Errorf("%s: an empty value is refused: %v", p.Name, err)
			} else if got := f.Value.String(); got != f.DefValue {
				t.Errorf("%s: an empty value gives %q, not the default %q", p.Name, got, f.DefValue)
			}
			if !reflect.DeepEqual(*o, pipeline.Defaults()) {
				t.Errorf("%s: an empty value changes the options: %v, want %v", p.Name, *o, pipeline.Defaults())
			}
		}
	}
}

// TestMetadataParamTypes checks each paramType against the kind of the flag's value.
func TestMetadataParamTypes(t *testing.T) {
	m := readMetadata(t)
	fs, _ := templateFlags()
	for _, p := range m.Parameters {
		f := fs.Lookup(p.Name)
		if f == nil {
			continue
		}
		want := "TEXT"
		if bf, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && bf.IsBoolFlag() {
			want = "BOOLEAN"
		} else if strings.Contains(f.Usage, "(empty = unset)") { // an OptionalInt's (pipeline's flagUsage)
			want = "NUMBER"
		} else if g, ok := f.Value.(flag.Getter); ok {
			if _, isInt := g.Get().(int); isInt {
				want = "NUMBER"
			}
		}
		if w, ok := paramTypeByName[p.Name]; ok {
			want = w
		}
		if p.ParamType != want {
			t.Errorf("%s: paramType %s, want %s", p.Name, p.ParamType, want)
		}
	}
}

// regexExample is, for one parameter, values its regexes must accept (each also valid for the
// binary) and values they must reject (each also refused by the binary, by its flag or by
// Options.Validate); with are other parameters that a non-empty example is given with, for a
// parameter that needs another (the UDF's file and function).
type regexExample struct {
	accept, reject []string
	with           map[string]string
}

// args returns the baseline arguments with name=v, and ex.with and name's companions when v is
// not empty.
func (ex regexExample) args(name, v string) map[string]string {
	args := baseline()
	args[name] = v
	if v != "" {
		for k, w := range ex.with {
			args[k] = w
		}
		for k, cv := range companions[name] {
			args[k] = cv
		}
	}
	return args
}

// regexExamples are the regexExample of each parameter with regexes.
var regexExamples = map[string]regexExample{
	"inputSubscription": {
		accept: []string{
			"projects/my-project/subscriptions/my-sub",
			"projects/my-project-123/subscriptions/Events.sub_1~x+y%20z",
			"projects/example.com:my-project/subscriptions/events",
			"projects/123456789012/subscriptions/events", // the project by number
		},
		reject: []string{
			"", "my-sub", "projects/p/topics/t", "projects/my-project/topics/my-topic",
			"projects/my-project/subscriptions/", "projects/My-Project/subscriptions/my-sub",
			"projects/my-project/subscriptions/1sub", "projects/my-project/subscriptions/ab",
			"projects/my-project/subscriptions/my sub", " projects/my-project/subscriptions/my-sub",
			"projects/my-project/subscriptions/my-sub/extra", "projects/my-project-/subscriptions/my-sub",
			"projects/0123456789/subscriptions/events", "projects/12345678901234567890/subscriptions/events",
		},
	},
	"clickHouseUrl": {
		accept: []string{
			"https://abc.clickhouse.cloud:8443", "https://abc123.us-central1.gcp.clickhouse.cloud:8443",
			"clickhouse://10.0.0.5:9000", "http://ch:8123", "http://ch", "HTTPS://ABC.clickhouse.cloud",
			"clickhouse://ch1:9000,ch2:9000,[::1]:9440", "clickhouse://[fd00::5]:9000",
			"https://ch.example.com:8443/?dial_timeout=10s", "http://default@ch:8123/default",
		},
		reject: []string{
			"", "tcp://x", "tcp://ch:9000", "jdbc:clickhouse://ch:8123/default", "ch:9000", "http://",
			"https://ch:port", " http://ch:8123", "http://ch:8123 ", "ftp://ch", "clickhouse://user:pw@:9000",
			"http://ch1:8123,", "https://ch:8443/ ",
		},
	},
	"clickHouseDatabase": {
		accept: []string{"default", "analytics_db", "my db"},
		reject: []string{"", "   ", "db.events", "`db`"},
	},
	"clickHouseTable": {
		accept: []string{"events", "events_2024", "Events-Raw"},
		reject: []string{"", "  ", "default.events", "ev`ents"},
	},
	"clickHouseUsername": {
		accept: []string{"default", "ingest-user", "user@example.com"},
		reject: []string{"", "   "},
	},
	"clickHouseCaCertificate": {
		accept: []string{"", "gs://my-bucket/clickhouse/ca.pem", "projects/my-project/secrets/ca/versions/latest", "/etc/ssl/ca.pem", "ca.pem"},
		reject: []string{"-----BEGIN CERTIFICATE-----\nMIIB", " /etc/ssl/ca.pem", "/etc/ssl/ca.pem "},
	},
	"clickHouseClientCertificate": {
		accept: []string{"", "gs://my-bucket/clickhouse/client.pem", "projects/my-project/secrets/client-cert/versions/2"},
		reject: []string{"-----BEGIN CERTIFICATE-----\nMIIB", " gs://my-bucket/client.pem"},
	},
	"clickHouseClientKey": {
		accept: []string{"", "projects/my-project/secrets/client-key/versions/latest", "gs://my-bucket/clickhouse/client.key"},
		reject: []string{"-----BEGIN PRIVATE KEY-----\nMIIE", "gs://my-bucket/client.key "},
	},
	"clickHouseCompression": {
		accept: []string{"", "lz4", "zstd", "none"},
		reject: []string{"LZ4", "gzip", "true", " lz4"},
	},
	"schemaRefreshSeconds": {
		accept: []string{"", "0", "60", "3600", "31536000"},
		reject: []string{"-1", "1m", "1.5", "31536001"},
	},
	"clickHouseDeadLetterTable": {
		accept: []string{"", "events_dead_letter"},
		reject: []string{" ", "default.events_dead_letter", "dl`q"},
	},
	"deadLetterTopic": {
		accept: []string{"", "projects/my-project/topics/events-dead-letter", "projects/example.com:my-project/topics/dlq", "projects/123456789012/topics/dlq"},
		reject: []string{
			"projects/my-project/subscriptions/my-sub", "my-topic", "projects/p/topics/t",
			"projects/my-project/topics/", " ",
		},
	},
	"windowSeconds": {
		accept: []string{"", "1", "30", "3600", "31536000"},
		reject: []string{"0", "-1", "1.5", "abc", "1e3", "10s", " 1", "1 ", "+1", "-0", "31536001", "99999999"},
	},
	"batchRowCount": {
		accept: []string{"", "1", "1000", "50000", "2147483647"},
		reject: []string{"0", "-1", "1,000", "many", "2147483648", "9999999999"},
	},
	"numShards": {
		accept: []string{"", "0", "1", "8", "999", "1024"},
		reject: []string{"-2", "two", "08", "+1", " 8", "1025", "1030", "2000", "200000"},
	},
	"shuffleCompression": {
		accept: []string{"", "minlz", "s2", "zstd"},
		reject: []string{"S2", "MinLZ", "snappy", "lz4", "none", " zstd", "zstd ", "minlz "},
	},
	"batchByteSize": {
		accept: []string{"", "16777216", "1048576", "1", "2147483647"},
		reject: []string{"0", "-1", "16MiB", "1e6", "2147483648"},
	},
	"maxInsertBlockSize": {
		accept: []string{"", "1000000", "10000", "2147483647"},
		reject: []string{"0", "-5", "1,000,000", "1e6", "2147483648"},
	},
	"maxRetries": {
		accept: []string{"", "0", "5", "100", "10000"},
		reject: []string{"-1", "x", "08", "10001", "20000"},
	},
	"retryInitialBackoffMillis": {
		accept: []string{"", "5000", "100", "60000"},
		reject: []string{"0", "-1", "5s", "31536000001"},
	},
	"retryMaxBackoffMillis": {
		accept: []string{"", "60000", "120000", "31536000000"},
		reject: []string{"0", "-1", "1m", " 60000", "+60000", "31536000001"},
	},
	"insertDeduplicate": {
		// What Go's strconv.ParseBool, and so the binary, takes; the console may send True.
		accept: []string{"", "true", "false", "True", "False", "TRUE", "FALSE", "t", "f", "1", "0"},
		reject: []string{"yes", "on", "enabled", "tRue", "tru", "2", " true", "false "},
	},
	"insertQuorum": {
		accept: []string{"", "0", "2", "1000"},
		reject: []string{"-1", "two", "2.0", "1001"},
	},
	"insertDistributedSync": {
		accept: []string{"", "true", "false", "True", "FALSE", "T", "F"},
		reject: []string{"yes", "off", "sync", "falsE"},
	},
	"javascriptTextTransformGcsPath": {
		accept: []string{"", "gs://my-bucket/udfs/transform.js", "gs://b/u.js", "gs://my-bucket/my udfs/transform v2.js"},
		reject: []string{"gs://my-bucket", "gs://my-bucket/", "gs://my-bucket/udfs/", "gs://", " ", " gs://b/u.js", "gs://b/u.js "},
		with:   map[string]string{"javascriptTextTransformFunctionName": "transform"},
	},
	"javascriptTextTransformFunctionName": {
		accept: []string{"", "transform", "_process", "$f", "reshape2", "Transform_V2"},
		reject: []string{"1transform", "my-function", "transform()", "obj.transform", " transform", "transform "},
		with:   map[string]string{"javascriptTextTransformGcsPath": "gs://my-bucket/udfs/transform.js"},
	},
	"metadataColumns": {
		accept: []string{"", "message_id=msg_id", "message_id=msg_id,publish_time=published_at,attribute.source=src",
			"ordering_key=ok,attributes=attrs,attribute.a b=my column"},
		reject: []string{"message_id", "message_id=a,", "=a", ",message_id=a", "messageId=a", "attribute.=a", "message_id=a,,ordering_key=b"},
	},
	"unknownFieldsColumn": {
		accept: []string{"", "unknown_fields", "u", "extra.fields", "my column"},
		reject: []string{" u", "u ", " "},
	},
	"routeBy": {
		accept: []string{"", "attribute:event_type", "field:type", "field:my field", "attribute:a:b"},
		reject: []string{"type", "header:x", "attribute:", "field:", " ", "Attribute:x", "attribute:event_type ", "field: type", "field: "},
		with:   map[string]string{"routeTables": "click=clicks"},
	},
	"routeTables": {
		accept: []string{"", "click=clicks", "click=clicks,order=orders,refund=orders", " click = clicks ", "7=sevens", "a b=my table"},
		reject: []string{"click", "click=", "=clicks", "click=db.clicks", "click=a,", "a=b,,c=d", "click=a`b"},
		with:   map[string]string{"routeBy": "field:kind"},
	},
	"routeUnlisted": {
		accept: []string{"", "clickHouseTable", "deadLetter"},
		reject: []string{"drop", "deadletter", " deadLetter", "events"},
		with:   map[string]string{"routeBy": "field:kind", "routeTables": "a=b"},
	},
	"addNewColumns": {
		accept: []string{"", "true", "false", "True", "FALSE", "t", "0"},
		reject: []string{"yes", "on", "tRue", "2"},
	},
	"addNewColumnsMax": {
		accept: []string{"", "1", "50", "1000", "10000"},
		reject: []string{"0", "-1", "5x", "08", "10001"},
		with:   map[string]string{"addNewColumns": "true"},
	},
	"addNewColumnsPattern": {
		accept: []string{"", "^[a-z_][a-z0-9_]*$", "^[a-z_]+$", "event", "^x (a|b)$"},
		reject: []string{" ", "   "},
		with:   map[string]string{"addNewColumns": "true"},
	},
	"addNewColumnsExcluded": {
		accept: []string{"", "debug", "debug,trace_id", "my field,x"},
		reject: []string{",", "a,", ",a", "a,,b", "debug, trace", "debug ,trace", " debug", "debug "},
		with:   map[string]string{"addNewColumns": "true"},
	},
	"addNewColumnsOnCluster": {
		accept: []string{"", "my_cluster", "c", "my cluster"},
		reject: []string{" ", " c", "c "},
		with:   map[string]string{"addNewColumns": "true"},
	},
	"javascriptTextTransformReloadIntervalMinutes": {
		accept: []string{"", "0", "1", "60", "525600"},
		reject: []string{"-1", "5m", "1.5", "08", "525601"},
		with:   map[string]string{"javascriptTextTransformGcsPath": "gs://my-bucket/udfs/transform.js", "javascriptTextTransformFunctionName": "transform"},
	},
}

// companions are, per parameter, the parameters that must be given with it, and a value for
// each: the regex examples of a client certificate come with a key, and those of a key with a
// certificate.
var companions = map[string]map[string]string{
	"clickHouseClientCertificate": {"clickHouseClientKey": "projects/my-project/secrets/client-key/versions/1"},
	"clickHouseClientKey":         {"clickHouseClientCertificate": "gs://my-bucket/clickhouse/client.pem"},
}

// TestMetadataRegexes checks every regex: valid in Go (RE2) and as POSIX ERE, written in the
// subset that Java's java.util.regex (which the Dataflow console uses) reads the same way,
// anchored, accepting the documented examples and rejecting malformed values, in agreement with
// the binary's own checks.
func TestMetadataRegexes(t *testing.T) {
	m := readMetadata(t)
	for _, p := range m.Parameters {
		if reason, ok := noRegex[p.Name]; ok {
			if len(p.Regexes) > 0 {
				t.Errorf("%s has regexes, but noRegex says %s", p.Name, reason)
			}
			continue
		}
		if len(p.Regexes) == 0 {
			t.Errorf("%s: no regexes (add one, or add the parameter to noRegex with the reason)", p.Name)
			continue
		}
		var res []*regexp.Regexp
		for _, expr := range p.Regexes {
			re, err := regexp.Compile(expr)
			if err != nil {
				t.Errorf("%s: regex %q does not compile in Go: %v", p.Name, expr, err)
				continue
			}
			if _, err := regexp.CompilePOSIX(expr); err != nil {
				t.Errorf("%s: regex %q is not POSIX ERE (egrep), the syntax the Flex Template docs name: %v", p.Name, expr, err)
			}
			if err := portableRegex(expr); err != nil {
				t.Errorf("%s: regex %q: %v", p.Name, expr, err)
			}
			res = append(res, re)
		}
		matches := func(v string) bool {
			for _, re := range res {
				if !re.MatchString(v) {
					return false
				}
			}
			return true
		}
		ex, ok := regexExamples[p.Name]
		if !ok || len(ex.accept) == 0 || len(ex.reject) == 0 {
			t.Errorf("%s: regexExamples needs values to accept and values to reject", p.Name)
			continue
		}
		for _, e := range p.EnumOptions {
			if !slices.Contains(ex.accept, e.Value) {
				t.Errorf("%s: enum option %q is not among regexExamples' accepted values", p.Name, e.Value)
			}
		}
		if p.IsOptional != nil && *p.IsOptional != slices.Contains(ex.accept, "") {
			t.Errorf("%s: an optional parameter's regex must accept the empty value, a required one's must not; fix regexExamples", p.Name)
		}
		for _, v := range ex.accept {
			if !matches(v) {
				t.Errorf("%s: regexes %q reject %q", p.Name, p.Regexes, v)
			}
			args := ex.args(p.Name, v)
			if _, err := parseAndValidate(args); err != nil {
				t.Errorf("%s=%q: accepted by the regex but refused by the binary: %v", p.Name, v, err)
			}
		}
		for _, v := range ex.reject {
			if matches(v) {
				t.Errorf("%s: regexes %q accept %q", p.Name, p.Regexes, v)
			}
			args := ex.args(p.Name, v)
			if _, err := parseAndValidate(args); err == nil {
				t.Errorf("%s=%q: refused by the regex but valid for the binary; the example is not malformed", p.Name, v)
			}
		}
	}
	for name := range regexExamples {
		if !slices.ContainsFunc(m.Parameters, func(p parameterMetadata) bool { return p.Name == name }) {
			t.Errorf("regexExamples has %s, which is not a parameter", name)
		}
	}
}

// portableRegex reports constructs that RE2, POSIX ERE and java.util.regex do not all read the
// same way, and checks that the regex is anchored at both ends with no top-level alternation, so
// that a full match and a search agree (whichever the service does).
func portableRegex(expr string) error {
	if !strings.HasPrefix(expr, "^") || !strings.HasSuffix(expr, "$") || strings.HasSuffix(expr, `\$`) {
		return errors.New("must start with ^ and end with $")
	}
	depth, inClass := 0, false
	for i := 0; i < len(expr); i++ {
		c := expr[i]
		switch {
		case c == '\\':
			if i+1 >= len(expr) {
				return errors.New("ends with a lone backslash")
			}
			i++
			if !strings.ContainsRune(`.[]{}()*+?^$|\/-`, rune(expr[i])) {
				return fmt.Errorf(`escape \%c: only escaped punctuation is portable (no \d, \w, \s, \b, \p, back-references)`, expr[i])
			}
		case inClass:
			switch {
			case c == ']':
				inClass = false
			case c == '[':
				return errors.New("unescaped [ inside a character class (a nested class in Java, [:name:] in POSIX)")
			case c == '&' && i+1 < len(expr) && expr[i+1] == '&':
				return errors.New("&& inside a character class (an intersection in Java)")
			}
		case c == '[':
			inClass = true
			// A ] right after [ or [^ is a literal in POSIX and RE2 but closes an empty class in Java.
			j := i + 1
			if j < len(expr) && expr[j] == '^' {
				j++
			}
			if j < len(expr) && expr[j] == ']' {
				return errors.New("a class starting with ] is read differently by Java")
			}
		case c == '(':
			if i+1 < len(expr) && expr[i+1] == '?' {
				return errors.New("(? groups (lookarounds, non-capturing groups, flags) are not portable")
			}
			depth++
		case c == ')':
			depth--
		case c == '|' && depth == 0:
			return errors.New("top-level | : group the alternatives, ^(a|b)$")
		case strings.ContainsRune("*+?}", rune(c)) && i+1 < len(expr) && (expr[i+1] == '?' || expr[i+1] == '+'):
			return errors.New("lazy or possessive quantifier")
		}
	}
	if inClass || depth != 0 {
		return errors.New("unbalanced brackets or parentheses")
	}
	return nil
}

func TestPortableRegex(t *testing.T) {
	for expr, ok := range map[string]bool{
		`^[a-z]+$`:             true,
		`^(a|b)$`:              true,
		`^[^/?#@,: \[\]]+$`:    true,
		`^a|b$`:                false,
		`^\d+$`:                false,
		`^(?=a)a$`:             false,
		`^(?:a)$`:              false,
		`^a+?$`:                false,
		`^[a[b]]$`:             false,
		`^[a-z&&[^b]]$`:        false,
		`^[]a]$`:               false,
		`^[[:alpha:]]$`:        false,
		`^a$|^$`:               false,
		`a$`:                   false,
		`^(a$`:                 false,
		`^[a-zA-Z0-9_.~+%-]+$`: true,
	} {
		if err := portableRegex(expr); (err == nil) != ok {
			t.Errorf("portableRegex(%q) = %v, want ok %v", expr, err, ok)
		}
	}
}
