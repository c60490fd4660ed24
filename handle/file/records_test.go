package file_test

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/afero"
	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/handle/file"
)

// filesOf returns the names of the files of session id in the store's
// folder dir and in its cache folder (the cache's prefixed ".cache/").
func filesOf(t *testing.T, dir, id string) []string {
	t.Helper()
	var out []string
	for _, d := range []string{dir, filepath.Join(dir, ".cache")} {
		entries, err := os.ReadDir(d)
		require.NoError(t, err)
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), id) {
				out = append(out, strings.TrimPrefix(filepath.Join(d, e.Name()), dir+"/"))
			}
		}
	}
	slices.Sort(out)
	return out
}

// A closed small session costs its log and its lock, in every layout:
// what a writer's Close knows (the checked record, the seq it
// acknowledged) is kept in no file of its own, after a create, appends,
// an open for writing that appends nothing, a reader's open and an
// index fold; the record files an older version left go with the next
// writer's Close. Its evidence still makes damage that passes for a torn
// tail corruption (docs/format.md §9).
func TestSmallSessionLeavesLogAndLock(t *testing.T) {
	for _, layout := range crashEncodings {
		t.Run(layout, func(t *testing.T) {
			ctx := t.Context()
			dir := t.TempDir()
			st := file.New(afero.NewOsFs(), dir, inStore(layout)...)
			h, err := st.Create(ctx, handle.WithLabels(map[string]string{"task": "1", "agent": "a"}))
			require.NoError(t, err)
			id, path := h.ID(), h.Path()
			appendAndFlush(t, h, crashEvents(0, 5)...)
			require.NoError(t, h.Close())
			want := []string{filepath.Base(path), id + ".lock"}
			require.Equal(t, want, filesOf(t, dir, id))

			for _, mode := range []handle.Mode{handle.ReadWrite, handle.ReadOnly} {
				h, err = st.Open(ctx, id, mode)
				require.NoError(t, err)
				require.NoError(t, h.Close())
			}
			for _, key := range []string{"acked", "checked"} { // an older version's
				old := filepath.Join(dir, ".cache", id+"."+key)
				require.NoError(t, os.WriteFile(old, file.SealDerived([]byte(`{"next":5}`)), 0o600))
			}
			w, err := st.Open(ctx, id, handle.ReadWrite)
			require.NoError(t, err)
			appendAndFlush(t, w, crashEvents(5, 1)...)
			require.NoError(t, w.Close())
			require.NoError(t, file.FoldIndex(ctx, st, false))
			require.Equal(t, want, filesOf(t, dir, id))
			fi, err := os.Stat(path)
			require.NoError(t, err)
			require.Less(t, fi.Size(), int64(file.CheckedMin))

			if encodingOf(layout) == handle.EncodingRaw {
				// The last row's newline flipped: a torn tail, but for
				// the evidence, which the fold kept.
				b, err := os.ReadFile(path)
				require.NoError(t, err)
				b[len(b)-1] ^= 0x01
				require.NoError(t, os.WriteFile(path, b, 0o600))
				_, err = file.New(afero.NewOsFs(), dir, inStore(layout)...).Open(ctx, id, handle.ReadOnly)
				require.ErrorIs(t, err, eventlog.ErrCorrupt)
				require.Contains(t, err.Error(), "acknowledged")
			}
		})
	}
}

