package file_test

import (
	"errors"
	"fmt"
	"iter"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/afero"
	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/handle/file"
	"github.com/sessionlog/sessionlog/internal/testkit/countfs"
	"github.com/sessionlog/sessionlog/internal/testkit/faultfs"
	"github.com/sessionlog/sessionlog/internal/testkit/sweep"
)

// truthOf describes every session of the store in dir on fsys from its
// log, without any index: what the index must answer.
func truthOf(t *testing.T, fsys afero.Fs, dir string) map[string]handle.Info {
	t.Helper()
	st := crashStore(fsys)
	if dir != crashDir {
		st = file.New(fsys, dir, handle.WithIdentities(crashIdentity))
	}
	entries, err := afero.ReadDir(fsys, dir)
	if errors.Is(err, os.ErrNotExist) {
		return map[string]handle.Info{}
	}
	require.NoError(t, err)
	out := map[string]handle.Info{}
	for _, e := range entries {
		id, _, ok := file.ParseFileName(e.Name())
		if !ok {
			continue
		}
		info, err := st.Stat(t.Context(), id)
		require.NoError(t, err, "%s", id)
		out[id] = info
	}
	return out
}

// listed is what List answers of st, by ID.
func listed(t *testing.T, st handle.Store, opts ...handle.Option) map[string]handle.Info {
	t.Helper()
	infos, err := st.List(t.Context(), opts...)
	require.NoError(t, err)
	out := map[string]handle.Info{}
	for _, in := range infos {
		_, dup := out[in.ID]
		require.False(t, dup, "%s listed twice", in.ID)
		out[in.ID] = in
	}
	return out
}

// requireIndexTrue checks that a new store on fsys answers List, an ID
// prefix, a label query and Dependents as the logs say.
func requireIndexTrue(t *testing.T, fsys afero.Fs, dir string) {
	t.Helper()
	want := truthOf(t, fsys, dir)
	st := file.New(fsys, dir, handle.WithIdentities(crashIdentity))
	got := listed(t, st)
	require.Equal(t, slices.Sorted(maps.Keys(want)), slices.Sorted(maps.Keys(got)), "the index names exactly the sessions present")
	require.Equal(t, want, got, "each as Stat describes it")
	for id, in := range want {
		byPrefix := listed(t, st, handle.WithID(id[:20]))
		require.Contains(t, byPrefix, id)
		for k, v := range in.Header.Labels {
			require.Contains(t, listed(t, st, handle.WithLabels(map[string]string{k: v})), id, "label %s=%s", k, v)
		}
		if p := in.Header.Parent; p != nil && p.Mode == eventlog.ModeFork {
			deps, err := st.Dependents(t.Context(), p.ID)
			require.NoError(t, err)
			require.Contains(t, deps, id)
		}
	}
}

// indexStore is a store holding a parent P with events, a fork F of it,
// a child C, and an old session O, built on fsys; it returns their IDs.
func indexStore(t *testing.T, fsys afero.Fs) (p, f, c, o string) {
	t.Helper()
	ctx := t.Context()
	st := crashStore(fsys)
	h, err := st.Create(ctx, handle.WithLabels(map[string]string{"agent": "coder", "task": "t1"}))
	require.NoError(t, err)
	appendAndFlush(t, h, crashEvents(0, 3)...)
	require.NoError(t, h.Close())
	fk, err := st.Fork(ctx, h.ID(), 1, handle.WithLabels(map[string]string{"agent": "coder", "task": "t2"}))
	require.NoError(t, err)
	require.NoError(t, fk.Close())
	ch, err := st.Create(ctx, handle.WithParent(eventlog.Parent{ID: h.ID(), Seq: 2, Mode: eventlog.ModeChild, Call: "c1"}))
	require.NoError(t, err)
	require.NoError(t, ch.Close())
	old, err := st.Create(ctx, handle.WithCreatedAt(1000), handle.WithLabels(map[string]string{"task": "old"}))
	require.NoError(t, err)
	require.NoError(t, old.Close())
	_, err = st.List(ctx) // the snapshot, then the marks of what follows
	require.NoError(t, err)
	return h.ID(), fk.ID(), ch.ID(), old.ID()
}

