//go:build unix

package file_test

// Only regular files are sessions (docs/format.md §2): a link, FIFO or folder named
// like a session, its lock, a temp or a cache file is refused with
// ErrNotRegular, never opened for reading, and nothing is created or
// written through it.

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/spf13/afero"
	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/handle/file"
)

const oddID = "01JDX3N0Q3Z8Y6W2D1V5K7M9PA"

// validLog is a session oddID with one event, as raw bytes.
func validLog(t *testing.T) []byte {
	t.Helper()
	hdr, err := eventlog.EncodeHeader(eventlog.NewHeader(oddID, 1))
	require.NoError(t, err)
	return append(append(hdr, '\n'), `{"seq":0,"type":"x","time":1,"data":null}`+"\n"...)
}

// mkfifo makes a FIFO at path. A reader that opens it is released: a
// goroutine waits to open its write end and closes it at once, so code that
// wrongly opens the FIFO reads an empty file instead of hanging the test.
// Cleanup opens the read end itself (without blocking) to end that
// goroutine when nothing else did.
func mkfifo(t *testing.T, path string) {
	t.Helper()
	require.NoError(t, syscall.Mkfifo(path, 0o600))
	done := make(chan struct{})
	go func() {
		defer close(done)
		if w, err := os.OpenFile(path, os.O_WRONLY, 0); err == nil { // waits for a reader
			w.Close()
		}
	}()
	t.Cleanup(func() {
		r, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
		<-done
		if err == nil {
			r.Close()
		}
	})
}

// oddKinds make a non-regular file at path; outside is a folder outside
// the store that a link may point into.
var oddKinds = []struct {
	name string
	make func(t *testing.T, path, outside string)
}{
	{"link to a log outside the store", func(t *testing.T, path, outside string) {
		target := filepath.Join(outside, "log.jsonl")
		require.NoError(t, os.WriteFile(target, validLog(t), 0o600))
		require.NoError(t, os.Symlink(target, path))
	}},
	{"dangling link", func(t *testing.T, path, outside string) {
		require.NoError(t, os.Symlink(filepath.Join(outside, "created"), path))
	}},
	{"link to /dev/zero", func(t *testing.T, path, _ string) {
		require.NoError(t, os.Symlink("/dev/zero", path))
	}},
	{"FIFO", func(t *testing.T, path, _ string) { mkfifo(t, path) }},
	{"device", func(t *testing.T, path, _ string) {
		// The device of /dev/zero (char 1, 5), where this process may
		// make one; the link to /dev/zero covers it otherwise.
		if err := syscall.Mknod(path, syscall.S_IFCHR|0o600, 1<<8|5); err != nil {
			t.Skipf("cannot make a device node here: %v", err)
		}
	}},
	{"folder", func(t *testing.T, path, _ string) { require.NoError(t, os.Mkdir(path, 0o700)) }},
}

// TestNotRegularSessionRefused checks every entry point on a session whose
// file is not a regular file: each fails with ErrNotRegular naming the
// path, and nothing outside the store is created or changed.
func TestNotRegularSessionRefused(t *testing.T) {
	ops := append(logReaders(oddID), []storeOp{
		{"Stat", func(ctx context.Context, s *file.Store, _ string) error {
			_, err := s.Stat(ctx, oddID)
			return err
		}},
		{"Path", func(_ context.Context, s *file.Store, _ string) error {
			_, err := s.Path(oddID)
			return err
		}},
		{"List", func(ctx context.Context, s *file.Store, _ string) error {
			var broken error
			infos, err := s.List(ctx, handle.SkipBroken(func(_ string, err error) { broken = err }))
			if err != nil || len(infos) > 0 {
				return err
			}
			return broken
		}},
		{"Delete", func(ctx context.Context, s *file.Store, _ string) error {
			return s.Delete(ctx, oddID)
		}},
		{"Create with its ID", func(ctx context.Context, s *file.Store, _ string) error {
			_, err := s.Create(ctx, handle.WithID(oddID))
			return err
		}},
		{"Fork", func(ctx context.Context, s *file.Store, _ string) error {
			_, err := s.Fork(ctx, oddID, 0)
			return err
		}},
		{"StatPath", func(ctx context.Context, s *file.Store, path string) error {
			_, err := s.StatPath(ctx, path)
			return err
		}},
	}...)
	for _, kind := range oddKinds {
		for _, ext := range []string{".jsonl", ".jsonl.zst"} {
			for _, op := range ops {
				t.Run(kind.name+"/"+ext+"/"+op.name, func(t *testing.T) {
					dir, outside := t.TempDir(), t.TempDir()
					path := filepath.Join(dir, oddID+ext)
					kind.make(t, path, outside)
					before := snapshotDir(t, outside)
					err := op.do(t.Context(), file.New(afero.NewOsFs(), dir), path)
					require.ErrorIs(t, err, file.ErrNotRegular)
					require.Contains(t, err.Error(), path)
					require.Equal(t, before, snapshotDir(t, outside), "nothing outside the store changes")
				})
			}
		}
	}
}

