package integration_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	df "google.golang.org/api/dataflow/v1b3"
	"google.golang.org/protobuf/proto"

	"github.com/ch-beam/pubsub-to-clickhouse/internal/chtest"
	"github.com/ch-beam/pubsub-to-clickhouse/internal/gcptest"
	"github.com/ch-beam/pubsub-to-clickhouse/internal/leak"
	"github.com/ch-beam/pubsub-to-clickhouse/internal/pubsubtest"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/deadletter"
)

// The launch test's fixed names.
const (
	launchBucket    = "staging-bucket"
	launchProject   = "p"
	launchRegion    = "us-central1"
	launchUser      = "launcher"
	launchPassword  = "Launch-pw-5e7c1a9d" // distinctive: it must never be printed
	launchSecret    = "projects/p/secrets/launch-password/versions/latest"
	deniedSecret    = "projects/p/secrets/launch-password/versions/1"
	workerAccount   = "worker@p.iam.gserviceaccount.com"
	launchKMSKey    = "projects/p/locations/l/keyRings/r/cryptoKeys/k"
	launchJobName   = "events-ingest"
	pubsubReadURN   = "beam:transform:pubsub_read:v1"
	artifactURLType = "beam:artifact:type:url:v1"
	goWorkerRole    = "beam:artifact:role:go_worker_binary:v1"
)