func TestIndexAnswersAsTheLogs(t *testing.T) {
	ctx := t.Context()
	fsys := afero.NewMemMapFs()
	p, f, c, o := indexStore(t, fsys)
	requireIndexTrue(t, fsys, crashDir)
	st := crashStore(fsys)

	// Changes after the snapshot are answered from their marks.
	h, err := st.Open(ctx, p, handle.ReadWrite)
	require.NoError(t, err)
	appendAndFlush(t, h, crashEvents(3, 2)...)
	requireIndexTrue(t, fsys, crashDir) // a writer's session, described afresh
	require.NoError(t, h.Close())
	requireIndexTrue(t, fsys, crashDir)

	children, err := st.Children(ctx, p)
	require.NoError(t, err)
	want := []string{c, f}
	slices.Sort(want)
	require.Equal(t, want, sortedIDs(children))
	chain, gone, err := st.Ancestors(ctx, f)
	require.NoError(t, err)
	require.Empty(t, gone)
	require.Len(t, chain, 1)
	require.Equal(t, p, chain[0].ID)

	// SessionTree is the tree of the forest Tree gives that holds the session.
	forest, err := st.Tree(ctx)
	require.NoError(t, err)
	for _, from := range []string{p, f, c} {
		one, err := st.TreeOf(ctx, from)
		require.NoError(t, err)
		var whole *handle.Node
		for _, r := range forest {
			if r.Header.ID == p {
				whole = r
			}
		}
		require.NotNil(t, whole)
		require.Equal(t, shapeOf(whole), shapeOf(one), "from %s", from)
	}

	info, err := st.Resolve(ctx, "task=t2")
	require.NoError(t, err)
	require.Equal(t, f, info.ID)
	_, err = st.Resolve(ctx, "task=t") // not a prefix of a value
	require.ErrorIs(t, err, handle.ErrNotFound)
	info, err = st.Resolve(ctx, strings.ToLower(o[:24]))
	require.NoError(t, err)
	require.Equal(t, o, info.ID)

	require.NoError(t, st.Delete(ctx, c))
	requireIndexTrue(t, fsys, crashDir)
	_, err = st.Stat(ctx, c)
	require.ErrorIs(t, err, handle.ErrNotFound)
}

func sortedIDs(hs []eventlog.Header) []string {
	var out []string
	for _, h := range hs {
		out = append(out, h.ID)
	}
	slices.Sort(out)
	return out
}

// TestIndexPages pages through List with Limit and Before: the pages
// join into the whole list in ls's order, before and after the marks are
// folded into the snapshot.
func TestIndexPages(t *testing.T) {
	ctx := t.Context()
	fsys := afero.NewMemMapFs()
	st := crashStore(fsys)
	for i := range 23 {
		h, err := st.Create(ctx, handle.WithCreatedAt(int64(1000+i%7)), handle.WithLabels(map[string]string{"n": fmt.Sprint(i % 3)}))
		require.NoError(t, err)
		if i%4 == 0 {
			ev := crashEvents(0, 1)
			ev[0].Time = int64(5000 - i)
			appendAndFlush(t, h, ev...)
		}
		require.NoError(t, h.Close())
		if i == 11 {
			_, err := st.List(ctx) // half in the snapshot, half in marks
			require.NoError(t, err)
		}
	}
	// Half in marks, then (another store, which folds past 4 marks) in
	// the snapshot's delta.
	delta := crashStore(fsys)
	file.SetIndexFoldAt(delta, 4, 1000)
	for _, st := range []*file.Store{st, delta} {
		requirePages(t, st)
	}
	exists, err := afero.Exists(fsys, filepath.Join(crashDir, ".cache", "sessions.delta"))
	require.NoError(t, err)
	require.True(t, exists)
	require.ErrorIs(t, new(handle.Cursor).UnmarshalText([]byte("12.notanid")), handle.ErrInvalidID)
}

