package file_test

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"filippo.io/age"
	"github.com/klauspost/compress/zstd"
	"github.com/spf13/afero"
	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/handle/file"
	"github.com/sessionlog/sessionlog/handle/storetest"
	"github.com/sessionlog/sessionlog/internal/format/zstdframe"
	"github.com/sessionlog/sessionlog/internal/testkit/countfs"
	"github.com/sessionlog/sessionlog/internal/testkit/sweep"
)

// fileHarness is the contract-suite harness of a FileStore on base that
// creates sessions in the given encoding.
func fileHarness(t *testing.T, base afero.Fs, dir, encoding string) storetest.Harness {
	fsys := countfs.New(base)
	store := file.New(fsys, dir, handle.WithEncoding(encoding))
	path := func(t *testing.T, id string) string {
		p, err := store.Path(id)
		require.NoError(t, err)
		return p
	}
	corrupt := corruptRaw(base, path)
	if encoding == handle.EncodingZstd {
		corrupt = corruptZstd(base, path)
	}
	return storetest.Harness{
		Store:   store,
		Corrupt: corrupt,
		Tear: func(t *testing.T, id string, cut int64) {
			p := path(t, id)
			fi, err := base.Stat(p)
			require.NoError(t, err)
			f, err := base.OpenFile(p, os.O_RDWR, 0)
			require.NoError(t, err)
			require.NoError(t, f.Truncate(fi.Size()-cut))
			require.NoError(t, f.Close())
			file.ForgetAcknowledged(store, id)
		},
		Size: func(t *testing.T, id string) int64 {
			fi, err := base.Stat(path(t, id))
			require.NoError(t, err)
			return fi.Size()
		},
		BytesRead: fsys.BytesRead,
		ReadUnit:  zstdframe.Target, // raw too: a 1.2 MB raw log is read whole from a seq
		Lose: func(t *testing.T, id string) {
			require.NoError(t, base.Remove(path(t, id)))
		},
		WithPolicy: func(_ *testing.T, p handle.FlushPolicy, ticks chan time.Time) handle.Store {
			return file.New(fsys, dir, handle.WithEncoding(encoding), handle.WithFlushPolicy(p), withTicker(ticks))
		},
		Sealing: func(_ *testing.T, rs []age.Recipient, ids []age.Identity) handle.Store {
			return file.New(fsys, dir, handle.WithEncoding(encoding), handle.WithRecipients(rs...), handle.WithIdentities(ids...))
		},
		Raw: func(t *testing.T, id string) []byte {
			b, err := afero.ReadFile(base, path(t, id))
			require.NoError(t, err)
			return b
		},
	}
}

type corruptFunc = func(t *testing.T, id string, seq int64) (int64, int64)

// corruptRaw breaks the first byte of the row that holds seq.
func corruptRaw(base afero.Fs, path func(*testing.T, string) string) corruptFunc {
	return func(t *testing.T, id string, seq int64) (int64, int64) {
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
	}
}

// corruptZstd flips a byte in the middle of the frame that holds seq, so
// that it fails its checksum or decoding.
func corruptZstd(base afero.Fs, path func(*testing.T, string) string) corruptFunc {
	dec, _ := zstd.NewReader(nil)
	return func(t *testing.T, id string, seq int64) (int64, int64) {
		p := path(t, id)
		b, err := afero.ReadFile(base, p)
		require.NoError(t, err)
		frames, _ := zstdframe.Frames(bytes.NewReader(b), int64(len(b)))
		for _, f := range frames[1:] { // the first frame holds the header alone
			if f.Skippable {
				continue
			}
			content, err := dec.DecodeAll(b[f.Offset:f.Offset+f.Len], nil)
			require.NoError(t, err)
			first, err := eventlog.DecodeRow(content[:bytes.IndexByte(content, '\n')])
			require.NoError(t, err)
			lastLine := content[:len(content)-1]
			last, err := eventlog.DecodeRow(lastLine[bytes.LastIndexByte(lastLine, '\n')+1:])
			require.NoError(t, err)
			if first[0].Seq <= seq && seq <= last[len(last)-1].Seq {
				b[f.Offset+f.Len/2] ^= 0xFF
				require.NoError(t, afero.WriteFile(base, p, b, 0o600))
				return f.Offset, first[0].Seq
			}
		}
		t.Fatalf("seq %d not found in %s", seq, p)
		return 0, 0
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
		for _, enc := range []string{handle.EncodingRaw, handle.EncodingZstd} {
			// By default os with zstd and memory with raw, each running
			// every other case (each case once, each file system and
			// encoding in half of them); all four whole under
			// SESSIONLOG_SWEEPS=full.
			part, parts := 0, 1
			if !sweep.Full() {
				if (tc.name == "os") == (enc == handle.EncodingRaw) {
					continue
				}
				part, parts = map[string]int{"os": 0, "mem": 1}[tc.name], 2
			}
			t.Run(tc.name+"/"+enc, func(t *testing.T) {
				t.Parallel()
				storetest.RunPart(t, part, parts, func(t *testing.T) storetest.Harness {
					fsys, dir := tc.fs(t)
					return fileHarness(t, fsys, dir, enc)
				})
			})
		}
	}
}

func TestFileModes(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "sessions")
	store := file.New(afero.NewOsFs(), dir)
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
	store := file.New(fsys, "/s")
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

// Create refuses labels that would make a header too large to open, and
// leaves nothing behind.
func TestCreateRefusesHeaderTooLarge(t *testing.T) {
	ctx := context.Background()
	fsys := afero.NewMemMapFs()
	st := file.New(fsys, "/s")
	_, err := st.Create(ctx, handle.WithLabels(map[string]string{"t": strings.Repeat("a", eventlog.MaxRowSize)}))
	require.ErrorIs(t, err, eventlog.ErrTooLarge)
	infos, err := st.List(ctx)
	require.NoError(t, err)
	require.Empty(t, infos)
}

// withTicker replaces the ticker of FlushPolicy.Interval: the test sends the
// ticks.
func withTicker(ticks chan time.Time) handle.Option {
	return func(c *handle.Config) {
		c.Ticker = func(time.Duration) (<-chan time.Time, func()) { return ticks, func() {} }
	}
}
