package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestScripts runs build.sh and run.sh with --help and with --dry-run, which prints the gcloud
// commands instead of running them (there is no cloud here).
func TestScripts(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Fatalf("bash: %v", err)
	}
	for _, script := range []string{"build.sh", "run.sh"} {
		if out, err := command(t, ".", nil, bash, "-n", script); err != nil {
			t.Errorf("bash -n %s: %v\n%s", script, err, out)
		}
		out, err := command(t, ".", nil, bash, script, "--help")
		if err != nil || !strings.HasPrefix(out, "Usage: flex-template/"+script) {
			t.Errorf("%s --help: %v\n%s", script, err, out)
		}
		out, err = command(t, ".", nil, bash, script, "--bogus")
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 2 || !strings.Contains(out, "unknown") {
			t.Errorf("%s --bogus: %v, want exit status 2 and a message\n%s", script, err, out)
		}
	}

	t.Run("build", func(t *testing.T) {
		out, err := command(t, ".", nil, bash, "build.sh", "--project", "my-project", "--region", "us-central1",
			"--bucket", "gs://my-bucket", "--repository", "templates", "--tag", "v1", "--dry-run")
		if err != nil {
			t.Fatalf("build.sh: %v\n%s", err, out)
		}
		image := "us-central1-docker.pkg.dev/my-project/templates/pubsub-to-clickhouse:v1"
		for _, want := range []string{
			"+ gcloud container images describe gcr.io/dataflow-templates-base/go-template-launcher-base:latest",
			`args: ["build", "--build-arg", "LAUNCHER_TAG=latest", "-t", "` + image + `", "."]`,
			"+ gcloud builds submit --project my-project --config ",
			"+ gcloud dataflow flex-template build gs://my-bucket/templates/pubsub-to-clickhouse.json --project my-project --image " +
				image + " --sdk-language GO --metadata-file metadata.json",
		} {
			if !strings.Contains(out, want) {
				t.Errorf("build.sh --dry-run does not print\n%s\nbut:\n%s", want, out)
			}
		}
	})

	t.Run("run", func(t *testing.T) {
		// Every template parameter is accepted; a value with commas gets another delimiter; the
		// password from the environment is passed and printed hidden.
		m := readMetadata(t)
		args := []string{"run.sh", "--project", "my-project", "--region", "us-central1", "--bucket", "my-bucket",
			"--job-name", "events-1", "--gcloud-arg=--max-workers=3", "--dry-run", "--"}
		for _, p := range m.Parameters {
			v := "1"
			switch p.Name {
			case "clickHousePassword":
				continue
			case "clickHouseUrl":
				v = "clickhouse://ch1:9000,ch2:9000"
			}
			args = append(args, p.Name+"="+v)
		}
		out, err := command(t, ".", []string{"CLICKHOUSE_PASSWORD=pw-from-env"}, bash, args...)
		if err != nil {
			t.Fatalf("run.sh: %v\n%s", err, out)
		}
		for _, want := range []string{
			"+ gcloud dataflow flex-template run events-1 --project my-project --region us-central1 " +
				"--template-file-gcs-location gs://my-bucket/templates/pubsub-to-clickhouse.json " +
				"--staging-location gs://my-bucket/staging --temp-location gs://my-bucket/tmp --max-workers=3 --parameters ",
			`\^~\^inputSubscription=1~`, `~clickHouseUrl=clickhouse://ch1:9000\,ch2:9000~`, "~clickHousePassword=xxxxx",
		} {
			if !strings.Contains(out, want) {
				t.Errorf("run.sh --dry-run does not print %s:\n%s", want, out)
			}
		}
		if strings.Contains(out, "pw-from-env") {
			t.Errorf("run.sh --dry-run shows the password:\n%s", out)
		}

		// A parameter's name in another letter case, and the local runs' stopAfterIdle, are said
		// as such; a name like none is refused with the list (exit 2, nothing run); a name is
		// text, not a pattern.
		for _, tc := range []struct{ arg, want string }{
			{"clickhouseUrl=clickhouse://ch:9000", "run.sh: unknown template parameter: clickhouseUrl: did you mean clickHouseUrl? (names are case-sensitive)"},
			{"stopAfterIdle=60", "run.sh: stopAfterIdle is for local runs only: a Dataflow job runs until it is drained (gcloud dataflow jobs drain JOB_ID); leave it out"},
			{"clickHouseUlr=clickhouse://ch:9000", "run.sh: unknown template parameter: clickHouseUlr (the parameters: inputSubscription "},
			{"clickHouse.*=x", "run.sh: unknown template parameter: clickHouse.* (the parameters: "},
			{"--clickHouseUrl=clickhouse://ch:9000", "run.sh: --clickHouseUrl: this script takes template parameters as NAME=VALUE, without dashes: clickHouseUrl=VALUE"},
			{"-clickHouseTable", "run.sh: -clickHouseTable: this script takes template parameters as NAME=VALUE, without dashes: clickHouseTable=VALUE"},
		} {
			out, err := command(t, ".", nil, bash, "run.sh", "--project", "p", "--region", "r", "--bucket", "b", "--dry-run", "--",
				"inputSubscription=projects/p/subscriptions/s", tc.arg)
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() != 2 || !strings.Contains(out, tc.want) || strings.Contains(out, "+ gcloud") {
				t.Errorf("run.sh %s: %v, want exit status 2 and %q\n%s", tc.arg, err, tc.want, out)
			}
		}

		// A parameter in the binary's flag form before the "--" is said as such too, without its
		// value (a password).
		out, err = command(t, ".", nil, bash, "run.sh", "--project", "p", "--region", "r", "--bucket", "b", "--dry-run",
			"--clickHousePassword=pw-Dashed-42", "inputSubscription=projects/p/subscriptions/s")
		if want := "run.sh: --clickHousePassword: this script takes template parameters as NAME=VALUE, without dashes: clickHousePassword=VALUE"; !strings.Contains(out, want) || strings.Contains(out, "pw-Dashed-42") {
			t.Errorf("run.sh --clickHousePassword=...: %v, want %q and no password\n%s", err, want, out)
		}

		// A value the shell split at a space, unquoted (clickHousePassword=pw Rest-42): the word
		// after a value that can hold a password is refused without being shown, wherever it
		// falls (before or after the "--") and whatever it looks like.
		for _, tc := range []struct {
			args []string
			want string
		}{
			{[]string{"clickHousePassword=pw", "Rest-42"}, "run.sh: not an option nor a NAME=VALUE template parameter: the argument after clickHousePassword=..."},
			{[]string{"--", "clickHousePassword=pw", "Rest-42"}, "run.sh: not a NAME=VALUE template parameter: the argument after clickHousePassword=..."},
			{[]string{"--", "clickHousePassword=pw", "Rest-42=x"}, "run.sh: unknown template parameter: the argument after clickHousePassword=..."},
			{[]string{"clickHousePassword=pw", "Rest-42=x"}, "run.sh: unknown template parameter: the argument after clickHousePassword=..."},
			{[]string{"clickHousePassword=pw", "-Rest-42"}, "run.sh: unknown option: the argument after clickHousePassword=..."},
			{[]string{"--", "clickHouseUrl=clickhouse://u:pw", "Rest-42@ch:9000"}, "run.sh: not a NAME=VALUE template parameter: the argument after clickHouseUrl=..."},
			{[]string{"--", "clickHousePassword=pw", "clickhouseurl=Rest-42"}, "run.sh: unknown template parameter: the argument after clickHousePassword=..."},
		} {
			args := append([]string{"run.sh", "--project", "p", "--region", "r", "--bucket", "b", "--dry-run", "inputSubscription=projects/p/subscriptions/s"}, tc.args...)
			out, err := command(t, ".", nil, bash, args...)
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() != 2 || !strings.Contains(out, tc.want) || strings.Contains(out, "Rest-42") {
				t.Errorf("run.sh %q: %v, want exit status 2, %q and not Rest-42\n%s", tc.args, err, tc.want, out)
			}
		}

		// A URL's password and secret options, and the password in another value, are hidden
		// as the binary's logs hide them.
		out, err = command(t, ".", nil, bash, "run.sh", "--project", "p", "--region", "r", "--bucket", "b", "--dry-run", "--",
			"clickHouseUrl=clickhouse://ingest:Zq9@SECRET@ch1:9000,ch2:9000/db?Token=T0k3n&secure=true&pass=P4ss",
			"clickHousePassword=pw-Given-42", "clickHouseTable=t_pw-Given-42", "inputSubscription=projects/p/subscriptions/s")
		if err != nil {
			t.Fatalf("run.sh: %v\n%s", err, out)
		}
		for _, want := range []string{`clickHouseUrl=clickhouse://ingest:xxxxx@ch1:9000\,ch2:9000/db\?Token=xxxxx\&secure=true\&pass=xxxxx`,
			"clickHousePassword=xxxxx", "clickHouseTable=t_xxxxx"} {
			if !strings.Contains(out, want) {
				t.Errorf("run.sh --dry-run does not print %s:\n%s", want, out)
			}
		}
		for _, secret := range []string{"Zq9", "SECRET", "T0k3n", "P4ss", "pw-Given-42"} {
			if strings.Contains(out, secret) {
				t.Errorf("run.sh --dry-run shows %s:\n%s", secret, out)
			}
		}

		// A proxy's password in an http_proxy option, and a key's text given in place of its name.
		key := "MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgKeyBody0123456789abcdefghijklmnop"
		out, err = command(t, ".", nil, bash, "run.sh", "--project", "p", "--region", "r", "--bucket", "b", "--dry-run", "--",
			"clickHouseUrl=https://ch1:8443?http_proxy=http%3A%2F%2Fpu%3AProxy-S3cret%40proxy%3A3128&max_open_conns=2",
			"clickHouseClientKey="+key, "clickHouseCaCertificate=gs://b/ca.pem", "inputSubscription=projects/p/subscriptions/s")
		if err != nil {
			t.Fatalf("run.sh: %v\n%s", err, out)
		}
		for _, want := range []string{`http_proxy=xxxxx%40proxy%3A3128\&max_open_conns=2`, `clickHouseClientKey=xxxxx`, `clickHouseCaCertificate=gs://b/ca.pem`} {
			if !strings.Contains(out, want) {
				t.Errorf("run.sh --dry-run does not print %s:\n%s", want, out)
			}
		}
		// The key's text with white space before it, and with \n written out (pasted from JSON).
		for _, k := range []string{"  " + key, key[:32] + `\n` + key[32:]} {
			out, err = command(t, ".", nil, bash, "run.sh", "--project", "p", "--region", "r", "--bucket", "b", "--dry-run", "--",
				"clickHouseClientKey="+k, "inputSubscription=projects/p/subscriptions/s")
			if err != nil || strings.Contains(out, "KeyBody0123") || !strings.Contains(out, "clickHouseClientKey=xxxxx") {
				t.Errorf("run.sh --dry-run with the key %q: %v\n%s", k[:40], err, out)
			}
		}
		for _, secret := range []string{"Proxy-S3cret", "KeyBody0123"} {
			if strings.Contains(out, secret) {
				t.Errorf("run.sh --dry-run shows %s:\n%s", secret, out)
			}
		}

		// A Secret Manager secret version's name is no password: it shows as it is, as in the
		// binary's logs, so that a dry run shows which secret the job reads; a password in
		// CLICKHOUSE_PASSWORD, or a name with a space in it (which the binary takes for the
		// password itself), stays hidden.
		version := "projects/my-project/secrets/clickhouse-password/versions/latest"
		out, err = command(t, ".", nil, bash, "run.sh", "--project", "p", "--region", "r", "--bucket", "b", "--dry-run", "--",
			"clickHousePassword="+version, "inputSubscription=projects/p/subscriptions/s")
		if err != nil || !strings.Contains(out, "clickHousePassword="+version) {
			t.Errorf("run.sh --dry-run with clickHousePassword=%s does not show the version's name: %v\n%s", version, err, out)
		}
		for _, pw := range []string{version + " Env-S3cret", "Env-S3cret"} {
			out, err = command(t, ".", []string{"CLICKHOUSE_PASSWORD=" + pw}, bash, "run.sh", "--project", "p", "--region", "r", "--bucket", "b",
				"--dry-run", "--", "inputSubscription=projects/p/subscriptions/s")
			if err != nil || strings.Contains(out, "Env-S3cret") || !strings.Contains(out, "clickHousePassword=xxxxx") {
				t.Errorf("run.sh --dry-run with CLICKHOUSE_PASSWORD=%q: %v\n%s", pw, err, out)
			}
		}

		out, err = command(t, ".", nil, bash, "run.sh", "--project", "p", "--region", "r", "--bucket", "b",
			"--dry-run", "stopAfterIdle=5")
		var exit *exec.ExitError
		if !errors.As(err, &exit) || !strings.Contains(out, "run.sh: stopAfterIdle is for local runs only") {
			t.Errorf("run.sh accepts stopAfterIdle, which is not a template parameter, or does not say why: %v\n%s", err, out)
		}
	})
}