// requirePages checks that st lists its 23 sessions by activity, and
// that pages of 5 after each cursor make the whole list, all and by a
// label.
func requirePages(t *testing.T, st *file.Store) {
	ctx := t.Context()
	want, err := st.List(ctx, handle.Page(0, handle.Cursor{}))
	require.NoError(t, err)
	require.Len(t, want, 23)
	for i := 1; i < len(want); i++ {
		a, b := want[i-1], want[i]
		require.True(t, a.LastActive() > b.LastActive() || a.LastActive() == b.LastActive() && a.ID > b.ID, "ls's order")
	}
	for _, filter := range [][]handle.Option{nil, {handle.WithLabels(map[string]string{"n": "1"})}} {
		all, err := st.List(ctx, append(slices.Clone(filter), handle.Page(0, handle.Cursor{}))...)
		require.NoError(t, err)
		var pages []handle.Info
		var before handle.Cursor
		for {
			page, err := st.List(ctx, append(slices.Clone(filter), handle.Page(5, before))...)
			require.NoError(t, err)
			require.LessOrEqual(t, len(page), 5)
			if len(page) == 0 {
				break
			}
			pages = append(pages, page...)
			c := page[len(page)-1].Cursor()
			text, err := c.MarshalText()
			require.NoError(t, err)
			var back handle.Cursor
			require.NoError(t, back.UnmarshalText(text))
			require.Equal(t, c, back)
			before = c
		}
		require.Equal(t, all, pages)
	}
}

// TestIndexLostOrStaleRebuilt deletes, damages and outdates the index by
// hand: each is found at the next open and rebuilt from the logs.
func TestIndexLostOrStaleRebuilt(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	fsys := afero.NewOsFs()
	st := file.New(fsys, dir)
	var ids []string
	for i := range 5 {
		h, err := st.Create(ctx, handle.WithLabels(map[string]string{"i": fmt.Sprint(i)}))
		require.NoError(t, err)
		require.NoError(t, h.Close())
		ids = append(ids, h.ID())
	}
	idx := filepath.Join(dir, ".cache", "sessions.idx")
	requireIndexTrue(t, fsys, dir)
	_, err := os.Stat(idx)
	require.NoError(t, err, "the snapshot is written")

	t.Run("deleted", func(t *testing.T) {
		require.NoError(t, os.RemoveAll(filepath.Join(dir, ".cache")))
		requireIndexTrue(t, fsys, dir)
	})
	t.Run("damaged", func(t *testing.T) {
		b, err := os.ReadFile(idx)
		require.NoError(t, err)
		i := strings.Index(string(b), `"i":"3"`)
		require.Positive(t, i)
		b[i+5] = '4' // a label changed, its sum not
		require.NoError(t, os.WriteFile(idx, b, 0o600))
		info, err := file.New(fsys, dir).Resolve(ctx, "i=3")
		require.NoError(t, err)
		require.Equal(t, ids[3], info.ID)
		requireIndexTrue(t, fsys, dir)
	})
	t.Run("a log removed by hand", func(t *testing.T) {
		_, err := file.New(fsys, dir).List(ctx)
		require.NoError(t, err)
		gone := filepath.Join(dir, ids[0]+".jsonl")
		saved, err := os.ReadFile(gone)
		require.NoError(t, err)
		require.NoError(t, os.Remove(gone))
		later(t, dir)
		requireIndexTrue(t, fsys, dir)
		t.Run("and copied back", func(t *testing.T) {
			require.NoError(t, os.WriteFile(gone, saved, 0o600))
			later(t, dir)
			requireIndexTrue(t, fsys, dir)
			require.Len(t, listed(t, file.New(fsys, dir)), 5)
		})
	})
	t.Run("restored from the logs alone", func(t *testing.T) {
		restored := t.TempDir()
		for _, id := range ids {
			b, err := os.ReadFile(filepath.Join(dir, id+".jsonl"))
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(filepath.Join(restored, id+".jsonl"), b, 0o600))
		}
		requireIndexTrue(t, fsys, restored)
		require.Len(t, listed(t, file.New(fsys, restored)), 5)
	})
}

