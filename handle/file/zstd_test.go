package file_test

// Tests of zstd sessions in a FileStore (docs/format.md §2, §5, §9): what a plain
// zstd decoder makes of a store's file, two files of one session, Stat
// without a tail frame. The helpers (zt…) are shared with convert_test.go.

import (
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"
	"github.com/spf13/afero"
	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/handle/file"
	"github.com/sessionlog/sessionlog/internal/format/zstdframe"
	"github.com/sessionlog/sessionlog/internal/testkit/faultfs"
)

const ztDir = "/sessions"

// ztAppend appends the next n events to h in one flush and returns them.
func ztAppend(t *testing.T, h handle.Handle, n int) []eventlog.Event {
	t.Helper()
	evs := crashEvents(h.Seq()+1, n)
	last, err := h.Append(t.Context(), evs...)
	require.NoError(t, err)
	require.Equal(t, evs[n-1].Seq, last)
	require.NoError(t, h.Flush(t.Context()))
	return evs
}

// ztCreate creates a session in encoding enc, writes one flush per entry
// of flushes (that many events), and returns the open handle and the
// events.
func ztCreate(t *testing.T, st *file.Store, enc string, flushes ...int) (handle.Handle, []eventlog.Event) {
	t.Helper()
	h, err := st.Create(t.Context(), handle.WithEncoding(enc))
	require.NoError(t, err)
	var evs []eventlog.Event
	for _, n := range flushes {
		evs = append(evs, ztAppend(t, h, n)...)
	}
	return h, evs
}

// ztWrite is ztCreate, then Close.
func ztWrite(t *testing.T, st *file.Store, enc string, flushes ...int) (string, []eventlog.Event) {
	t.Helper()
	h, evs := ztCreate(t, st, enc, flushes...)
	require.NoError(t, h.Close())
	return h.ID(), evs
}

// ztRead opens session id read-only and returns its events.
func ztRead(t *testing.T, st *file.Store, id string) []eventlog.Event {
	t.Helper()
	h, err := st.Open(t.Context(), id, handle.ReadOnly)
	require.NoError(t, err)
	defer h.Close()
	return ztReadHandle(t, h)
}

// ztRequireLog checks that session id holds exactly want, read through a
// read-only handle and told by Stat.
func ztRequireLog(t *testing.T, st *file.Store, id string, want []eventlog.Event) {
	t.Helper()
	require.Equal(t, canonLines(want), canonLines(ztRead(t, st, id)))
	info, err := st.Stat(t.Context(), id)
	require.NoError(t, err)
	require.Equal(t, int64(len(want))-1, info.LastSeq)
	require.Equal(t, int64(len(want)), info.Events)
	if len(want) > 0 {
		require.Equal(t, want[len(want)-1].Type, info.LastType)
		require.Equal(t, want[len(want)-1].Time, info.LastTime)
	}
}

// ztFiles returns the names in dir that belong to session id (its logs
// and temp files; not its lock).
func ztFiles(t *testing.T, fsys afero.Fs, dir, id string) []string {
	t.Helper()
	entries, err := afero.ReadDir(fsys, dir)
	require.NoError(t, err)
	var out []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), id) && !strings.HasSuffix(e.Name(), ".lock") {
			out = append(out, e.Name())
		}
	}
	return out
}

// ztFrames returns the data and skippable frames of a zstd file, and
// whether the file ends in a skippable frame.
func ztFrames(t *testing.T, fsys afero.Fs, path string) (data, skippable int, endsSkippable bool) {
	t.Helper()
	b, err := afero.ReadFile(fsys, path)
	require.NoError(t, err)
	frames, end := zstdframe.Frames(bytes.NewReader(b), int64(len(b)))
	require.Equal(t, int64(len(b)), end, "every byte belongs to a frame")
	for _, f := range frames {
		if f.Skippable {
			skippable++
		} else {
			data++
		}
	}
	return data, skippable, len(frames) > 0 && frames[len(frames)-1].Skippable
}

