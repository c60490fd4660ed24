package file_test

// Tests of Convert and Compact (docs/format.md §5, docs/cli.md convert): the logical log is
// kept event for event, the swap is atomic whatever fails or crashes, and a
// session that cannot be converted is left as it was.

import (
	"bytes"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/afero"
	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/handle/file"
	"github.com/sessionlog/sessionlog/internal/format/zstdframe"
	"github.com/sessionlog/sessionlog/internal/testkit/faultfs"
)

// ztExt is the file name ending of an encoding.
func ztExt(enc string) string {
	if enc == handle.EncodingZstd {
		return ".jsonl.zst"
	}
	return ".jsonl"
}

func TestConvertRoundTrip(t *testing.T) {
	ctx := t.Context()
	fsys := afero.NewMemMapFs()
	st := file.New(fsys, ztDir)
	flushes := make([]int, 40)
	for i := range flushes {
		flushes[i] = 1 + i%7
	}
	id, evs := ztWrite(t, st, handle.EncodingRaw, flushes...)
	ztRequireLog(t, st, id, evs)

	from := handle.EncodingRaw
	for _, to := range []string{handle.EncodingZstd, handle.EncodingRaw, handle.EncodingZstd} {
		t.Run(from+" to "+to, func(t *testing.T) {
			require.NoError(t, st.Convert(ctx, id, to))
			path := filepath.Join(ztDir, id+ztExt(to))
			p, err := st.Path(id)
			require.NoError(t, err)
			require.Equal(t, path, p)
			require.Equal(t, []string{id + ztExt(to)}, ztFiles(t, fsys, ztDir, id), "the old file is gone, no temp file is left")
			fi, err := fsys.Stat(path)
			require.NoError(t, err)
			require.Equal(t, 0o600, int(fi.Mode().Perm()))

			info, err := st.Stat(ctx, id)
			require.NoError(t, err)
			require.Equal(t, to, info.Encoding)
			require.Equal(t, path, info.Path)
			require.Equal(t, fi.Size(), info.SizeBytes)
			ztRequireLog(t, st, id, evs)
			if to == handle.EncodingZstd {
				data, skippable, ends := ztFrames(t, fsys, path)
				require.Equal(t, 2, data, "the header frame and one frame of rows")
				require.Equal(t, 1, skippable)
				require.True(t, ends, "a converted log ends in a tail frame")
			}

			// The converted session is written to as any other.
			h, err := st.Open(ctx, id, handle.ReadWrite)
			require.NoError(t, err)
			require.Equal(t, path, h.Path())
			require.Nil(t, h.Torn())
			evs = append(evs, ztAppend(t, h, 4)...)
			evs = append(evs, ztAppend(t, h, 1)...)
			require.NoError(t, h.Close())
			ztRequireLog(t, st, id, evs)
			from = to
		})
	}
}

func TestCompact(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	fsys := afero.NewMemMapFs()
	flushes := make([]int, 300)
	for i := range flushes {
		flushes[i] = 1
	}

	t.Run("Compact", func(t *testing.T) {
		st := file.New(fsys, ztDir, handle.WithEncoding(handle.EncodingZstd))
		id, evs := ztWrite(t, st, handle.EncodingZstd, flushes...)
		path, err := st.Path(id)
		require.NoError(t, err)
		data, _, _ := ztFrames(t, fsys, path)
		require.Equal(t, 301, data, "one frame per flush")
		before, err := fsys.Stat(path)
		require.NoError(t, err)

		require.NoError(t, st.Compact(ctx, id))
		data, skippable, ends := ztFrames(t, fsys, path)
		require.Equal(t, 2, data, "the header frame and one frame of rows")
		require.Equal(t, 1, skippable)
		require.True(t, ends)
		after, err := fsys.Stat(path)
		require.NoError(t, err)
		require.Less(t, after.Size(), before.Size()/2)
		require.Equal(t, []string{id + ".jsonl.zst"}, ztFiles(t, fsys, ztDir, id))
		ztRequireLog(t, st, id, evs)

		h, err := st.Open(ctx, id, handle.ReadWrite)
		require.NoError(t, err)
		evs = append(evs, ztAppend(t, h, 2)...)
		require.NoError(t, h.Close())
		ztRequireLog(t, st, id, evs)
	})

	t.Run("CompactOnClose", func(t *testing.T) {
		st := file.New(fsys, ztDir, handle.WithEncoding(handle.EncodingZstd), func(c *handle.Config) { c.CompactOnClose = true })
		h, evs := ztCreate(t, st, handle.EncodingZstd, flushes...)
		data, _, _ := ztFrames(t, fsys, h.Path())
		require.Equal(t, 301, data)
		require.NoError(t, h.Close())
		data, _, ends := ztFrames(t, fsys, h.Path())
		require.Equal(t, 2, data)
		require.True(t, ends)
		require.Equal(t, []string{h.ID() + ".jsonl.zst"}, ztFiles(t, fsys, ztDir, h.ID()))
		ztRequireLog(t, st, h.ID(), evs)

		// Reopened and closed again, it is compacted again.
		w, err := st.Open(ctx, h.ID(), handle.ReadWrite)
		require.NoError(t, err)
		for range 20 {
			evs = append(evs, ztAppend(t, w, 1)...)
		}
		require.NoError(t, w.Close())
		data, _, _ = ztFrames(t, fsys, h.Path())
		require.Equal(t, 2, data)
		ztRequireLog(t, st, h.ID(), evs)

		// A raw session is left as it is.
		rid, revs := ztWrite(t, st, handle.EncodingRaw, 1, 1, 1)
		require.Equal(t, []string{rid + ".jsonl"}, ztFiles(t, fsys, ztDir, rid))
		ztRequireLog(t, st, rid, revs)
	})
}