// TestBuildChecksLauncher runs build.sh with a fake gcloud first on PATH, which records its
// calls and knows one launcher tag: build.sh asks for the launcher base image before anything
// else, stops with the way out when the tag does not exist, and otherwise builds with that tag.
func TestBuildChecksLauncher(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Fatalf("bash: %v", err)
	}
	bin := t.TempDir()
	const fake = `#!/bin/sh
printf '%s\n' "$*" >>"$FAKE_LOG/calls"
case "$1 $2 $3" in
"container images describe")
  if [ -n "$FAKE_NO_ACCOUNT" ]; then
    printf 'ERROR: (gcloud.container.images.describe) You do not currently have an active account selected.\nPlease run:\n\n  $ gcloud auth login\n\nto obtain new credentials.\n' >&2
    exit 1
  fi
  case $4 in
  gcr.io/dataflow-templates-base/go-template-launcher-base:latest|gcr.io/dataflow-templates-base/go-template-launcher-base:20260122-rc00)
    echo "sha256:0123" ;;
  *) echo "ERROR: (gcloud.container.images.describe) [$4] is not found or access is denied." >&2; exit 1 ;;
  esac ;;
"builds submit --project") for a; do case $a in *.yaml) cp "$a" "$FAKE_LOG/cloudbuild.yaml" ;; esac; done ;;
"dataflow flex-template build") ;;
"storage cat --project") echo '{"metadata": {"supportsAtLeastOnce": true}}' ;;
*) echo "ERROR: (gcloud) fake gcloud: unexpected arguments: $*" >&2; exit 2 ;;
esac
`
	if err := os.WriteFile(filepath.Join(bin, "gcloud"), []byte(fake), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, tag string
		fails     bool
		noAccount bool // gcloud is not logged in
	}{{"default tag", "", false, false}, {"a dated tag", "20260122-rc00", false, false}, {"a tag that does not exist", "20250220-rc00", true, false},
		{"gcloud not logged in", "", true, true}} {
		t.Run(tc.name, func(t *testing.T) {
			log := t.TempDir()
			args := []string{"build.sh", "--project", "my-project", "--region", "us-central1", "--bucket", "my-bucket", "--repository", "templates", "--tag", "v1"}
			if tc.tag != "" {
				args = append(args, "--launcher-tag", tc.tag)
			}
			env := []string{"PATH=" + bin + string(os.PathListSeparator) + os.Getenv("PATH"), "FAKE_LOG=" + log}
			if tc.noAccount {
				env = append(env, "FAKE_NO_ACCOUNT=1")
			}
			out, err := command(t, ".", env, bash, args...)
			calls, _ := os.ReadFile(filepath.Join(log, "calls"))
			lines := strings.Split(strings.TrimSpace(string(calls)), "\n")
			tag := cmp.Or(tc.tag, "latest")
			if want := "container images describe gcr.io/dataflow-templates-base/go-template-launcher-base:" + tag; !strings.HasPrefix(lines[0], want) {
				t.Errorf("the first gcloud call is %q, want %s ...", lines[0], want)
			}
			if tc.fails {
				var exit *exec.ExitError
				if !errors.As(err, &exit) || exit.ExitCode() != 1 {
					t.Errorf("build.sh: %v, want exit status 1\n%s", err, out)
				}
				wants := []string{
					"build.sh: the launcher base image gcr.io/dataflow-templates-base/go-template-launcher-base:" + tag + " does not exist, or cannot be read",
					"is not found or access is denied", "gcloud container images list-tags gcr.io/dataflow-templates-base/go-template-launcher-base",
					"--launcher-tag TAG",
				}
				if tc.noAccount {
					// The way out is to log in, not another tag.
					wants = []string{"build.sh: gcloud is not logged in, so it cannot read gcr.io/dataflow-templates-base/go-template-launcher-base:latest",
						"You do not currently have an active account selected.", "Log in with\n  gcloud auth login\nthen run build.sh again."}
					if strings.Contains(out, "list-tags") {
						t.Errorf("build.sh, not logged in, sends the user to the tags:\n%s", out)
					}
				}
				for _, want := range wants {
					if !strings.Contains(out, want) {
						t.Errorf("the output lacks %q:\n%s", want, out)
					}
				}
				if len(lines) != 1 {
					t.Errorf("build.sh went on after the failed check: %q", lines)
				}
				return
			}
			if err != nil {
				t.Fatalf("build.sh: %v\n%s", err, out)
			}
			config, err := os.ReadFile(filepath.Join(log, "cloudbuild.yaml"))
			if err != nil || !strings.Contains(string(config), `"--build-arg", "LAUNCHER_TAG=`+tag+`"`) {
				t.Errorf("the Cloud Build configuration does not pass LAUNCHER_TAG=%s (%v):\n%s", tag, err, config)
			}
			if len(lines) != 4 || !strings.HasPrefix(lines[1], "builds submit") || !strings.HasPrefix(lines[2], "dataflow flex-template build") {
				t.Errorf("the gcloud calls are %q, want the check, builds submit, flex-template build, storage cat", lines)
			}
		})
	}
}

