// Package runtimeconfig sets up the Go runtime and gRPC for the pipeline's process: the launcher,
// the local run and a Dataflow worker alike (each is the binary, which calls Apply before Beam
// starts a worker's harness), and the programs that measure what a worker costs
// (integration_test/dataflowshape), so that they measure the same process.
package runtimeconfig

import (
	"log/slog"
	"os"
	"runtime/debug"

	"github.com/KimMachineGun/automemlimit/memlimit"
)

// The garbage collector's settings. gcPercent is the GC target (GOGC) unless the environment
// gives GOGC: the heap may grow to three times what is live between collections, where Go's
// default of 100 lets it grow to twice. The pipeline holds little live data (the rows of the batches being filled, bounded by
// the source's outstanding messages), so this trades a little memory for much less collection:
// docs/operations.md ("Cost per message") has the figures. A soft memory limit (GOMEMLIMIT, set
// by github.com/KimMachineGun/automemlimit) keeps the larger target from growing the heap toward
// the machine's memory: 90% of the container's cgroup limit when it has one, else half of the
// machine's memory (a Dataflow worker's SDK process shares its VM with the runner's harness).
// A GOMEMLIMIT in the environment, or AUTOMEMLIMIT=off, leaves the limit alone.
const (
	gcPercent          = 200
	cgroupMemoryRatio  = 0.9
	machineMemoryRatio = 0.5
)

// Apply makes the process's settings: the garbage collector's (above) and gRPC's buffer pool
// (Pool, buffers.go). Call it once, from an init function: gRPC's pool has to be set before
// any gRPC client or server is made.
func Apply() {
	installPool()
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(gcPercent)
	}
	_, err := memlimit.Set(
		memlimit.WithRatio(cgroupMemoryRatio),
		memlimit.WithProvider(memlimit.ApplyFallback(memlimit.FromCgroup,
			memlimit.ApplyRatio(memlimit.FromSystem, machineMemoryRatio/cgroupMemoryRatio))))
	if err != nil {
		slog.Warn("setting the Go memory limit failed; the garbage collector runs without one", "error", err)
	}
}