func TestConvertLocked(t *testing.T) {
	ctx := t.Context()
	fsys := afero.NewMemMapFs()
	st := file.New(fsys, ztDir)
	for _, enc := range []string{handle.EncodingRaw, handle.EncodingZstd} {
		t.Run(enc, func(t *testing.T) {
			h, evs := ztCreate(t, st, enc, 2, 3)
			before, err := afero.ReadFile(fsys, h.Path())
			require.NoError(t, err)
			for _, to := range []string{handle.EncodingRaw, handle.EncodingZstd} {
				require.ErrorIs(t, st.Convert(ctx, h.ID(), to), handle.ErrLocked)
			}
			require.ErrorIs(t, st.Compact(ctx, h.ID()), handle.ErrLocked)
			after, err := afero.ReadFile(fsys, h.Path())
			require.NoError(t, err)
			require.Equal(t, before, after)
			require.Equal(t, []string{filepath.Base(h.Path())}, ztFiles(t, fsys, ztDir, h.ID()))

			// The writer goes on, and once it is gone the convert runs.
			evs = append(evs, ztAppend(t, h, 2)...)
			require.NoError(t, h.Close())
			other := map[string]string{handle.EncodingRaw: handle.EncodingZstd, handle.EncodingZstd: handle.EncodingRaw}[enc]
			require.NoError(t, st.Convert(ctx, h.ID(), other))
			ztRequireLog(t, st, h.ID(), evs)
		})
	}
}

func TestConvertErrors(t *testing.T) {
	ctx := t.Context()
	fsys := afero.NewMemMapFs()
	st := file.New(fsys, ztDir)
	id, _ := ztWrite(t, st, handle.EncodingRaw, 2)
	require.ErrorIs(t, st.Convert(ctx, "01JDX3N0Q3Z8Y6W2D1V5K7M9PA", handle.EncodingZstd), handle.ErrNotFound)
	require.ErrorIs(t, st.Convert(ctx, "../etc/passwd", handle.EncodingZstd), handle.ErrInvalidID)
	require.ErrorIs(t, st.Compact(ctx, strings.ToLower(id)), handle.ErrInvalidID)
	require.ErrorContains(t, st.Convert(ctx, id, "gzip"), `unknown encoding "gzip"`)
	require.Equal(t, []string{id + ".jsonl"}, ztFiles(t, fsys, ztDir, id))
}