// TestLaunch launches the binary for Dataflow, offline: the Flex Template launcher's way (the job
// is written to --template_location) and a user's way (the job is submitted), with stand-ins of
// Cloud Storage, the Dataflow jobs API and the OAuth token endpoint (internal/gcptest), and the
// real start-up checks against ClickHouse and the Pub/Sub emulator. Each launch must end by
// itself within seconds with status 0, leave the job, the worker binary and the model where
// Dataflow reads them, and never print the ClickHouse password.
//
// The password is kept in Secret Manager (a stand-in, internal/gcptest): the launcher reads it
// for its start-up checks, and neither the job, nor the model, nor any staged file holds it, as
// text or in base64, while they hold the secret version's name, which the workers read. A launch
// with the password as text works, with a warning, and its job holds the password (base64, in
// the serialized DoFns): what the warning is about. A secret the launcher may not read stops the
// launch with a sentence that names it and the permission.
func TestLaunch(t *testing.T) {
	bin, binSum := launchBinary(t)

	// ClickHouse: a server of the test's own, whose user "launcher" has a password, so that the
	// launch checks the table with a real, non-empty password.
	ch := startClickHouseWithUser(t, launchUser, launchPassword)
	ch.CreateTable(t, `CREATE TABLE {table} (id UInt32, name String) ENGINE = MergeTree ORDER BY id`, "events")
	ch.MustExec(t, deadletter.CreateTable(ch.Database, "dead_letters"))

	// Pub/Sub: the emulator, found by the binary through PUBSUB_EMULATOR_HOST.
	ps := pubsubtest.Start(t)
	topic := ps.Topic(t, "launch-events")
	sub := ps.Subscription(t, topic, "launch-sub", 10*time.Second)

	account := gcptest.StartServiceAccount(t, t.TempDir())

	// Secret Manager: the password's secret version, and one the launcher may not read.
	sm := gcptest.StartSecretManager(t)
	sm.Add(launchSecret, []byte(launchPassword+"\n"))
	sm.Deny(deniedSecret)

	params := []string{
		"--inputSubscription=" + sub,
		"--clickHouseUrl=" + ch.URL,
		"--clickHouseDatabase=" + ch.Database,
		"--clickHouseTable=events",
		"--clickHouseUsername=" + launchUser,
		"--clickHouseDeadLetterTable=dead_letters",
	}
	const templateObject = "templates/job_object"
	templateURL := "gs://" + launchBucket + "/" + templateObject
	flexArgs := []string{
		"--template_location=" + templateURL,
		"--project=" + launchProject, "--region=" + launchRegion,
		"--staging_location=gs://" + launchBucket + "/staging",
		"--temp_location=gs://" + launchBucket + "/tmp",
	}
	otherSDKs := []string{
		"--serviceAccount=" + workerAccount,
		"--stagingLocation=gs://" + launchBucket + "/staging2",
		"--tempLocation=gs://" + launchBucket + "/tmp2",
		"--streaming=true", "--enable_streaming_engine=true",
		"--experiments=abc", "--additional_experiments=def",
		"--kms_key=" + launchKMSKey,
	}

	for _, tc := range []struct {
		name string
		args []string
		env  []string
		// template is where the job is written; "" for a launch that submits the job.
		template string
		staging  string // the staging location's object prefix
		temp     string // the temp location
		// otherSDKs: the job carries what the Java/Python-style flags say.
		otherSDKs bool
		// password is clickHousePassword: launchSecret when "".
		password string
		// fails is what the output says when the launch must fail; "" for a launch that succeeds.
		fails string
		// usage: the launch fails as a usage error (exit 2), before the Secret Manager's password
		// is read.
		usage bool
		// udf: a JavaScript UDF in Cloud Storage, which the launcher reads and checks.
		udf bool
		// running: the Dataflow stand-in has a running job named launchJobName before the launch.
		running bool
		// denyList: the Dataflow stand-in refuses to list jobs (no dataflow.jobs.list).
		denyList bool
		// runningLater: the Dataflow stand-in has a running job named launchJobName once it has
		// answered the launch's look-up, as if another launch had submitted it meanwhile.
		runningLater bool
		// staged: the launch fails after staging its files.
		staged bool
		// check checks more of the job (the one written or submitted), given the output and the
		// id of the running job.
		check func(t *testing.T, job *df.Job, out string, dataflow *gcptest.Dataflow, runningID string)
	}{
		{
			name:     "flex launcher, --runner=dataflow, a JavaScript UDF",
			args:     append([]string{"--runner=dataflow"}, flexArgs...),
			template: templateURL, staging: "staging/", temp: "gs://" + launchBucket + "/tmp", udf: true,
		},
		{
			name:     "flex launcher, FLEX_TEMPLATE_GO_BINARY without --runner",
			args:     slices.Clone(flexArgs),
			env:      []string{"FLEX_TEMPLATE_GO_BINARY=" + bin},
			template: templateURL, staging: "staging/", temp: "gs://" + launchBucket + "/tmp",
		},
		{
			name: "direct launch",
			args: []string{"--runner=dataflow", "--project=" + launchProject, "--region=" + launchRegion,
				"--staging_location=gs://" + launchBucket + "/staging"},
			staging: "staging/", temp: "gs://" + launchBucket + "/staging/tmp",
		},
		{
			// A flag of local runs, which Dataflow's own source ignores: the launch goes on, and says so.
			name: "direct launch, stopAfterIdle",
			args: []string{"--runner=dataflow", "--project=" + launchProject, "--region=" + launchRegion,
				"--staging_location=gs://" + launchBucket + "/staging", "--stopAfterIdle=30"},
			staging: "staging/", temp: "gs://" + launchBucket + "/staging/tmp",
			check: func(t *testing.T, _ *df.Job, out string, _ *gcptest.Dataflow, _ string) {
				if !strings.Contains(out, "stopAfterIdle has no effect on Dataflow") {
					t.Errorf("a Dataflow launch with --stopAfterIdle does not say that it has no effect; output:\n%s", out)
				}
			},
		},
		{
			// The flags of case "flex launcher" in the forms the Java and Python SDKs' launchers
			// use, and flags that only those SDKs have.
			name: "flex launcher, other SDKs' flags",
			args: []string{"--runner=dataflow", "--template_location=" + templateURL,
				"--project=" + launchProject, "--region=" + launchRegion},
			template: templateURL, staging: "staging2/", temp: "gs://" + launchBucket + "/tmp2", otherSDKs: true,
		},
		{
			name:    "direct launch, other SDKs' flags",
			args:    []string{"--runner=dataflow", "--project=" + launchProject, "--region=" + launchRegion},
			staging: "staging2/", temp: "gs://" + launchBucket + "/tmp2", otherSDKs: true,
		},
		{
			name:     "flex launcher, the password as text",
			args:     append([]string{"--runner=dataflow"}, flexArgs...),
			template: templateURL, staging: "staging/", temp: "gs://" + launchBucket + "/tmp",
			password: launchPassword,
		},
		{
			// The launch options in the forms the launcher and gcloud may pass them: labels as
			// k=v,k2=v2 and as JSON, repeated; service options repeated, the console's
			// at-least-once choice among them.
			name:     "flex launcher, labels, service options, at-least-once",
			args:     append(append([]string{"--runner=dataflow"}, flexArgs...), launchFlags...),
			template: templateURL, staging: "staging/", temp: "gs://" + launchBucket + "/tmp",
			check: checkLaunchFlags,
		},
		{
			name: "direct launch, labels, service options, at-least-once",
			args: append([]string{"--runner=dataflow", "--project=" + launchProject, "--region=" + launchRegion,
				"--staging_location=gs://" + launchBucket + "/staging"}, launchFlags...),
			staging: "staging/", temp: "gs://" + launchBucket + "/staging/tmp",
			check: checkLaunchFlags,
		},
		{
			// An update under the Flex launcher: the binary finds the running job by name and
			// writes its id into the job, with the transform name mapping, in both forms.
			name: "flex launcher, --update",
			args: append(append([]string{"--runner=dataflow"}, flexArgs...), "--update", "--jobName="+launchJobName,
				"--transformNameMappings=OldParse=Parse", `--transform_name_mapping={"OldBatch":"Batch"}`),
			template: templateURL, staging: "staging/", temp: "gs://" + launchBucket + "/tmp", running: true,
			check: checkUpdate,
		},
		{
			// A direct update: the SDK's runner finds the running job and sends replaceJobId.
			name: "direct launch, --update",
			args: []string{"--runner=dataflow", "--project=" + launchProject, "--region=" + launchRegion,
				"--staging_location=gs://" + launchBucket + "/staging", "--update", "--job_name=" + launchJobName,
				"--transform_name_mapping=OldParse=Parse,OldBatch=Batch"},
			staging: "staging/", temp: "gs://" + launchBucket + "/staging/tmp", running: true,
			check: checkUpdate,
		},
		{
			name:     "flex launcher, --update without a running job",
			args:     append(append([]string{"--runner=dataflow"}, flexArgs...), "--update", "--job_name="+launchJobName),
			template: templateURL,
			fails: `pubsub-to-clickhouse: --update: finding the running job named "` + launchJobName + `" in projects/p/locations/us-central1: ` +
				"Unable to find running job with name " + launchJobName + "; the job's service account needs the permission dataflow.jobs.list",
		},
		{
			// The look-up comes before staging for a direct launch too (the runner's own comes after).
			name: "direct launch, --update without a running job",
			args: []string{"--runner=dataflow", "--project=" + launchProject, "--region=" + launchRegion,
				"--staging_location=gs://" + launchBucket + "/staging", "--update", "--job_name=" + launchJobName},
			fails: `pubsub-to-clickhouse: --update: finding the running job named "` + launchJobName + `" in projects/p/locations/us-central1: ` +
				"Unable to find running job with name " + launchJobName + "; the job's service account needs the permission dataflow.jobs.list",
		},
		{
			// The job's service account may not list jobs: the look-up says which permission.
			name:     "flex launcher, --update without dataflow.jobs.list",
			args:     append(append([]string{"--runner=dataflow"}, flexArgs...), "--update", "--job_name="+launchJobName),
			template: templateURL, running: true, denyList: true,
			fails: "Permission 'dataflow.jobs.list' denied on project p; the job's service account needs the permission dataflow.jobs.list " +
				"(roles/dataflow.viewer) to replace a job. Or replace it by hand: drain it (gcloud dataflow jobs drain JOB_ID --region=us-central1)",
		},
		{
			// Without --update, a running job of the same name: the service would refuse the
			// job, and the runner would return the running one as if submitted.
			name: "direct launch, a job of the same name running",
			args: []string{"--runner=dataflow", "--project=" + launchProject, "--region=" + launchRegion,
				"--staging_location=gs://" + launchBucket + "/staging", "--job_name=" + launchJobName},
			running: true,
			fails:   "pubsub-to-clickhouse: --job_name=" + launchJobName + ": a job of that name is already running in projects/p/locations/us-central1 (id ",
		},
		{
			// A job of the same name submitted by another launch while this one stages: the
			// service refuses this job, and the runner returns the other one as if submitted.
			name: "direct launch, a job of the same name submitted meanwhile",
			args: []string{"--runner=dataflow", "--project=" + launchProject, "--region=" + launchRegion,
				"--staging_location=gs://" + launchBucket + "/staging", "--job_name=" + launchJobName},
			runningLater: true, staged: true,
			fails: "pubsub-to-clickhouse: --job_name=" + launchJobName + ": nothing was submitted: while this launch staged its files, " +
				"a job of that name became active in projects/p/locations/us-central1 (id ",
		},
		{
			// The same, where the look-up cannot list the jobs: it warns and goes on, and the
			// service refuses the job; the runner's own look-up then fails on the permission.
			name: "direct launch, a job of the same name running, dataflow.jobs.list denied",
			args: []string{"--runner=dataflow", "--project=" + launchProject, "--region=" + launchRegion,
				"--staging_location=gs://" + launchBucket + "/staging", "--job_name=" + launchJobName},
			running: true, denyList: true, staged: true,
			fails: "pubsub-to-clickhouse: --job_name=" + launchJobName + ": nothing was submitted: a job of that name is active in projects/p/locations/us-central1",
		},
		{
			name: "direct launch, --update without --job_name",
			args: []string{"--runner=dataflow", "--project=" + launchProject, "--region=" + launchRegion,
				"--staging_location=gs://" + launchBucket + "/staging", "--update"},
			running: true, usage: true,
			fails: "pubsub-to-clickhouse: --update replaces the running job of the same name, but no --job_name is given",
		},
		{
			name:     "flex launcher, a transform name mapping without --update",
			args:     append(append([]string{"--runner=dataflow"}, flexArgs...), "--transformNameMappings=OldParse=Parse"),
			template: templateURL, usage: true,
			fails: "pubsub-to-clickhouse: --transform_name_mapping is given without --update",
		},
		{
			name: "flex launcher, a template location not in Cloud Storage",
			args: []string{"--runner=dataflow", "--template_location=/tmp/job.json", "--project=" + launchProject, "--region=" + launchRegion,
				"--staging_location=gs://" + launchBucket + "/staging"},
			template: "/tmp/job.json", usage: true,
			fails: "pubsub-to-clickhouse: --template_location=/tmp/job.json: not a Cloud Storage path",
		},
		{
			name:     "flex launcher, an Arm machine type",
			args:     append(append([]string{"--runner=dataflow"}, flexArgs...), "--workerMachineType=t2a-standard-4"),
			template: templateURL,
			fails: "pubsub-to-clickhouse: --worker_machine_type=t2a-standard-4: an Arm (arm64) machine type, but the workers run this binary, " +
				"built for linux/amd64 (x86), which an Arm worker cannot run",
		},
		{
			name: "direct launch, an Arm machine type",
			args: []string{"--runner=dataflow", "--project=" + launchProject, "--region=" + launchRegion,
				"--staging_location=gs://" + launchBucket + "/staging", "--machine_type=c4a-standard-8"},
			fails: "pubsub-to-clickhouse: --machine_type=c4a-standard-8: an Arm (arm64) machine type",
		},
		{
			// The runner would panic on it after the start-up checks.
			name: "direct launch, a staging location not in Cloud Storage",
			args: []string{"--runner=dataflow", "--project=" + launchProject, "--region=" + launchRegion,
				"--staging_location=/tmp/staging"},
			fails: "pubsub-to-clickhouse: --staging_location=/tmp/staging: not a Cloud Storage path: a Dataflow job stages its files in Cloud Storage, " +
				"so give gs://<bucket>/<path>",
		},
		{
			// The runner reads the location as a URL: it would panic on "%of" after the checks.
			name: "direct launch, a staging location with a % that starts no escape",
			args: []string{"--runner=dataflow", "--project=" + launchProject, "--region=" + launchRegion,
				"--staging_location=gs://" + launchBucket + "/50%off"},
			usage: true,
			fails: "pubsub-to-clickhouse: --staging_location=gs://" + launchBucket + "/50%off: the Beam runner reads a location as a URL",
		},
		{
			// ... and would stage to gs://staging-bucket/staging, dropping "#2".
			name:     "flex launcher, a staging location with #",
			args:     append(append([]string{"--runner=dataflow"}, flexArgs...), "--staging_location=gs://"+launchBucket+"/staging#2"),
			template: templateURL, usage: true,
			fails: "pubsub-to-clickhouse: --staging_location=gs://" + launchBucket + "/staging#2: the Beam runner reads a location as a URL, " +
				"which gives gs://" + launchBucket + "/staging, not this path",
		},
		{
			// The runner's own error names neither the bucket nor the flag.
			name: "direct launch, a staging bucket that does not exist",
			args: []string{"--runner=dataflow", "--project=" + launchProject, "--region=" + launchRegion,
				"--staging_location=gs://no-such-bucket/staging"},
			fails: "pubsub-to-clickhouse: --staging_location=gs://no-such-bucket/staging: the bucket does not exist",
		},
		{
			name:     "flex launcher, a label the service would refuse",
			args:     append(append([]string{"--runner=dataflow"}, flexArgs...), "--labels=Team=data"),
			template: templateURL,
			fails:    `pubsub-to-clickhouse: --labels: the key "Team" is not a label key: a key is 1 to 63 lowercase letters, digits, _ and -, starting with a letter`,
		},
		{
			name:     "flex launcher, a secret version the job may not read",
			args:     append([]string{"--runner=dataflow"}, flexArgs...),
			template: templateURL, password: deniedSecret,
			fails: "pubsub-to-clickhouse: clickHousePassword: cannot read the Secret Manager secret version " + deniedSecret +
				": the permission secretmanager.versions.access is denied (or the secret does not exist); " +
				"the caller (on Dataflow, the job's service account) needs the permission secretmanager.versions.access on it: " +
				"grant it roles/secretmanager.secretAccessor on the secret",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gcs := gcptest.StartGCS(t, launchBucket)
			dataflow := gcptest.StartDataflow(t)
			var runningID string
			if tc.running {
				runningID = dataflow.AddRunning(launchProject, launchRegion, launchJobName)
			}
			if tc.denyList {
				dataflow.DenyList()
			}
			if tc.runningLater {
				runningID = dataflow.AddRunningAfterList(launchProject, launchRegion, launchJobName)
			}
			password := tc.password
			if password == "" {
				password = launchSecret
			}
			args := append(slices.Clone(tc.args), params...)
			args = append(args, "--clickHousePassword="+password)
			if tc.otherSDKs {
				args = append(args, otherSDKs...)
			}
			if tc.udf {
				gcs.Write(launchBucket, "udfs/transform.js", []byte("function transform(payload, message) { return payload || null; }"))
				args = append(args, "--javascriptTextTransformGcsPath=gs://"+launchBucket+"/udfs/transform.js", "--javascriptTextTransformFunctionName=transform")
			}
			// The endpoint in the template cases too, so that a job submitted by mistake is seen
			// here (and stays on this machine) instead of failing on the network.
			args = append(args, "--dataflow_endpoint="+dataflow.Endpoint())
			env := append([]string{gcs.Env(), sm.Env(), "GOOGLE_APPLICATION_CREDENTIALS=" + account.File}, tc.env...)
			grantsBefore := len(account.Grants())
			accessesBefore := len(sm.Accesses())

			start := time.Now()
			out, err := runLaunch(t, bin, env, args)
			elapsed := time.Since(start)
			t.Logf("the launch ended after %v: %v", elapsed.Round(time.Millisecond), err)
			if tc.fails != "" {
				if err == nil || !strings.Contains(out, tc.fails) {
					t.Errorf("the launch: %v, want it to fail saying %q; output:\n%s", err, tc.fails, out)
				}
				if objects := gcs.Objects(t, launchBucket, ""); (len(objects) != 0 && !tc.staged) || len(dataflow.Jobs()) != 0 {
					t.Errorf("a failed launch staged %q and submitted %d jobs", objects, len(dataflow.Jobs()))
				}
				if tc.runningLater && !strings.Contains(out, "(id "+runningID+", another launch's") {
					t.Errorf("the launch does not name the other launch's job %s; output:\n%s", runningID, out)
				}
				if tc.usage && (err == nil || err.Error() != "exit status 2" || len(sm.Accesses()) != accessesBefore) {
					t.Errorf("a usage error: %v, and %d reads of Secret Manager, want exit status 2 and none", err, len(sm.Accesses())-accessesBefore)
				}
				return
			}
			// The emulator stands in for Pub/Sub here, as one left over from a local run would.
			if !strings.Contains(out, "PUBSUB_EMULATOR_HOST is set: the start-up checks look for the subscription and topic in the emulator") {
				t.Errorf("the launch with PUBSUB_EMULATOR_HOST set does not warn about it; output:\n%s", out)
			}
			if err != nil {
				t.Errorf("the launch failed: %v", err)
			} else if elapsed > time.Minute {
				t.Errorf("the launch took %v, want seconds", elapsed.Round(time.Second))
			}
			warned := strings.Contains(out, "a password is given as text")
			if fromSecret := password == launchSecret; fromSecret {
				if warned {
					t.Error("the launch warns about a password as text, but the password is in Secret Manager")
				}
				if got := sm.Accesses()[accessesBefore:]; !slices.Equal(got, []string{launchSecret}) {
					t.Errorf("the launcher read the secret versions %q, want %s once", got, launchSecret)
				}
			} else if !warned {
				t.Error("the launch with the password as text does not warn about it")
			}
			if want := `msg="javascript UDF checked" path=gs://` + launchBucket + `/udfs/transform.js function=transform "global functions"=transform "on an empty payload it"="dropped it"`; tc.udf && !strings.Contains(out, want) {
				t.Errorf("the output lacks %s", want)
			}

			var job *df.Job
			var jobJSON []byte
			if tc.template != "" {
				job, jobJSON = checkTemplate(t, gcs, tc.template, dataflow)
				checkPrinted(t, out, "where the job was written", tc.template, "Template staged to")
			} else {
				job, jobJSON = checkSubmitted(t, dataflow, account, grantsBefore)
				if job != nil {
					checkPrinted(t, out, "the job's id", job.Id, "Submitted job:")
				}
				if _, ok := gcs.Lookup(launchBucket, templateObject); ok {
					t.Error("a direct launch wrote a template")
				}
			}
			if job != nil {
				checkGraph(t, gcs, jobJSON, bin, password)
				checkStaged(t, gcs, job, tc.staging, bin, binSum, sub)
				if got := job.Environment.TempStoragePrefix; got != tc.temp {
					t.Errorf("the job's temp location is %q, want %q", got, tc.temp)
				}
				if tc.otherSDKs {
					checkOtherSDKs(t, job)
				}
				if tc.check != nil {
					tc.check(t, job, out, dataflow, runningID)
				}
			}
			if t.Failed() {
				t.Logf("Cloud Storage holds %q", gcs.Objects(t, launchBucket, ""))
				t.Logf("the Dataflow stand-in received %+v", dataflow.Requests())
				t.Logf("output:\n%s", out)
			}
		})
	}
}

