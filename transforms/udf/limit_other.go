//go:build !linux

package udf

import "syscall"

// limitMemory does nothing outside Linux, where the helper's memory is not limited: the
// template's workers run Linux.
func limitMemory(uint64) error { return nil }

func helperAttr() *syscall.SysProcAttr { return nil }
