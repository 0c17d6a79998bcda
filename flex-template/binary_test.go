package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ch-beam/pubsub-to-clickhouse/internal/leak"
)

// dockerBuild is the binary's build as the Dockerfile states it.
type dockerBuild struct {
	env     []string // NAME=value assignments before the command
	args    []string // go's arguments, "-o" and its value removed
	out     string   // the -o path inside the build stage
	copied  []string // directories the build stage copies (besides go.mod, go.sum)
	from    string   // what the final stage copies from the build stage
	binary  string   // where the final stage puts the binary
	envBin  string   // FLEX_TEMPLATE_GO_BINARY
	entry   string   // the ENTRYPOINT
	froms   []string // the FROM lines
	argDefs map[string]string
}

// readDockerfile reads the parts of ../Dockerfile the tests rely on.
func readDockerfile(t *testing.T, root string) dockerBuild {
	t.Helper()
	f, err := os.Open(filepath.Join(root, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	d := dockerBuild{argDefs: map[string]string{}}
	var builds int
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if strings.HasSuffix(line, `\`) {
			t.Fatalf("Dockerfile: continued line %q; the test reads one instruction per line", line)
		}
		instr, rest, _ := strings.Cut(line, " ")
		fields := strings.Fields(rest)
		switch strings.ToUpper(instr) {
		case "ARG":
			k, v, _ := strings.Cut(rest, "=")
			d.argDefs[strings.TrimSpace(k)] = strings.TrimSpace(v)
		case "FROM":
			d.froms = append(d.froms, rest)
		case "COPY":
			if len(fields) == 3 && strings.HasPrefix(fields[0], "--from=") {
				d.from, d.binary = fields[1], fields[2]
			} else if len(fields) == 2 && strings.HasSuffix(fields[0], "/") {
				d.copied = append(d.copied, strings.TrimSuffix(fields[0], "/"))
			}
		case "ENV":
			if v, ok := strings.CutPrefix(rest, "FLEX_TEMPLATE_GO_BINARY="); ok {
				d.envBin = v
			}
		case "ENTRYPOINT":
			d.entry = rest
		case "RUN":
			if !slices.Contains(fields, "build") {
				continue
			}
			builds++
			i := 0
			for ; i < len(fields) && strings.Contains(fields[i], "="); i++ {
				d.env = append(d.env, fields[i])
			}
			if i >= len(fields) || fields[i] != "go" {
				t.Fatalf("Dockerfile: the build line %q does not run go", line)
			}
			for j := i + 1; j < len(fields); j++ {
				if fields[j] == "-o" && j+1 < len(fields) {
					d.out = fields[j+1]
					j++
					continue
				}
				d.args = append(d.args, fields[j])
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if builds != 1 {
		t.Fatalf("Dockerfile: %d RUN lines with a go build, want 1", builds)
	}
	return d
}

// moduleRoot returns the directory of go.mod, as `go env GOMOD` gives it.
func moduleRoot(t *testing.T) string {
	t.Helper()
	out, err := exec.Command(goTool(), "env", "GOMOD").Output()
	if err != nil {
		t.Fatalf("go env GOMOD: %v", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		t.Fatal("go env GOMOD: not in a module")
	}
	return filepath.Dir(gomod)
}

// goTool returns the go command: go test puts the toolchain's bin directory first in PATH.
func goTool() string { return "go" }

// TestDockerfile checks the Dockerfile against the Flex Template conventions for Go: a static
// linux/amd64 binary built with -trimpath, the Go launcher base image, FLEX_TEMPLATE_GO_BINARY
// naming the copied binary, the launcher as entrypoint; and that the build stage copies every
// directory of the module that ./flex-template is built from.
func TestDockerfile(t *testing.T) {
	root := moduleRoot(t)
	d := readDockerfile(t, root)
	for _, want := range []string{"CGO_ENABLED=0", "GOOS=linux", "GOARCH=amd64"} {
		if !slices.Contains(d.env, want) {
			t.Errorf("the build line sets %v, want %s among them", d.env, want)
		}
	}
	if len(d.args) < 1 || d.args[0] != "build" || !slices.Contains(d.args, "-trimpath") || d.args[len(d.args)-1] != "./flex-template" {
		t.Errorf("the build line runs go %v, want go build -trimpath ... ./flex-template", d.args)
	}
	if d.out == "" {
		t.Error("the build line has no -o")
	}
	if d.from != d.out || d.binary == "" {
		t.Errorf("the final stage copies %q to %q; want COPY --from=build %s <path>", d.from, d.binary, d.out)
	}
	if d.envBin != d.binary {
		t.Errorf("FLEX_TEMPLATE_GO_BINARY=%q, want the copied binary %q", d.envBin, d.binary)
	}
	if d.entry != `["/opt/google/dataflow/go_template_launcher"]` {
		t.Errorf(`ENTRYPOINT %s, want ["/opt/google/dataflow/go_template_launcher"]`, d.entry)
	}
	if len(d.froms) != 2 {
		t.Fatalf("FROM lines %q, want two stages", d.froms)
	}
	// The launcher: Google's Go base image, its tag the one build argument LAUNCHER_TAG, whose
	// default is latest, the tag Google recommends (docs/deploy.md), as is build.sh's.
	if last := d.froms[len(d.froms)-1]; last != "gcr.io/dataflow-templates-base/go-template-launcher-base:${LAUNCHER_TAG}" {
		t.Errorf("the final stage is FROM %q, want gcr.io/dataflow-templates-base/go-template-launcher-base:${LAUNCHER_TAG}", last)
	}
	if tag := d.argDefs["LAUNCHER_TAG"]; tag != "latest" {
		t.Errorf("ARG LAUNCHER_TAG=%q, want latest", tag)
	}
	script, err := os.ReadFile(filepath.Join(root, "flex-template", "build.sh"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(script), `launcher_tag="latest"`) {
		t.Error(`build.sh's default launcher tag is not latest (launcher_tag="latest")`)
	}

	// Every package of the module the binary imports lies in a copied directory.
	out, err := command(t, root, nil, goTool(), "list", "-deps", "-f", "{{if .Module}}{{if .Module.Main}}{{.Dir}}{{end}}{{end}}", "./flex-template")
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, dir := range strings.Fields(out) {
		rel, err := filepath.Rel(root, dir)
		if err != nil {
			t.Fatal(err)
		}
		top := strings.Split(filepath.ToSlash(rel), "/")[0]
		if !slices.Contains(d.copied, top) {
			t.Errorf("./flex-template imports the package in %s, but the Dockerfile copies only %v", rel, d.copied)
		}
	}
}

// TestBinary builds the binary exactly as the Dockerfile does and runs it with --help, and with
// the Dataflow runner's dry run, which translates the graph for Dataflow and prints the job
// without submitting it.
func TestBinary(t *testing.T) {
	root := moduleRoot(t)
	d := readDockerfile(t, root)
	dir := t.TempDir()
	bin := filepath.Join(dir, filepath.Base(d.out))
	args := append([]string{d.args[0], "-o", bin}, d.args[1:]...)
	if out, err := command(t, root, d.env, goTool(), args...); err != nil {
		t.Fatalf("go %s (with %v): %v\n%s", strings.Join(args, " "), d.env, err, out)
	}
	if runtime.GOOS+"/"+runtime.GOARCH != "linux/amd64" {
		// The image's binary cannot run here: build the same one for this machine, to run it.
		t.Logf("built the linux/amd64 binary; running a %s/%s build of it", runtime.GOOS, runtime.GOARCH)
		bin = filepath.Join(dir, "pubsub-to-clickhouse-host")
		args = append([]string{d.args[0], "-o", bin}, d.args[1:]...)
		env := []string{"GOOS=" + runtime.GOOS, "GOARCH=" + runtime.GOARCH, "CGO_ENABLED=0"}
		if out, err := command(t, root, env, goTool(), args...); err != nil {
			t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}

	// The version: the VCS revision the toolchain stamps (this build has no -ldflags), the Go
	// version and the Beam SDK's, as go.mod requires it.
	version := regexp.MustCompile(`^pubsub-to-clickhouse ([0-9a-f]{12}(-dirty)?|devel) \((go1\.[0-9.]+[^,]*), Beam Go SDK (v2\.[0-9]+\.[0-9]+)\)\n$`)
	t.Run("version", func(t *testing.T) {
		out, err := command(t, dir, nil, bin, "--version")
		if err != nil {
			t.Fatalf("--version: %v\n%s", err, out)
		}
		m := version.FindStringSubmatch(out)
		if m == nil {
			t.Fatalf("--version printed %q, want it to match %s", out, version)
		}
		if gomod, err := os.ReadFile(filepath.Join(root, "go.mod")); err != nil || !strings.Contains(string(gomod), "github.com/apache/beam/sdks/v2 "+m[4]) {
			t.Errorf("--version names Beam %s, which go.mod does not require (%v)", m[4], err)
		}
		if m[3] != runtime.Version() {
			t.Errorf("--version names %s, the toolchain is %s", m[3], runtime.Version())
		}
		help, err := command(t, dir, nil, bin, "--help")
		if err != nil || !strings.Contains(help, "Version "+strings.TrimSuffix(strings.TrimPrefix(out, "pubsub-to-clickhouse "), "\n")+".") {
			t.Errorf("--help (%v) does not give the version %q:\n%.300s", err, out, help)
		}
	})

	t.Run("help", func(t *testing.T) {
		out, err := command(t, dir, nil, bin, "--help")
		if err != nil {
			t.Fatalf("--help: %v\n%s", err, out)
		}
		fs, _ := templateFlags()
		for _, name := range flagNames(fs) {
			if !regexp.MustCompile(`(?m)^\s+-` + regexp.QuoteMeta(name) + `\b`).MatchString(out) {
				t.Errorf("--help does not list -%s", name)
			}
		}
		// And the Dataflow runner's flags that a Flex Template launch and the dry run use.
		for _, name := range []string{"runner", "project", "region", "staging_location", "temp_location", "dry_run", "worker_binary", "template_location", "update"} {
			if !regexp.MustCompile(`(?m)^\s+-` + name + `\b`).MatchString(out) {
				t.Errorf("--help does not list the Beam flag -%s", name)
			}
		}
	})

	t.Run("refusals", func(t *testing.T) {
		udfFile, badUDF := filepath.Join(dir, "udf.js"), filepath.Join(dir, "bad.js")
		for path, src := range map[string]string{udfFile: "function reshape(p) { return p; }", badUDF: "function reshape(p) { return p +; }"} {
			if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		params := []string{
			"--inputSubscription=projects/my-project/subscriptions/my-sub", "--clickHouseUrl=clickhouse://127.0.0.1:1",
			"--clickHouseDatabase=default", "--clickHouseTable=events", "--clickHouseUsername=default",
			"--clickHousePassword=" + refusalPassword, "--clickHouseDeadLetterTable=dl",
		}
		messages := filepath.Join(dir, "messages.jsonl")
		if err := os.WriteFile(messages, []byte(`{"id":1}`+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		// No emulator and no Application Default Credentials: no PUBSUB_EMULATOR_HOST, no
		// GOOGLE_APPLICATION_CREDENTIALS, and a home without gcloud's credentials file.
		noCredentials := []string{"PUBSUB_EMULATOR_HOST=", "GOOGLE_APPLICATION_CREDENTIALS=", "HOME=" + dir, "CLOUDSDK_CONFIG=" + filepath.Join(dir, "gcloud")}
		const credentialsHint = "no credentials for Pub/Sub: a local run against the emulator needs PUBSUB_EMULATOR_HOST=host:port " +
			"(what the emulator prints, e.g. export PUBSUB_EMULATOR_HOST=127.0.0.1:8085), and a run against Google Cloud needs Application Default Credentials"
		for _, tc := range []struct {
			name  string
			args  []string
			code  int
			want  string
			env   []string
			lines int // when not 0, the output has exactly that many lines
		}{
			// A newcomer's first try: the binary alone, which the check for a first argument that
			// is not a command read past the end of.
			{"no arguments", nil, 2, "pubsub-to-clickhouse: invalid template parameters:\ninputSubscription \"\": is required", nil, 0},
			{"a flag's value that is not a number", append([]string{"--windowSeconds=2s"}, params...), 2,
				`pubsub-to-clickhouse: --windowSeconds "2s": not a whole number in decimal digits (leave it empty for unset) (--help lists the flags)`, nil, 1},
			{"a boolean flag's value that is not a boolean", append([]string{"--insertDeduplicate=yes please"}, params...), 2,
				`pubsub-to-clickhouse: --insertDeduplicate "yes please": not true or false (leave it empty for the default, true) (--help lists the flags)`, nil, 1},
			{"a template parameter that breaks its rule", append([]string{"--windowSeconds=0"}, params...), 2,
				`windowSeconds "0": must be a positive number of seconds`, nil, 0},
			{"no credentials: the pipeline", params, 1, "pubsub-to-clickhouse: inputSubscription projects/my-project/subscriptions/my-sub: creating the Pub/Sub client: " + credentialsHint, noCredentials, 0},
			{"no credentials: publish", []string{"publish", "--topic=projects/my-project/topics/events", messages}, 1,
				"pubsub-to-clickhouse publish: --topic projects/my-project/topics/events: creating the Pub/Sub client: " + credentialsHint, noCredentials, 1},
			{"no credentials: replay", []string{"replay", "--topic=projects/my-project/topics/events", "--fromSubscription=projects/my-project/subscriptions/dead-letters"}, 1,
				"pubsub-to-clickhouse replay: --fromSubscription projects/my-project/subscriptions/dead-letters: creating the Pub/Sub client: " + credentialsHint, noCredentials, 1},
			{"a boolean flag's value as a separate argument", append([]string{"--insertDeduplicate", "false"}, params...), 2,
				`arguments after the flags, from argument 2 ("false") on, are not flags: give each flag as --name=value (a boolean flag takes --name=false`, nil, 1},
			{"a stray argument", append(slices.Clone(params), "extra"), 2,
				`pubsub-to-clickhouse: 1 argument after the flags, from argument 8 ("extra") on, is not a flag: give each flag as --name=value`, nil, 1},
			// An unquoted password with a space: its second half is not shown (the output is
			// checked for the password, as every case's).
			{"a password split by a space", append(slices.Clone(params), "--clickHousePassword=first-half", refusalPassword), 2,
				`pubsub-to-clickhouse: 1 argument after the flags, from argument 9 on, is not a flag: give each flag as --name=value`, nil, 1},
			{"a URL split by a space", append(slices.Clone(params), "--clickHouseUrl=clickhouse://u:first-half", refusalPassword+"@ch:9000"), 2,
				`pubsub-to-clickhouse: 1 argument after the flags, from argument 9 on, is not a flag: give each flag as --name=value`, nil, 1},
			{"a misspelt template parameter", append([]string{"--batchRowcount=5000"}, params...), 2,
				"did you mean the template parameter --batchRowCount?", nil, 1},
			// Another template's parameters: ignored, the job would run without them.
			{"flags of no kind", append([]string{"--batchSize=500", "--deadLetterTable=dl", "--streaming"}, params...), 2,
				"pubsub-to-clickhouse: --batchSize, --deadLetterTable: neither a template parameter nor a flag of the Beam Go SDK (--help lists them); nothing was started", nil, 1},
			{"a dry run on prism", append([]string{"--runner=prism", "--dry_run"}, params...), 2,
				"--dry_run is for the Dataflow runner", nil, 0},
			{"the direct runner", append([]string{"--runner=direct"}, params...), 2,
				"the direct runner cannot run this pipeline", nil, 0},
			// Beam itself would refuse it only after the start-up checks, with exit status 1.
			{"a misspelt runner", append([]string{"--runner=prsim"}, params...), 2,
				"pubsub-to-clickhouse: --runner=prsim: no runner of that name (did you mean --runner=prism?); nothing was started", nil, 0},
			{"a runner of no kind", append([]string{"--runner=local"}, params...), 2,
				"pubsub-to-clickhouse: --runner=local: no runner of that name (use prism, the default, or dataflow); nothing was started", nil, 0},
			// The Beam runner would refuse them only after the start-up checks, with exit status 1.
			{"a Dataflow launch without project, region and staging location", append([]string{"--runner=dataflow", "--dry_run"}, params...), 2,
				"pubsub-to-clickhouse: a Dataflow launch needs --project=<project>, --region=<region> (e.g. us-central1), --staging_location=gs://<bucket>/<path>; nothing was started",
				append(slices.Clone(noCredentials), "CLOUDSDK_COMPUTE_REGION="), 0},
			{"a Dataflow launch without staging location", append([]string{"--runner=dataflow", "--project=my-project", "--region=us-central1"}, params...), 2,
				"pubsub-to-clickhouse: a Dataflow launch needs --staging_location=gs://<bucket>/<path>; nothing was started", noCredentials, 0},
			// The runner would stage with them only after the start-up checks (here, ClickHouse's,
			// which would fail first), quoting the client library without a way out.
			{"a Dataflow launch without credentials", append([]string{"--runner=dataflow", "--project=my-project", "--region=us-central1",
				"--staging_location=gs://my-bucket/staging"}, params...), 1,
				"pubsub-to-clickhouse: no usable Google Cloud credentials to stage the job with: the Dataflow runner writes the worker binary and the job to " +
					"--staging_location with Application Default Credentials: run gcloud auth application-default login, or set " +
					"GOOGLE_APPLICATION_CREDENTIALS to a service account's key file (", noCredentials, 0},
			{"a certificate file on Dataflow", append(slices.Clone(params), "--runner=dataflow", "--project=p", "--region=us-central1",
				"--clickHouseUrl=clickhouse://127.0.0.1:1?secure=true", "--clickHouseCaCertificate=/etc/ssl/ca.pem"), 2,
				`clickHouseCaCertificate "/etc/ssl/ca.pem": a file path is read on each worker, and Dataflow's workers do not have the launcher's files`, nil, 0},
			{"a UDF without its function", append([]string{"--javascriptTextTransformGcsPath=" + udfFile, "--javascriptTextTransformFunctionName=transform"}, params...), 1,
				`javascriptTextTransformFunctionName "transform": ` + udfFile + ": the file defines no function transform (transform is undefined; the file's global functions: reshape)", nil, 0},
			{"a UDF that is not JavaScript", append([]string{"--javascriptTextTransformGcsPath=" + badUDF, "--javascriptTextTransformFunctionName=reshape"}, params...), 1,
				"javascriptTextTransformGcsPath " + badUDF + ": the file is not valid JavaScript: SyntaxError: ", nil, 0},
			{"a UDF file that does not exist", append([]string{"--javascriptTextTransformGcsPath=" + udfFile + ".missing", "--javascriptTextTransformFunctionName=reshape"}, params...), 1,
				"javascriptTextTransformGcsPath " + udfFile + ".missing: reading the file: ", nil, 0},
			{"a local UDF file on Dataflow", append([]string{"--runner=dataflow", "--project=p", "--region=us-central1",
				"--javascriptTextTransformGcsPath=" + udfFile, "--javascriptTextTransformFunctionName=reshape"}, params...), 2,
				"on Dataflow the file must be in Cloud Storage, gs://<bucket>/<object>", nil, 0},
		} {
			t.Run(tc.name, func(t *testing.T) {
				out, err := command(t, dir, tc.env, bin, tc.args...)
				var exit *exec.ExitError
				if !errors.As(err, &exit) || exit.ExitCode() != tc.code {
					t.Fatalf("exit %v, want %d\n%s", err, tc.code, out)
				}
				if !strings.Contains(out, tc.want) {
					t.Errorf("output lacks %q:\n%s", tc.want, out)
				}
				// The warning is for a job graph that leaves the process (Dataflow): a local run's does not
				// ("no credentials: the pipeline" is a local run that gets past the start-up log).
				if !slices.Contains(tc.args, "--runner=dataflow") && strings.Contains(out, "a password is given as text") {
					t.Errorf("a local run warns about the password given as text:\n%s", out)
				}
				if n := strings.Count(strings.TrimSuffix(out, "\n"), "\n") + 1; tc.lines != 0 && n != tc.lines {
					t.Errorf("%d lines of output, want %d:\n%s", n, tc.lines, out)
				}
			})
		}
	})

	t.Run("dry run", func(t *testing.T) {
		// A dry run must contact neither ClickHouse nor Pub/Sub: both point at listeners that
		// count connections. Credentials point at a missing file, so that the Dataflow runner's
		// check of the buckets gives up at once, without looking for the metadata server.
		ch, chConns := listen(t)
		ps, psConns := listen(t)
		env := []string{
			"GOOGLE_APPLICATION_CREDENTIALS=" + filepath.Join(dir, "no-credentials.json"),
			"PUBSUB_EMULATOR_HOST=" + ps,
		}
		// The password is kept in Secret Manager: a dry run never reads it, and its job holds the
		// secret version's name.
		common := []string{
			"--runner=dataflow", "--dry_run", "--project=p", "--region=us-central1",
			"--staging_location=gs://b/staging", "--temp_location=gs://b/tmp",
			"--inputSubscription=projects/my-project/subscriptions/my-sub",
			"--clickHouseUrl=clickhouse://" + ch,
			"--clickHouseDatabase=default", "--clickHouseTable=events",
			"--clickHouseUsername=default", "--clickHousePassword=" + dryRunSecret,
		}
		for _, tc := range []struct {
			name  string
			args  []string
			wants []string
		}{
			{
				name:  "table dead letters, default batching",
				args:  []string{"--clickHouseDeadLetterTable=events_dead_letter"},
				wants: []string{"beam:window_fn:global_windows:v1", `table=events_dead_letter topic=(none)`, "combined trigger", "shuffleCompression=minlz"},
			},
			{
				name: "topic dead letters, fixed windows",
				args: []string{"--deadLetterTopic=projects/my-project/topics/dlq", "--windowSeconds=10", "--numShards=4", "--shuffleCompression=zstd"},
				wants: []string{"beam:window_fn:fixed_windows:v1", `table=(none) topic=projects/my-project/topics/dlq`, "numShards=4 shuffleCompression=zstd",
					"beam:transform:group_by_key:v1", "Batch/CoGBK", "DeadLetters/Batch/CoGBK"},
			},
			{
				name: "both dead letters, count batching",
				args: []string{"--clickHouseDeadLetterTable=dlq", "--deadLetterTopic=projects/my-project/topics/dlq", "--batchRowCount=500",
					"--update", "--job_name=running-job"},
				wants: []string{"beam:window_fn:global_windows:v1", `table=dlq topic=projects/my-project/topics/dlq`,
					`msg="dry run: the running job that --update replaces is not looked up; the launch looks it up" job_name=running-job`},
			},
			{
				name: "routed to two tables",
				args: []string{"--clickHouseDeadLetterTable=dlq", "--routeBy=attribute:event_type", "--routeTables=click=clicks,order=orders",
					"--routeUnlisted=deadLetter"},
				wants: []string{"Route/route.routeFn", "Tables/clicks/Parse/parse.parseFn", "Tables/orders/Write/write.insertFn",
					`msg=routing routeBy=attribute:event_type routeTables="click=clicks,order=orders" "unlisted values"="dead letters (routeUnlisted=deadLetter)"`},
			},
			{
				// The file is not read on a dry run (nor is Cloud Storage contacted).
				name: "a JavaScript UDF",
				args: []string{"--clickHouseDeadLetterTable=dlq", "--javascriptTextTransformGcsPath=gs://b/udfs/transform.js",
					"--javascriptTextTransformFunctionName=transform", "--javascriptTextTransformReloadIntervalMinutes=5"},
				wants: []string{"UDF/udf.udfFn", `msg="javascript UDF" path=gs://b/udfs/transform.js function=transform reload=5m0s`},
			},
		} {
			t.Run(tc.name, func(t *testing.T) {
				out, err := command(t, dir, env, bin, append(slices.Clone(common), tc.args...)...)
				if err != nil {
					t.Fatalf("dry run: %v\n%s", err, out)
				}
				for _, want := range append([]string{
					`msg="dry run: the JavaScript UDF, the ClickHouse table and the dead-letter destinations are not checked"`,
					// The version, first.
					`msg=pubsub-to-clickhouse version="`,
					"Dry-run: not submitting job!",
					// The source: the Dataflow-native Pub/Sub read of the subscription.
					"beam:transform:pubsub_read:v1", "projects/my-project/subscriptions/my-sub",
					// The stages, grouped for batching.
					// (The GroupByKey of the fixed-window mode, or the batchers' stateful steps.)
					"Parse/parse.parseFn", "Batch/batch.", "Write/write.insertFn", "DeadLetters/Batch/batch.",
					"DeadLetter/deadletter.writeFn",
					// The job as Dataflow receives it.
					`\"type\": \"JOB_TYPE_STREAMING\"`, `\"projectId\": \"p\"`, `\"region\": \"us-central1\"`,
					`\"tempLocation\": \"gs://b/tmp\"`, `gs://b/staging/`, `beam_go_sdk`,
					// The job's pipeline options name the secret version.
					`\"clickHousePassword\": \"` + dryRunSecret + `\"`,
				}, tc.wants...) {
					if !strings.Contains(out, want) {
						t.Errorf("the output lacks %s", want)
					}
				}
				// The DoFns, which the printed model holds base64-encoded, name the version.
				if !leak.Found([]byte(out), `"Password":"`+dryRunSecret+`"`) {
					t.Error("the printed model's DoFns do not name the secret version")
				}
				if t.Failed() {
					t.Logf("output:\n%s", out)
				}
			})
		}
		// The password as text: the launch warns, and the model, whose DoFns would hold the
		// password, is not printed (the job's pipeline options show it as xxxxx).
		t.Run("password as text", func(t *testing.T) {
			// The password also appears in another value, here a routing value: command checks
			// that no line shows it.
			args := append(slices.Clone(common), "--clickHouseDeadLetterTable=dl", "--routeBy=attribute:k",
				"--routeTables=click=clicks,"+dryRunPassword+"=orders")
			args = slices.DeleteFunc(args, func(a string) bool { return strings.HasPrefix(a, "--clickHousePassword=") })
			out, err := command(t, dir, env, bin, append(args, "--clickHousePassword="+dryRunPassword)...)
			if err != nil {
				t.Fatalf("dry run: %v\n%s", err, out)
			}
			for _, want := range []string{"Dry-run: not submitting job!", modelNotLogged, `\"clickHousePassword\": \"xxxxx\"`,
				"a password is given as text", `msg=routing routeBy=attribute:k routeTables="click=clicks,xxxxx=orders"`} {
				if !strings.Contains(out, want) {
					t.Errorf("the output lacks %s:\n%s", want, out)
				}
			}
			if strings.Contains(out, serializedDoFn) {
				t.Errorf("the output holds the serialized DoFns:\n%s", out)
			}
		})
		// A proxy's password in clickHouseUrl is in the DoFns too: the same warning, and no model.
		t.Run("proxy password in the URL", func(t *testing.T) {
			args := slices.DeleteFunc(slices.Clone(common), func(a string) bool { return strings.HasPrefix(a, "--clickHouseUrl=") })
			proxy := url.QueryEscape("http://pu:" + proxyPassword + "@proxy:3128")
			out, err := command(t, dir, env, bin, append(args, "--clickHouseDeadLetterTable=dl", "--clickHouseUrl=http://"+ch+"?http_proxy="+proxy)...)
			if err != nil {
				t.Fatalf("dry run: %v\n%s", err, out)
			}
			for _, want := range []string{"Dry-run: not submitting job!", modelNotLogged, "a password is given as text"} {
				if !strings.Contains(out, want) {
					t.Errorf("the output lacks %s:\n%s", want, out)
				}
			}
		})
		if n := chConns.Load(); n != 0 {
			t.Errorf("the dry runs opened %d connections to ClickHouse", n)
		}
		if n := psConns.Load(); n != 0 {
			t.Errorf("the dry runs opened %d connections to Pub/Sub", n)
		}
	})
}

// listen starts a TCP listener on loopback that counts and closes the connections it accepts.
func listen(t *testing.T) (addr string, conns *atomic.Int64) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	conns = new(atomic.Int64)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			conns.Add(1)
			c.Close()
		}
	}()
	return l.Addr().String(), conns
}

// The test passwords: no output of the binary may hold one, as text or in base64 (command
// checks every run).
const (
	refusalPassword = "refusal-s3cr3t"
	dryRunPassword  = "dry-run-s3cr3t-pw"
	dryRunSecret    = "projects/p/secrets/ch-password/versions/latest"
	proxyPassword   = "proxy-s3cr3t-91"
)

// command runs name with args in dir, with env added to the environment, and returns its
// combined output, which must hold none of the test passwords. It stops the command after ten
// minutes.
func command(t *testing.T, dir string, env []string, name string, args ...string) (string, error) {
	t.Helper()
	// A guard against a hang, long enough for a build without a cache on a busy machine (the
	// -trimpath, CGO_ENABLED=0 build of the image shares nothing with go test's): 5 minutes
	// were not, once, with the other packages' tests and a second such build beside it.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &out
	err := cmd.Run()
	if ctx.Err() != nil {
		err = ctx.Err()
	}
	leak.Check(t, name+"'s output", out.Bytes(), refusalPassword, dryRunPassword, proxyPassword)
	return out.String(), err
}