// The evidence of what a session's writers acknowledged lives in the
// session index: in the newest post that says it, then in the snapshot a
// fold writes, and across a rebuild from the logs (which do not hold
// it). A later writer's post raises it; a session deleted and created
// again under its ID, or a repair's cut, starts without it.
func TestEvidenceInTheIndex(t *testing.T) {
	ctx := t.Context()
	fsys := afero.NewMemMapFs()
	unpacked := func(c *handle.Config) { c.PackTypes = []string{} } // a row an event
	st := file.New(fsys, crashDir, unpacked)
	open := func(id string) error {
		h, err := file.New(fsys, crashDir).Open(ctx, id, handle.ReadOnly)
		if err == nil {
			require.NoError(t, h.Close())
		}
		return err
	}
	// tear replaces the log at path by its first rows, then half of the
	// next: damage a crash could not leave when the writer acknowledged
	// the row cut.
	tear := func(path string, rows int) {
		b, err := afero.ReadFile(fsys, path)
		require.NoError(t, err)
		end := 0
		for range rows + 1 { // the header, then rows
			end += bytes.IndexByte(b[end:], '\n') + 1
		}
		next := bytes.IndexByte(b[end:], '\n') + 1
		require.NoError(t, afero.WriteFile(fsys, path, b[:end+next/2], 0o600))
	}
	h, err := st.Create(ctx)
	require.NoError(t, err)
	id, path := h.ID(), h.Path()
	appendAndFlush(t, h, crashEvents(0, 4)...)
	require.NoError(t, h.Close())
	clean, err := afero.ReadFile(fsys, path)
	require.NoError(t, err)

	for _, step := range []struct {
		name string
		do   func()
	}{
		{"a post", func() {}},
		{"a fold", func() { require.NoError(t, file.FoldIndex(ctx, st, false)) }},
		{"a rebuild", func() { require.NoError(t, st.RebuildIndex(ctx)) }},
		{"a reader's open and a writer that appends nothing", func() {
			for _, mode := range []handle.Mode{handle.ReadOnly, handle.ReadWrite} {
				h, err := st.Open(ctx, id, mode)
				require.NoError(t, err)
				require.NoError(t, h.Close())
			}
		}},
	} {
		step.do()
		tear(path, 2)
		require.ErrorIs(t, open(id), eventlog.ErrCorrupt, "after %s", step.name)
		require.NoError(t, afero.WriteFile(fsys, path, clean, 0o600))
	}

	// A writer's post raises it; a writer killed (its pre turned into a
	// post by an open) leaves it standing.
	w, err := st.Open(ctx, id, handle.ReadWrite)
	require.NoError(t, err)
	appendAndFlush(t, w, crashEvents(4, 2)...)
	require.NoError(t, w.Close())
	grown, err := afero.ReadFile(fsys, path)
	require.NoError(t, err)
	tear(path, 5)
	require.ErrorIs(t, open(id), eventlog.ErrCorrupt)
	require.NoError(t, afero.WriteFile(fsys, path, grown, 0o600))

	// A repair's cut resets it: the salvaged log's tail may be torn again.
	tear(path, 3)
	rep, err := st.Repair(ctx, id, true)
	require.NoError(t, err)
	require.Equal(t, int64(3), rep.FirstLost)
	cut, err := afero.ReadFile(fsys, path)
	require.NoError(t, err)
	require.NoError(t, afero.WriteFile(fsys, path, append(cut, `{"seq":3,"ty`...), 0o600))
	require.NoError(t, open(id), "a torn tail after the cut")
	require.NoError(t, file.FoldIndex(ctx, st, false))
	require.NoError(t, open(id), "a torn tail after the cut, folded")

	// Deleted, then created again under its ID: no evidence of the first.
	require.NoError(t, afero.WriteFile(fsys, path, grown, 0o600))
	w, err = st.Open(ctx, id, handle.ReadWrite)
	require.NoError(t, err)
	appendAndFlush(t, w, crashEvents(6, 1)...)
	require.NoError(t, w.Close())
	require.NoError(t, st.Delete(ctx, id))
	again, err := st.Create(ctx, handle.WithID(id))
	require.NoError(t, err)
	require.NoError(t, again.Close())
	b, err := afero.ReadFile(fsys, path)
	require.NoError(t, err)
	require.NoError(t, afero.WriteFile(fsys, path, append(b, `{"seq":0,"ty`...), 0o600))
	require.NoError(t, open(id), "no event of the new session was acknowledged")
}

