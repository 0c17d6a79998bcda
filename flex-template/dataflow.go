package main

import (
	"context"
	"debug/elf"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"time"

	"cloud.google.com/go/storage"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/runners/dataflow/dataflowlib"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/util/gcsx"
	df "google.golang.org/api/dataflow/v1b3"
	"google.golang.org/api/option"
	"google.golang.org/api/transport"
)

// AtLeastOnce is the Dataflow service option (or experiment) of at-least-once streaming mode, as
// the console's streaming-mode choice and gcloud pass it
// (https://cloud.google.com/dataflow/docs/guides/streaming-modes).
const AtLeastOnce = "streaming_mode_at_least_once"

// armSeries are the prefixes of Compute Engine's Arm (arm64) machine types: T2A (Ampere Altra),
// C4A and N4A (Google Axion), A4X (NVIDIA Grace)
// (https://cloud.google.com/compute/docs/instances/arm-on-compute).
var armSeries = []string{"t2a-", "c4a-", "n4a-", "a4x-"}

// checkMachineType refuses an Arm machine type for the workers: the staged worker binary is this
// binary, built for linux/amd64, which an arm64 worker cannot run (the job would start workers
// that never process anything).
func checkMachineType() error {
	for _, name := range []string{"worker_machine_type", "machine_type"} {
		mt := stringFlag(name)
		for _, s := range armSeries {
			if strings.HasPrefix(strings.ToLower(mt), s) {
				return fmt.Errorf("--%s=%s: an Arm (arm64) machine type, but the workers run this binary, built for linux/amd64 (x86), "+
					"which an Arm worker cannot run: choose an x86 machine type (e.g. n2-standard-4, c4-standard-4, e2-standard-4) or leave it unset", name, mt)
			}
		}
	}
	return nil
}

// workerBuild is the command that builds a binary Dataflow's workers can run, as the Dockerfile
// builds it.
const workerBuild = "CGO_ENABLED=0 GOOS=linux GOARCH=amd64 go build -trimpath -o bin/linux-amd64/pubsub-to-clickhouse ./flex-template"

// checkWorkerBinary refuses a worker binary (path, the --worker_binary given, or this binary when
// given is false) that is not a linux/amd64 ELF executable: the Dataflow runner stages it as the
// workers' program, and a worker cannot start a binary built for macOS or arm64 (a launch from a
// laptop, docs/deploy.md), so the job would start workers that never process anything. The
// Flex Template image's binary is built for linux/amd64 by the Dockerfile.
func checkWorkerBinary(path string, given bool) error {
	which := "this binary (" + path + "), which the launch stages as the workers' program,"
	fix := "build one for the workers with " + workerBuild + " and give it as --worker_binary=bin/linux-amd64/pubsub-to-clickhouse " +
		"(this binary still runs the launch)"
	if given {
		which = "--worker_binary=" + path
		fix = "build it with " + workerBuild
	}
	f, err := elf.Open(path)
	if err != nil {
		if _, serr := os.Stat(path); serr != nil {
			return fmt.Errorf("%s: %v", which, serr)
		}
		return fmt.Errorf("%s is not a Linux (ELF) program (%v), and Dataflow's workers run linux/amd64: %s", which, err, fix)
	}
	defer f.Close()
	if f.Class == elf.ELFCLASS64 && f.Machine == elf.EM_X86_64 {
		return nil
	}
	arch := map[elf.Machine]string{elf.EM_AARCH64: "arm64", elf.EM_386: "386", elf.EM_ARM: "arm", elf.EM_RISCV: "riscv64",
		elf.EM_PPC64: "ppc64", elf.EM_S390: "s390x"}[f.Machine]
	if arch == "" {
		arch = f.Machine.String()
	}
	return fmt.Errorf("%s is built for linux/%s, but Dataflow's workers run linux/amd64 (x86): %s", which, arch, fix)
}