// A log that cannot be read whole is not converted: the error names the
// damage, the file is left byte for byte, and no temp file remains.
func TestConvertCorrupt(t *testing.T) {
	ctx := t.Context()
	// damage breaks a row (raw) or frame (zstd) in the middle of the log.
	damage := func(t *testing.T, enc string, b []byte) {
		if enc == handle.EncodingRaw {
			lines := bytes.SplitAfter(b, []byte("\n"))
			i := len(lines[0]) + len(lines[1]) + len(lines[2])
			b[i+1] = '#'
			return
		}
		frames, _ := zstdframe.Frames(bytes.NewReader(b), int64(len(b)))
		f := frames[2]
		require.False(t, f.Skippable)
		b[f.Offset+f.Len-1] ^= 0xFF // its checksum
	}
	for _, from := range []string{handle.EncodingRaw, handle.EncodingZstd} {
		for _, to := range []string{handle.EncodingRaw, handle.EncodingZstd} {
			t.Run(from+" to "+to, func(t *testing.T) {
				fsys := afero.NewMemMapFs()
				st := file.New(fsys, ztDir)
				id, _ := ztWrite(t, st, from, 2, 2, 2, 2)
				path, err := st.Path(id)
				require.NoError(t, err)
				b, err := afero.ReadFile(fsys, path)
				require.NoError(t, err)
				damage(t, from, b)
				require.NoError(t, afero.WriteFile(fsys, path, b, 0o600))

				err = st.Convert(ctx, id, to)
				require.ErrorIs(t, err, eventlog.ErrCorrupt)
				var ce *eventlog.CorruptError
				require.ErrorAs(t, err, &ce)
				require.Equal(t, path, ce.Path)
				after, err := afero.ReadFile(fsys, path)
				require.NoError(t, err)
				require.Equal(t, b, after, "the log is left as it was")
				require.Equal(t, []string{filepath.Base(path)}, ztFiles(t, fsys, ztDir, id), "no temp file remains")
				_, err = st.Open(ctx, id, handle.ReadOnly)
				require.ErrorIs(t, err, eventlog.ErrCorrupt)
			})
		}
	}
}

// A torn tail is not carried over: the converted log is clean and holds
// the acknowledged events.
func TestConvertTornTail(t *testing.T) {
	ctx := t.Context()
	for _, from := range []string{handle.EncodingRaw, handle.EncodingZstd} {
		t.Run(from, func(t *testing.T) {
			fsys := afero.NewMemMapFs()
			st := file.New(fsys, ztDir)
			id, evs := ztWrite(t, st, from, 3, 3)
			path, err := st.Path(id)
			require.NoError(t, err)
			b, err := afero.ReadFile(fsys, path)
			require.NoError(t, err)
			require.NoError(t, afero.WriteFile(fsys, path, append(b, "\x28\xb5\x2f\xfd{\"seq\":6"...), 0o600))
			h, err := st.Open(ctx, id, handle.ReadOnly)
			require.NoError(t, err)
			require.NotNil(t, h.Torn())
			require.NoError(t, h.Close())

			to := map[string]string{handle.EncodingRaw: handle.EncodingZstd, handle.EncodingZstd: handle.EncodingRaw}[from]
			require.NoError(t, st.Convert(ctx, id, to))
			h, err = st.Open(ctx, id, handle.ReadOnly)
			require.NoError(t, err)
			require.Nil(t, h.Torn())
			require.NoError(t, h.Close())
			ztRequireLog(t, st, id, evs)
		})
	}
}