// The evidence lives in the snapshot's delta too: a fold into the delta
// keeps what the marks said over the snapshot's, and a fold into a new
// snapshot keeps the delta's. A session deleted and created again under
// its ID, whichever way its marks were folded (the delete and the create
// in one delta, in two, the delete in a snapshot, the delete in a delta,
// neither folded yet),
// starts without evidence: the older value of the delta or the snapshot
// does not show through, then or after a fold or a rebuild.
func TestEvidenceInTheDelta(t *testing.T) {
	fold := func(t *testing.T, st *file.Store) { require.NoError(t, file.FoldIndex(t.Context(), st, false)) }
	delta := func(t *testing.T, st *file.Store) { require.NoError(t, file.FoldIndexDelta(t.Context(), st)) }
	for _, tc := range []struct {
		name             string
		deleted, created func(t *testing.T, st *file.Store)
	}{
		{"in one delta", func(*testing.T, *file.Store) {}, delta},
		{"in two deltas", delta, delta},
		{"deleted in a snapshot", func(t *testing.T, st *file.Store) { delta(t, st); fold(t, st) }, delta},
		{"deleted in a delta, created in marks", delta, func(*testing.T, *file.Store) {}},
		{"in marks", func(*testing.T, *file.Store) {}, func(*testing.T, *file.Store) {}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := t.Context()
			fsys := afero.NewMemMapFs()
			unpacked := func(c *handle.Config) { c.PackTypes = []string{} } // a row an event
			st := file.New(fsys, crashDir, unpacked)
			// torn opens session id in a new store with a torn row after
			// its first rows.
			torn := func(id, path string, rows int) error {
				b, err := afero.ReadFile(fsys, path)
				require.NoError(t, err)
				defer func() { require.NoError(t, afero.WriteFile(fsys, path, b, 0o600)) }()
				end := 0
				for range rows + 1 { // the header, then rows
					end += bytes.IndexByte(b[end:], '\n') + 1
				}
				require.NoError(t, afero.WriteFile(fsys, path, append(b[:end:end], `{"seq":`...), 0o600))
				h, err := file.New(fsys, crashDir).Open(ctx, id, handle.ReadOnly)
				if err == nil {
					require.NoError(t, h.Close())
				}
				return err
			}
			h, err := st.Create(ctx)
			require.NoError(t, err)
			id, path := h.ID(), h.Path()
			appendAndFlush(t, h, crashEvents(0, 4)...)
			require.NoError(t, h.Close())
			fold(t, st)
			w, err := st.Open(ctx, id, handle.ReadWrite)
			require.NoError(t, err)
			appendAndFlush(t, w, crashEvents(4, 2)...)
			require.NoError(t, w.Close())
			delta(t, st)
			marks, err := afero.ReadDir(fsys, filepath.Join(crashDir, ".cache", "sessions.d"))
			require.NoError(t, err)
			for _, m := range marks {
				require.False(t, strings.HasPrefix(m.Name(), id), "folded: %s", m.Name())
			}
			require.ErrorIs(t, torn(id, path, 5), eventlog.ErrCorrupt, "the delta's evidence, past the snapshot's")
			fold(t, st)
			require.ErrorIs(t, torn(id, path, 5), eventlog.ErrCorrupt, "the delta's evidence, folded")
			delta(t, st) // nothing marked: a delta of the new snapshot
			w, err = st.Open(ctx, id, handle.ReadWrite)
			require.NoError(t, err)
			appendAndFlush(t, w, crashEvents(6, 1)...)
			require.NoError(t, w.Close())
			delta(t, st)
			require.ErrorIs(t, torn(id, path, 6), eventlog.ErrCorrupt)

			require.NoError(t, st.Delete(ctx, id))
			tc.deleted(t, st)
			again, err := st.Create(ctx, handle.WithID(id))
			require.NoError(t, err)
			require.NoError(t, again.Close())
			tc.created(t, st)
			require.NoError(t, torn(id, path, 0), "no event of the new session was acknowledged")
			fold(t, st)
			require.NoError(t, torn(id, path, 0), "folded")
			require.NoError(t, st.RebuildIndex(ctx))
			require.NoError(t, torn(id, path, 0), "rebuilt")
		})
	}
}

// Stat and a tail read of a sealed session whose last rows are sealed
// under a key whose records stand past the head (a rotation) find those
// records without a checked record (a small log keeps none; a lost one
// costs a read of the framing). Regression: both failed with "data key 1
// cannot be opened" once the record was gone.
func TestRotatedSealedTailWithoutRecord(t *testing.T) {
	for _, enc := range []string{handle.EncodingRaw, handle.EncodingZstd} {
		t.Run(enc, func(t *testing.T) {
			ctx := t.Context()
			fsys := afero.NewMemMapFs()
			a, c := newIdentity(t), newIdentity(t)
			st := file.New(fsys, "/s", handle.WithIdentities(a, c), handle.WithEncoding(enc))
			h, err := st.Create(ctx, handle.WithRecipients(a.Recipient()))
			require.NoError(t, err)
			id := h.ID()
			require.NoError(t, h.Close())
			appendMarkers(t, st, id, 4)
			require.NoError(t, st.RotateKey(ctx, id, c.Recipient()))
			last := appendMarkers(t, st, id, 2)
			ok, err := file.CheckedRecord(ctx, st, id)
			require.NoError(t, err)
			require.False(t, ok, "a small log keeps no checked record")

			fresh := file.New(fsys, "/s", handle.WithIdentities(a, c)) // no key in memory
			info, err := fresh.Stat(ctx, id)
			require.NoError(t, err)
			require.Equal(t, last, info.LastSeq)
			tr, err := file.New(fsys, "/s", handle.WithIdentities(a, c)).OpenTailPath(ctx, info.Path)
			require.NoError(t, err)
			require.Equal(t, last, tr.Seq())
			require.NoError(t, tr.Close())
		})
	}
}
