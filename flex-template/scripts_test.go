package main

import (
	"errors"
	"os/exec"
	"strings"
	"testing"
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
			"+ gcloud builds submit --project my-project --tag " + image + " .",
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

		out, err = command(t, ".", nil, bash, "run.sh", "--project", "p", "--region", "r", "--bucket", "b",
			"--dry-run", "stopAfterIdle=5")
		var exit *exec.ExitError
		if !errors.As(err, &exit) || !strings.Contains(out, "unknown template parameter: stopAfterIdle") {
			t.Errorf("run.sh accepts stopAfterIdle, which is not a template parameter: %v\n%s", err, out)
		}
	})
}