// The binary of the tests that run it, built once (launchBinary) and removed by TestMain.
var (
	binaryOnce sync.Once
	binaryDir  string
	binaryPath string
	binarySum  string
	binaryErr  error
)

// launchBinary builds ./flex-template as the Dockerfile does (static, -trimpath), once for all the
// tests of the package, and returns its path and SHA-256.
func launchBinary(t *testing.T) (path, sum string) {
	t.Helper()
	binaryOnce.Do(func() {
		root, err := filepath.Abs("..")
		if err != nil {
			binaryErr = err
			return
		}
		if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
			binaryErr = fmt.Errorf("the module root: %w", err)
			return
		}
		if binaryDir, err = os.MkdirTemp("", "pubsub-to-clickhouse-bin-"); err != nil {
			binaryErr = err
			return
		}
		binaryPath = filepath.Join(binaryDir, "pubsub-to-clickhouse")
		start := time.Now()
		cmd := exec.Command("go", "build", "-trimpath", "-o", binaryPath, "./flex-template")
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			binaryErr = fmt.Errorf("go build -trimpath -o %s ./flex-template: %v\n%s", binaryPath, err, out)
			return
		}
		t.Logf("built the binary in %v", time.Since(start).Round(time.Millisecond))
		b, err := os.ReadFile(binaryPath)
		if err != nil {
			binaryErr = err
			return
		}
		h := sha256.Sum256(b)
		binarySum = hex.EncodeToString(h[:])
	})
	if binaryErr != nil {
		t.Fatal(binaryErr)
	}
	return binaryPath, binarySum
}