// TestIndexKilledAtEveryStep kills an operation at each file-system
// operation it makes (from there on every operation fails, as nothing
// runs in a killed process) and opens the store again: the index names
// exactly the sessions present, each as its log describes it.
func TestIndexKilledAtEveryStep(t *testing.T) {
	t.Parallel()
	ops := []struct {
		name string
		run  func(t *testing.T, st *file.Store, p, f, c, o string) error
	}{
		{"create", func(t *testing.T, st *file.Store, _, _, _, _ string) error {
			h, err := st.Create(t.Context(), handle.WithLabels(map[string]string{"new": "1"}))
			if err != nil {
				return err
			}
			if _, err := h.Append(t.Context(), crashEvents(0, 2)...); err != nil {
				h.Close()
				return err
			}
			return h.Close()
		}},
		{"fork", func(t *testing.T, st *file.Store, p, _, _, _ string) error {
			h, err := st.Fork(t.Context(), p, 2)
			if err != nil {
				return err
			}
			return h.Close()
		}},
		{"createfrom", func(t *testing.T, st *file.Store, _, _, _, _ string) error {
			_, err := st.CreateFrom(t.Context(), seqOf(crashEvents(0, 3)), handle.WithLabels(map[string]string{"copy": "1"}))
			return err
		}},
		{"delete", func(t *testing.T, st *file.Store, _, _, c, _ string) error {
			return st.Delete(t.Context(), c)
		}},
		{"delete-cascade", func(t *testing.T, st *file.Store, p, _, _, _ string) error {
			return st.Delete(t.Context(), p, handle.Cascade())
		}},
		{"detach", func(t *testing.T, st *file.Store, _, f, _, _ string) error {
			return st.Detach(t.Context(), f)
		}},
		{"gc", func(t *testing.T, st *file.Store, _, _, _, _ string) error {
			_, err := st.GC(t.Context(), time.UnixMilli(2000), false)
			return err
		}},
		{"convert", func(t *testing.T, st *file.Store, p, _, _, _ string) error {
			return st.Convert(t.Context(), p, handle.EncodingZstd)
		}},
	}
	for _, op := range ops {
		t.Run(op.name, func(t *testing.T) {
			base := afero.NewMemMapFs()
			p, f, c, o := indexStore(t, base)
			_, err := crashStore(base).GC(t.Context(), time.UnixMilli(0), false) // no sweep owed
			require.NoError(t, err)
			snap := copyFs(t, base)
			// The operations it makes, unhindered.
			fsys := faultfs.New(copyFs(t, snap))
			var names []string
			fsys.SetHook(func(op faultfs.Op, name string) error { names = append(names, opName(op, name)); return nil })
			require.NoError(t, op.run(t, crashStore(fsys), p, f, c, o))
			fsys.SetHook(nil)
			require.NotEmpty(t, names)
			// Every step under SESSIONLOG_SWEEPS=full, else a sample of
			// 5 (the last among them).
			for _, k := range sweep.Points(len(names), 5, t.Name()) {
				t.Run(fmt.Sprintf("killed-%02d-%s", k, names[k]), func(t *testing.T) {
					fsys := faultfs.New(copyFs(t, snap))
					n := 0
					killed := errors.New("killed")
					fsys.SetHook(func(faultfs.Op, string) error {
						n++
						if n > k {
							return killed
						}
						return nil
					})
					op.run(t, crashStore(fsys), p, f, c, o)
					fsys.SetHook(nil)
					requireIndexTrue(t, fsys, crashDir)
					// What the kill left in the store's folder, GC sweeps:
					// the open that found the change cut short owes it a
					// sweep. Derived data is written under no mark: its
					// temp files go once the last sweep is older than
					// GC's cutoff.
					st := crashStore(fsys)
					_, err := st.GC(t.Context(), time.UnixMilli(0), false)
					require.NoError(t, err)
					for _, p := range filesIn(t, fsys) {
						require.False(t, strings.HasSuffix(p, ".tmp") && filepath.Dir(p) == crashDir, "left after GC: %s", p)
					}
					_, err = st.GC(t.Context(), time.Now().Add(time.Minute), false)
					require.NoError(t, err)
					for _, p := range filesIn(t, fsys) {
						require.False(t, strings.HasSuffix(p, ".tmp") && !strings.HasSuffix(p, "sessions.idx.tmp"), "left after GC: %s", p)
					}
				})
			}
		})
	}
}

