package main

import (
	"bytes"
	"errors"
	"flag"
	"log/slog"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/metrics"
	"github.com/google/go-cmp/cmp"

	"github.com/ch-beam/pubsub-to-clickhouse/pipeline"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/chclient"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/flow"
)

// asyncResult is what the Dataflow runner returns for an asynchronous submission: a job id and
// nil metrics, which its Metrics method dereferences.
type asyncResult struct {
	jobID   string
	metrics *metrics.Results
}

func (r *asyncResult) Metrics() metrics.Results { return *r.metrics }
func (r *asyncResult) JobID() string            { return r.jobID }

// TestMetricsLineMergesSteps: a metric several steps report (a routed pipeline's stages) is one
// entry of the line, counters summed and distributions merged; other namespaces are left out.
func TestMetricsLineMergesSteps(t *testing.T) {
	key := func(step, name string) metrics.StepKey {
		return metrics.StepKey{Step: step, Name: name, Namespace: flow.Namespace}
	}
	res := metrics.NewResults(
		[]metrics.CounterResult{{Attempted: 3, Key: key("Tables/a/Write", "rows-inserted")}, {Attempted: 4, Key: key("Tables/b/Write", "rows-inserted")},
			{Attempted: 9, Key: metrics.StepKey{Step: "s", Name: "other", Namespace: "beam"}}},
		[]metrics.DistributionResult{
			{Attempted: metrics.DistributionValue{Count: 2, Sum: 30, Min: 10, Max: 20}, Key: key("Tables/a/Parse", "message-payload-bytes")},
			{Attempted: metrics.DistributionValue{Count: 1, Sum: 5, Min: 5, Max: 5}, Key: key("Tables/b/Parse", "message-payload-bytes")},
		}, nil, nil, nil)
	got := metricsLine(&asyncResult{metrics: res})
	if want := "metrics: message-payload-bytes=count:3,sum:35,min:5,max:20 rows-inserted=7"; got != want {
		t.Errorf("metricsLine = %q, want %q", got, want)
	}
}

// TestFailedMetricsLine: a failed local run's result gives its metrics line; one without metrics
// (whose Metrics panics) and none give "".
func TestFailedMetricsLine(t *testing.T) {
	res := metrics.NewResults([]metrics.CounterResult{{Attempted: 3, Key: metrics.StepKey{Step: "Write", Name: "insert-retries", Namespace: flow.Namespace}}},
		nil, nil, nil, nil)
	if got, want := failedMetricsLine(&asyncResult{metrics: res}), "metrics: insert-retries=3"; got != want {
		t.Errorf("failedMetricsLine = %q, want %q", got, want)
	}
	if got := failedMetricsLine(&asyncResult{}); got != "" {
		t.Errorf("failedMetricsLine of a result without metrics = %q, want none", got)
	}
	if got := failedMetricsLine(nil); got != "" {
		t.Errorf("failedMetricsLine(nil) = %q, want none", got)
	}
}

// TestReport feeds the result handling what the runners return: a typed nil for a template
// written by the Flex Template launch, a plain nil for a dry run, an asynchronous Dataflow
// result whose metrics panic, and a local result.
func TestReport(t *testing.T) {
	dataflow := launch{runner: "dataflow", dataflow: true, project: "my-project", region: "us-central1"}
	template := dataflow
	template.template = "gs://b/templates/job_object"
	dry := dataflow
	dry.dryRun = true
	for _, tc := range []struct {
		name    string
		res     *asyncResult
		l       launch
		want    []string
		wantErr string
	}{
		{name: "template, typed nil result", res: nil, l: template,
			want: []string{"job written to gs://b/templates/job_object"}},
		{name: "dry run, nil result", res: nil, l: dry, want: []string{"dry run: nothing submitted"}},
		{name: "direct, asynchronous result", res: &asyncResult{jobID: "2026-12-01_01_02_03-123"}, l: dataflow,
			want: []string{
				"Dataflow job submitted: 2026-12-01_01_02_03-123",
				"https://console.cloud.google.com/dataflow/jobs/us-central1/2026-12-01_01_02_03-123?project=my-project",
			}},
		{name: "direct, no result", res: nil, l: dataflow, wantErr: "no job id"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			err := report(&out, tc.res, tc.l) // a nil tc.res is a typed nil, as the runner returns it
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range tc.want {
				if !strings.Contains(out.String(), w) {
					t.Errorf("output %q lacks %q", out.String(), w)
				}
			}
		})
	}

	// A plain nil, as the dry run returns it.
	var out0 bytes.Buffer
	if err := report(&out0, nil, template); err != nil || !strings.Contains(out0.String(), "job written to") {
		t.Errorf("plain nil result: %q, %v", out0.String(), err)
	}

	// A local result with no metrics of ours prints no empty "metrics:" line.
	var out bytes.Buffer
	if err := report(&out, &asyncResult{metrics: &metrics.Results{}}, launch{runner: "prism"}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), "metrics:") {
		t.Errorf("printed %q for a result without metrics", out.String())
	}
}

