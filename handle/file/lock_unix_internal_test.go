//go:build unix

package file

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sessionlog/sessionlog/handle"

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
	case errors.Is(err, handle.ErrLocked):
		fmt.Println("locked")
	case err == nil:
		l.unlock()
		fmt.Println("free")
	default:
		fmt.Println(err)
	}
	os.Exit(0)
}

// probeFromChild asks another process whether the lock at path is free.
func probeFromChild(t *testing.T, path string) string {
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

	require.Equal(t, "free", probeFromChild(t, path))
	l, err := lockFile(fs, path)
	require.NoError(t, err)
	require.Equal(t, "locked", probeFromChild(t, path))

	_, err = lockFile(fs, path)
	require.ErrorIs(t, err, handle.ErrLocked, "same path")
	_, err = lockFile(afero.NewBasePathFs(fs, link), "/s.lock")
	require.ErrorIs(t, err, handle.ErrLocked, "another path to the file")
	f, err := fs.OpenFile(path, os.O_RDWR, 0)
	require.NoError(t, err)
	_, isOS, err := osLocks.lock(fs, f, path)
	require.True(t, isOS)
	require.ErrorIs(t, err, handle.ErrLocked, "a descriptor opened before the check")
	require.Len(t, l.(*osLock).parked, 1, "kept open until the holder unlocks")
	require.Equal(t, "locked", probeFromChild(t, path), "no refusal dropped the lock")

	require.NoError(t, l.unlock())
	require.Equal(t, "free", probeFromChild(t, path))
	l, err = lockFile(fs, path)
	require.NoError(t, err, "free again in this process too")
	require.NoError(t, l.unlock())
}

// Writing asks without taking the lock: a writer opening at the same
// moment is never refused because of it, and it answers on a store it
// cannot write. Regression: it took the lock to probe, so logtool replay
// could make a writer fail with handle.ErrLocked, and a read-only store always
// looked written.
func TestWritingTakesNothing(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	st := New(afero.NewOsFs(), dir)
	h, err := st.Create(ctx)
	require.NoError(t, err)
	id := h.ID()
	require.NoError(t, h.Close())

	stop := make(chan struct{})
	probed := make(chan error, 1)
	go func() {
		var err error
		for err == nil {
			select {
			case <-stop:
				probed <- nil
				return
			default:
			}
			_, err = New(afero.NewOsFs(), dir).Writing(id)
		}
		probed <- err
	}()
	for range 300 {
		w, err := st.Open(ctx, id, handle.ReadWrite)
		require.NoError(t, err, "a writer is never refused because a reader asked")
		require.NoError(t, w.Close())
	}
	close(stop)
	require.NoError(t, <-probed)

	w, err := st.Open(ctx, id, handle.ReadWrite)
	require.NoError(t, err)
	for _, fsys := range []afero.Fs{afero.NewOsFs(), afero.NewReadOnlyFs(afero.NewOsFs())} {
		writing, err := New(fsys, dir).Writing(id)
		require.NoError(t, err)
		require.True(t, writing, "held in this process")
	}
	require.NoError(t, w.Close())
	for _, fsys := range []afero.Fs{afero.NewOsFs(), afero.NewReadOnlyFs(afero.NewOsFs())} {
		writing, err := New(fsys, dir).Writing(id)
		require.NoError(t, err)
		require.False(t, writing, "no writer")
	}
	mem := afero.NewMemMapFs()
	ms := New(mem, "/s")
	mh, err := ms.Create(ctx)
	require.NoError(t, err)
	writing, err := ms.Writing(mh.ID())
	require.NoError(t, err)
	require.True(t, writing)
	require.NoError(t, mh.Close())
	writing, err = ms.Writing(mh.ID())
	require.NoError(t, err)
	require.False(t, writing)
}

// A lock file its holder removed (a failed Create, a Delete) must not be
// lockable through a descriptor opened before the removal: that lock would
// be on a name no one else opens, and a second writer would lock the new
// file at the name. The late locker lets go and locks the file at the name.
func TestLockOnRemovedLockFileIsLetGo(t *testing.T) {
	fs := afero.NewOsFs()
	path := filepath.Join(t.TempDir(), "s.lock")
	holder, err := lockFile(fs, path)
	require.NoError(t, err)
	late, err := fs.OpenFile(path, os.O_RDWR, 0) // opened before the removal
	require.NoError(t, err)
	require.NoError(t, fs.Remove(path))
	require.NoError(t, holder.unlock())

	_, isOS, err := osLocks.lock(fs, late, path)
	require.True(t, isOS)
	require.ErrorIs(t, err, errLockMoved)

	l, err := lockFile(fs, path)
	require.NoError(t, err, "the lock at the name is free")
	require.FileExists(t, path)
	require.Equal(t, "locked", probeFromChild(t, path), "the file at the name is the one locked")
	_, err = lockFile(fs, path)
	require.ErrorIs(t, err, handle.ErrLocked)
	require.NoError(t, l.unlock())
}