// TestCanary runs canary.sh with fake gcloud and curl executables first on PATH: small shell
// scripts that record their arguments (one file per call) and answer as the real ones would, curl
// with the counts that FAKE_ROWS and FAKE_DEAD list (";"-separated, one per query, the last one
// repeated).
func TestCanary(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Fatalf("bash: %v", err)
	}
	if out, err := command(t, ".", nil, bash, "-n", "canary.sh"); err != nil {
		t.Fatalf("bash -n canary.sh: %v\n%s", err, out)
	}

	bin := t.TempDir()
	fakes := map[string]string{
		"gcloud": `#!/bin/sh
f=$(mktemp "$FAKE_LOG/gcloud.XXXXXX") || exit 99
printf '%s\0' "$@" >"$f"
case "$1 $2 $3" in
"dataflow jobs describe") echo "${FAKE_JOB_STATE:-JOB_STATE_RUNNING}" ;;
"pubsub topics publish") printf "messageIds:\n- '%s'\n" "${f##*.}" ;;
"dataflow jobs drain") echo "Started draining jobs..." ;;
*) echo "ERROR: (gcloud) fake gcloud: unexpected arguments: $*" >&2; exit 2 ;;
esac
`,
		"curl": `#!/bin/sh
f=$(mktemp "$FAKE_LOG/curl.XXXXXX") || exit 99
printf '%s\0' "$@" >"$f"
query=""
while [ $# -gt 0 ]; do
  case $1 in
  -K) cp "$2" "$FAKE_LOG/config.${f##*.}"; shift ;;
  --data-binary) query=$2; shift ;;
  esac
  shift
done
case $query in
*raw_message*) kind=dead answers=$FAKE_DEAD ;;
*) kind=rows answers=$FAKE_ROWS ;;
esac
n=$(($(cat "$FAKE_LOG/$kind.calls" 2>/dev/null || echo 0) + 1))
echo "$n" >"$FAKE_LOG/$kind.calls"
answer=$(printf '%s' "$answers" | cut -d';' -f"$n")
[ -n "$answer" ] || answer=${answers##*;}
printf '%s\n' "$answer"
`,
	}
	for name, script := range fakes {
		if err := os.WriteFile(filepath.Join(bin, name), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}

	const (
		password = `s3cr"et\pw`
		job      = "2026-12-01_01_02_03-1234567890"
		url      = "https://ch.example.com:8443"
		jobURL   = "https://console.cloud.google.com/dataflow/jobs/us-central1/" + job + "?project=my-project"
	)
	base := []string{"canary.sh", "--project", "my-project", "--region", "us-central1", "--job-id", job,
		"--topic", "events", "--clickhouse-url", url + "/", "--clickhouse-user", "ingest",
		"--database", "analytics", "--table", "events"}

	// run runs canary.sh with the fakes; it returns the output, the exit status, and the arguments
	// of each gcloud and curl call.
	type calls struct{ gcloud, curl, configs [][]string }
	run := func(t *testing.T, rows, dead, state string, args ...string) (string, int, calls) {
		t.Helper()
		log := t.TempDir()
		env := []string{"PATH=" + bin + string(os.PathListSeparator) + os.Getenv("PATH"), "FAKE_LOG=" + log,
			"FAKE_ROWS=" + rows, "FAKE_DEAD=" + dead, "FAKE_JOB_STATE=" + state, "CLICKHOUSE_PASSWORD=" + password}
		out, err := command(t, ".", env, bash, append(append([]string{}, base...), args...)...)
		status := 0
		if err != nil {
			var exit *exec.ExitError
			if !errors.As(err, &exit) {
				t.Fatalf("canary.sh: %v\n%s", err, out)
			}
			status = exit.ExitCode()
		}
		if strings.Contains(out, "s3cr") {
			t.Errorf("the output shows the password:\n%s", out)
		}
		var c calls
		entries, err := os.ReadDir(log)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			data, err := os.ReadFile(filepath.Join(log, e.Name()))
			if err != nil {
				t.Fatal(err)
			}
			fields := strings.Split(strings.TrimSuffix(string(data), "\x00"), "\x00")
			switch {
			case strings.HasPrefix(e.Name(), "gcloud."):
				c.gcloud = append(c.gcloud, fields)
			case strings.HasPrefix(e.Name(), "curl."):
				c.curl = append(c.curl, fields)
			case strings.HasPrefix(e.Name(), "config."):
				c.configs = append(c.configs, []string{string(data)})
				continue
			default:
				continue
			}
			if strings.Contains(string(data), "s3cr") {
				t.Errorf("the password is in the arguments of %s: %q", e.Name(), fields)
			}
		}
		return out, status, c
	}
	// ids returns the run tag and the first and last id that canary.sh printed.
	ids := func(t *testing.T, out string) (tag string, first, last uint64) {
		t.Helper()
		m := regexp.MustCompile(`(?m)^Run tag: +(canary-(\d{8}T\d{6}Z)-(\d{5}))\nIds: +(\d+) to (\d+) `).FindStringSubmatch(out)
		if m == nil {
			t.Fatalf("no run tag and ids in the output:\n%s", out)
		}
		first, _ = strconv.ParseUint(m[4], 10, 64)
		last, _ = strconv.ParseUint(m[5], 10, 64)
		return m[1], first, last
	}
	// byCommand splits gcloud calls by their first three arguments.
	byCommand := func(c calls) map[string][][]string {
		m := map[string][][]string{}
		for _, args := range c.gcloud {
			if len(args) >= 3 {
				k := strings.Join(args[:3], " ")
				m[k] = append(m[k], args[3:])
			}
		}
		return m
	}
	// queries returns the --data-binary arguments of the curl calls, checking the other arguments.
	queries := func(t *testing.T, c calls) (rows, dead []string) {
		t.Helper()
		for _, args := range c.curl {
			if len(args) != 8 || strings.Join(args[:4], " ") != "-sS --max-time 30 -K" || args[5] != "--data-binary" || args[7] != url+"/" {
				t.Errorf("curl arguments: %q", args)
				continue
			}
			if strings.Contains(args[6], "raw_message") {
				dead = append(dead, args[6])
			} else {
				rows = append(rows, args[6])
			}
		}
		for _, cfg := range c.configs {
			if want := `user = "ingest:s3cr\"et\\pw"` + "\n"; cfg[0] != want {
				t.Errorf("curl's -K config is %q, want %q", cfg[0], want)
			}
		}
		if len(c.configs) != len(c.curl) {
			t.Errorf("%d curl calls, %d with a -K config", len(c.curl), len(c.configs))
		}
		return rows, dead
	}
	wantPublished := func(t *testing.T, c calls, messages []string) {
		t.Helper()
		publish := byCommand(c)["pubsub topics publish"]
		got := map[string]int{}
		for _, args := range publish {
			if len(args) != 5 || strings.Join(args[:4], " ") != "projects/my-project/topics/events --project my-project --message" {
				t.Errorf("publish arguments: %q", args)
				continue
			}
			got[args[4]]++
		}
		for _, m := range messages {
			if got[m] != 1 {
				t.Errorf("message %s published %d times, want once", m, got[m])
			}
		}
		if len(publish) != len(messages) {
			t.Errorf("%d publish calls, want %d: %q", len(publish), len(messages), publish)
		}
	}

	t.Run("all land", func(t *testing.T) {
		// The second count has 5 rows but only 4 distinct ids: the wait goes on.
		out, status, c := run(t, "0\t0;5\t4;6\t5", "0", "JOB_STATE_RUNNING",
			"--dead-letter-table", "events_dead_letter", "--messages", "5", "--extra-json", ` {"name": "canary"} `,
			"--drain", "--poll-seconds", "1", "--timeout", "60")
		if status != 0 {
			t.Fatalf("canary.sh exited with %d, want 0:\n%s", status, out)
		}
		tag, first, last := ids(t, out)
		// The ids come from the tag: its time in Unix seconds * 10^9 + its random number * 10^4.
		m := regexp.MustCompile(`^canary-(.*)-(\d{5})$`).FindStringSubmatch(tag)
		at, err := time.Parse("20060102T150405Z", m[1])
		if err != nil {
			t.Fatal(err)
		}
		r, _ := strconv.ParseUint(m[2], 10, 64)
		if want := uint64(at.Unix())*1e9 + r*1e4; first != want || last != first+4 {
			t.Errorf("ids %d to %d for run %s, want %d to %d", first, last, tag, want, want+4)
		}
		if first > math.MaxInt64 {
			t.Errorf("first id %d does not fit Int64", first)
		}

		var messages []string
		for i := uint64(0); i < 5; i++ {
			messages = append(messages, fmt.Sprintf(`{"id":%d,"name": "canary"}`, first+i))
		}
		wantPublished(t, c, messages)
		for _, msg := range messages {
			var v map[string]any
			if err := json.Unmarshal([]byte(msg), &v); err != nil {
				t.Errorf("message %s is not JSON: %v", msg, err)
			}
		}

		rows, dead := queries(t, c)
		wantRows := fmt.Sprintf("SELECT count(), uniqExact(`id`) FROM `analytics`.`events` WHERE `id` BETWEEN %d AND %d FORMAT TabSeparated", first, last)
		if len(rows) != 3 {
			t.Errorf("%d row counts, want 3 (the check before publishing and two polls): %q", len(rows), rows)
		}
		for _, q := range rows {
			if q != wantRows {
				t.Errorf("row count query\n%s\nwant\n%s", q, wantRows)
			}
		}
		if len(dead) != 3 {
			t.Errorf("%d dead-letter counts, want 3: %q", len(dead), dead)
		}
		for _, q := range dead {
			for _, want := range []string{
				"SELECT uniqExact(visitParamExtractUInt(raw_message, 'id')) FROM `analytics`.`events_dead_letter` WHERE failed_at >= toDateTime(",
				fmt.Sprintf("AND visitParamExtractUInt(raw_message, 'id') BETWEEN %d AND %d FORMAT TabSeparated", first, last),
			} {
				if !strings.Contains(q, want) {
					t.Errorf("dead-letter count query\n%s\ndoes not hold\n%s", q, want)
				}
			}
		}

		cmds := byCommand(c)
		wantDescribe := []string{job, "--region=us-central1", "--project=my-project", "--format=value(currentState)"}
		if d := cmds["dataflow jobs describe"]; len(d) != 1 || !slices.Equal(d[0], wantDescribe) {
			t.Errorf("describe calls %q, want one with %q", d, wantDescribe)
		}
		wantDrain := []string{job, "--region=us-central1", "--project=my-project"}
		if d := cmds["dataflow jobs drain"]; len(d) != 1 || !slices.Equal(d[0], wantDrain) {
			t.Errorf("drain calls %q, want one: gcloud dataflow jobs drain %s", d, strings.Join(wantDrain, " "))
		}
		for _, want := range []string{
			"Summary: published 5, rows 6, distinct rows 5, duplicates 1, dead letters 0, missing 0\n",
			"OK: every message is a row or a dead letter (run " + tag + ").",
		} {
			if !strings.Contains(out, want) {
				t.Errorf("the output does not hold %q:\n%s", want, out)
			}
		}
	})

	t.Run("missing", func(t *testing.T) {
		start := time.Now()
		// 3 rows (2 distinct) and 1 dead letter for 4 messages: one is missing.
		out, status, c := run(t, "0\t0;3\t2", "0;1", "JOB_STATE_RUNNING",
			"--dead-letter-table", "events_dead_letter", "--messages", "4", "--id-column", "user_id",
			"--id-base", "1000", "--tag-field", "canary_run", "--timeout", "2", "--poll-seconds", "1")
		if status != 1 {
			t.Fatalf("canary.sh exited with %d, want 1:\n%s", status, out)
		}
		if d := time.Since(start); d > 30*time.Second {
			t.Errorf("canary.sh took %v with --timeout 2", d)
		}
		tag, first, last := ids(t, out)
		if first != 1000 || last != 1003 {
			t.Errorf("ids %d to %d, want 1000 to 1003 (--id-base 1000)", first, last)
		}
		var messages []string
		for i := 1000; i < 1004; i++ {
			messages = append(messages, fmt.Sprintf(`{"user_id":%d,"canary_run":"%s"}`, i, tag))
		}
		wantPublished(t, c, messages)
		rows, dead := queries(t, c)
		wantRows := "SELECT count(), uniqExact(`user_id`) FROM `analytics`.`events` WHERE `user_id` BETWEEN 1000 AND 1003 FORMAT TabSeparated"
		if len(rows) < 2 || rows[0] != wantRows {
			t.Errorf("row count queries %q, want several of\n%s", rows, wantRows)
		}
		if len(dead) < 2 || !strings.HasSuffix(dead[0],
			"AND visitParamExtractUInt(raw_message, 'user_id') BETWEEN 1000 AND 1003 AND position(raw_message, '"+tag+"') > 0 FORMAT TabSeparated") {
			t.Errorf("dead-letter count queries %q do not match the tag %s", dead, tag)
		}
		if d := byCommand(c)["dataflow jobs drain"]; len(d) != 0 {
			t.Errorf("drain without --drain: %q", d)
		}
		for _, want := range []string{
			"Summary: published 4, rows 3, distinct rows 2, duplicates 1, dead letters 1, missing 1\n",
			"FAIL: 1 of 4 messages are missing",
			"Look at the job's logs: " + jobURL + "\n",
			"dead-letter table analytics.events_dead_letter: SELECT failed_at, error_message, raw_message FROM `analytics`.`events_dead_letter`",
		} {
			if !strings.Contains(out, want) {
				t.Errorf("the output does not hold %q:\n%s", want, out)
			}
		}
	})

	t.Run("refusals", func(t *testing.T) {
		// A finished job and ids already in the table stop the run before anything is published.
		out, status, c := run(t, "0\t0", "0", "JOB_STATE_FAILED", "--timeout", "1", "--poll-seconds", "1")
		if status != 1 || !strings.Contains(out, "is JOB_STATE_FAILED") || len(c.curl) != 0 || len(c.gcloud) != 1 {
			t.Errorf("a failed job: exit %d, %d curl and %d gcloud calls, want 1, 0 and 1 (describe):\n%s", status, len(c.curl), len(c.gcloud), out)
		}
		out, status, c = run(t, "3\t3", "0", "JOB_STATE_RUNNING", "--id-base", "7", "--timeout", "1", "--poll-seconds", "1")
		if status != 1 || !strings.Contains(out, "already holds 3 rows") || len(byCommand(c)["pubsub topics publish"]) != 0 {
			t.Errorf("ids already in the table: exit %d, want 1 and no publish call:\n%s", status, out)
		}
		for _, tc := range []struct {
			args []string
			want string
		}{
			{[]string{"--bogus"}, "unknown argument: --bogus"},
			{[]string{"--clickhouse-url", "clickhouse://ch:9000"}, "not the native protocol"},
			{[]string{"--clickhouse-url", "https://u:p@ch:8443"}, "must not hold a user or password"},
			// A password in a URL refused for another reason is not shown.
			{[]string{"--clickhouse-url", "https://ch:8443?password=Canary-S3cret"}, "without a path: https://ch:8443?xxxxx"},
			{[]string{"--clickhouse-url", "clickhouse://u:Canary-S3cret@ch:9000"}, "not the native protocol: clickhouse://xxxxx@ch:9000"},
			{[]string{"--clickhouse-url", "u:Canary-S3cret@ch:8443"}, "must start with http:// or https://: xxxxx@ch:8443"},
			{[]string{"--clickhouse-url", "clickhouse://u:pa/Canary-S3cret@ch:9000"}, "not the native protocol: clickhouse://xxxxx@ch:9000"},
			{[]string{"--table", "analytics.events"}, "--table must be a bare name"},
			{[]string{"--messages", "0"}, "--messages must be a number from 1 to 10000"},
			{[]string{"--extra-json", `{"id":1}`}, "--extra-json must be a JSON object without the fields id"},
			{[]string{"--extra-json", `[1]`}, "--extra-json must be a JSON object"},
		} {
			out, status, c := run(t, "0\t0", "0", "JOB_STATE_RUNNING", tc.args...)
			if status != 2 || !strings.Contains(out, tc.want) || len(c.curl)+len(c.gcloud) != 0 {
				t.Errorf("%q: exit %d, %d calls, want 2, none, and %q:\n%s", tc.args, status, len(c.curl)+len(c.gcloud), tc.want, out)
			}
			if strings.Contains(out, "Canary-S3cret") {
				t.Errorf("%q: the output shows the password:\n%s", tc.args, out)
			}
		}
	})

	t.Run("dry run and help", func(t *testing.T) {
		out, status, c := run(t, "0\t0", "0", "JOB_STATE_RUNNING", "--messages", "3", "--id-base", "50", "--drain", "--dry-run")
		if status != 0 || len(c.curl)+len(c.gcloud) != 0 {
			t.Fatalf("--dry-run: exit %d, %d calls, want 0 and none:\n%s", status, len(c.curl)+len(c.gcloud), out)
		}
		for _, want := range []string{
			"+ gcloud dataflow jobs describe " + job + " --region=us-central1 --project=my-project '--format=value(currentState)'\n",
			"--data-binary 'SELECT count(), uniqExact(`id`) FROM `analytics`.`events` WHERE `id` BETWEEN 50 AND 52 FORMAT TabSeparated' " + url + "/\n",
			"+ gcloud pubsub topics publish projects/my-project/topics/events --project my-project --message '{\"id\":50}'\n",
			"+ gcloud pubsub topics publish projects/my-project/topics/events --project my-project --message '{\"id\":52}'\n",
			"+ gcloud dataflow jobs drain " + job + " --region=us-central1 --project=my-project\n",
		} {
			if !strings.Contains(out, want) {
				t.Errorf("--dry-run does not print %q:\n%s", want, out)
			}
		}
		if strings.Contains(out, "raw_message") {
			t.Errorf("--dry-run without --dead-letter-table counts dead letters:\n%s", out)
		}
		out, err := command(t, ".", nil, bash, "canary.sh", "--help")
		if err != nil || !strings.HasPrefix(out, "Usage: flex-template/canary.sh") {
			t.Errorf("canary.sh --help: %v\n%s", err, out)
		}
	})
}