// startClickHouseWithUser starts a ClickHouse server of the test's own (chtest.StartOwn) with one
// more user, who has a password, and returns a fresh database on it whose URL is the native
// protocol's. The server is stopped when the test ends.
func startClickHouseWithUser(t *testing.T, user, password string) *chtest.Server {
	t.Helper()
	s := chtest.StartOwn(t)
	s.AddUser(t, user, password)
	return s.Server
}

// launchOnPrism runs the binary on the local runner (--runner=prism) with flags, each given as
// --name=value in the order of their names, as runLaunch does.
func launchOnPrism(t *testing.T, bin string, flags map[string]string) (string, error) {
	t.Helper()
	args := []string{"--runner=prism"}
	for _, k := range slices.Sorted(maps.Keys(flags)) {
		args = append(args, "--"+k+"="+flags[k])
	}
	return runLaunch(t, bin, nil, args)
}

// runLaunch runs the binary in a temporary directory with the test's environment (less the
// variables that would change the launch) and env, and returns its combined output. It stops
// the binary after two minutes: every launch is expected to end within seconds.
func runLaunch(t *testing.T, bin string, env, args []string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = t.TempDir()
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "FLEX_TEMPLATE_GO_BINARY", "STORAGE_EMULATOR_HOST", "GOOGLE_APPLICATION_CREDENTIALS":
			continue
		}
		cmd.Env = append(cmd.Env, kv)
	}
	cmd.Env = append(cmd.Env, env...)
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &out
	cmd.WaitDelay = 5 * time.Second
	err := cmd.Run()
	if ctx.Err() != nil {
		err = fmt.Errorf("still running after 2 minutes, stopped: %w", ctx.Err())
	}
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		err = fmt.Errorf("exit status %d", exit.ExitCode())
	}
	checkOutput(t, "the binary's output", out.Bytes())
	return out.String(), err
}

