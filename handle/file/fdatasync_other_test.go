//go:build !linux

package file_test

import (
	"os"
	"time"
)

// fdatasync is f.Sync where the system has no fdatasync.
func fdatasync(f *os.File) error { return f.Sync() }

// processCPU returns 0: the CPU time used is not measured here.
func processCPU() time.Duration { return 0 }