// checkLocations refuses a --staging_location, --temp_location or --template_location that is not
// a Cloud Storage path, gs://<bucket>[/<path>]: the Beam runner panics on the first two
// (gcsx.ParseObject) after the start-up checks, and the workers could not read them; it refuses
// the third after staging the worker binary, naming the staging location. It also refuses a path
// that the runner, which reads each location as a URL (gcsx.ParseObject), would not read as it is
// written: a "%" that starts no escape (the runner panics), an escape such as %20 (it would
// stage to the decoded name), "#" or "?" (it would drop them and what follows).
func checkLocations() error {
	for _, name := range []string{"staging_location", "temp_location", "template_location"} {
		v := stringFlag(name)
		if v == "" {
			continue
		}
		bucket, _, _ := strings.Cut(strings.TrimPrefix(v, "gs://"), "/")
		if !strings.HasPrefix(v, "gs://") || bucket == "" {
			return fmt.Errorf("--%s=%s: not a Cloud Storage path: a Dataflow job stages its files in Cloud Storage, "+
				"so give gs://<bucket>/<path>, e.g. gs://my-bucket/staging", name, v)
		}
		read := "an error"
		if bucket, object, err := gcsx.ParseObject(v); err != nil {
			read = err.Error()
		} else if read = gcsx.MakeObject(bucket, object); strings.TrimSuffix(read, "/") == strings.TrimSuffix(v, "/") {
			continue
		}
		return fmt.Errorf("--%s=%s: the Beam runner reads a location as a URL, which gives %s, not this path: "+
			"give a path without %%, # and ?", name, v, read)
	}
	return nil
}

// oneActiveJob says what to do about the active job of the launch's --job_name, which every
// launch that meets one says in its error.
const oneActiveJob = "Dataflow runs one active job of a name: give --update to replace it (docs/deploy.md), another --job_name, or drain it first"

// missingBucket returns err, the Dataflow runner's, naming the locations it writes to when err
// says that a bucket does not exist: the runner returns the storage client's error as it is
// (gcsx.Upload, which with this client no longer creates a missing bucket), "storage: bucket
// doesn't exist: googleapi: Error 404", which names neither the bucket nor the flag.
func missingBucket(err error, l launch) error {
	if !errors.Is(err, storage.ErrBucketNotExist) {
		return err
	}
	where, which := "--staging_location="+stringFlag("staging_location"), "the bucket does not exist"
	if l.template != "" {
		where, which = where+" or --template_location="+l.template, "a bucket of theirs does not exist"
	}
	return fmt.Errorf("%s: %s (the runner stages the worker binary and the model there, and writes the job of a "+
		"template launch to --template_location): check the bucket's name, or create it (gcloud storage buckets create gs://BUCKET "+
		"--project=%s --location=%s) and grant the job's service account roles/storage.objectAdmin on it (docs/deploy.md) (%w)",
		where, which, l.project, l.region, err)
}

// checkRequired refuses a Dataflow launch (a dry run too) without a project, a region or a staging
// location, which the Beam runner requires (getJobOptions): it would refuse them only after the
// start-up checks, with exit status 1. The project and the region may also come from where the
// SDK looks for them (launchFromFlags): Application Default Credentials that name a project,
// CLOUDSDK_COMPUTE_REGION or gcloud's compute/region.
func checkRequired(l launch) error {
	var missing []string
	if l.project == "" {
		missing = append(missing, "--project=<project>")
	}
	if l.region == "" {
		missing = append(missing, "--region=<region> (e.g. us-central1)")
	}
	if stringFlag("staging_location") == "" {
		missing = append(missing, "--staging_location=gs://<bucket>/<path>")
	}
	if len(missing) == 0 {
		return nil
	}
	return fmt.Errorf("a Dataflow launch needs %s; nothing was started", strings.Join(missing, ", "))
}