// newFlagSet returns the program's flags: the template parameters and the Beam flags the tests
// use (the global set holds the SDK's).
func newFlagSet() *flag.FlagSet {
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	var o pipeline.Options
	pipeline.RegisterFlags(fs, &o)
	for _, name := range []string{"service_account_email", "staging_location", "temp_location", "experiments",
		"dataflow_kms_key", "max_num_workers", "template_location", "project", "region", "runner",
		"labels", "transform_name_mapping", "dataflow_service_options", "job_name"} {
		fs.String(name, "", "")
	}
	fs.Bool("no_use_public_ips", false, "")
	fs.Bool("dry_run", false, "")
	return fs
}

func TestNormalizeArgs(t *testing.T) {
	fs := newFlagSet()
	in := []string{
		"--inputSubscription=projects/p/subscriptions/s",
		"--serviceAccount=worker@p.iam.gserviceaccount.com",
		"--stagingLocation=gs://b/staging",
		"--tempLocation", "gs://b/tmp",
		"--streaming=true",
		"--enable_streaming_engine",
		"--experiments=a,b",
		"--additional_experiments=c",
		"--experiments", "d",
		"--kms_key=projects/p/locations/l/keyRings/r/cryptoKeys/k",
		"--maxNumWorkers=10",
		"--dry_run",
		"-region=us-central1",
		"--someJavaOnlyOption=42",
		"--setup_file", "./setup.py",
	}
	got, notes, err := normalizeArgs(fs, templateParams(), in)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"--inputSubscription=projects/p/subscriptions/s",
		"--service_account_email=worker@p.iam.gserviceaccount.com",
		"--staging_location=gs://b/staging",
		"--temp_location=gs://b/tmp",
		"--dataflow_kms_key=projects/p/locations/l/keyRings/r/cryptoKeys/k",
		"--max_num_workers=10",
		"--dry_run",
		"--region=us-central1",
		"--experiments=a,b,c,d",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("normalizeArgs (-want +got):\n%s", diff)
	}
	if err := fs.Parse(got); err != nil {
		t.Errorf("the flag set refuses the normalized arguments: %v", err)
	}
	noted := map[string]string{}
	for _, n := range notes {
		noted[n.Flag] = n.What
	}
	for flag, what := range map[string]string{
		"serviceAccount":          "renamed to --service_account_email",
		"stagingLocation":         "renamed to --staging_location",
		"additional_experiments":  "merged into --experiments",
		"streaming":               "ignored: the Go SDK makes a job streaming",
		"enable_streaming_engine": "ignored: the Go SDK's Dataflow runner turns Streaming Engine on",
		"someJavaOnlyOption":      "ignored: neither a template parameter nor a flag",
		"setup_file":              "ignored:",
	} {
		if !strings.HasPrefix(noted[flag], what) {
			t.Errorf("note for --%s is %q, want %q...", flag, noted[flag], what)
		}
	}
	// Typed by hand, the flags of no kind stop the run (not --streaming, ignored on purpose);
	// from the Flex Template launcher or on a worker, they are ignored.
	const unknown = "--someJavaOnlyOption, --setup_file: neither a template parameter nor a flag of the Beam Go SDK (--help lists them); nothing was started"
	if err := refuseUnknown(notes, in, false); err == nil || err.Error() != unknown {
		t.Errorf("typed by hand: %v, want %q", err, unknown)
	}
	if err := refuseUnknown(notes, in, true); err != nil {
		t.Errorf("from the launcher: %v", err)
	}
	if err := refuseUnknown(notes, append(slices.Clone(in), "--worker=true"), false); err != nil {
		t.Errorf("on a worker: %v", err)
	}
	// A flag ignored on purpose, in gcloud's spelling: ignored, not refused.
	if _, notes, err := normalizeArgs(fs, templateParams(), []string{"--enable-streaming-engine"}); err != nil || len(notes) != 1 ||
		notes[0].Unknown || refuseUnknown(notes, nil, false) != nil {
		t.Errorf("--enable-streaming-engine: %+v, %v", notes, err)
	}
}