// copyFs returns a memory file system holding what fsys holds.
func copyFs(t *testing.T, fsys afero.Fs) afero.Fs {
	t.Helper()
	out := afero.NewMemMapFs()
	require.NoError(t, afero.Walk(fsys, "/", func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		if fi.IsDir() {
			return out.MkdirAll(p, fi.Mode().Perm())
		}
		b, err := afero.ReadFile(fsys, p)
		if err != nil {
			return err
		}
		return afero.WriteFile(out, p, b, fi.Mode().Perm())
	}))
	return out
}

// seqOf yields evs.
func seqOf(evs []eventlog.Event) iter.Seq2[eventlog.Event, error] {
	return func(yield func(eventlog.Event, error) bool) {
		for _, e := range evs {
			if !yield(e, nil) {
				return
			}
		}
	}
}

// later sets folder dir's modification time a second ahead: a change by
// hand is seen by the time it leaves on the folder, which a coarse clock
// may give the store's last change too.
func later(t *testing.T, dir string) {
	t.Helper()
	fi, err := os.Stat(dir)
	require.NoError(t, err)
	next := fi.ModTime().Add(time.Second)
	require.NoError(t, os.Chtimes(dir, next, next))
}

// shapeOf writes a tree as its IDs, nested.
func shapeOf(n *handle.Node) string {
	out := n.Header.ID + "("
	for _, c := range n.Children {
		out += shapeOf(c) + " "
	}
	return out + ")"
}

// TestDeleteDropsDerivedWithoutListing deletes a session with derived
// data under keys of its own and others': every derived file of it goes,
// and the cache folder, whose size grows with the store, is not listed.
func TestDeleteDropsDerivedWithoutListing(t *testing.T) {
	ctx := t.Context()
	fsys := faultfs.New(afero.NewMemMapFs())
	st := crashStore(fsys)
	p, _, c, o := indexStore(t, fsys)
	for _, k := range []string{"snap-1", "state.12", "facts"} {
		require.NoError(t, st.PutDerived(ctx, o, k, []byte("x")))
		require.NoError(t, st.PutDerived(ctx, o, k, []byte("y")))
		require.NoError(t, st.PutDerived(ctx, p, k, []byte("kept")))
	}
	var ops []string
	fsys.SetHook(func(op faultfs.Op, name string) error { ops = append(ops, opName(op, name)); return nil })
	require.NoError(t, st.Delete(ctx, o))
	require.NoError(t, st.Delete(ctx, c))
	fsys.SetHook(nil)
	require.NotContains(t, ops, "open-.cache", "the cache folder is not listed")
	left, err := afero.Glob(fsys, filepath.Join(crashDir, ".cache", o+".*"))
	require.NoError(t, err)
	require.Empty(t, left, "every derived file of a deleted session goes")
	got, err := st.GetDerived(ctx, p, "state.12")
	require.NoError(t, err)
	require.Equal(t, "kept", string(got))
}

// TestIndexFoldsMarks makes more changes than an open leaves as marks:
// the next open folds them into the snapshot, and answers as the logs.
// By default at lowered thresholds (SetIndexFoldAt), past both; the real
// ones, 1,100 sessions, under SESSIONLOG_SWEEPS=full.
func TestIndexFoldsMarks(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	fsys := afero.NewMemMapFs()
	st := file.New(fsys, crashDir, handle.Unredacted())
	n := 1100 // past deltaAt and compactAt
	if !sweep.Full() {
		n = 70
		file.SetIndexFoldAt(st, 16, 64)
	}
	_, err := st.List(ctx)
	require.NoError(t, err)
	for i := range n {
		h, err := st.Create(ctx, handle.WithLabels(map[string]string{"i": fmt.Sprint(i)}))
		require.NoError(t, err)
		require.NoError(t, h.Close())
	}
	marks := filepath.Join(crashDir, ".cache", "sessions.d")
	before, err := afero.ReadDir(fsys, marks)
	require.NoError(t, err)
	require.Len(t, before, n, "a post a session")
	info, err := st.Resolve(ctx, fmt.Sprintf("i=%d", n-1))
	require.NoError(t, err)
	require.Equal(t, fmt.Sprint(n-1), info.Header.Labels["i"])
	after, err := afero.ReadDir(fsys, marks)
	require.NoError(t, err)
	after = slices.DeleteFunc(after, func(fi os.FileInfo) bool { return strings.HasSuffix(fi.Name(), ".owed") })
	require.Empty(t, after, "folded into the snapshot")
	requireIndexTrue(t, fsys, crashDir)
}

