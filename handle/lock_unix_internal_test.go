//go:build unix

package handle

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/afero"
	"github.com/stretchr/testify/require"
)

// lockProbeEnv, set to a lock file's path, turns the test binary into a
// process that tries that lock once and prints "locked" or "free".
const lockProbeEnv = "SESSIONLOG_LOCK_PROBE"

func init() {
	path, ok := os.LookupEnv(lockProbeEnv)
	if !ok {
		return
	}
	l, err := lockFile(afero.NewOsFs(), path)
	switch {
	case errors.Is(err, ErrLocked):
		fmt.Println("locked")
	case err == nil:
		l.unlock()
		fmt.Println("free")
	default:
		fmt.Println(err)
	}
	os.Exit(0)
}

// probeLock asks another process whether the lock at path is free.
func probeLock(t *testing.T, path string) string {
	t.Helper()
	exe, err := os.Executable()
	require.NoError(t, err)
	cmd := exec.Command(exe, "-test.run=^$")
	// A race-enabled binary sleeps a second at exit unless told not to.
	cmd.Env = append(os.Environ(), lockProbeEnv+"="+path, "GORACE=atexit_sleep_ms=0")
	out, err := cmd.Output()
	require.NoError(t, err)
	return strings.TrimSpace(string(out))
}

// A record lock is dropped when its process closes any descriptor of the
// file: refused attempts from the same process, by the same path, another
// path to the file, or a descriptor opened before the check, must neither
// succeed nor drop the lock.
func TestOSLockRefusalsKeepTheLock(t *testing.T) {
	fs := afero.NewOsFs()
	dir := t.TempDir()
	link := filepath.Join(t.TempDir(), "link")
	require.NoError(t, os.Symlink(dir, link))
	path := filepath.Join(dir, "s.lock")

	require.Equal(t, "free", probeLock(t, path))
	l, err := lockFile(fs, path)
	require.NoError(t, err)
	require.Equal(t, "locked", probeLock(t, path))

	_, err = lockFile(fs, path)
	require.ErrorIs(t, err, ErrLocked, "same path")
	_, err = lockFile(afero.NewBasePathFs(fs, link), "/s.lock")
	require.ErrorIs(t, err, ErrLocked, "another path to the file")
	f, err := fs.OpenFile(path, os.O_RDWR, 0)
	require.NoError(t, err)
	_, isOS, err := osLocks.lock(f, path)
	require.True(t, isOS)
	require.ErrorIs(t, err, ErrLocked, "a descriptor opened before the check")
	require.Len(t, l.(*osLock).parked, 1, "kept open until the holder unlocks")
	require.Equal(t, "locked", probeLock(t, path), "no refusal dropped the lock")

	require.NoError(t, l.unlock())
	require.Equal(t, "free", probeLock(t, path))
	l, err = lockFile(fs, path)
	require.NoError(t, err, "free again in this process too")
	require.NoError(t, l.unlock())
}