// TestMakeClickHouseModern runs make clickhouse-modern with a port and a directory of its own, as
// a second user of the machine would, then the stop command it prints: the command names the
// directory (the pid file is there), and it stops that stand-in and frees its port. The default
// make clickhouse-modern-stop would look in the default directory, and stop another's stand-in
// or nothing. Skipped without the ClickHouse 26 engine (scripts/chdb.sh install), but in CI.
func TestMakeClickHouseModern(t *testing.T) {
	if _, err := exec.Command("../scripts/chdb.sh", "path").Output(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("the ClickHouse 26 engine is not installed: %v", err)
		}
		t.Skip("the ClickHouse 26 engine is not installed (scripts/chdb.sh install)")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	dir := filepath.Join(t.TempDir(), "a dir")
	pidfile := filepath.Join(dir, "server.pid")
	env := append(os.Environ(), "CHMODERN_DIR="+dir)
	t.Cleanup(func() {
		if _, err := os.Stat(pidfile); err == nil {
			cmd := exec.Command("make", "-s", "-C", "..", "clickhouse-modern-stop")
			cmd.Env = env
			cmd.Run()
		}
	})
	cmd := exec.Command("make", "-s", "-C", "..", "clickhouse-modern")
	cmd.Env = append(env, "CHMODERN_PORT="+strconv.Itoa(port))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("make clickhouse-modern: %v\n%s", err, out)
	}
	want := fmt.Sprintf("answers on http://127.0.0.1:%d (tables in %s/data; stop it with CHMODERN_DIR=%s make clickhouse-modern-stop)",
		port, dir, strings.ReplaceAll(dir, " ", `\ `))
	if !strings.Contains(string(out), want) {
		t.Fatalf("make clickhouse-modern printed\n%s\nwant a line with\n%s", out, want)
	}
	b, err := os.ReadFile(pidfile)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatalf("the pid file holds %q", b)
	}
	// The printed command, as a shell runs it from the repository's root.
	stop := exec.Command("bash", "-c", want[strings.Index(want, "CHMODERN_DIR="):len(want)-1])
	stop.Dir = ".."
	if out, err := stop.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", stop.Args[2], err, out)
	}
	if err := syscall.Kill(pid, 0); err == nil {
		t.Errorf("the stand-in's process %d still runs after %s", pid, stop.Args[2])
	}
	if _, err := os.Stat(pidfile); !os.IsNotExist(err) {
		t.Errorf("the pid file is still there (%v)", err)
	}
	if l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port)); err != nil {
		t.Errorf("the port is still taken: %v", err)
	} else {
		l.Close()
	}
}