// checkTemplate checks the template object: a v1b3 job of type JOB_TYPE_STREAMING; and that no
// job was submitted.
func checkTemplate(t *testing.T, gcs *gcptest.GCS, templateURL string, dataflow *gcptest.Dataflow) (*df.Job, []byte) {
	t.Helper()
	if n := len(dataflow.Jobs()); n != 0 {
		t.Errorf("a launch with --template_location submitted %d jobs", n)
	}
	bucket, name, _ := gcptest.SplitURL(templateURL)
	raw, ok := gcs.Lookup(bucket, name)
	if !ok {
		t.Errorf("no job written to %s", templateURL)
		return nil, nil
	}
	var job df.Job
	if err := json.Unmarshal(raw, &job); err != nil {
		t.Errorf("%s is not a v1b3 job: %v\n%.2000s", templateURL, err, raw)
		return nil, nil
	}
	if job.Type != "JOB_TYPE_STREAMING" {
		t.Errorf("the job written to %s has type %q, want JOB_TYPE_STREAMING", templateURL, job.Type)
	}
	if job.ProjectId != launchProject {
		t.Errorf("the job's project is %q, want %q", job.ProjectId, launchProject)
	}
	if job.Environment == nil {
		t.Errorf("the job written to %s has no environment", templateURL)
		return nil, nil
	}
	return &job, raw
}