// TestIndexRebuiltFromPosts: an index written where every session has a
// post (a store created since its last snapshot) reads the posts, not the
// logs; a log changed by hand after its post is read.
func TestIndexRebuiltFromPosts(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	st := file.New(afero.NewOsFs(), dir)
	var ids []string
	for i := range 20 {
		h, err := st.Create(ctx, handle.WithLabels(map[string]string{"i": fmt.Sprint(i)}))
		require.NoError(t, err)
		appendAndFlush(t, h, crashEvents(0, 2)...)
		require.NoError(t, h.Close())
		ids = append(ids, h.ID())
	}
	changed := filepath.Join(dir, ids[7]+".jsonl")
	h, err := st.Open(ctx, ids[7], handle.ReadWrite)
	require.NoError(t, err)
	appendAndFlush(t, h, crashEvents(2, 1)...)
	b, err := os.ReadFile(changed)
	require.NoError(t, err)
	require.NoError(t, h.Close())
	require.NoError(t, os.WriteFile(changed, b, 0o600)) // as before its post: the post does not stand
	later(t, dir)

	counted := countfs.New(afero.NewOsFs())
	_, err = file.New(counted, dir).List(ctx, handle.Page(1, handle.Cursor{}))
	require.NoError(t, err)
	var logs []string
	for _, p := range counted.Opened() {
		if strings.HasSuffix(p, ".jsonl") {
			logs = append(logs, filepath.Base(p))
		}
	}
	require.Equal(t, []string{ids[7] + ".jsonl"}, logs, "only the log its post does not describe is read")
	requireIndexTrue(t, afero.NewOsFs(), dir)
}

// labelledStore returns the folder of a file store whose index was
// built, then given n sessions labelled i=0…n-1 (as marks).
func labelledStore(t *testing.T, n int) string {
	t.Helper()
	ctx := t.Context()
	dir := t.TempDir()
	st := file.New(afero.NewOsFs(), dir)
	_, err := st.List(ctx, handle.Page(1, handle.Cursor{}))
	require.NoError(t, err)
	for i := range n {
		h, err := st.Create(ctx, handle.WithLabels(map[string]string{"i": fmt.Sprint(i)}))
		require.NoError(t, err)
		require.NoError(t, h.Close())
	}
	return dir
}

// withSuffix counts the paths that end in suffix.
func withSuffix(paths []string, suffix string) int {
	n := 0
	for _, p := range paths {
		if strings.HasSuffix(p, suffix) {
			n++
		}
	}
	return n
}

// TestIndexPostsFile: an open in a new process reads the posts an
// earlier open kept in the posts file, not each post's own file; a posts
// file damaged or naming posts a fold removed changes no answer.
func TestIndexPostsFile(t *testing.T) {
	ctx := t.Context()
	dir := labelledStore(t, 100)
	posts := func() int {
		counted := countfs.New(afero.NewOsFs())
		info, err := file.New(counted, dir).Resolve(ctx, "i=42")
		require.NoError(t, err)
		require.Equal(t, "42", info.Header.Labels["i"])
		return withSuffix(counted.Opened(), ".post")
	}
	require.Equal(t, 100, posts(), "the first open reads every post")
	require.Zero(t, posts(), "the next, in a new store, reads the posts file")
	requireIndexTrue(t, afero.NewOsFs(), dir)

	pf := filepath.Join(dir, ".cache", "sessions.posts")
	b, err := os.ReadFile(pf)
	require.NoError(t, err)
	i := strings.Index(string(b), `"i":"42"`)
	require.Positive(t, i)
	b[i+6] = '3' // a label changed, its sum not
	require.NoError(t, os.WriteFile(pf, b, 0o600))
	require.Equal(t, 1, posts(), "a line that does not check is read from its post")
	requireIndexTrue(t, afero.NewOsFs(), dir)
}