// requireRawLogOf checks that raw is a clean raw log of session h: its
// header, and canonical events equal to what h reads.
func requireRawLogOf(t *testing.T, raw []byte, h handle.Handle, want []eventlog.Event) {
	t.Helper()
	r := eventlog.NewReader(bytes.NewReader(raw))
	hdr, err := r.Header()
	require.NoError(t, err)
	require.Equal(t, h.Header(), hdr)
	var got []eventlog.Event
	for r.Next() {
		got = append(got, r.Event())
	}
	require.NoError(t, r.Err())
	require.Nil(t, r.Torn())
	require.Equal(t, int64(len(raw)), r.End())
	require.Equal(t, canonLines(want), canonLines(got))
	require.Equal(t, canonLines(want), canonLines(ztReadHandle(t, h)))
}

// zstdSessionsOnDisk writes two zstd sessions in an OS folder: one closed
// (its file ends in a tail frame), one still open (no tail frame). It
// returns their handles (the closed one reopened read-only) and events.
func zstdSessionsOnDisk(t *testing.T) (paths []string, hs []handle.Handle, evs [][]eventlog.Event) {
	t.Helper()
	fsys := afero.NewOsFs()
	st := file.New(fsys, filepath.Join(t.TempDir(), "sessions"), handle.WithEncoding(handle.EncodingZstd))
	closedID, closedEvs := ztWrite(t, st, handle.EncodingZstd, 1, 7, 3, 12, 1)
	closed, err := st.Open(t.Context(), closedID, handle.ReadOnly)
	require.NoError(t, err)
	t.Cleanup(func() { closed.Close() })
	open, openEvs := ztCreate(t, st, handle.EncodingZstd, 4, 9, 2)
	t.Cleanup(func() { open.Close() })

	_, _, ends := ztFrames(t, fsys, closed.Path())
	require.True(t, ends, "a closed session ends in a tail frame")
	_, _, ends = ztFrames(t, fsys, open.Path())
	require.False(t, ends, "an open session has no tail frame")
	return []string{closed.Path(), open.Path()}, []handle.Handle{closed, open}, [][]eventlog.Event{closedEvs, openEvs}
}

// docs/format.md §5: decompressing the whole file with any zstd tool yields a raw log.
func TestZstdFileDecompressesToRawLog(t *testing.T) {
	paths, hs, evs := zstdSessionsOnDisk(t)
	for i, p := range paths {
		f, err := os.Open(p)
		require.NoError(t, err)
		zr, err := zstd.NewReader(f)
		require.NoError(t, err)
		raw, err := io.ReadAll(zr)
		zr.Close()
		require.NoError(t, f.Close())
		require.NoError(t, err)
		requireRawLogOf(t, raw, hs[i], evs[i])
	}
}

// The same with the zstd command, when it is installed.
func TestZstdFileDecompressesToRawLogZstdCommand(t *testing.T) {
	zstdCmd, err := exec.LookPath("zstd")
	if err != nil {
		t.Skip("the zstd command is not installed; TestZstdFileDecompressesToRawLog checks the same with the library's decoder")
	}
	paths, hs, evs := zstdSessionsOnDisk(t)
	for i, p := range paths {
		var stderr bytes.Buffer
		cmd := exec.CommandContext(t.Context(), zstdCmd, "-dc", p)
		cmd.Stderr = &stderr
		raw, err := cmd.Output()
		require.NoError(t, err, "zstd -dc %s: %s", p, stderr.String())
		requireRawLogOf(t, raw, hs[i], evs[i])
	}
}