// TestNormalizeArgsListsAndMaps: repeated list flags keep every value; map flags take JSON and
// k=v,k2=v2, repeated, into one JSON object; a key given twice with two values, a malformed pair
// and a label the service refuses are errors that name the flag and the value.
func TestNormalizeArgsListsAndMaps(t *testing.T) {
	fs := newFlagSet()
	got, _, err := normalizeArgs(fs, templateParams(), []string{
		"--dataflow_service_options=a", "--dataflowServiceOptions=b,a", "--dataflow_service_options", "streaming_mode_at_least_once",
		"--labels=team=data,env=prod", `--labels={"cost-center":"x-1"}`, "--additionalUserLabels", "env=prod",
		"--transformNameMappings=Old/Parse=Parse", `--transform_name_mapping={"OldBatch":"Batch"}`,
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"--dataflow_service_options=a,b,streaming_mode_at_least_once",
		`--labels={"cost-center":"x-1","env":"prod","team":"data"}`,
		`--transform_name_mapping={"Old/Parse":"Parse","OldBatch":"Batch"}`,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("normalizeArgs (-want +got):\n%s", diff)
	}
	for _, bad := range []struct {
		args []string
		want string
	}{
		{[]string{"--labels=team=a", "--labels=team=b"}, `--labels: the key "team" is given twice, as "a" and as "b"`},
		{[]string{"--labels=team"}, `--labels "team": "team" is not key=value`},
		{[]string{`--labels={"team":1}`}, `--labels "{\"team\":1}": not a JSON object of strings`},
		{[]string{"--labels=Team=x"}, `--labels: the key "Team" is not a label key`},
		{[]string{"--labels=team=Data"}, `--labels: the value "Data" of "team" is not a label value`},
		{[]string{"--labels=a=" + strings.Repeat("x", 64)}, `is not a label value`},
	} {
		if _, _, err := normalizeArgs(fs, templateParams(), bad.args); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%q: %v, want an error with %q", bad.args, err, bad.want)
		}
	}
}

// TestNormalizeArgsFlagRules: a defined flag takes the next argument as its value whatever it
// starts with, as the flag package does; a misspelt template parameter is refused.
func TestNormalizeArgsFlagRules(t *testing.T) {
	fs := newFlagSet()
	got, _, err := normalizeArgs(fs, templateParams(), []string{"--clickHousePassword", "-pw-starts-with-dash", "--clickHouseTable", "events"})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"--clickHousePassword=-pw-starts-with-dash", "--clickHouseTable=events"}; !cmp.Equal(want, got) {
		t.Errorf("got %q, want %q", got, want)
	}
	for _, bad := range []struct{ arg, want string }{
		{"--batchRowcount=5000", "did you mean the template parameter --batchRowCount?"},
		{"--insertDeduplicat=false", "--insertDeduplicate?"},
		{"--maxRetrys", "--maxRetries?"},
		{"--CLICKHOUSEURL=x", "--clickHouseUrl?"},
		{"--job_name=Events_To_CH", `--job_name "Events_To_CH" is not a Dataflow job name: a name is 1 to 1024 lowercase letters, digits and -`},
		{"--job_name=events-", "is not a Dataflow job name"},
		{"--jobName=1events", "is not a Dataflow job name"},
	} {
		if _, _, err := normalizeArgs(fs, templateParams(), []string{bad.arg}); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%s: %v, want an error with %q", bad.arg, err, bad.want)
		}
	}
	if got, _, err := normalizeArgs(fs, templateParams(), []string{"--job_name=events-to-clickhouse-2"}); err != nil || !cmp.Equal(got, []string{"--job_name=events-to-clickhouse-2"}) {
		t.Errorf("a good --job_name: %q, %v", got, err)
	}
	// Far from every parameter: ignored, not refused.
	if _, notes, err := normalizeArgs(fs, templateParams(), []string{"--save_main_session"}); err != nil || len(notes) != 1 {
		t.Errorf("--save_main_session: %v, %v", notes, err)
	}
}