// TestStopStalePidFile runs the stop targets of the servers that scripts/ start in the background
// (make clickhouse-stop, clickhouse-modern-stop, emulator-stop) on a pid file whose process has
// ended and whose id is now another process's, here a sleep of the test's own, as after a reboot
// or a kill -9: they leave that process alone and remove the pid file; and the emulator's status
// does not take that process for the emulator (make emulator would say "already running" and start
// nothing).
func TestStopStalePidFile(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("no make")
	}
	for _, tc := range []struct{ target, dirVar, pidFile string }{
		{"clickhouse-stop", "CLICKHOUSE_DIR", "server.pid"},
		{"clickhouse-modern-stop", "CHMODERN_DIR", "server.pid"},
		{"emulator-stop", "EMULATOR_DIR", "emulator-8085.pid"},
	} {
		t.Run(tc.target, func(t *testing.T) {
			other := exec.Command("sleep", "60")
			if err := other.Start(); err != nil {
				t.Fatal(err)
			}
			ended := make(chan error, 1)
			go func() { ended <- other.Wait() }()
			t.Cleanup(func() { other.Process.Kill(); <-ended })
			dir := filepath.Join(t.TempDir(), "a dir")
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			pidFile := filepath.Join(dir, tc.pidFile)
			if err := os.WriteFile(pidFile, []byte(strconv.Itoa(other.Process.Pid)+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			env := []string{tc.dirVar + "=" + dir, "PUBSUB_EMULATOR_PORT=8085"}
			if tc.target == "emulator-stop" {
				if out, err := command(t, "..", env, "scripts/emulator.sh", "status"); err == nil {
					t.Errorf("scripts/emulator.sh status takes process %d (a sleep) for the emulator\n%s", other.Process.Pid, out)
				}
			}
			out, err := command(t, "..", env, "make", "-s", tc.target)
			if err != nil {
				t.Fatalf("make %s: %v\n%s", tc.target, err, out)
			}
			select {
			case err := <-ended:
				ended <- err
				t.Errorf("make %s stopped process %d, a sleep whose id the pid file held (%v)\n%s", tc.target, other.Process.Pid, err, out)
			case <-time.After(500 * time.Millisecond):
			}
			if _, err := os.Stat(pidFile); !os.IsNotExist(err) {
				t.Errorf("the pid file is still there (%v)\n%s", err, out)
			}
		})
	}
}

// TestClickHouseStartPortTaken runs scripts/clickhouse.sh start with an HTTP port that another
// process holds: the server exits at once, and the script says so within seconds (it waited the
// whole 60 s for an answer before), names the ports, and leaves no pid file of a process that has
// ended.
func TestClickHouseStartPortTaken(t *testing.T) {
	if _, err := exec.LookPath("clickhouse-server"); err != nil {
		if _, err := os.Stat("/usr/sbin/clickhouse-server"); err != nil {
			t.Skip("no clickhouse-server binary (PATH, /usr/sbin)")
		}
	}
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	free, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	tcpPort := free.Addr().(*net.TCPAddr).Port
	free.Close()
	httpPort := taken.Addr().(*net.TCPAddr).Port
	// The server listens on ::1 as well, and gives up only when no address is left to it.
	if taken6, err := net.Listen("tcp", fmt.Sprintf("[::1]:%d", httpPort)); err == nil {
		defer taken6.Close()
	}
	dir := filepath.Join(t.TempDir(), "a dir")
	env := []string{"CLICKHOUSE_DIR=" + dir, fmt.Sprintf("CLICKHOUSE_TCP_PORT=%d", tcpPort), fmt.Sprintf("CLICKHOUSE_HTTP_PORT=%d", httpPort)}
	t.Cleanup(func() { command(t, "..", env, "scripts/clickhouse.sh", "stop") })
	start := time.Now()
	out, err := command(t, "..", env, "scripts/clickhouse.sh", "start")
	took := time.Since(start)
	if err == nil {
		t.Fatalf("scripts/clickhouse.sh start succeeded with its HTTP port %d taken\n%s", httpPort, out)
	}
	if took > 30*time.Second {
		t.Errorf("scripts/clickhouse.sh start took %v to give up on a server that had exited", took.Round(time.Second))
	}
	if want := fmt.Sprintf("CLICKHOUSE_HTTP_PORT=%d", httpPort); !strings.Contains(out, want) {
		t.Errorf("scripts/clickhouse.sh start does not name the ports (%s)\n%s", want, out)
	}
	if _, err := os.Stat(filepath.Join(dir, "server.pid")); !os.IsNotExist(err) {
		t.Errorf("the pid file of the server that exited is still there (%v)", err)
	}
}

// TestRelativeServerDir starts ClickHouse (scripts/clickhouse.sh) and the Pub/Sub emulator
// (scripts/emulator.sh) with a relative CLICKHOUSE_DIR and EMULATOR_DIR from a directory of the
// test's own, then stops them from there: the files are in that directory, and the stop finds
// them. Before, clickhouse.sh changed into the directory and then looked for it again inside
// itself, and emulator.sh put its pid file under the repository's root, so that the stop from the
// caller's directory found none and left the emulator running.
func TestRelativeServerDir(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("no make")
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	ports := make([]int, 3)
	listeners := make([]net.Listener, len(ports))
	for i := range ports {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		listeners[i] = l
		ports[i] = l.Addr().(*net.TCPAddr).Port
	}
	for _, l := range listeners {
		l.Close()
	}
	for _, tc := range []struct {
		script, pidFile string
		env             []string
	}{
		{"clickhouse.sh", "server.pid", []string{fmt.Sprintf("CLICKHOUSE_TCP_PORT=%d", ports[0]), fmt.Sprintf("CLICKHOUSE_HTTP_PORT=%d", ports[1]), "CLICKHOUSE_DIR=rel"}},
		{"emulator.sh", fmt.Sprintf("emulator-%d.pid", ports[2]), []string{fmt.Sprintf("PUBSUB_EMULATOR_PORT=%d", ports[2]), "EMULATOR_DIR=rel"}},
	} {
		t.Run(tc.script, func(t *testing.T) {
			if tc.script == "clickhouse.sh" {
				if _, err := exec.LookPath("clickhouse-server"); err != nil {
					if _, err := os.Stat("/usr/sbin/clickhouse-server"); err != nil {
						t.Skip("no clickhouse-server binary (PATH, /usr/sbin)")
					}
				}
			}
			cwd := t.TempDir()
			script := filepath.Join(root, "scripts", tc.script)
			pidFile := filepath.Join(cwd, "rel", tc.pidFile)
			t.Cleanup(func() {
				command(t, cwd, tc.env, script, "stop")
				// Where the script put it when it took the directory as the repository's.
				command(t, root, tc.env, script, "stop")
				os.RemoveAll(filepath.Join(root, "rel"))
			})
			out, err := command(t, cwd, tc.env, script, "start")
			if err != nil {
				t.Fatalf("%s start: %v\n%s", tc.script, err, out)
			}
			b, err := os.ReadFile(pidFile)
			if err != nil {
				t.Fatalf("%s start from %s with a relative directory: %v\n%s", tc.script, cwd, err, out)
			}
			pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
			if err != nil {
				t.Fatalf("the pid file holds %q", b)
			}
			if out, err := command(t, cwd, tc.env, script, "stop"); err != nil {
				t.Fatalf("%s stop: %v\n%s", tc.script, err, out)
			}
			if err := syscall.Kill(pid, 0); err == nil {
				t.Errorf("process %d still runs after %s stop from the same directory", pid, tc.script)
			}
		})
	}
}

// TestClickHouseStartWithoutClient runs scripts/clickhouse.sh start with a PATH that has every
// tool it uses but clickhouse-client, by which it tells whether a server answers: it says so at
// once and starts nothing. Before, it started a server (beside a running one of the same
// directory, whose pid it then lost), waited 60 s for an answer it could not see, and left the
// server running.
func TestClickHouseStartWithoutClient(t *testing.T) {
	bin := t.TempDir()
	for _, tool := range []string{"bash", "env", "dirname", "mkdir", "sed", "id", "seq", "sleep", "cat", "nohup", "setsid", "tail", "tr", "head", "rm", "ps", "timeout", "clickhouse-server"} {
		p, err := exec.LookPath(tool)
		if err != nil {
			continue
		}
		if err := os.Symlink(p, filepath.Join(bin, tool)); err != nil {
			t.Fatal(err)
		}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l2, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l.Close()
	l2.Close()
	dir := filepath.Join(t.TempDir(), "a dir")
	env := []string{"CLICKHOUSE_DIR=" + dir, fmt.Sprintf("CLICKHOUSE_TCP_PORT=%d", l.Addr().(*net.TCPAddr).Port),
		fmt.Sprintf("CLICKHOUSE_HTTP_PORT=%d", l2.Addr().(*net.TCPAddr).Port)}
	t.Cleanup(func() { command(t, "..", env, "scripts/clickhouse.sh", "stop") })
	start := time.Now()
	out, err := command(t, "..", append(env, "PATH="+bin), "scripts/clickhouse.sh", "start")
	if err == nil {
		t.Errorf("scripts/clickhouse.sh start without clickhouse-client succeeded\n%s", out)
	}
	if !strings.Contains(out, "clickhouse-client is not installed") {
		t.Errorf("scripts/clickhouse.sh start without clickhouse-client does not say so\n%s", out)
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("scripts/clickhouse.sh start without clickhouse-client took %v", took.Round(time.Second))
	}
	if _, err := os.Stat(filepath.Join(dir, "server.pid")); !os.IsNotExist(err) {
		t.Errorf("scripts/clickhouse.sh start without clickhouse-client started a server (%v)", err)
	}
}

// TestClickHouseStatusSilentServer runs scripts/clickhouse.sh status against a port that accepts
// connections and says nothing, as a hung or stopped server does: it answers "no" within
// seconds. Before, clickhouse-client waited its receive timeout, 300 s, and start as long at each
// of its 120 tries.
func TestClickHouseStatusSilentServer(t *testing.T) {
	if _, err := exec.LookPath("clickhouse-client"); err != nil {
		t.Skip("no clickhouse-client")
	}
	silent, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "scripts/clickhouse.sh", "status")
	cmd.Dir = ".."
	cmd.Env = append(os.Environ(), fmt.Sprintf("CLICKHOUSE_TCP_PORT=%d", silent.Addr().(*net.TCPAddr).Port))
	start := time.Now()
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("scripts/clickhouse.sh status still waited for a silent server after %v\n%s", time.Since(start).Round(time.Second), out)
	}
	if err == nil {
		t.Errorf("scripts/clickhouse.sh status took a silent port for a server\n%s", out)
	}
}

