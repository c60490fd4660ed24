//go:build unix

package handle

import (
	"errors"
	"os"
	"syscall"

	"github.com/spf13/afero"
)

const osCreateRW = os.O_CREATE | os.O_RDWR

// flock takes an exclusive, non-blocking flock on f when f is an OS file.
// ok is false when it is not.
func flock(f afero.File) (ok bool, err error) {
	fd, isOS := f.(interface{ Fd() uintptr })
	if !isOS {
		return false, nil
	}
	for {
		err = syscall.Flock(int(fd.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return true, errHeld
	}
	return true, err
}
