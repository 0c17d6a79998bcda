package gcptest

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"cloud.google.com/go/storage"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/runners/dataflow/dataflowlib"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/util/gcsx"
	"github.com/fsouza/fake-gcs-server/fakestorage"
	df "google.golang.org/api/dataflow/v1b3"
)

// TestGCS writes and reads objects through the Beam SDK's gcsx helpers, as the Dataflow runner
// stages its files: STORAGE_EMULATOR_HOST is all the storage client needs.
func TestGCS(t *testing.T) {
	g := StartGCS(t, "staging-bucket")
	t.Setenv("STORAGE_EMULATOR_HOST", g.Host())
	ctx := context.Background()
	client, err := gcsx.NewClient(ctx, storage.ScopeReadWrite)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	// Larger than the storage writer's chunk (16 MiB), so the upload is resumable in parts.
	big := bytes.Repeat([]byte("0123456789abcdef"), 17<<20/16)
	if _, err := gcsx.Upload(ctx, client, "p", "staging-bucket", "staging/go-1/worker", bytes.NewReader(big)); err != nil {
		t.Fatalf("upload: %v", err)
	}
	// gcsx.Upload means to create a missing bucket, but it compares the error of the bucket's
	// Attrs with == while the storage client wraps ErrBucketNotExist: a missing bucket fails the
	// upload, on GCS as here. So the launch test creates its buckets first.
	if _, err := gcsx.Upload(ctx, client, "p", "other-bucket", "a/b", bytes.NewReader([]byte("x"))); !errors.Is(err, storage.ErrBucketNotExist) {
		t.Errorf("upload to a missing bucket: %v, want storage.ErrBucketNotExist", err)
	}
	g.Server.CreateBucketWithOpts(fakestorage.CreateBucketOpts{Name: "other-bucket"})
	if _, err := gcsx.Upload(ctx, client, "p", "other-bucket", "a/b", bytes.NewReader([]byte("x"))); err != nil {
		t.Fatalf("upload: %v", err)
	}
	if got := g.Objects(t, "staging-bucket", "staging/"); len(got) != 1 || got[0] != "staging/go-1/worker" {
		t.Errorf("objects %q, want [staging/go-1/worker]", got)
	}
	if got := g.ReadURL(t, "gs://staging-bucket/staging/go-1/worker"); !bytes.Equal(got, big) {
		t.Errorf("read %d bytes, want the %d written", len(got), len(big))
	}
	if got := string(g.Read(t, "other-bucket", "a/b")); got != "x" {
		t.Errorf("read %q, want x", got)
	}
	if _, ok := g.Lookup("staging-bucket", "nope"); ok {
		t.Error("a missing object is found")
	}
}

// TestDataflow submits, gets and lists a job with the Beam SDK's Dataflow client, which
// authenticates with google.DefaultClient and the key file of ServiceAccount.
func TestDataflow(t *testing.T) {
	d := StartDataflow(t)
	a := StartServiceAccount(t, t.TempDir())
	t.Setenv("GOOGLE_APPLICATION_CREDENTIALS", a.File)
	ctx := context.Background()
	client, err := dataflowlib.NewClient(ctx, d.Endpoint())
	if err != nil {
		t.Fatal(err)
	}
	job, err := dataflowlib.Submit(ctx, client, "p", "us-central1", &df.Job{Name: "j", Type: "JOB_TYPE_STREAMING"}, false)
	if err != nil {
		t.Fatalf("submit: %v", err)
	}
	if job.Id == "" {
		t.Fatal("the created job has no id")
	}
	got, err := client.Projects.Locations.Jobs.Get("p", "us-central1", job.Id).Do()
	if err != nil {
		t.Fatalf("get: %v", err)
	}
	if got.CurrentState != "JOB_STATE_RUNNING" || got.Type != "JOB_TYPE_STREAMING" || got.Name != "j" {
		t.Errorf("get: state %s type %s name %s", got.CurrentState, got.Type, got.Name)
	}
	running, err := dataflowlib.GetRunningJobByName(client, "p", "us-central1", "j")
	if err != nil || running.Id != job.Id {
		t.Errorf("list: %v, %v", running, err)
	}
	if _, err := client.Projects.Locations.Jobs.Get("p", "us-central1", "nope").Do(); err == nil {
		t.Error("get of a missing job succeeded")
	}
	if jobs := d.Jobs(); len(jobs) != 1 || jobs[0].Id != job.Id {
		t.Errorf("Jobs() = %v", jobs)
	}
	if tokens := d.Tokens(); len(tokens) != 1 || tokens[0] != Token {
		t.Errorf("bearer tokens %q, want [%s]", tokens, Token)
	}
	grants := a.Grants()
	if len(grants) == 0 {
		t.Fatal("the token endpoint got no request")
	}
	for _, g := range grants {
		if g.Err != "" {
			t.Errorf("grant refused: %s", g.Err)
		}
	}
	if scope, _ := grants[0].Claims["scope"].(string); scope != df.CloudPlatformScope {
		t.Errorf("the assertion's scope is %q, want %s", scope, df.CloudPlatformScope)
	}
}
