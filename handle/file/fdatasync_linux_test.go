package file_test

import (
	"os"
	"syscall"
	"time"
)

// fdatasync is what a bare appender would call to make a write durable.
func fdatasync(f *os.File) error { return syscall.Fdatasync(int(f.Fd())) }

// processCPU returns the CPU time (user and system) the process has used
// so far, or 0 when it cannot tell.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