// TestBenchPrismPortTaken: the side-by-side scripts start prism with start_prism
// (scripts/bench-lib.sh), which stops the script, naming the port and PRISM_PORT, when something
// already listens on the job port. Before, prism failed to bind and the runs went to whatever held
// the port (a prism left running), whose CPU the script did not measure.
func TestBenchPrismPortTaken(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	port := taken.Addr().(*net.TCPAddr).Port
	out, err := command(t, "..", []string{"WORK=" + t.TempDir()}, "bash", "-c",
		fmt.Sprintf(`work=$WORK; source scripts/bench-lib.sh; start_prism %d; echo "started $prism"`, port))
	var exit *exec.ExitError
	if want := fmt.Sprintf("something already listens on 127.0.0.1:%d (a prism left running?): stop it, or set PRISM_PORT to a free port", port); !errors.As(err, &exit) ||
		exit.ExitCode() != 1 || !strings.Contains(out, want) || strings.Contains(out, "started") {
		t.Errorf("start_prism on a taken port: %v\n%s\nwant exit 1 and %q", err, out, want)
	}
	for _, script := range []string{"sdk-vs-runner.sh", "pipeline-vs-clickhouse.sh", "dataflow-shape.sh"} {
		b, err := os.ReadFile(filepath.Join("..", "scripts", script))
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), "bin/prism -job_port") || !strings.Contains(string(b), "start_prism ") {
			t.Errorf("scripts/%s starts prism without start_prism", script)
		}
	}
}