// docs/format.md §2: both encodings of one session present.
func TestZstdDuplicate(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	// setup writes a raw session, converts it to zstd and puts a raw file
	// back beside it: the original bytes, or those of another log.
	setup := func(t *testing.T, sameLog bool) (afero.Fs, *file.Store, string, []eventlog.Event, [2]string) {
		fsys := afero.NewMemMapFs()
		st := file.New(fsys, ztDir)
		id, evs := ztWrite(t, st, handle.EncodingRaw, 3, 4, 2)
		rawPath, err := st.Path(id)
		require.NoError(t, err)
		raw, err := afero.ReadFile(fsys, rawPath)
		require.NoError(t, err)
		require.NoError(t, st.Convert(ctx, id, handle.EncodingZstd))
		zstPath, err := st.Path(id)
		require.NoError(t, err)
		require.Equal(t, rawPath+".zst", zstPath)
		if !sameLog {
			raw = raw[:bytes.LastIndexByte(raw[:len(raw)-1], '\n')+1] // one event fewer
		}
		require.NoError(t, afero.WriteFile(fsys, rawPath, raw, 0o600))
		return fsys, st, id, evs, [2]string{rawPath, zstPath}
	}

	t.Run("different logs are refused", func(t *testing.T) {
		fsys, st, id, _, paths := setup(t, false)
		before := [2][]byte{}
		for i, p := range paths {
			before[i], _ = afero.ReadFile(fsys, p)
		}
		_, err := st.Stat(ctx, id)
		require.ErrorIs(t, err, file.ErrDuplicate)
		for _, mode := range []handle.Mode{handle.ReadOnly, handle.ReadWrite} {
			_, err = st.Open(ctx, id, mode)
			require.ErrorIs(t, err, file.ErrDuplicate)
			require.ErrorContains(t, err, paths[0])
			require.ErrorContains(t, err, paths[1])
		}
		require.ErrorIs(t, st.Convert(ctx, id, handle.EncodingRaw), file.ErrDuplicate)
		for i, p := range paths {
			after, err := afero.ReadFile(fsys, p)
			require.NoError(t, err)
			require.Equal(t, before[i], after, "a refused session is left as it is")
		}
	})

	t.Run("a damaged copy is refused", func(t *testing.T) {
		fsys, st, id, _, paths := setup(t, true)
		raw, err := afero.ReadFile(fsys, paths[0])
		require.NoError(t, err)
		i := bytes.IndexByte(raw, '\n') + 1
		raw[i] = '#'
		require.NoError(t, afero.WriteFile(fsys, paths[0], raw, 0o600))
		_, err = st.Open(ctx, id, handle.ReadOnly)
		require.ErrorIs(t, err, file.ErrDuplicate)
		require.ErrorIs(t, err, eventlog.ErrCorrupt)
		_, err = st.Stat(ctx, id)
		require.ErrorIs(t, err, file.ErrDuplicate)
	})

	for _, newer := range []int{0, 1} {
		t.Run("the same log: the newer is kept, "+[]string{"raw", "zstd"}[newer], func(t *testing.T) {
			fsys, st, id, evs, paths := setup(t, true)
			now := time.Now()
			require.NoError(t, fsys.Chtimes(paths[newer], now, now))
			require.NoError(t, fsys.Chtimes(paths[1-newer], now.Add(-time.Hour), now.Add(-time.Hour)))
			wantEnc := []string{handle.EncodingRaw, handle.EncodingZstd}[newer]

			info, err := st.Stat(ctx, id)
			require.NoError(t, err)
			require.Equal(t, wantEnc, info.Encoding)
			require.Equal(t, paths[newer], info.Path)
			p, err := st.Path(id)
			require.NoError(t, err)
			require.Equal(t, paths[newer], p)
			ztRequireLog(t, st, id, evs)
			require.Len(t, ztFiles(t, fsys, ztDir, id), 2, "readers remove nothing")

			h, err := st.Open(ctx, id, handle.ReadWrite)
			require.NoError(t, err)
			require.Equal(t, paths[newer], h.Path())
			require.Equal(t, []string{filepath.Base(paths[newer])}, ztFiles(t, fsys, ztDir, id), "the writer removes the stale copy")
			evs = append(evs, ztAppend(t, h, 2)...)
			require.NoError(t, h.Close())
			ztRequireLog(t, st, id, evs)
		})
	}
}