func TestRedactArgs(t *testing.T) {
	const pw = "s3cr3t-Pa55"
	in := []string{
		"--clickHousePassword=" + pw,
		"--clickHousePassword", pw,
		"--clickHouseUrl=https://user:" + pw + "@host:8443/?password=" + pw,
		"--clickHouseUsername=default",
		"--apiToken=abc",
		"--inputSubscription=projects/p/subscriptions/" + pw,
		"--clickHousePassword=",
		// Misspelt flags, which the binary ignores or refuses, with a password as their value.
		"--clickHousePass=abc1", "--pwd=abc2", "--clickHouseAuth=abc3", "--credentials", "abc4",
		// A bool or unknown flag of such a name before another flag: that flag is shown.
		"--no_auth", "--clickHouseTable=events",
		// Such names inside a value (gcloud's --parameters).
		"--parameters=clickHousePass=abc5,clickhouse_pwd=abc6,authKey=abc7,x=1",
	}
	got := strings.Join(redactArgs(newFlagSet(), in, pw), " ")
	if strings.Contains(got, pw) || strings.Contains(got, "abc") {
		t.Errorf("redacted arguments show a secret: %s", got)
	}
	for _, want := range []string{"--clickHousePassword=xxxxx", "--clickHousePassword xxxxx", "https://user:xxxxx@host:8443/?password=xxxxx",
		"--clickHouseUsername=default", "--apiToken=xxxxx", "--clickHousePassword=", "--clickHousePass=xxxxx", "--pwd=xxxxx",
		"--clickHouseAuth=xxxxx", "--credentials xxxxx", "--no_auth --clickHouseTable=events",
		"--parameters=clickHousePass=xxxxx,clickhouse_pwd=xxxxx,authKey=xxxxx,x=1"} {
		if !strings.Contains(got, want) {
			t.Errorf("redacted arguments %q lack %q", got, want)
		}
	}
	// The forms a reviewer found: a password after the flag starting with "-", a stray
	// argument after an empty "=", URLs without "://".
	for _, in := range [][]string{
		{"--clickHousePassword", "-" + pw},
		{"--clickHousePassword=", pw},
		{"--clickHouseUrl=u:" + pw + "@h:9000"},
		{"--clickHouseUrl=h:9000?password=" + pw},
		{"--clickHouseUrl=https:u:" + pw + "@h:8443"},
		{"--clickHouseUrl", "https:/u:" + pw + "@h:8443"},
	} {
		if got := strings.Join(redactArgs(newFlagSet(), in, ""), " "); strings.Contains(got, pw) {
			t.Errorf("%q redacted to %q", in, got)
		}
	}
	// gcloud's form of template parameters, which the binary ignores but logs (a reviewer's find).
	for _, in := range [][]string{
		{"--parameters=clickHousePassword=" + pw},
		{"--parameters=clickHouseTable=t,clickHousePassword=" + pw + ",windowSeconds=5"},
		{"--parameters", "clickHousePassword=" + pw},
	} {
		if got := strings.Join(redactArgs(newFlagSet(), in, ""), " "); strings.Contains(got, pw) || !strings.Contains(got, "clickHousePassword=xxxxx") {
			t.Errorf("%q redacted to %q", in, got)
		}
	}
	// An empty "--clickHousePassword=" hides a stray value after it, not the next flag.
	if got := strings.Join(redactArgs(newFlagSet(), []string{"--clickHousePassword=", "--clickHouseTable=t"}, ""), " "); got != "--clickHousePassword= --clickHouseTable=t" {
		t.Errorf("redacted to %q, want the next flag shown", got)
	}
	// A Secret Manager secret version's name is no secret: it shows, in both forms. PEM text (a
	// key pasted in place of its name) does not, whatever its flag.
	const version = "projects/p/secrets/ch/versions/latest"
	const key = "-----BEGIN PRIVATE KEY-----\nMIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQg" + pw
	got = strings.Join(redactArgs(newFlagSet(), []string{"--clickHousePassword=" + version, "--clickHousePassword", version,
		"--clickHouseClientKey=" + key, "--clickHouseClientKey", key}, ""), " ")
	if want := "--clickHousePassword=" + version + " --clickHousePassword " + version + " --clickHouseClientKey=xxxxx --clickHouseClientKey xxxxx"; got != want {
		t.Errorf("redacted arguments %q, want %q", got, want)
	}
	// Nor does its base64 body pasted without the PEM lines.
	const body = "MIIEvAIBADANBgkqhkiG9w0BAQEFAASCBKYwggSiAgEAAoIBAQC7VJTUt9Us8cKjMzEfYyjiWA4R4"
	const table = "MobileAppEventsAggregatedHourly2026ByRegionAndPlatformForDashboards" // as long, shown
	got = strings.Join(redactArgs(newFlagSet(), []string{"--clickHouseClientKey=" + body, "--clickHouseClientKey", body, "--clickHouseCaCertificate=/etc/ssl/ca.pem",
		"--clickHouseTable=" + table}, ""), " ")
	if want := "--clickHouseClientKey=xxxxx --clickHouseClientKey xxxxx --clickHouseCaCertificate=/etc/ssl/ca.pem --clickHouseTable=" + table; got != want {
		t.Errorf("redacted arguments %q, want %q", got, want)
	}
}