// TestIndexQueriesLeaveMarkedLogsAlone: a label query and a first page
// by activity check against its log only a marked session that their
// answer may hold, not every session changed since the snapshot.
func TestIndexQueriesLeaveMarkedLogsAlone(t *testing.T) {
	ctx := t.Context()
	dir := labelledStore(t, 100)
	logsTouched := func(q func(st *file.Store) error) int {
		counted := countfs.New(afero.NewOsFs())
		require.NoError(t, q(file.New(counted, dir)))
		return withSuffix(append(counted.Opened(), counted.Statted()...), ".jsonl")
	}
	label := logsTouched(func(st *file.Store) error {
		info, err := st.Resolve(ctx, "i=42")
		if err == nil && info.Header.Labels["i"] != "42" {
			err = fmt.Errorf("resolved %v", info.Header.Labels)
		}
		return err
	})
	require.LessOrEqual(t, label, 4, "the one session the label names")
	page := logsTouched(func(st *file.Store) error {
		infos, err := st.List(ctx, handle.Page(5, handle.Cursor{}))
		if err == nil && len(infos) != 5 {
			err = fmt.Errorf("a page of %d", len(infos))
		}
		return err
	})
	require.LessOrEqual(t, page, 4*5, "the sessions of the page")
	requireIndexTrue(t, afero.NewOsFs(), dir)
}

// TestIndexDelta: past a few marks an open folds them into the delta —
// created, changed and deleted sessions alike — and removes them; past
// more, into a new snapshot, which removes the delta. A delta left by a
// fold stopped before it removed it, whose snapshot is gone, is ignored;
// a damaged one is rebuilt from the logs. Each time a new store answers
// as the logs say.
func TestIndexDelta(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	st := file.New(afero.NewOsFs(), dir)
	file.SetIndexFoldAt(st, 4, 1000)
	var ids []string
	create := func(n int) {
		for range n {
			h, err := st.Create(ctx, handle.WithLabels(map[string]string{"i": fmt.Sprint(len(ids))}))
			require.NoError(t, err)
			appendAndFlush(t, h, crashEvents(0, 2)...)
			require.NoError(t, h.Close())
			ids = append(ids, h.ID())
		}
	}
	marks := func() int {
		names, err := os.ReadDir(filepath.Join(dir, ".cache", "sessions.d"))
		require.NoError(t, err)
		n := 0
		for _, e := range names {
			if !strings.HasSuffix(e.Name(), ".owed") {
				n++
			}
		}
		return n
	}
	deltaPath := filepath.Join(dir, ".cache", "sessions.delta")
	create(10)
	_, err := st.List(ctx) // the snapshot
	require.NoError(t, err)
	require.NoError(t, st.Delete(ctx, ids[3])) // first: its open of the index folds no mark
	create(6)
	h, err := st.Open(ctx, ids[2], handle.ReadWrite)
	require.NoError(t, err)
	appendAndFlush(t, h, crashEvents(2, 1)...)
	require.NoError(t, h.Close())
	require.Equal(t, 8, marks())
	_, err = st.List(ctx)
	require.NoError(t, err)
	require.FileExists(t, deltaPath)
	require.Zero(t, marks(), "folded into the delta")
	requireIndexTrue(t, afero.NewOsFs(), dir)
	info, err := st.Resolve(ctx, "i=2")
	require.NoError(t, err)
	require.Equal(t, int64(2), info.LastSeq, "the delta's, not the snapshot's")
	_, err = st.Resolve(ctx, "i=3")
	require.ErrorIs(t, err, handle.ErrNotFound, "gone in the delta")

	stale, err := os.ReadFile(deltaPath)
	require.NoError(t, err)
	file.SetIndexFoldAt(st, 4, 8)
	require.NoError(t, st.Delete(ctx, ids[12])) // present in the stale delta
	create(5)
	_, err = st.List(ctx)
	require.NoError(t, err)
	require.NoFileExists(t, deltaPath, "folded into a new snapshot")
	require.Zero(t, marks())
	requireIndexTrue(t, afero.NewOsFs(), dir)

	require.NoError(t, os.WriteFile(deltaPath, stale, 0o600)) // as a fold stopped before removing it
	requireIndexTrue(t, afero.NewOsFs(), dir)

	file.SetIndexFoldAt(st, 4, 1000)
	create(5)
	_, err = st.List(ctx)
	require.NoError(t, err)
	b, err := os.ReadFile(deltaPath)
	require.NoError(t, err)
	require.NotEqual(t, string(stale), string(b), "a delta of the new snapshot")
	i := strings.Index(string(b), `"i":"`)
	require.Positive(t, i)
	b[i+5]++ // a label changed, its sum not
	require.NoError(t, os.WriteFile(deltaPath, b, 0o600))
	requireIndexTrue(t, afero.NewOsFs(), dir)
}

