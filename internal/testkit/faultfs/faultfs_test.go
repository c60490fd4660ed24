package faultfs_test

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"syscall"
	"testing"

	"github.com/spf13/afero"
	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/internal/testkit/faultfs"
)

func newFS(t *testing.T) *faultfs.FS {
	t.Helper()
	fsys := faultfs.New(afero.NewMemMapFs())
	require.NoError(t, fsys.MkdirAll("/d", 0o755))
	return fsys
}

// writeFile creates name with data, optionally fsyncing it, and closes it.
func writeFile(t *testing.T, fsys afero.Fs, name, data string, sync bool) {
	t.Helper()
	f, err := fsys.Create(name)
	require.NoError(t, err)
	_, err = f.WriteString(data)
	require.NoError(t, err)
	if sync {
		require.NoError(t, f.Sync())
	}
	require.NoError(t, f.Close())
}

func syncDir(t *testing.T, fsys afero.Fs, dir string) {
	t.Helper()
	d, err := fsys.Open(dir)
	require.NoError(t, err)
	require.NoError(t, d.Sync())
	require.NoError(t, d.Close())
}

// content returns the file's content after a crash and whether it exists.
func content(t *testing.T, fsys afero.Fs, name string) (string, bool) {
	t.Helper()
	b, err := afero.ReadFile(fsys, name)
	if errors.Is(err, os.ErrNotExist) {
		return "", false
	}
	require.NoError(t, err)
	return string(b), true
}

func requireDir(t *testing.T, fsys afero.Fs, dir string, want bool) {
	t.Helper()
	ok, err := afero.DirExists(fsys, dir)
	require.NoError(t, err)
	require.Equal(t, want, ok, dir)
}

func TestCrashModes(t *testing.T) {
	tests := []struct {
		name string
		mode faultfs.CrashMode
		want string
	}{
		{"KeepSynced", faultfs.KeepSynced, "hello"},
		{"KeepAll", faultfs.KeepAll, "hello world"},
		{"TornLast3", faultfs.TornLast{Keep: 3}, "hello wo"},
		{"TornLast0", faultfs.TornLast{Keep: 0}, "hello"},
		{"TornLastBeyondEnd", faultfs.TornLast{Keep: 100}, "hello world"},
		{"ZeroFillLast3", faultfs.ZeroFillLast{Keep: 3}, "hello\x00\x00\x00"},
		{"ZeroFillLastBeyondEnd", faultfs.ZeroFillLast{Keep: 100}, "hello\x00\x00\x00\x00\x00\x00"},
		{"NilMeansKeepSynced", nil, "hello"},
	}
	fsys := newFS(t)
	f, err := fsys.Create("/d/log")
	require.NoError(t, err)
	_, err = f.Write([]byte("hello"))
	require.NoError(t, err)
	require.NoError(t, f.Sync())
	syncDir(t, fsys, "/d")
	_, err = f.Write([]byte(" world"))
	require.NoError(t, err)

	require.EqualValues(t, 6, fsys.UnsyncedBytes("/d/log"))
	require.Equal(t, 1, fsys.SyncCount())
	require.Equal(t, 1, fsys.DirSyncCount())

	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := content(t, fsys.Crash(tc.mode), "/d/log")
			require.True(t, ok)
			require.Equal(t, tc.want, got)
		})
	}

	// Crash does not change the FS; a later sync makes everything durable.
	require.NoError(t, f.Sync())
	require.Zero(t, fsys.UnsyncedBytes("/d/log"))
	got, _ := content(t, fsys.Crash(faultfs.KeepSynced), "/d/log")
	require.Equal(t, "hello world", got)
	require.NoError(t, f.Close())
}

func TestCreateNeedsDirSync(t *testing.T) {
	fsys := newFS(t)
	writeFile(t, fsys, "/d/a", "data", true)

	_, ok := content(t, fsys.Crash(faultfs.KeepAll), "/d/a")
	require.False(t, ok, "created file must not survive without a dir sync")
	requireDir(t, fsys.Crash(faultfs.KeepAll), "/d", true)

	syncDir(t, fsys, "/d")
	got, ok := content(t, fsys.Crash(faultfs.KeepSynced), "/d/a")
	require.True(t, ok)
	require.Equal(t, "data", got)
}

func TestCreateDirSyncWithoutFileSync(t *testing.T) {
	fsys := newFS(t)
	writeFile(t, fsys, "/d/a", "data", false)
	syncDir(t, fsys, "/d")

	got, ok := content(t, fsys.Crash(faultfs.KeepSynced), "/d/a")
	require.True(t, ok)
	require.Empty(t, got, "the name is durable, the data is not")
}

