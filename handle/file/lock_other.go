//go:build !unix

package file

import (
	"os"

	"github.com/spf13/afero"
)

const osCreateRW = os.O_CREATE | os.O_RDWR

// osLocks has no OS locks here: every file system gets the in-process
// lock, which does not exclude other processes.
var osLocks noOSLocks

type noOSLocks struct{}

func (noOSLocks) lock(afero.Fs, afero.File, string) (writerLock, bool, error) {
	return nil, false, nil
}

func heldInProcess(afero.Fs, string) bool { return false }

func probeOS(afero.Fs, string) (held, ok bool, err error) { return false, false, nil }