// TestIndexFoldMerges: a fold into a new snapshot merges the old one with
// what changed since — sessions created, forked, appended to and deleted,
// some in the delta, some in marks, one deleted in the delta and created
// again — copying the other lines as they are: the snapshot it writes
// holds, after its head, the lines a rebuild from the logs writes. A line
// of the old snapshot that does not check, or is out of order, is not
// copied: the fold rebuilds from the logs, keeping the evidence the old
// snapshot's lines hold.
func TestIndexFoldMerges(t *testing.T) {
	ctx := t.Context()
	fsys := afero.NewMemMapFs()
	st := file.New(fsys, crashDir, handle.Unredacted())
	idx := filepath.Join(crashDir, ".cache", "sessions.idx")
	var ids []string
	create := func(n int) {
		for range n {
			h, err := st.Create(ctx, handle.WithLabels(map[string]string{"i": fmt.Sprint(len(ids)), "agent": fmt.Sprint(len(ids) % 3)}))
			require.NoError(t, err)
			appendAndFlush(t, h, crashEvents(0, 2)...)
			require.NoError(t, h.Close())
			ids = append(ids, h.ID())
		}
	}
	change := func(from int) {
		create(3)
		fk, err := st.Fork(ctx, ids[from], 1, handle.WithLabels(map[string]string{"fork": "yes"}))
		require.NoError(t, err)
		require.NoError(t, fk.Close())
		h, err := st.Open(ctx, ids[from+1], handle.ReadWrite)
		require.NoError(t, err)
		appendAndFlush(t, h, crashEvents(2, 1)...)
		require.NoError(t, h.Close())
		require.NoError(t, st.Delete(ctx, ids[from+2]))
	}
	// body returns the snapshot's lines after its head.
	body := func() string {
		b, err := afero.ReadFile(fsys, idx)
		require.NoError(t, err)
		_, rest, ok := strings.Cut(string(b), "\n")
		require.True(t, ok)
		return rest
	}
	rebuilt := func() string {
		require.NoError(t, st.RebuildIndex(ctx))
		return body()
	}
	create(20)
	require.NoError(t, file.FoldIndex(ctx, st, false)) // the snapshot
	change(0)
	require.NoError(t, file.FoldIndexDelta(ctx, st))
	change(5)
	require.NoError(t, st.Delete(ctx, ids[10]))
	require.NoError(t, file.FoldIndexDelta(ctx, st))
	again, err := st.Create(ctx, handle.WithID(ids[10]), handle.WithLabels(map[string]string{"again": "1"}))
	require.NoError(t, err)
	require.NoError(t, again.Close())
	change(12) // in marks
	require.NoError(t, file.FoldIndex(ctx, st, false))
	merged := body()
	require.Equal(t, rebuilt(), merged)
	requireIndexTrue(t, fsys, crashDir)

	for _, tc := range []struct {
		name   string
		damage func(lines []string)
	}{
		{"a line that does not check", func(lines []string) {
			i := strings.Index(lines[3], `"i":"`)
			require.Positive(t, i)
			lines[3] = lines[3][:i+5] + "x" + lines[3][i+6:]
		}},
		{"lines out of order", func(lines []string) { lines[3], lines[4] = lines[4], lines[3] }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := afero.ReadFile(fsys, idx)
			require.NoError(t, err)
			lines := strings.SplitAfter(string(b), "\n") // the head, then the ID section's
			tc.damage(lines)
			require.NoError(t, afero.WriteFile(fsys, idx, []byte(strings.Join(lines, "")), 0o600))
			require.NoError(t, file.FoldIndex(ctx, st, false))
			require.Equal(t, merged, body(), "rebuilt from the logs")
		})
	}
}