// A crash at any moment of a convert leaves the old file, or the new one,
// or both with the same log: the session opens with its log intact, and a
// writer's open leaves one file.
func TestConvertCrash(t *testing.T) {
	t.Parallel()
	injected := errors.New("injected fault")
	type step struct {
		name string
		op   faultfs.Op
		// file is the name the op applies to: "old", "new", "tmp" or "dir".
		file string
		n    int // the nth such op of the convert
		// survivors is which files a power cut then leaves.
		survivors []string
	}
	steps := []step{
		{"fsync of the temp file", faultfs.OpSync, "tmp", 1, []string{"old"}},
		{"rename of the temp file", faultfs.OpRename, "new", 1, []string{"old"}},
		{"folder fsync after the rename", faultfs.OpDirSync, "dir", 1, []string{"old"}},
		{"removal of the old file", faultfs.OpRemove, "old", 1, []string{"old", "new"}},
		{"folder fsync after the removal", faultfs.OpDirSync, "dir", 2, []string{"old", "new"}},
		{"nothing: the convert completes", 0, "", 0, []string{"new"}},
	}
	modes := []struct {
		name string
		mode faultfs.CrashMode
	}{{"KeepSynced", faultfs.KeepSynced}, {"KeepAll", faultfs.KeepAll}}
	t.Logf("figure: power-cut: convert (raw to zstd and back, a fault at each step) | both | %d crash points", 2*len(steps)*len(modes))
	for _, from := range []string{handle.EncodingRaw, handle.EncodingZstd} {
		to := map[string]string{handle.EncodingRaw: handle.EncodingZstd, handle.EncodingZstd: handle.EncodingRaw}[from]
		for _, s := range steps {
			t.Run(from+" to "+to+"/"+s.name, func(t *testing.T) {
				ffs := faultfs.New(afero.NewMemMapFs())
				st := file.New(ffs, ztDir)
				id, evs := ztWrite(t, st, from, 3, 1, 4, 2)
				names := map[string]string{
					"old": filepath.Join(ztDir, id+ztExt(from)),
					"new": filepath.Join(ztDir, id+ztExt(to)),
					"tmp": filepath.Join(ztDir, id+ztExt(to)+".tmp"),
					"dir": ztDir,
				}
				seen := 0
				ffs.SetHook(func(op faultfs.Op, name string) error {
					if op == s.op && name == names[s.file] {
						if seen++; seen == s.n {
							return injected
						}
					}
					return nil
				})
				err := st.Convert(t.Context(), id, to)
				ffs.SetHook(nil)
				if s.op == 0 {
					require.NoError(t, err)
				} else {
					require.ErrorIs(t, err, injected)
					require.Equal(t, s.n, seen, "the fault was injected")
				}

				for _, m := range modes {
					t.Run(m.name, func(t *testing.T) {
						crashed := m.mode
						cfs := ffs.Crash(crashed)
						var want []string
						for _, f := range s.survivors {
							want = append(want, filepath.Base(names[f]))
						}
						require.ElementsMatch(t, want, ztFiles(t, cfs, ztDir, id), "files after the crash")

						cst := file.New(cfs, ztDir)
						ztRequireLog(t, cst, id, evs)
						h, err := cst.Open(t.Context(), id, handle.ReadWrite)
						require.NoError(t, err)
						require.Nil(t, h.Torn())
						require.Len(t, ztFiles(t, cfs, ztDir, id), 1, "a writer's open leaves one file")
						more := append(evs[:len(evs):len(evs)], ztAppend(t, h, 2)...)
						require.NoError(t, h.Close())
						ztRequireLog(t, cst, id, more)
						require.Len(t, ztFiles(t, cfs, ztDir, id), 1)
					})
				}
			})
		}
	}
}

// A compaction rewrites the file under its own name: a crash leaves the
// old frames or the new ones, never a mix.
func TestCompactCrash(t *testing.T) {
	t.Parallel()
	injected := errors.New("injected fault")
	steps := []struct {
		name string
		op   faultfs.Op
		tmp  bool // the op applies to the temp file, else to the final name or folder
	}{
		{"fsync of the temp file", faultfs.OpSync, true},
		{"rename of the temp file", faultfs.OpRename, false},
		{"folder fsync after the rename", faultfs.OpDirSync, false},
		{"nothing: the compaction completes", 0, false},
	}
	t.Logf("figure: power-cut: compact (a fault at each step) | zstd | %d crash points", len(steps))
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			ffs := faultfs.New(afero.NewMemMapFs())
			st := file.New(ffs, ztDir)
			id, evs := ztWrite(t, st, handle.EncodingZstd, 1, 1, 1, 1, 1, 1, 1, 1)
			path := filepath.Join(ztDir, id+".jsonl.zst")
			before, err := afero.ReadFile(ffs, path)
			require.NoError(t, err)
			target := map[faultfs.Op]string{faultfs.OpSync: path + ".tmp", faultfs.OpRename: path, faultfs.OpDirSync: ztDir}[s.op]
			ffs.SetHook(func(op faultfs.Op, name string) error {
				if op == s.op && name == target {
					return injected
				}
				return nil
			})
			err = st.Compact(t.Context(), id)
			ffs.SetHook(nil)
			if s.op == 0 {
				require.NoError(t, err)
			} else {
				require.ErrorIs(t, err, injected)
			}

			crashed := ffs.Crash(faultfs.KeepSynced)
			require.Equal(t, []string{id + ".jsonl.zst"}, ztFiles(t, crashed, ztDir, id))
			after, err := afero.ReadFile(crashed, path)
			require.NoError(t, err)
			data, _, _ := ztFrames(t, crashed, path)
			if s.op == 0 {
				require.Equal(t, 2, data, "compacted")
			} else {
				require.Equal(t, before, after, "the old frames, untouched")
			}
			cst := file.New(crashed, ztDir)
			ztRequireLog(t, cst, id, evs)
			h, err := cst.Open(t.Context(), id, handle.ReadWrite)
			require.NoError(t, err)
			evs = append(evs, ztAppend(t, h, 3)...)
			require.NoError(t, h.Close())
			ztRequireLog(t, cst, id, evs)
		})
	}
}