// needsCredentials tells whether the Dataflow launch l calls a Google API that needs Application
// Default Credentials: not a dry run (which writes nothing), nor a Flex Template launch that only
// writes the job to a Cloud Storage emulator (STORAGE_EMULATOR_HOST, whose client sends none)
// without --update (which looks the running job up in the Dataflow API).
func needsCredentials(l launch) bool {
	emulated := l.template != "" && os.Getenv("STORAGE_EMULATOR_HOST") != "" && stringFlag("update") != "true"
	return l.dataflow && !l.dryRun && !emulated
}

// checkCredentials refuses a Dataflow launch that writes to Cloud Storage (not a dry run) when
// no Application Default Credentials are found: the runner stages the worker binary and the
// model with them, and would fail only after the start-up checks, with the client library's
// "credentials: could not find default credentials", which says not how to get some.
func checkCredentials(ctx context.Context) error {
	if _, err := transport.Creds(ctx, option.WithScopes(storage.ScopeReadWrite)); err != nil {
		return fmt.Errorf("no usable Google Cloud credentials to stage the job with: the Dataflow runner writes the worker binary and the job to "+
			"--staging_location with Application Default Credentials: run gcloud auth application-default login, or set "+
			"GOOGLE_APPLICATION_CREDENTIALS to a service account's key file (%w)", err)
	}
	return nil
}

// streamingMode returns the streaming mode the job asks for: "at-least-once" when the service
// options or the experiments hold streaming_mode_at_least_once, else "exactly-once" (Dataflow's
// default).
func streamingMode() string {
	for _, name := range []string{"dataflow_service_options", "experiments"} {
		if slices.Contains(strings.Split(stringFlag(name), ","), AtLeastOnce) {
			return "at-least-once"
		}
	}
	return "exactly-once"
}

// checkUpdateFlags refuses, before anything is read or staged, the update flags that cannot work
// together: --update without --job_name (the running job is found by its name), and
// --transform_name_mapping without --update (the Beam runner refuses it after the start-up
// checks: the mapping is only for an update).
func checkUpdateFlags() error {
	update := stringFlag("update") == "true"
	if update && stringFlag("job_name") == "" {
		return fmt.Errorf("--update replaces the running job of the same name, but no --job_name is given: " +
			"give the running job's name (gcloud dataflow jobs list --status=active)")
	}
	if m := stringFlag("transform_name_mapping"); !update && m != "" && m != "{}" {
		return fmt.Errorf("--transform_name_mapping is given without --update: the mapping renames the steps of a running job " +
			"that the launch replaces, so give --update and the job's --job_name too, or leave the mapping out")
	}
	return nil
}

// update is a launch that replaces a running job (--update): the running job of the same name,
// found before the launch; "" fields when the launch is not an update.
type update struct {
	jobName string // --job_name
	jobID   string // the running job's id
}

// findRunningJob looks up, for a Dataflow launch with --update, the running job that the new one
// replaces: the active job named --job_name in the project and region, through the Dataflow API
// (--dataflow_endpoint when set), before anything is staged. The Go SDK's runner does this itself
// only when it submits the job, after staging; under --template_location it writes the job
// without replaceJobId (runners/dataflow/dataflowlib, Execute and Submit), so the launch would
// collide with the running job's name (markReplacement). It returns a zero update when --update
// is not set.
//
// A direct launch without --update and with a --job_name that a running job has is refused: the
// service would refuse the job (409), and the Go SDK's runner, asynchronous here, then returns the
// running job as if it had just been submitted (dataflowlib.Execute). When the jobs cannot be
// listed, that launch goes on with a warning.
func findRunningJob(ctx context.Context, l launch) (update, error) {
	name := stringFlag("job_name")
	if stringFlag("update") != "true" {
		if l.submits() && name != "" {
			return update{}, noRunningJob(ctx, l, name)
		}
		return update{}, nil
	}
	if l.dryRun {
		slog.Info("dry run: the running job that --update replaces is not looked up; the launch looks it up", "job_name", name)
		return update{jobName: name}, nil
	}
	if !l.dataflow {
		return update{jobName: name}, nil
	}
	client, err := dataflowlib.NewClient(ctx, stringFlag("dataflow_endpoint"))
	if err != nil {
		return update{}, fmt.Errorf("--update: the Dataflow API client: %w", err)
	}
	job, err := dataflowlib.GetRunningJobByName(client, l.project, l.region, name)
	if err != nil {
		return update{}, fmt.Errorf("--update: finding the running job named %q in projects/%s/locations/%s: %v; "+
			"the job's service account needs the permission dataflow.jobs.list (roles/dataflow.viewer) to replace a job. "+
			"Or replace it by hand: drain it (gcloud dataflow jobs drain JOB_ID --region=%s), wait until it is drained, "+
			"and launch the new job without --update", name, l.project, l.region, err, l.region)
	}
	return update{jobName: name, jobID: job.Id}, nil
}

