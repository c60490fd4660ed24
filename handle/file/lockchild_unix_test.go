//go:build unix

package file_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/spf13/afero"
	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/handle/file"
)

const (
	// lockParentEnv, set to "<dir>,<session ID>", turns the test binary
	// into a writer that passes its lock file's descriptor to a child
	// (see runLockParent).
	lockParentEnv = "SESSIONLOG_LOCK_PARENT"
	// lockHolderEnv turns the test binary into that child: it keeps the
	// descriptors it was given until its stdin ends.
	lockHolderEnv = "SESSIONLOG_LOCK_HOLDER"
)

func init() {
	if _, ok := os.LookupEnv(lockHolderEnv); ok {
		io.Copy(io.Discard, os.Stdin)
		os.Exit(0)
	}
	if spec, ok := os.LookupEnv(lockParentEnv); ok {
		if err := runLockParent(spec); err != nil {
			fmt.Fprintln(os.Stderr, "lock parent:", err)
			os.Exit(2)
		}
		os.Exit(0)
	}
}

// runLockParent opens the session for writing, starts a child that
// inherits the descriptor of the session's lock file (as any child does
// between fork and exec, and for good when a descriptor is passed on) and
// the parent's stdin, prints "ready <child pid>", and waits for stdin to
// end.
func runLockParent(spec string) error {
	dir, id, _ := strings.Cut(spec, ",")
	h, err := file.New(afero.NewOsFs(), dir).Open(context.Background(), id, handle.ReadWrite)
	if err != nil {
		return err
	}
	var lock os.FileInfo
	if lock, err = os.Stat(strings.TrimSuffix(h.Path(), ".jsonl") + ".lock"); err != nil {
		return err
	}
	ino := lock.Sys().(*syscall.Stat_t).Ino
	fd := -1
	for i := 3; i < 1024 && fd < 0; i++ {
		var st syscall.Stat_t
		if syscall.Fstat(i, &st) == nil && st.Ino == ino {
			fd = i
		}
	}
	if fd < 0 {
		return fmt.Errorf("no open descriptor of %s", lock.Name())
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	child := exec.Command(exe, "-test.run=^$")
	child.Env = append(os.Environ(), lockHolderEnv+"=1")
	child.Stdin = os.Stdin
	// The same open file description, not a new open of the file.
	child.ExtraFiles = []*os.File{os.NewFile(uintptr(fd), "lock")}
	if err := child.Start(); err != nil {
		return err
	}
	fmt.Printf("ready %d\n", child.Process.Pid)
	io.Copy(io.Discard, os.Stdin)
	return h.Close()
}

// The writer lock belongs to the writer process, not to the descriptor:
// a writer killed while a child of it still holds the lock file's
// descriptor (a tool it was starting, say) must not keep the session
// locked. Regression: with flock the child kept the lock, and the
// restarted agent was refused with ErrLocked.
func TestLockDiesWithWriterNotWithItsChildren(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	st := file.New(afero.NewOsFs(), dir)
	h, err := st.Create(ctx)
	require.NoError(t, err)
	id := h.ID()
	require.NoError(t, h.Close())

	exe, err := os.Executable()
	require.NoError(t, err)
	stdinR, stdinW, err := os.Pipe()
	require.NoError(t, err)
	t.Cleanup(func() { stdinW.Close() }) // the holder exits when its stdin ends
	parent := exec.Command(exe, "-test.run=^$")
	parent.Env = append(os.Environ(), lockParentEnv+"="+dir+","+id)
	parent.Stdin = stdinR
	stderr, err := os.Create(filepath.Join(dir, "parent.stderr"))
	require.NoError(t, err)
	defer stderr.Close()
	parent.Stderr = stderr
	out, err := parent.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, parent.Start())
	require.NoError(t, stdinR.Close())
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		b, _ := os.ReadFile(stderr.Name())
		t.Fatalf("the writer ended early (%v): %s", err, b)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(line, "ready ")))
	require.NoError(t, err, "parent said %q", line)

	_, err = st.Open(ctx, id, handle.ReadWrite)
	require.ErrorIs(t, err, handle.ErrLocked, "the writer process holds the lock")

	require.NoError(t, parent.Process.Kill())
	require.Error(t, parent.Wait())
	w, err := st.Open(ctx, id, handle.ReadWrite)
	require.NoError(t, err, "the lock died with its process")
	require.NoError(t, syscall.Kill(pid, 0), "the child holding the descriptor is still alive")
	_, err = st.Open(ctx, id, handle.ReadWrite)
	require.ErrorIs(t, err, handle.ErrLocked, "and the new writer holds it")
	require.NoError(t, w.Close())
}

// removeHookFs calls onRemove before each Remove; its files are the OS's,
// so the writer lock is the OS record lock.
type removeHookFs struct {
	afero.Fs
	onRemove func(name string)
}

func (r *removeHookFs) Remove(name string) error {
	r.onRemove(name)
	return r.Fs.Remove(name)
}

// TestGCRemovesLockFilesUnderTheLock: a writer that takes a session's lock
// while gc is removing that lock file as a leftover is refused, so the
// removal cannot leave it holding a lock on a name no one else opens
// (regression: gc probed, then removed, and two writers could both lock).
func TestGCRemovesLockFilesUnderTheLock(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	const id = "01JDX3N0Q3Z8Y6W2D1V5K7M9PA"
	lockPath := filepath.Join(dir, id+".lock")
	require.NoError(t, os.WriteFile(lockPath, nil, 0o600)) // a leftover: no such session
	fsys := &removeHookFs{Fs: afero.NewOsFs()}
	store := file.New(fsys, dir)
	var during error
	fired := false
	fsys.onRemove = func(name string) {
		if name != lockPath || fired {
			return
		}
		fired = true
		var h handle.Handle
		if h, during = store.Create(ctx, handle.WithID(id)); during == nil {
			t.Cleanup(func() { h.Close() })
		}
	}
	rep, err := store.GC(ctx, time.Now(), false)
	require.NoError(t, err)
	require.True(t, fired)
	require.Contains(t, rep.Leftovers, lockPath)
	require.ErrorIs(t, during, handle.ErrLocked, "gc holds the lock it removes")
}
