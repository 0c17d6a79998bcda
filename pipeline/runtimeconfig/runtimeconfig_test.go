package runtimeconfig

import (
	"math"
	"os"
	"runtime/debug"
	"testing"

	"github.com/KimMachineGun/automemlimit/memlimit"
	"google.golang.org/grpc/experimental"
	"google.golang.org/grpc/mem"
)

// installed is gRPC's default buffer pool after Apply.
var installed mem.BufferPool

func TestMain(m *testing.M) {
	Apply()
	installed = mem.DefaultBufferPool()
	experimental.SetDefaultBufferPool(poisoned) // before any gRPC client or server, as Apply
	os.Exit(m.Run())
}

// TestApplyInstallsPool: Apply makes a Pool gRPC's default.
func TestApplyInstallsPool(t *testing.T) {
	if _, ok := installed.(*Pool); !ok {
		t.Errorf("gRPC's default buffer pool after Apply is %T, want *Pool", installed)
	}
}

// TestGCSettings: the binary starts with the GC target of gcPercent and a memory limit of its
// share of the container's or the machine's memory, unless the environment gives its own.
func TestGCSettings(t *testing.T) {
	percent := debug.SetGCPercent(100)
	debug.SetGCPercent(percent)
	if os.Getenv("GOGC") == "" && percent != gcPercent {
		t.Errorf("GC target %d, want %d", percent, gcPercent)
	}
	if os.Getenv("GOMEMLIMIT") != "" || os.Getenv("AUTOMEMLIMIT") != "" {
		t.Skip("the environment sets the memory limit")
	}
	limit := debug.SetMemoryLimit(-1)
	want, err := memlimit.FromCgroup()
	ratio := cgroupMemoryRatio
	if err != nil {
		if want, err = memlimit.FromSystem(); err != nil {
			t.Fatalf("neither the cgroup nor the system gives a memory size: %v", err)
		}
		ratio = machineMemoryRatio
	}
	if limit == math.MaxInt64 || math.Abs(float64(limit)-float64(want)*ratio) > 1<<20 {
		t.Errorf("memory limit %d bytes, want %.0f (%.2f of %d)", limit, float64(want)*ratio, ratio, want)
	}
}