// noRunningJob returns an error when a running job of the project and region is named name
// (see findRunningJob); nil when none is (dataflowlib's "Unable to find running job"), or, with
// a warning, when the jobs cannot be listed (a permission, the network, the credentials).
func noRunningJob(ctx context.Context, l launch, name string) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	client, err := dataflowlib.NewClient(ctx, stringFlag("dataflow_endpoint"))
	if err == nil {
		var job *df.Job
		job, err = dataflowlib.GetRunningJobByName(client, l.project, l.region, name)
		switch {
		case err == nil:
			return fmt.Errorf("--job_name=%s: a job of that name is already running in projects/%s/locations/%s (id %s), and "+oneActiveJob+
				" (gcloud dataflow jobs drain %s --region=%s --project=%s)", name, l.project, l.region, job.Id, job.Id, l.region, l.project)
		case strings.HasPrefix(err.Error(), "Unable to find running job"):
			return nil // dataflowlib.GetRunningJobByName's answer when none of that name runs
		}
	}
	slog.Warn("cannot tell whether a job of the same name is already running (listing the jobs needs dataflow.jobs.list); "+
		"if one is, the service refuses this one and the launch fails", "job_name", name, "error", err)
	return nil
}

// markReplacement writes replaceJobId into the job that the runner wrote to the template
// location, as the Java and Python SDKs do for a template launched with --update, so that the
// service replaces the running job instead of refusing a second job of the same name. Every other
// field of the job keeps its value.
func markReplacement(ctx context.Context, templateURL string, u update) error {
	bucket, object, err := gcsx.ParseObject(templateURL)
	if err != nil {
		return fmt.Errorf("--template_location %q: %w", templateURL, err)
	}
	// JSON reads, as the other readers of Cloud Storage here (transforms/secret, transforms/udf).
	client, err := storage.NewClient(ctx, storage.WithJSONReads())
	if err != nil {
		return fmt.Errorf("--update: the Cloud Storage client: %w", err)
	}
	defer client.Close()
	raw, err := gcsx.ReadObject(ctx, client, bucket, object)
	if err != nil {
		return fmt.Errorf("--update: reading the job written to %s: %w", templateURL, err)
	}
	var job map[string]json.RawMessage
	if err := json.Unmarshal(raw, &job); err != nil {
		return fmt.Errorf("--update: the job written to %s is not JSON: %w", templateURL, err)
	}
	id, _ := json.Marshal(u.jobID)
	job["replaceJobId"] = id
	out, err := json.Marshal(job)
	if err != nil {
		return err
	}
	if err := gcsx.WriteObject(ctx, client, bucket, object, strings.NewReader(string(out))); err != nil {
		return fmt.Errorf("--update: writing the job back to %s: %w", templateURL, err)
	}
	slog.Info("update", "replaces", u.jobID, "job name", u.jobName, "transform name mapping", stringFlag("transform_name_mapping"))
	return nil
}
