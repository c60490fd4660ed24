package handle_test

import (
	"os"
	"syscall"
)

// fdatasync is what a bare appender would call to make a write durable.
func fdatasync(f *os.File) error { return syscall.Fdatasync(int(f.Fd())) }