// checkSubmitted checks that exactly one streaming job was submitted, with the service
// account's token, and returns it.
func checkSubmitted(t *testing.T, dataflow *gcptest.Dataflow, account *gcptest.Account, grantsBefore int) (*df.Job, []byte) {
	t.Helper()
	for _, g := range account.Grants()[grantsBefore:] {
		if g.Err != "" {
			t.Errorf("the token endpoint refused a grant: %s", g.Err)
		}
	}
	if tokens := dataflow.Tokens(); !slices.Equal(tokens, []string{gcptest.Token}) {
		t.Errorf("the Dataflow stand-in saw the bearer tokens %q, want [%s]", tokens, gcptest.Token)
	}
	for _, r := range dataflow.Requests() {
		if r.Token == "" {
			t.Errorf("%s %s came without a bearer token", r.Method, r.Path)
		}
		if r.Status >= 400 {
			t.Errorf("%s %s was answered %d", r.Method, r.Path, r.Status)
		}
	}
	jobs := dataflow.Jobs()
	if len(jobs) != 1 {
		t.Errorf("the Dataflow stand-in received %d jobs, want 1", len(jobs))
		return nil, nil
	}
	job := jobs[0]
	if job.Type != "JOB_TYPE_STREAMING" {
		t.Errorf("the job has type %q, want JOB_TYPE_STREAMING", job.Type)
	}
	if job.ProjectId != launchProject || job.Location != launchRegion {
		t.Errorf("the job was created in projects/%s/locations/%s, want projects/%s/locations/%s", job.ProjectId, job.Location, launchProject, launchRegion)
	}
	if job.Environment == nil {
		t.Error("the submitted job has no environment")
		return nil, nil
	}
	return job, dataflow.RawJobs()[0]
}

// checkGraph checks where the password is in what the launch left for Dataflow: the job's JSON
// and every staged object but the worker binary (the built binary, checked by its SHA-256). With
// the password in Secret Manager, none holds it, as text or in base64, and the job names the
// secret version (its DoFns carry it to the workers). With the password as text, the job holds
// it in base64 (in the DoFns' serialized configuration), as docs/deploy.md says, and never as
// text.
func checkGraph(t *testing.T, gcs *gcptest.GCS, jobJSON []byte, bin, password string) {
	t.Helper()
	files := map[string][]byte{"the job's JSON": jobJSON}
	for _, name := range gcs.Objects(t, launchBucket, "") {
		if !strings.HasSuffix(name, "/worker") {
			files["gs://"+launchBucket+"/"+name] = gcs.Read(t, launchBucket, name)
		}
	}
	var holds []string
	names := false
	for what, b := range files {
		if bytes.Contains(b, []byte(launchPassword)) {
			t.Errorf("%s shows the ClickHouse password as text", what)
		}
		if leak.Found(b, launchPassword) {
			holds = append(holds, what)
		}
		names = names || leak.Found(b, launchSecret)
	}
	slices.Sort(holds)
	switch {
	case password == launchSecret && len(holds) > 0:
		t.Errorf("with the password in Secret Manager, %q hold the password (in base64)", holds)
	case password == launchSecret && !names:
		t.Errorf("the job does not name the secret version %s, which the workers read", launchSecret)
	case password != launchSecret && len(holds) == 0:
		t.Error("with the password as text, the job does not hold it: the check cannot find what it looks for")
	default:
		t.Logf("the job's files holding the password: %q", holds)
	}
}

