package main

// What a local run logs while it runs: a progress line every few seconds, and of the runner's
// own lines only its warnings and errors.

import (
	"context"
	"log/slog"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ch-beam/pubsub-to-clickhouse/transforms/psclient"
)

// quietEvery is how often an unchanged progress line is logged again.
const quietEvery = time.Minute

// startProgress logs the progress of the run's source on subscription (psclient.Progress) every
// interval while it changes, and once every quietEvery while it does not, from the moment the
// source has started; the returned function stops it, logging the progress a last time when it
// changed since the last line (the run's last acknowledgements, which the run can end before the
// next interval), and may be called more than once.
func startProgress(subscription string, every time.Duration) (stop func()) {
	done, finished := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(every)
		defer t.Stop()
		var last psclient.Progress
		var lastAt time.Time
		for {
			final := false
			select {
			case <-done:
				final = true
			case <-t.C:
			}
			if a, ok := psclient.LookupAcker(subscription); ok { // else the source has not started yet
				p := a.Progress()
				same := p.Read == last.Read && p.Inserted == last.Inserted && p.DeadLettered == last.DeadLettered && p.Dropped == last.Dropped && p.Unacked == last.Unacked
				if !same || !final && (lastAt.IsZero() || time.Since(lastAt) >= quietEvery) {
					slog.Info("progress: " + p.String())
					last, lastAt = p, time.Now()
				}
			}
			if final {
				return
			}
		}
	}()
	return sync.OnceFunc(func() {
		close(done)
		<-finished
	})
}

// beamPackages is the prefix of the Beam SDK's functions, prism's included.
const beamPackages = "github.com/apache/beam/"

// quietRunner, once set (a local run), makes runnerFilter drop the Beam SDK's and prism's
// records below WARN.
var quietRunner atomic.Bool

// runnerFilter is a slog.Handler that, when quietRunner is set, drops the records below WARN that
// the Beam SDK or prism logs (the runner's start-up, job and worker lines: "Serving
// JobManagement", "Job[job-001] state: RUNNING", "[SDK] ..."), found by the function that logged
// them; the pipeline's own records, and every warning and error, pass. It sets sameNameReturned
// when the Dataflow runner says that it returns another job of the same name.
type runnerFilter struct{ slog.Handler }

func (h runnerFilter) Enabled(ctx context.Context, l slog.Level) bool {
	return h.Handler.Enabled(ctx, l)
}

func (h runnerFilter) Handle(ctx context.Context, r slog.Record) error {
	if strings.HasPrefix(r.Message, sameNameLine) && fromBeam(r.PC) {
		sameNameReturned.Store(true)
	}
	if r.Level < slog.LevelWarn && quietRunner.Load() && fromBeam(r.PC) {
		return nil
	}
	return h.Handler.Handle(ctx, r)
}

func (h runnerFilter) WithAttrs(attrs []slog.Attr) slog.Handler {
	return runnerFilter{h.Handler.WithAttrs(attrs)}
}

func (h runnerFilter) WithGroup(name string) slog.Handler {
	return runnerFilter{h.Handler.WithGroup(name)}
}

// fromBeam reports whether the function at pc is the Beam SDK's (its log package, prism).
func fromBeam(pc uintptr) bool {
	if pc == 0 {
		return false
	}
	f, _ := runtime.CallersFrames([]uintptr{pc}).Next()
	return strings.HasPrefix(f.Function, beamPackages)
}
