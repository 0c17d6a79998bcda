package udf

import (
	"os"
	"syscall"
)

// limitMemory limits this process's address space to bytes (RLIMIT_AS): an allocation beyond it
// fails, and the Go runtime ends the process with "fatal error: out of memory", instead of the
// process taking the worker's memory. It also asks the kernel to end this process first when
// the machine runs out of memory (oom_score_adj 1000).
func limitMemory(bytes uint64) error {
	if err := syscall.Setrlimit(syscall.RLIMIT_AS, &syscall.Rlimit{Cur: bytes, Max: bytes}); err != nil {
		return err
	}
	// Best effort: raising one's own score needs no privilege, but /proc may be read-only.
	_ = os.WriteFile("/proc/self/oom_score_adj", []byte("1000"), 0)
	return nil
}

// helperAttr are the helper process's attributes: it is killed when the thread that started it
// ends, so that a worker that dies leaves no helper behind (its input's end also ends it).
func helperAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