// snapshotDir maps each file name in dir to its content.
func snapshotDir(t *testing.T, dir string) map[string]string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	out := map[string]string{}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		require.NoError(t, err)
		out[e.Name()] = string(b)
	}
	return out
}

// TestNothingCreatedThroughLinks puts a link where the store creates a
// file of a real session — its lock, its temp file, its cache folder — and
// checks that the operation never writes through it: nothing appears in
// the folder outside the store (a file link dangles into it, a folder
// link points at it).
func TestNothingCreatedThroughLinks(t *testing.T) {
	cases := []struct {
		name string
		link string // relative to the store's folder
		do   func(ctx context.Context, s *file.Store) error
		// refused: the operation fails with ErrNotRegular (a derived file
		// is only skipped)
		refused bool
	}{
		{"dangling lock link, open for writing", oddID + ".lock", func(ctx context.Context, s *file.Store) error {
			h, err := s.Open(ctx, oddID, handle.ReadWrite)
			if err == nil {
				h.Close()
			}
			return err
		}, true},
		{"dangling lock link, delete", oddID + ".lock", func(ctx context.Context, s *file.Store) error {
			return s.Delete(ctx, oddID)
		}, true},
		{"temp file link, convert", oddID + ".jsonl.zst.tmp", func(ctx context.Context, s *file.Store) error {
			return s.Convert(ctx, oddID, handle.EncodingZstd)
		}, true},
		{"cache folder link, derived data", ".cache", func(ctx context.Context, s *file.Store) error {
			return s.PutDerived(ctx, oddID, "k", []byte("x"))
		}, true},
		{"cache folder link, digest saved on close", ".cache", func(ctx context.Context, s *file.Store) error {
			h, err := s.Open(ctx, oddID, handle.ReadWrite)
			if err != nil {
				return err
			}
			if _, _, err := h.LogDigest(ctx); err != nil {
				return err
			}
			return h.Close()
		}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir, outside := t.TempDir(), t.TempDir()
			require.NoError(t, os.WriteFile(filepath.Join(dir, oddID+".jsonl"), validLog(t), 0o600))
			target := filepath.Join(outside, "target")
			if c.link == ".cache" {
				target = outside
			}
			require.NoError(t, os.Symlink(target, filepath.Join(dir, c.link)))
			err := c.do(t.Context(), file.New(afero.NewOsFs(), dir))
			if c.refused {
				require.ErrorIs(t, err, file.ErrNotRegular)
				require.Contains(t, err.Error(), filepath.Join(dir, c.link))
			} else {
				require.NoError(t, err)
			}
			require.Empty(t, snapshotDir(t, outside))
		})
	}
}

// TestNotRegularCacheFileNotOpened: a FIFO where a derived file would be
// reads as absent data, and GetDerived returns at once.
func TestNotRegularCacheFileNotOpened(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.Mkdir(filepath.Join(dir, ".cache"), 0o700))
	mkfifo(t, filepath.Join(dir, ".cache", oddID+".k"))
	_, err := file.New(afero.NewOsFs(), dir).GetDerived(t.Context(), oddID, "k")
	require.ErrorIs(t, err, file.ErrNotRegular)
}