// TestModelFilter: with the password as text, a log message holding the serialized DoFns (the
// Dataflow runner's log of the model) is replaced by a note; every other message passes, with
// the password hidden wherever it holds it.
func TestModelFilter(t *testing.T) {
	var out strings.Builder
	l := slog.New(modelFilter{slog.NewTextHandler(&out, nil), []string{"pw-9c1"}}).With("k", "v")
	l.Info(`components:{transforms:{key:"e4" value:{spec:{urn:"beam:transform:pardo:v1" payload:"\n\x19beam:go:transform:dofn:v1\x1aQ2xpY2tIb3VzZQ=="}}}}`)
	l.Info("table checked", "table", "db.events")
	l.Info(`{"routeTables": "a=pw-9c1x"}`, "routeTables", "pw-9c1=t", "n", 3)
	// Attributes of other kinds, bound with With, in groups; a password JSON escapes.
	l.With("pre", "pw-9c1").Info("other kinds", "error", errors.New("dial u:pw-9c1@h"), "list", []string{"pw-9c1"}, slog.Group("g", "k", "pw-9c1"))
	var escaped strings.Builder
	slog.New(modelFilter{slog.NewTextHandler(&escaped, nil), []string{"a&b<pw"}}).Info(`{"clickHousePassword": "a\u0026b\u003cpw"}`)
	// A proxy's password, as the URL's query escapes it (once within the proxy's URL, again as
	// the query's value) and as it is.
	var proxy strings.Builder
	proxyURL := "http://ch:8123?http_proxy=" + url.QueryEscape("http://u:"+url.QueryEscape("p@ss:w")+"@proxy:3128")
	slog.New(modelFilter{slog.NewTextHandler(&proxy, nil), chclient.Config{URL: proxyURL}.TextSecrets()}).Info("target", "url", proxyURL, "plain", "p@ss:w")
	if strings.Contains(proxy.String(), "ss") {
		t.Errorf("the proxy's password shows:\n%s", proxy.String())
	}
	got := out.String()
	if strings.Contains(escaped.String(), "u0026b") {
		t.Errorf("a JSON-escaped password shows:\n%s", escaped.String())
	}
	if strings.Contains(got, "Q2xpY2tIb3VzZQ") || strings.Contains(got, "pw-9c1") || !strings.Contains(got, modelNotLogged) ||
		!strings.Contains(got, `msg="table checked" k=v table=db.events`) ||
		!strings.Contains(got, `msg="{\"routeTables\": \"a=xxxxxx\"}" k=v routeTables="xxxxx=t" n=3`) {
		t.Errorf("filtered log:\n%s", got)
	}
}