// TestCanaryWithoutGcloud: without gcloud on PATH, canary.sh says so, and that --dry-run needs
// none, before it asks or publishes anything (exit 1). Before, it ran gcloud all the same and
// said "could not read the state of job ... (is --job-id right, in --region and --project?)".
func TestCanaryWithoutGcloud(t *testing.T) {
	// PATH as it is, but a directory holding gcloud is replaced by one of links to all else in it.
	var path []string
	for _, dir := range filepath.SplitList(os.Getenv("PATH")) {
		if _, err := os.Stat(filepath.Join(dir, "gcloud")); err != nil {
			path = append(path, dir)
			continue
		}
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		links := t.TempDir()
		for _, e := range entries {
			if e.Name() != "gcloud" {
				if err := os.Symlink(filepath.Join(dir, e.Name()), filepath.Join(links, e.Name())); err != nil {
					t.Fatal(err)
				}
			}
		}
		path = append(path, links)
	}
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Fatal(err)
	}
	out, err := command(t, ".", []string{"CLICKHOUSE_PASSWORD=x", "PATH=" + strings.Join(path, string(os.PathListSeparator))}, bash, "canary.sh", "--project", "my-project", "--region", "us-central1",
		"--job-id", "2026-12-01_01_02_03-1234567890", "--topic", "events", "--clickhouse-url", "http://127.0.0.1:1", "--database", "d", "--table", "t")
	var exit *exec.ExitError
	if want := "canary.sh: gcloud is not on PATH: canary.sh reads the job's state and publishes with the Google Cloud CLI"; !errors.As(err, &exit) ||
		exit.ExitCode() != 1 || !strings.Contains(out, want) || strings.Contains(out, "could not read the state") {
		t.Errorf("canary.sh without gcloud: %v\n%s\nwant exit 1 and %q", err, out, want)
	}
}
