package flowtest

import (
	"context"
	"fmt"
	"math"
	"os"
	"sync"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/metrics"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/runtime/graphx"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/runtime/metricsx"
	jobpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/jobmanagement_v1"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/options/jobopts"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/runners/prism"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/runners/universal/extworker"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/runners/universal/runnerlib"
	"google.golang.org/grpc"
)

// RunWithMetrics runs p on prism in this process, in loopback mode, waits for it to end and
// returns its metrics, as ptest.RunWithMetrics does on prism, except that pipelines of tests that
// run at once (t.Parallel) are submitted one at a time; once submitted, they run at once.
//
// The reason is a fault of prism (Beam 2.77.0): its job server keeps the artifacts staged by every
// job in one map that it writes without a lock (jobservices.Server.ReverseArtifactRetrievalService),
// so two jobs staged at the same moment can end the whole test binary with "fatal error:
// concurrent map writes", as it did in CI. Beam 2.78.0 puts a lock around that map; until the
// module is upgraded, the job is prepared, staged and submitted here, under submitting, with
// runnerlib's own steps (the steps of runnerlib.Execute, which does all of them in one call).
// Its errors are those of those steps, and of the job as runnerlib.WaitForCompletion reports it.
// It always runs on prism, whatever --runner, --endpoint or --environment_type say.
func RunWithMetrics(p *beam.Pipeline) (beam.PipelineResult, error) {
	ctx := context.Background()
	client, err := jobServer(ctx)
	if err != nil {
		return nil, fmt.Errorf("starting prism's job server: %w", err)
	}
	edges, _, err := p.Build()
	if err != nil {
		return nil, err
	}
	loopback, err := extworker.StartLoopback(ctx, 0)
	if err != nil {
		return nil, err
	}
	defer loopback.Stop(ctx)
	env, err := graphx.CreateEnvironment(ctx, graphx.URNEnvExternal, loopback.EnvironmentConfig)
	if err != nil {
		return nil, err
	}
	model, err := graphx.Marshal(edges, &graphx.Options{Environment: env, PipelineResourceHints: jobopts.GetPipelineResourceHints()})
	if err != nil {
		return nil, err
	}
	jobID, err := submit(ctx, client, model)
	if err != nil {
		return nil, err
	}
	err = runnerlib.WaitForCompletion(ctx, client, jobID)
	// As runnerlib's own connection takes it: the metrics of a large job can exceed gRPC's 4 MiB.
	got, merr := client.GetJobMetrics(ctx, &jobpb.GetJobMetricsRequest{JobId: jobID}, grpc.MaxCallRecvMsgSize(math.MaxInt32))
	if merr != nil {
		if err == nil {
			err = fmt.Errorf("reading the metrics of job %s: %w", jobID, merr)
		}
		return nil, err
	}
	return result{jobID, metricsx.FromMonitoringInfos(model, got.GetMetrics().GetAttempted(), got.GetMetrics().GetCommitted())}, err
}

var (
	// submitting is held while a job is prepared, staged and submitted (RunWithMetrics).
	submitting sync.Mutex
	// staged, when not nil (tests), is called by submit once a job is staged, while it holds
	// submitting.
	staged func()

	serverOnce sync.Once
	server     jobpb.JobServiceClient
	serverErr  error
)

// jobServer returns the client of the process's one prism job server, started at the first call.
func jobServer(ctx context.Context) (jobpb.JobServiceClient, error) {
	serverOnce.Do(func() { server, serverErr = prism.CreateJobServer(ctx, prism.Options{}) })
	return server, serverErr
}

// submit prepares, stages and submits the job of model, one job at a time, and returns its id.
// The worker binary staged is an empty file, as runnerlib.Execute stages in loopback mode, where
// the workers are this process; the file is removed once staged.
func submit(ctx context.Context, client jobpb.JobServiceClient, model *pipepb.Pipeline) (string, error) {
	submitting.Lock()
	defer submitting.Unlock()
	f, err := os.CreateTemp("", "beamloopbackworker-*")
	if err != nil {
		return "", err
	}
	f.Close()
	defer os.Remove(f.Name())
	if err := runnerlib.UpdateGoEnvironmentWorker(f.Name(), model); err != nil {
		return "", err
	}
	opt := &runnerlib.JobOptions{
		Name:        jobopts.GetJobName(),
		Experiments: jobopts.GetExperiments(),
		Parallelism: *jobopts.Parallelism,
		Loopback:    true,
	}
	id, artifacts, staging, err := runnerlib.Prepare(ctx, client, model, opt)
	if err != nil {
		return "", err
	}
	token, err := runnerlib.Stage(ctx, id, artifacts, f.Name(), staging)
	if err != nil {
		return "", err
	}
	if staged != nil {
		staged()
	}
	return runnerlib.Submit(ctx, client, id, token)
}

// result is the beam.PipelineResult of RunWithMetrics.
type result struct {
	jobID   string
	metrics *metrics.Results
}

func (r result) Metrics() metrics.Results { return *r.metrics }
func (r result) JobID() string            { return r.jobID }
