package file_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/spf13/afero"
	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/handle/file"
	"github.com/sessionlog/sessionlog/internal/format/zstdframe"
)

// opLogFS records, in order, the writes and fsyncs made to files whose
// name ends in suffix.
type opLogFS struct {
	afero.Fs
	suffix string
	mu     sync.Mutex
	ops    []fileOp
}

// fileOp is a write (its bytes) or an fsync (data nil).
type fileOp struct {
	off  int64
	data []byte
}

func (fs *opLogFS) OpenFile(name string, flag int, perm os.FileMode) (afero.File, error) {
	f, err := fs.Fs.OpenFile(name, flag, perm)
	if err != nil || !strings.HasSuffix(name, fs.suffix) {
		return f, err
	}
	return &opLogFile{File: f, fs: fs}, nil
}

func (fs *opLogFS) record(op fileOp) {
	fs.mu.Lock()
	fs.ops = append(fs.ops, op)
	fs.mu.Unlock()
}

type opLogFile struct {
	afero.File
	fs *opLogFS
}

func (f *opLogFile) WriteAt(b []byte, off int64) (int, error) {
	f.fs.record(fileOp{off: off, data: bytes.Clone(b)})
	return f.File.WriteAt(b, off)
}

func (f *opLogFile) Write(b []byte) (int, error) {
	f.fs.record(fileOp{off: -1, data: bytes.Clone(b)})
	return f.File.Write(b)
}

func (f *opLogFile) Sync() error {
	f.fs.record(fileOp{})
	return f.File.Sync()
}

// docs/format.md §5: a zstd writer emits one frame per flush, and §9's torn-tail rule
// rests on it (a damaged frame followed by another is corruption). A batch
// larger than a frame holds (zstdframe.Target of content) must be
// written as several flushes: every write one whole frame, fsynced before
// the next write starts, so a power cut can damage only the last frame.
// Regression: the frames of one large flush went out in one write with one
// fsync, and damage to the first frame with the second intact was
// corruption the writer itself could cause.
func TestZstdLargeFlushOneFramePerWrite(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	fsys := &opLogFS{Fs: afero.NewMemMapFs(), suffix: ".jsonl.zst"}
	st := file.New(fsys, "/s", handle.WithEncoding(handle.EncodingZstd))
	h, err := st.Create(ctx)
	require.NoError(t, err)
	fsys.mu.Lock()
	fsys.ops = nil // the create's header frame
	fsys.mu.Unlock()

	big := json.RawMessage(`{"text":"` + strings.Repeat("x", 1<<20) + `"}`)
	var evs []eventlog.Event
	for i := range 10 {
		evs = append(evs, eventlog.Event{Type: "tool/result", Time: int64(i), Data: big})
	}
	_, err = h.Append(ctx, evs...)
	require.NoError(t, err)
	require.NoError(t, h.Flush(ctx))

	fsys.mu.Lock()
	ops := fsys.ops
	fsys.mu.Unlock()
	writes := 0
	for i, op := range ops {
		if op.data == nil {
			continue
		}
		writes++
		frames, end := zstdframe.Frames(bytes.NewReader(op.data), int64(len(op.data)))
		require.Len(t, frames, 1, "write %d holds one frame", writes)
		require.Equal(t, int64(len(op.data)), end)
		require.Less(t, i+1, len(ops), "write %d is fsynced", writes)
		require.Nil(t, ops[i+1].data, "write %d is fsynced before the next write", writes)
	}
	require.GreaterOrEqual(t, writes, 3, "10 MiB of rows need several frames of at most %d bytes", zstdframe.Target)

	require.NoError(t, h.Close())
	r, err := st.Open(ctx, h.ID(), handle.ReadOnly)
	require.NoError(t, err)
	defer r.Close()
	n := 0
	for e, err := range r.Read(ctx, 0, handle.End) {
		require.NoError(t, err)
		require.Equal(t, string(big), string(e.Data))
		n++
	}
	require.Equal(t, 10, n)
}