// checkPrinted checks that the program says want once the job is done: in a line after the
// SDK's own line that contains sdkLine ("Template staged to", "Submitted job:"), other than the
// SDK's log lines that follow it (its console and logs URLs).
func checkPrinted(t *testing.T, out, what, want, sdkLine string) {
	t.Helper()
	lines := strings.Split(out, "\n")
	i := slices.IndexFunc(lines, func(l string) bool { return strings.Contains(l, sdkLine) })
	if i < 0 {
		t.Errorf("the output lacks the SDK's line %q", sdkLine)
		return
	}
	for _, l := range lines[i+1:] {
		if strings.Contains(l, want) && !strings.Contains(l, "https://console.cloud.google.com/logs/viewer") {
			t.Logf("printed: %s", strings.TrimSpace(l))
			return
		}
	}
	t.Errorf("the output does not say %s (%s) after the SDK's line %q", what, want, sdkLine)
}

// sdkPipelineOptions is the part of the job's environment.sdkPipelineOptions the test reads.
type sdkPipelineOptions struct {
	Options struct {
		PipelineURL       string   `json:"pipelineUrl"`
		PipelineProtoHash string   `json:"pipelineProtoHash"`
		Experiments       []string `json:"experiments"`
		TempLocation      string   `json:"tempLocation"`
	} `json:"options"`
}

// checkStaged checks the worker binary and the model under gs://staging-bucket/<staging>: the
// worker is the built binary, as the job's worker package and the model's environment say; the
// model is the job's pipeline and reads the subscription with Dataflow's Pub/Sub read.
func checkStaged(t *testing.T, gcs *gcptest.GCS, job *df.Job, staging, bin, binSum, subscription string) {
	t.Helper()
	var workers, models []string
	for _, name := range gcs.Objects(t, launchBucket, staging) {
		switch {
		case strings.HasSuffix(name, "/worker"):
			workers = append(workers, name)
		case strings.HasSuffix(name, "/model"):
			models = append(models, name)
		}
	}
	if len(workers) != 1 || len(models) != 1 {
		t.Errorf("gs://%s/%s holds the workers %q and the models %q, want one of each", launchBucket, staging, workers, models)
		return
	}
	workerURL := "gs://" + launchBucket + "/" + workers[0]
	modelURL := "gs://" + launchBucket + "/" + models[0]

	// The worker: the binary itself, byte for byte.
	worker := gcs.Read(t, launchBucket, workers[0])
	h := sha256.Sum256(worker)
	if got := hex.EncodeToString(h[:]); got != binSum {
		t.Errorf("%s has SHA-256 %s (%d bytes), want the built binary's %s", workerURL, got, len(worker), binSum)
	}
	var pkgs []*df.Package
	for _, wp := range job.Environment.WorkerPools {
		pkgs = append(pkgs, wp.Packages...)
	}
	var found bool
	for _, p := range pkgs {
		if p.Name == "worker" {
			found = true
			if p.Location != workerURL || p.Sha256 != binSum {
				t.Errorf("the job's worker package is %s sha256 %s, want %s sha256 %s", p.Location, p.Sha256, workerURL, binSum)
			}
		}
	}
	if !found {
		t.Errorf("the job has no worker package among %+v", pkgs)
	}

	// The model: the job's pipeline.
	modelBytes := gcs.Read(t, launchBucket, models[0])
	var opts sdkPipelineOptions
	if err := json.Unmarshal(job.Environment.SdkPipelineOptions, &opts); err != nil {
		t.Errorf("the job's sdkPipelineOptions: %v", err)
	}
	mh := sha256.Sum256(modelBytes)
	if opts.Options.PipelineURL != modelURL || opts.Options.PipelineProtoHash != hex.EncodeToString(mh[:]) {
		t.Errorf("the job's pipeline is %s (hash %s), want %s (hash %s)", opts.Options.PipelineURL, opts.Options.PipelineProtoHash, modelURL, hex.EncodeToString(mh[:]))
	}
	var p pipepb.Pipeline
	if err := proto.Unmarshal(modelBytes, &p); err != nil {
		t.Errorf("%s is not a Beam pipeline: %v", modelURL, err)
		return
	}
	var reads []string
	for id, tr := range p.GetComponents().GetTransforms() {
		if tr.GetSpec().GetUrn() != pubsubReadURN {
			continue
		}
		var payload pipepb.PubSubReadPayload
		if err := proto.Unmarshal(tr.GetSpec().GetPayload(), &payload); err != nil {
			t.Errorf("transform %s: its PubSubReadPayload: %v", id, err)
			continue
		}
		reads = append(reads, payload.GetSubscription())
	}
	if !slices.Equal(reads, []string{subscription}) {
		t.Errorf("the model's %s transforms read %q, want [%s]", pubsubReadURN, reads, subscription)
	}
	// The model's environment names the staged worker and its hash.
	var deps []string
	for id, env := range p.GetComponents().GetEnvironments() {
		for _, dep := range env.GetDependencies() {
			if dep.GetRoleUrn() != goWorkerRole {
				continue
			}
			var a pipepb.ArtifactUrlPayload
			if dep.GetTypeUrn() == artifactURLType {
				if err := proto.Unmarshal(dep.GetTypePayload(), &a); err != nil {
					t.Errorf("environment %s: its worker artifact: %v", id, err)
				}
			}
			deps = append(deps, fmt.Sprintf("%s %s sha256 %s", dep.GetTypeUrn(), a.GetUrl(), a.GetSha256()))
		}
	}
	if want := fmt.Sprintf("%s %s sha256 %s", artifactURLType, workerURL, binSum); !slices.Equal(deps, []string{want}) {
		t.Errorf("the model's Go worker artifacts are %q, want [%s]", deps, want)
	}
}