// TestMisspeltBeamFlags: a flag of the Beam Go SDK given in gcloud's hyphenated form is that
// flag; one a letter or two off is refused with the flag it resembles (ignored, it would launch
// without it: --dryrun would submit the job); the other SDKs' flags without a Go equivalent stay
// ignored.
func TestMisspeltBeamFlags(t *testing.T) {
	// The template parameters and every flag the binary's Beam packages define, as main has them.
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	var o pipeline.Options
	pipeline.RegisterFlags(fs, &o)
	flag.CommandLine.VisitAll(func(f *flag.Flag) {
		if fs.Lookup(f.Name) == nil {
			fs.Var(f.Value, f.Name, f.Usage)
		}
	})
	out, _, err := normalizeArgs(fs, templateParams(), []string{"--dry-run", "--max-num-workers=5", "--flexRSGoal=COST_OPTIMIZED", "--dryrun", "--Staging_Location=gs://b/s"})
	if want := "--dry_run --max_num_workers=5 --flexrs_goal=COST_OPTIMIZED --dry_run --staging_location=gs://b/s"; err != nil || strings.Join(out, " ") != want {
		t.Errorf("other spellings of Beam flags: %q, %v; want %s", out, err, want)
	}
	for arg, want := range map[string]string{
		"--dry_rn":                          "--dry_run?",
		"--max_num_worker=50":               "--max_num_workers?",
		"--worker_machine_typ=t2a-standard": "--worker_machine_type?",
		"--lables=team=x":                   "--labels?",
		"--stagin_location=gs://b/s":        "--staging_location?",
	} {
		if _, _, err := normalizeArgs(fs, templateParams(), []string{arg}); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want an error with %q", arg, err, want)
		}
	}
	for _, arg := range []string{"--save_main_session", "--setup_file=s.py", "--requirements_file=r.txt", "--sdk_location=x",
		"--streaming", "--enable_streaming_engine", "--autoscaling_algorithm=THROUGHPUT_BASED", "--usePublicIps=false",
		"--numberOfWorkerHarnessThreads=4", "--defaultWorkerLogLevel=INFO", "--flexRSGoal=COST_OPTIMIZED", "--gcpTempLocation=gs://b/t",
		"--prebuild_sdk_container_engine=cloud_build", "--pickle_library=cloudpickle", "--maxNumWorkers=3", "--workerDiskType=pd-ssd",
		"--diskSizeGb=50", "--serviceAccount=sa@p.iam.gserviceaccount.com", "--subnetwork=regions/r/subnetworks/s"} {
		if _, _, err := normalizeArgs(fs, templateParams(), []string{arg}); err != nil {
			t.Errorf("%s: %v, want it taken or ignored", arg, err)
		}
	}
}

// TestRepeatedParams: a template parameter given twice with different values is named (the flag
// package keeps the last value, silently), whatever the parameter, a secret one too (only its
// name is returned); the same value twice, Beam's flags and what follows "--" are not.
func TestRepeatedParams(t *testing.T) {
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	var o pipeline.Options
	pipeline.RegisterFlags(fs, &o)
	args, _, err := normalizeArgs(fs, templateParams(), []string{
		"--inputSubscription=projects/p/subscriptions/a",
		"--clickHousePassword=one",
		"--windowSeconds", "5",
		"--insertDeduplicate",
		"--region=us-central1",
		"--inputSubscription=projects/p/subscriptions/b",
		"--windowSeconds=5",
		"--insertDeduplicate=true",
		"--clickHousePassword=two",
		"--region=europe-west1",
		"--inputSubscription=projects/p/subscriptions/c",
		"--", "--clickHouseTable=a", "--clickHouseTable=b",
	})
	if err != nil {
		t.Fatal(err)
	}
	got := repeatedParams(templateParams(), args)
	if want := []string{"inputSubscription", "clickHousePassword"}; !cmp.Equal(got, want) {
		t.Errorf("repeatedParams = %q, want %q", got, want)
	}
}

// TestNeedsCredentials: a Dataflow launch needs Application Default Credentials but for a dry
// run, and a Flex Template launch that writes only to a Cloud Storage emulator; a direct launch
// needs them with the emulator too (it calls the Dataflow API), and a local run never.
func TestNeedsCredentials(t *testing.T) {
	direct := launch{runner: "dataflow", dataflow: true}
	template := launch{runner: "dataflow", dataflow: true, template: "gs://b/templates/job.json"}
	dry := launch{runner: "dataflow", dataflow: true, dryRun: true}
	local := launch{runner: "prism"}
	check := func(env string, want map[*launch]bool) {
		t.Helper()
		for l, w := range want {
			if got := needsCredentials(*l); got != w {
				t.Errorf("STORAGE_EMULATOR_HOST=%q, %+v: %v, want %v", env, *l, got, w)
			}
		}
	}
	t.Setenv("STORAGE_EMULATOR_HOST", "")
	check("", map[*launch]bool{&direct: true, &template: true, &dry: false, &local: false})
	t.Setenv("STORAGE_EMULATOR_HOST", "127.0.0.1:4443")
	check("127.0.0.1:4443", map[*launch]bool{&direct: true, &template: false, &dry: false, &local: false})
}
