package file_test

// A failed create leaves nothing behind: on a full disk (ENOSPC at any
// step) Create, Fork and a child's Create fail and the store's folder holds
// exactly what it held before — no header, no temp file, no <ID>.lock.

import (
	"context"
	"io/fs"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/spf13/afero"
	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/handle/file"
	"github.com/sessionlog/sessionlog/internal/testkit/faultfs"
)

// storeFiles lists every file under the store's folder, derived ones too,
// but the session index's (a failed change still leaves its mark: what
// the log now is).
func storeFiles(t *testing.T, fsys afero.Fs, dir string) []string {
	t.Helper()
	var out []string
	require.NoError(t, afero.Walk(fsys, dir, func(p string, fi fs.FileInfo, err error) error {
		if err == nil && !fi.IsDir() && !strings.Contains(p, "/.cache/sessions.") {
			out = append(out, p)
		}
		return err
	}))
	slices.Sort(out)
	return out
}

func TestFailedCreateLeavesNothing(t *testing.T) {
	const dir = "/s"
	creates := []struct {
		name string
		do   func(ctx context.Context, s *file.Store, parent string) (handle.Handle, error)
	}{
		{"Create raw", func(ctx context.Context, s *file.Store, _ string) (handle.Handle, error) {
			return s.Create(ctx)
		}},
		{"Create zstd", func(ctx context.Context, s *file.Store, _ string) (handle.Handle, error) {
			return s.Create(ctx, handle.WithEncoding(handle.EncodingZstd))
		}},
		{"Fork", func(ctx context.Context, s *file.Store, parent string) (handle.Handle, error) {
			return s.Fork(ctx, parent, 0)
		}},
		{"child", func(ctx context.Context, s *file.Store, parent string) (handle.Handle, error) {
			return s.Create(ctx, handle.WithParent(eventlog.Parent{ID: parent, Seq: 0, Mode: eventlog.ModeChild}))
		}},
	}
	full := syscall.ENOSPC
	faults := []struct {
		name string
		arm  func(f *faultfs.FS)
	}{
		{"header write", func(f *faultfs.FS) { f.FailNextWrite(full, 0) }},
		{"header write, half of it", func(f *faultfs.FS) { f.FailNextWrite(full, 20) }},
		{"temp file fsync", func(f *faultfs.FS) { f.FailNextSync(full) }},
		{"temp file create", func(f *faultfs.FS) { f.SetHook(failOn(faultfs.OpCreate, ".tmp", full)) }},
		{"rename", func(f *faultfs.FS) { f.SetHook(failOn(faultfs.OpRename, ".jsonl", full)) }},
		{"folder fsync", func(f *faultfs.FS) { f.SetHook(failOn(faultfs.OpDirSync, dir, full)) }},
		{"reopen of the header", func(f *faultfs.FS) { f.SetHook(failOn(faultfs.OpOpen, ".jsonl", full)) }},
	}
	for _, c := range creates {
		for _, fault := range faults {
			t.Run(c.name+"/"+fault.name, func(t *testing.T) {
				ctx := t.Context()
				fsys := faultfs.New(afero.NewMemMapFs())
				store := file.New(fsys, dir)
				p, err := store.Create(ctx)
				require.NoError(t, err)
				_, err = p.Append(ctx, eventlog.Event{Type: "x", Time: 1})
				require.NoError(t, err)
				require.NoError(t, p.Close())
				before := storeFiles(t, fsys, dir)

				fault.arm(fsys)
				h, err := c.do(ctx, store, p.ID())
				fsys.SetHook(nil)
				if h != nil {
					h.Close()
				}
				require.ErrorIs(t, err, full)
				require.Nil(t, h)
				require.Equal(t, before, storeFiles(t, fsys, dir), "nothing left behind")

				h, err = c.do(ctx, store, p.ID())
				require.NoError(t, err, "space is back: the create succeeds")
				require.NoError(t, h.Close())
			})
		}
	}
}

// failOn returns a hook that fails every operation op on a name
// holding part with err.
func failOn(op faultfs.Op, part string, err error) faultfs.Hook {
	return func(o faultfs.Op, name string) error {
		if o == op && strings.Contains(name, part) {
			return err
		}
		return nil
	}
}

// TestFailedRepairLeavesNoSideFile: a repair whose side file cannot be
// written (a full disk) removes the partial copy and leaves the log as it
// was.
func TestFailedRepairLeavesNoSideFile(t *testing.T) {
	ctx := t.Context()
	fsys := faultfs.New(afero.NewMemMapFs())
	store := file.New(fsys, "/s")
	h, err := store.Create(ctx)
	require.NoError(t, err)
	_, err = h.Append(ctx, eventlog.Event{Type: "x", Time: 1})
	require.NoError(t, err)
	require.NoError(t, h.Close())
	f, err := fsys.OpenFile(h.Path(), os.O_WRONLY|os.O_APPEND, 0)
	require.NoError(t, err)
	_, err = f.WriteString(`{"seq":1,"type":"x","ti`) // a torn tail
	require.NoError(t, err)
	require.NoError(t, f.Close())
	log, err := afero.ReadFile(fsys, h.Path())
	require.NoError(t, err)
	before := storeFiles(t, fsys, "/s")

	fsys.FailNextWrite(syscall.ENOSPC, 5)
	_, err = store.Repair(ctx, h.ID(), false)
	require.ErrorIs(t, err, syscall.ENOSPC)
	require.Equal(t, before, storeFiles(t, fsys, "/s"), "no partial side file")
	after, err := afero.ReadFile(fsys, h.Path())
	require.NoError(t, err)
	require.Equal(t, log, after)
}

// TestFailedConvertLeavesNothing: a convert or compaction that runs out of
// space at any step leaves the store as it was: the old log, no temp file.
func TestFailedConvertLeavesNothing(t *testing.T) {
	t.Parallel()
	full := syscall.ENOSPC
	faults := []struct {
		name string
		arm  func(f *faultfs.FS)
	}{
		{"write", func(f *faultfs.FS) { f.FailNextWrite(full, 3) }},
		{"fsync", func(f *faultfs.FS) { f.FailNextSync(full) }},
		{"temp file create", func(f *faultfs.FS) { f.SetHook(failOn(faultfs.OpCreate, ".tmp", full)) }},
		{"rename", func(f *faultfs.FS) { f.SetHook(failOn(faultfs.OpRename, ".jsonl", full)) }},
	}
	for _, to := range []string{handle.EncodingZstd, handle.EncodingRaw} {
		for _, fault := range faults {
			t.Run(to+"/"+fault.name, func(t *testing.T) {
				ctx := t.Context()
				fsys := faultfs.New(afero.NewMemMapFs())
				store := file.New(fsys, "/s")
				h, err := store.Create(ctx, handle.WithEncoding(handle.EncodingZstd))
				require.NoError(t, err)
				_, err = h.Append(ctx, eventlog.Event{Type: "x", Time: 1})
				require.NoError(t, err)
				require.NoError(t, h.Close())
				before := storeFiles(t, fsys, "/s")

				fault.arm(fsys)
				err = store.Convert(ctx, h.ID(), to)
				fsys.SetHook(nil)
				require.ErrorIs(t, err, full)
				require.Equal(t, before, storeFiles(t, fsys, "/s"), "nothing left behind")
			})
		}
	}
}