// checkOtherSDKs checks what the other SDKs' flags say: the workers' service account, the
// experiments, the KMS key.
func checkOtherSDKs(t *testing.T, job *df.Job) {
	t.Helper()
	env := job.Environment
	if env.ServiceAccountEmail != workerAccount {
		t.Errorf("the job's service account is %q, want %s", env.ServiceAccountEmail, workerAccount)
	}
	var opts sdkPipelineOptions
	json.Unmarshal(env.SdkPipelineOptions, &opts)
	for _, want := range []string{"abc", "def", "enable_streaming_engine"} {
		if !slices.Contains(env.Experiments, want) {
			t.Errorf("the job's experiments %q lack %s", env.Experiments, want)
		}
		if !slices.Contains(opts.Options.Experiments, want) {
			t.Errorf("the job's pipeline options' experiments %q lack %s", opts.Options.Experiments, want)
		}
	}
	if env.ServiceKmsKeyName != launchKMSKey {
		t.Errorf("the job's KMS key is %q, want %s", env.ServiceKmsKeyName, launchKMSKey)
	}
}

// launchFlags are Dataflow launch options in the forms the launcher and gcloud may pass: labels
// as k=v pairs, as JSON and in a camelCase flag; service options repeated, with the
// at-least-once streaming mode among them.
var launchFlags = []string{
	"--labels=team=data,env=prod", `--labels={"cost-center":"ingest-42"}`, "--additionalUserLabels=owner=ops",
	"--dataflow_service_options=enable_google_cloud_profiler", "--dataflow_service_options=" + "streaming_mode_at_least_once",
	"--dataflowServiceOptions=enable_google_cloud_heap_sampling",
}

// checkLaunchFlags checks that the job carries every label and every service option of
// launchFlags, and that the launch says it runs in at-least-once mode.
func checkLaunchFlags(t *testing.T, job *df.Job, out string, _ *gcptest.Dataflow, _ string) {
	t.Helper()
	wantLabels := map[string]string{"team": "data", "env": "prod", "cost-center": "ingest-42", "owner": "ops"}
	if !maps.Equal(job.Labels, wantLabels) {
		t.Errorf("the job's labels are %v, want %v", job.Labels, wantLabels)
	}
	wantOptions := []string{"enable_google_cloud_profiler", "streaming_mode_at_least_once", "enable_google_cloud_heap_sampling"}
	if got := job.Environment.ServiceOptions; !slices.Equal(got, wantOptions) {
		t.Errorf("the job's service options are %q, want %q", got, wantOptions)
	}
	if want := `msg="streaming mode" mode=at-least-once`; !strings.Contains(out, want) {
		t.Errorf("the output lacks %s", want)
	}
}

// checkUpdate checks that the job replaces the running one: it has the running job's name, names
// that job's id in replaceJobId and carries the transform name mapping; and that the Dataflow
// stand-in was asked for the active jobs (the look-up of the job to replace).
func checkUpdate(t *testing.T, job *df.Job, _ string, dataflow *gcptest.Dataflow, runningID string) {
	t.Helper()
	if runningID == "" || job.ReplaceJobId != runningID {
		t.Errorf("the job's replaceJobId is %q, want the running job's id %q", job.ReplaceJobId, runningID)
	}
	if job.Name != launchJobName {
		t.Errorf("the job's name is %q, want the running job's, %q", job.Name, launchJobName)
	}
	if want := map[string]string{"OldParse": "Parse", "OldBatch": "Batch"}; !maps.Equal(job.TransformNameMapping, want) {
		t.Errorf("the job's transformNameMapping is %v, want %v", job.TransformNameMapping, want)
	}
	listed := slices.ContainsFunc(dataflow.Requests(), func(r gcptest.Request) bool {
		return r.Method == "GET" && strings.HasSuffix(strings.Split(r.Path, "?")[0], "/jobs") && strings.Contains(r.Path, "filter=ACTIVE")
	})
	if !listed {
		t.Errorf("the launch did not list the active jobs; the stand-in received %+v", dataflow.Requests())
	}
}
