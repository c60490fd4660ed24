//go:build !unix

package handle

import (
	"os"

	"github.com/spf13/afero"
)

const osCreateRW = os.O_CREATE | os.O_RDWR

// flock is not implemented here: every file system gets the in-process
// lock, which does not exclude other processes.
func flock(afero.File) (bool, error) { return false, nil }