func TestRenameDurability(t *testing.T) {
	tests := []struct {
		name         string
		finalExisted bool // "/d/log" was durable with "old" before
		tmpDurable   bool // dir synced after creating the temp file
		syncAfter    bool // dir synced after the rename
		wantLog      string
		wantLogOK    bool
		wantTmpOK    bool
	}{
		{"ReplaceNoDirSync", true, false, false, "old", true, false},
		{"ReplaceDirSync", true, false, true, "new", true, false},
		{"NewNoDirSync", false, false, false, "", false, false},
		{"NewDirSync", false, false, true, "new", true, false},
		{"DurableTempNoDirSync", false, true, false, "", false, true},
		{"DurableTempDirSync", false, true, true, "new", true, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fsys := newFS(t)
			if tc.finalExisted {
				writeFile(t, fsys, "/d/log", "old", true)
				syncDir(t, fsys, "/d")
			}
			writeFile(t, fsys, "/d/log.tmp", "new", true)
			if tc.tmpDurable {
				syncDir(t, fsys, "/d")
			}
			require.NoError(t, fsys.Rename("/d/log.tmp", "/d/log"))
			if tc.syncAfter {
				syncDir(t, fsys, "/d")
			}

			crashed := fsys.Crash(faultfs.KeepSynced)
			got, ok := content(t, crashed, "/d/log")
			require.Equal(t, tc.wantLogOK, ok)
			require.Equal(t, tc.wantLog, got)
			tmp, ok := content(t, crashed, "/d/log.tmp")
			require.Equal(t, tc.wantTmpOK, ok)
			if ok {
				require.Equal(t, "new", tmp, "synced content follows the inode")
			}
		})
	}
}

func TestRemoveNeedsDirSync(t *testing.T) {
	fsys := newFS(t)
	writeFile(t, fsys, "/d/a", "data", true)
	syncDir(t, fsys, "/d")
	require.NoError(t, fsys.Remove("/d/a"))

	got, ok := content(t, fsys.Crash(faultfs.KeepSynced), "/d/a")
	require.True(t, ok)
	require.Equal(t, "data", got)

	syncDir(t, fsys, "/d")
	_, ok = content(t, fsys.Crash(faultfs.KeepSynced), "/d/a")
	require.False(t, ok)

	require.NoError(t, fsys.RemoveAll("/d"))
	requireDir(t, fsys.Crash(faultfs.KeepSynced), "/d", false)
}

func TestFailNextWrite(t *testing.T) {
	tests := []struct {
		name    string
		err     error
		written int
		wantN   int
		wantErr error
	}{
		{"ENOSPC", syscall.ENOSPC, 2, 2, syscall.ENOSPC},
		{"NothingWritten", syscall.ENOSPC, 0, 0, syscall.ENOSPC},
		{"ClampedToLen", syscall.EIO, 99, 6, syscall.EIO},
		{"NilErrIsShortWrite", nil, 3, 3, io.ErrShortWrite},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fsys := newFS(t)
			f, err := fsys.Create("/d/a")
			require.NoError(t, err)
			fsys.FailNextWrite(tc.err, tc.written)
			n, err := f.Write([]byte("abcdef"))
			require.Equal(t, tc.wantN, n)
			require.ErrorIs(t, err, tc.wantErr)
			require.EqualValues(t, tc.wantN, fsys.UnsyncedBytes("/d/a"))

			// The fault is one-shot.
			_, err = f.Write([]byte("XYZ"))
			require.NoError(t, err)
			require.NoError(t, f.Sync())
			require.NoError(t, f.Close())
			syncDir(t, fsys, "/d")

			want := "abcdef"[:tc.wantN] + "XYZ"
			live, _ := content(t, fsys, "/d/a")
			require.Equal(t, want, live)
			got, _ := content(t, fsys.Crash(faultfs.KeepSynced), "/d/a")
			require.Equal(t, want, got)
		})
	}
}

func TestFailNextSync(t *testing.T) {
	fsys := newFS(t)
	f, err := fsys.Create("/d/a")
	require.NoError(t, err)
	syncDir(t, fsys, "/d")
	_, err = f.WriteString("row1")
	require.NoError(t, err)

	fsys.FailNextSync(syscall.EIO)
	require.ErrorIs(t, f.Sync(), syscall.EIO)
	require.Zero(t, fsys.SyncCount())
	require.EqualValues(t, 4, fsys.UnsyncedBytes("/d/a"))
	got, ok := content(t, fsys.Crash(faultfs.KeepSynced), "/d/a")
	require.True(t, ok)
	require.Empty(t, got)

	require.NoError(t, f.Sync())
	require.Equal(t, 1, fsys.SyncCount())
	got, _ = content(t, fsys.Crash(faultfs.KeepSynced), "/d/a")
	require.Equal(t, "row1", got)
	require.NoError(t, f.Close())
}

