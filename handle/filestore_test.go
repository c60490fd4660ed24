package handle_test

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/spf13/afero"
	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/handle/storetest"
)

// countingFs counts the bytes read through its files.
type countingFs struct {
	afero.Fs
	n *atomic.Int64
}

func (c countingFs) Open(name string) (afero.File, error) {
	f, err := c.Fs.Open(name)
	if err != nil {
		return nil, err
	}
	return countingFile{f, c.n}, nil
}

func (c countingFs) OpenFile(name string, flag int, perm os.FileMode) (afero.File, error) {
	f, err := c.Fs.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return countingFile{f, c.n}, nil
}

type countingFile struct {
	afero.File
	n *atomic.Int64
}

func (f countingFile) Read(p []byte) (int, error) {
	n, err := f.File.Read(p)
	f.n.Add(int64(n))
	return n, err
}

func (f countingFile) ReadAt(p []byte, off int64) (int, error) {
	n, err := f.File.ReadAt(p, off)
	f.n.Add(int64(n))
	return n, err
}

// rawHarness is the contract-suite harness of a raw FileStore on base.
func rawHarness(t *testing.T, base afero.Fs, dir string) storetest.Harness {
	var n atomic.Int64
	fsys := countingFs{base, &n}
	store := handle.NewFileStore(fsys, dir)
	path := func(t *testing.T, id string) string {
		p, err := store.Path(id)
		require.NoError(t, err)
		return p
	}
	return storetest.Harness{
		Store: store,
		Corrupt: func(t *testing.T, id string, seq int64) (int64, int64) {
			p := path(t, id)
			b, err := afero.ReadFile(base, p)
			require.NoError(t, err)
			off := int64(bytes.IndexByte(b, '\n') + 1) // past the header
			for off < int64(len(b)) {
				end := off + int64(bytes.IndexByte(b[off:], '\n'))
				evs, err := eventlog.DecodeRow(b[off:end])
				require.NoError(t, err)
				if evs[0].Seq <= seq && seq <= evs[len(evs)-1].Seq {
					b[off] = '#'
					require.NoError(t, afero.WriteFile(base, p, b, 0o600))
					return off, evs[0].Seq
				}
				off = end + 1
			}
			t.Fatalf("seq %d not found in %s", seq, p)
			return 0, 0
		},
		Tear: func(t *testing.T, id string, cut int64) {
			p := path(t, id)
			fi, err := base.Stat(p)
			require.NoError(t, err)
			f, err := base.OpenFile(p, os.O_RDWR, 0)
			require.NoError(t, err)
			require.NoError(t, f.Truncate(fi.Size()-cut))
			require.NoError(t, f.Close())
		},
		Size: func(t *testing.T, id string) int64 {
			fi, err := base.Stat(path(t, id))
			require.NoError(t, err)
			return fi.Size()
		},
		BytesRead: n.Load,
	}
}

func TestFileStoreContract(t *testing.T) {
	for _, tc := range []struct {
		name string
		fs   func(t *testing.T) (afero.Fs, string)
	}{
		{"os", func(t *testing.T) (afero.Fs, string) { return afero.NewOsFs(), filepath.Join(t.TempDir(), "sessions") }},
		{"mem", func(t *testing.T) (afero.Fs, string) { return afero.NewMemMapFs(), "/sessions" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			storetest.Run(t, func(t *testing.T) storetest.Harness {
				fsys, dir := tc.fs(t)
				return rawHarness(t, fsys, dir)
			})
		})
	}
}

func TestFileModes(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "sessions")
	store := handle.NewFileStore(afero.NewOsFs(), dir)
	h, err := store.Create(context.Background())
	require.NoError(t, err)
	require.NoError(t, h.Close())
	fi, err := os.Stat(dir)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o700), fi.Mode().Perm())
	fi, err = os.Stat(h.Path())
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	require.Equal(t, filepath.Join(dir, h.ID()+".jsonl"), h.Path())
}

// A reader never sees a half-written row: bytes of a row in progress are
// not an event and not an error.
func TestReaderSeesOnlyCompleteRows(t *testing.T) {
	fsys := afero.NewMemMapFs()
	store := handle.NewFileStore(fsys, "/s")
	ctx := context.Background()
	w, err := store.Create(ctx)
	require.NoError(t, err)
	_, err = w.Append(ctx, eventlog.Event{Type: "a", Time: 1})
	require.NoError(t, err)
	require.NoError(t, w.Flush(ctx))
	r, err := store.Open(ctx, w.ID(), handle.ReadOnly)
	require.NoError(t, err)
	defer r.Close()

	row := []byte(`{"seq":1,"type":"b","time":2,"data":{"x":1}}` + "\n")
	f, err := fsys.OpenFile(w.Path(), os.O_WRONLY|os.O_APPEND, 0)
	require.NoError(t, err)
	defer f.Close()
	for i := range row {
		_, err := f.Write(row[i : i+1])
		require.NoError(t, err)
		var got []eventlog.Event
		for e, err := range r.Read(ctx, 0, handle.End) {
			require.NoError(t, err)
			got = append(got, e)
		}
		want := 1
		if i == len(row)-1 {
			want = 2
		}
		require.Len(t, got, want, "after %d bytes of the row", i+1)
	}
	_ = io.EOF
}
