package file_test

// Every read of a log stops promptly once its context is done, wherever it
// is: here inside 256 MiB (Read: 32 MiB) of zeros after the header (one
// endless row, as a huge file or a device gives), where the readers' own
// checks between rows never come. The context is cancelled by the file
// system itself, at the third read of the file: no timing is involved.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/spf13/afero"
	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/handle/file"
)

// cancellingFs cancels a context at the nth read of any file from arm on.
type cancellingFs struct {
	afero.Fs
	reads, at atomic.Int64
	cancel    atomic.Pointer[context.CancelFunc]
}

// arm makes the third read from now cancel.
func (c *cancellingFs) arm(cancel context.CancelFunc) {
	c.cancel.Store(&cancel)
	c.at.Store(c.reads.Load() + 3)
}

func (c *cancellingFs) read() {
	if n := c.reads.Add(1); n == c.at.Load() {
		if cancel := c.cancel.Load(); cancel != nil {
			(*cancel)()
		}
	}
}

func (c *cancellingFs) Open(name string) (afero.File, error) {
	return c.OpenFile(name, os.O_RDONLY, 0)
}

func (c *cancellingFs) OpenFile(name string, flag int, perm os.FileMode) (afero.File, error) {
	f, err := c.Fs.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return &cancellingFile{File: f, fs: c}, nil
}

type cancellingFile struct {
	afero.File
	fs *cancellingFs
}

func (f *cancellingFile) Read(p []byte) (int, error) {
	f.fs.read()
	return f.File.Read(p)
}

func (f *cancellingFile) ReadAt(p []byte, off int64) (int, error) {
	f.fs.read()
	return f.File.ReadAt(p, off)
}

func TestReadsStopOnCancel(t *testing.T) {
	t.Parallel()
	const id = "01JDX3N0Q3Z8Y6W2D1V5K7M9PA"
	for _, op := range logReaders(id) {
		t.Run(op.name, func(t *testing.T) {
			path := hugeLog(t, id, 256<<20)
			fsys := &cancellingFs{Fs: afero.NewOsFs()}
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			fsys.arm(cancel)
			err := op.do(ctx, file.New(fsys, filepath.Dir(path)), path)
			require.ErrorIs(t, err, context.Canceled)
		})
	}
	t.Run("Read", func(t *testing.T) {
		// OpenPath first reads the zeros whole (a torn tail), which costs
		// the race detector seconds per 16 MB: 1 MB of them is reads
		// enough past the cancel (one every 64 KB at most) for Read to
		// stop inside them (it does not when ctxReader is disabled).
		path := hugeLog(t, id, 1<<20)
		fsys := &cancellingFs{Fs: afero.NewOsFs()}
		h, err := file.New(fsys, filepath.Dir(path)).OpenPath(t.Context(), path)
		require.NoError(t, err) // the zeros are a torn tail
		defer h.Close()
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		fsys.arm(cancel)
		var last error
		for _, err := range h.Read(ctx, 0, handle.End) {
			last = err
		}
		require.ErrorIs(t, last, context.Canceled)
	})
}

// hugeLog writes session id's header followed by zeros (a sparse file)
// up to size bytes and returns its path.
func hugeLog(t *testing.T, id string, size int64) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), id+".jsonl")
	require.NoError(t, os.WriteFile(path, fmt.Appendf(nil,
		`{"format":"sessionlog","version":1,"id":%q,"createdAt":1}`+"\n", id), 0o600))
	require.NoError(t, os.Truncate(path, size))
	return path
}

// storeOp is an entry point of a store run on session id, whose file is
// at path.
type storeOp struct {
	name string
	do   func(ctx context.Context, s *file.Store, path string) error
}

// logReaders are the entry points that read a whole log of session id.
func logReaders(id string) []storeOp {
	return []storeOp{
		{"Open read-only", func(ctx context.Context, s *file.Store, _ string) error {
			_, err := s.Open(ctx, id, handle.ReadOnly)
			return err
		}},
		{"Open for writing", func(ctx context.Context, s *file.Store, _ string) error {
			_, err := s.Open(ctx, id, handle.ReadWrite)
			return err
		}},
		{"OpenPath", func(ctx context.Context, s *file.Store, path string) error {
			_, err := s.OpenPath(ctx, path)
			return err
		}},
		{"CheckPath", func(ctx context.Context, s *file.Store, path string) error {
			return s.CheckPath(ctx, path, nil).Err
		}},
		{"SalvagePath", func(ctx context.Context, s *file.Store, path string) error {
			_, err := s.SalvagePath(ctx, path, func(eventlog.Event) bool { return true })
			return err
		}},
		{"Repair", func(ctx context.Context, s *file.Store, _ string) error {
			_, err := s.Repair(ctx, id, true)
			return err
		}},
		{"Convert", func(ctx context.Context, s *file.Store, _ string) error {
			return s.Convert(ctx, id, handle.EncodingZstd)
		}},
	}
}