// Stat of a zstd session whose writer died (no tail frame) walks the frame
// headers and still finds the last event.
func TestZstdStatAfterWriterCrash(t *testing.T) {
	ffs := faultfs.New(afero.NewMemMapFs())
	st := file.New(ffs, ztDir)
	h, evs := ztCreate(t, st, handle.EncodingZstd, 3, 1, 5, 2)
	t.Cleanup(func() { h.Close() })
	id, path := h.ID(), h.Path()

	// A last flush cut by the power failure: written, never fsynced.
	boom := errors.New("fsync failed")
	ffs.FailNextSync(boom)
	_, err := h.Append(t.Context(), crashEvents(int64(len(evs)), 4)...)
	require.NoError(t, err)
	require.ErrorIs(t, h.Flush(t.Context()), boom)

	for _, tc := range []struct {
		name string
		mode faultfs.CrashMode
		want []eventlog.Event
		torn bool
	}{
		{"acknowledged flushes", faultfs.KeepSynced, evs, false},
		{"the last flush torn", faultfs.TornLast{Keep: 9}, evs, true},
		{"the last flush whole", faultfs.KeepAll, append(slices.Clone(evs), crashEvents(int64(len(evs)), 4)...), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			crashed := ffs.Crash(tc.mode)
			if !tc.torn {
				_, _, ends := ztFrames(t, crashed, path)
				require.False(t, ends, "no tail frame")
			}
			cst := file.New(crashed, ztDir)
			info, err := cst.Stat(t.Context(), id)
			require.NoError(t, err)
			require.Equal(t, handle.EncodingZstd, info.Encoding)
			last := tc.want[len(tc.want)-1]
			require.Equal(t, last.Seq, info.LastSeq)
			require.Equal(t, last.Type, info.LastType)
			require.Equal(t, last.Time, info.LastTime)
			require.Equal(t, int64(len(tc.want)), info.Events)
			ztRequireLog(t, cst, id, tc.want)
		})
	}
}

// A zstd log need not have the header alone in its first frame: a raw log
// compressed whole by a zstd tool is one frame. The store reads it (Read
// starts at the top of the file, as no frame ends after the header),
// appends to it and converts it.
func TestZstdSingleFrameLog(t *testing.T) {
	fsys := afero.NewMemMapFs()
	st := file.New(fsys, ztDir)
	id, evs := ztWrite(t, st, handle.EncodingRaw, 4, 6)
	rawPath, err := st.Path(id)
	require.NoError(t, err)
	raw, err := afero.ReadFile(fsys, rawPath)
	require.NoError(t, err)
	enc, err := zstd.NewWriter(nil)
	require.NoError(t, err)
	defer enc.Close()
	require.NoError(t, afero.WriteFile(fsys, rawPath+".zst", enc.EncodeAll(raw, nil), 0o600))
	require.NoError(t, fsys.Remove(rawPath))

	ztRequireLog(t, st, id, evs)
	h, err := st.Open(t.Context(), id, handle.ReadOnly)
	require.NoError(t, err)
	var got []eventlog.Event
	for e, err := range h.Read(t.Context(), 7, handle.End) {
		require.NoError(t, err)
		got = append(got, e)
	}
	require.NoError(t, h.Close())
	require.Equal(t, canonLines(evs[7:]), canonLines(got))

	w, err := st.Open(t.Context(), id, handle.ReadWrite)
	require.NoError(t, err)
	evs = append(evs, ztAppend(t, w, 3)...)
	require.Equal(t, canonLines(evs), canonLines(ztReadHandle(t, w)))
	require.NoError(t, w.Close())
	ztRequireLog(t, st, id, evs)

	require.NoError(t, st.Compact(t.Context(), id))
	ztRequireLog(t, st, id, evs)
}

// ztReadHandle reads every event of h.
func ztReadHandle(t *testing.T, h handle.Handle) []eventlog.Event {
	t.Helper()
	var evs []eventlog.Event
	for e, err := range h.Read(t.Context(), 0, handle.End) {
		require.NoError(t, err)
		evs = append(evs, e)
	}
	return evs
}