func TestTruncate(t *testing.T) {
	fsys := newFS(t)
	writeFile(t, fsys, "/d/a", "hello world", true)
	syncDir(t, fsys, "/d")

	f, err := fsys.OpenFile("/d/a", os.O_RDWR, 0)
	require.NoError(t, err)
	require.NoError(t, f.Truncate(5))

	tests := []struct {
		mode faultfs.CrashMode
		want string
	}{
		{faultfs.KeepSynced, "hello world"},
		{faultfs.TornLast{Keep: 3}, "hello world"},
		{faultfs.KeepAll, "hello"},
	}
	for _, tc := range tests {
		got, _ := content(t, fsys.Crash(tc.mode), "/d/a")
		require.Equal(t, tc.want, got)
	}

	require.NoError(t, f.Sync())
	got, _ := content(t, fsys.Crash(faultfs.KeepSynced), "/d/a")
	require.Equal(t, "hello", got)
	require.NoError(t, f.Close())

	// O_TRUNC through Create is an unsynced truncation as well.
	g, err := fsys.Create("/d/a")
	require.NoError(t, err)
	got, _ = content(t, fsys.Crash(faultfs.KeepSynced), "/d/a")
	require.Equal(t, "hello", got)
	got, _ = content(t, fsys.Crash(faultfs.KeepAll), "/d/a")
	require.Empty(t, got)
	require.NoError(t, g.Close())
}

func TestHook(t *testing.T) {
	boom := errors.New("boom")
	fsys := newFS(t)
	var seen []string
	fsys.SetHook(func(op faultfs.Op, name string) error {
		seen = append(seen, op.String()+" "+name)
		if (op == faultfs.OpRename && name == "/d/log") || op == faultfs.OpDirSync || op == faultfs.OpWrite {
			return boom
		}
		return nil
	})

	f, err := fsys.Create("/d/log.tmp")
	require.NoError(t, err)
	n, err := f.WriteString("abc")
	require.ErrorIs(t, err, boom)
	require.Zero(t, n)
	require.NoError(t, f.Sync())
	require.NoError(t, f.Close())
	live, _ := content(t, fsys, "/d/log.tmp")
	require.Empty(t, live)

	require.ErrorIs(t, fsys.Rename("/d/log.tmp", "/d/log"), boom)
	_, err = fsys.Stat("/d/log.tmp")
	require.NoError(t, err, "failed rename has no effect")
	_, err = fsys.Stat("/d/log")
	require.ErrorIs(t, err, os.ErrNotExist)

	d, err := fsys.Open("/d")
	require.NoError(t, err)
	require.ErrorIs(t, d.Sync(), boom)
	require.NoError(t, d.Close())
	require.Zero(t, fsys.DirSyncCount())
	_, ok := content(t, fsys.Crash(faultfs.KeepAll), "/d/log.tmp")
	require.False(t, ok)

	require.Equal(t, []string{
		"create /d/log.tmp", "write /d/log.tmp", "sync /d/log.tmp",
		"open /d/log.tmp", "rename /d/log", "open /d", "dirsync /d",
	}, seen)

	fsys.SetHook(nil)
	require.NoError(t, fsys.Rename("/d/log.tmp", "/d/log"))
}

func TestModeBitsAndPreexistingFiles(t *testing.T) {
	base := afero.NewMemMapFs()
	require.NoError(t, afero.WriteFile(base, "/pre/old", []byte("fixture"), 0o640))
	require.NoError(t, afero.WriteFile(base, "rel/old", []byte("relative"), 0o644))
	fsys := faultfs.New(base)

	f, err := fsys.OpenFile("/pre/new", os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	require.NoError(t, err)
	require.NoError(t, f.Close())
	syncDir(t, fsys, "/pre")

	crashed := fsys.Crash(faultfs.KeepSynced)
	for name, want := range map[string]os.FileMode{"/pre/old": 0o640, "/pre/new": 0o600} {
		fi, err := crashed.Stat(name)
		require.NoError(t, err, name)
		require.Equal(t, want, fi.Mode().Perm(), name)
	}
	got, _ := content(t, crashed, "/pre/old")
	require.Equal(t, "fixture", got)
	got, _ = content(t, crashed, "rel/old")
	require.Equal(t, "relative", got)
}

func TestFileHasNoFdAndClosedFileFails(t *testing.T) {
	fsys := newFS(t)
	f, err := fsys.Create("/d/a")
	require.NoError(t, err)
	_, hasFd := f.(interface{ Fd() uintptr })
	require.False(t, hasFd)

	require.NoError(t, f.Close())
	require.Error(t, f.Sync())
	_, err = f.Write([]byte("x"))
	require.Error(t, err)
	require.Zero(t, fsys.SyncCount())
}

func TestConcurrentWriters(t *testing.T) {
	const writers, rows = 8, 50
	fsys := newFS(t)
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		wg.Go(func() {
			f, err := fsys.Create(fmt.Sprintf("/d/f%d", w))
			if err != nil {
				errs <- err
				return
			}
			defer f.Close()
			for r := range rows {
				if _, err := fmt.Fprintf(f, "%d:%d\n", w, r); err != nil {
					errs <- err
					return
				}
				if err := f.Sync(); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	syncDir(t, fsys, "/d")
	require.Equal(t, writers*rows, fsys.SyncCount())

	crashed := fsys.Crash(faultfs.KeepSynced)
	for w := range writers {
		want := ""
		for r := range rows {
			want += fmt.Sprintf("%d:%d\n", w, r)
		}
		got, ok := content(t, crashed, fmt.Sprintf("/d/f%d", w))
		require.True(t, ok)
		require.Equal(t, want, got)
	}
}
