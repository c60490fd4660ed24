package file_test

import (
	"context"
	"testing"
	"time"

	"github.com/spf13/afero"
	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/handle/file"
	"github.com/sessionlog/sessionlog/internal/testkit/countfs"
)

func TestGC(t *testing.T) {
	ctx := context.Background()
	fsys := afero.NewMemMapFs()
	now := time.UnixMilli(1764450000000)
	clock := now
	store := file.New(fsys, "/s", func(c *handle.Config) { c.Now = func() time.Time { return clock } })
	mk := func(at time.Time, parent string) string {
		clock = at
		h := gcSession(t, store, parent, at)
		require.NoError(t, h.Close())
		return h.ID()
	}
	day := 24 * time.Hour
	oldAlone := mk(now.Add(-40*day), "")
	oldParent := mk(now.Add(-40*day), "")
	newFork := mk(now.Add(-1*day), oldParent) // keeps its old parent
	oldParent2 := mk(now.Add(-40*day), "")
	oldFork := mk(now.Add(-39*day), oldParent2) // old too: both go, fork first
	fresh := mk(now.Add(-1*day), "")
	require.NoError(t, afero.WriteFile(fsys, "/s/01JDX3N0Q3Z8Y6W2D1V5K7M9PA.jsonl.tmp", []byte("half"), 0o600))

	before := now.Add(-30 * day)
	dry, err := store.GC(ctx, before, true)
	require.NoError(t, err)
	require.ElementsMatch(t, []string{oldAlone, oldFork, oldParent2}, dry.Deleted)
	require.Equal(t, []string{oldParent}, dry.Kept)
	infos, err := store.List(ctx)
	require.NoError(t, err)
	require.Len(t, infos, 6, "a dry run deletes nothing")

	rep, err := store.GC(ctx, before, false)
	require.NoError(t, err)
	require.Equal(t, dry.Deleted, rep.Deleted)
	require.Contains(t, rep.Leftovers, "/s/01JDX3N0Q3Z8Y6W2D1V5K7M9PA.jsonl.tmp")
	infos, err = store.List(ctx)
	require.NoError(t, err)
	var ids []string
	for _, in := range infos {
		ids = append(ids, in.ID)
	}
	require.ElementsMatch(t, []string{oldParent, newFork, fresh}, ids)
	// The kept fork still reads its inherited prefix.
	r, err := store.Open(ctx, newFork, handle.ReadOnly)
	require.NoError(t, err)
	defer r.Close()
	n := 0
	for _, err := range r.Read(ctx, 0, handle.End) {
		require.NoError(t, err)
		n++
	}
	require.Equal(t, 2, n)
}

// TestGCDryRunSaysWhatGCDoes: a dry run lists exactly what the real run
// then deletes and keeps — a session a writer holds is kept by both, and
// so is the old parent of an old fork a writer holds (regression: the dry
// run listed them as deleted).
func TestGCDryRunSaysWhatGCDoes(t *testing.T) {
	ctx := t.Context()
	now := time.UnixMilli(1764450000000)
	clock := now.Add(-40 * 24 * time.Hour)
	store := file.New(afero.NewMemMapFs(), "/s", func(c *handle.Config) { c.Now = func() time.Time { return clock } })
	create := func(parent string) handle.Handle { return gcSession(t, store, parent, clock) }
	closed := func(parent string) string {
		h := create(parent)
		require.NoError(t, h.Close())
		return h.ID()
	}
	alone := closed("")
	held := create("") // a writer holds it through the gc
	defer held.Close()
	parent := closed("")
	heldFork := create(parent)
	defer heldFork.Close()

	before := now.Add(-30 * 24 * time.Hour)
	dry, err := store.GC(ctx, before, true)
	require.NoError(t, err)
	require.Equal(t, []string{alone}, dry.Deleted)
	want := []string{held.ID(), parent, heldFork.ID()}
	require.ElementsMatch(t, want, dry.Kept)

	ran, err := store.GC(ctx, before, false)
	require.NoError(t, err)
	require.Equal(t, dry.Deleted, ran.Deleted)
	require.Equal(t, dry.Kept, ran.Kept)
	for _, id := range want {
		_, err := store.Stat(ctx, id)
		require.NoError(t, err, "kept: %s", id)
	}
	_, err = store.Stat(ctx, alone)
	require.ErrorIs(t, err, handle.ErrNotFound)
}

// gcSession creates a session in store (a fork of parent at 0, unless
// parent is "") holding one flushed event of time at, and returns its write
// handle.
func gcSession(t *testing.T, store *file.Store, parent string, at time.Time) handle.Handle {
	t.Helper()
	ctx := t.Context()
	var h handle.Handle
	var err error
	if parent == "" {
		h, err = store.Create(ctx)
	} else {
		h, err = store.Fork(ctx, parent, 0)
	}
	require.NoError(t, err)
	_, err = h.Append(ctx, eventlog.Event{Type: "x", Time: at.UnixMilli()})
	require.NoError(t, err)
	require.NoError(t, h.Flush(ctx))
	return h
}

// TestGCTouchesWhatItDeletes: GC of the same few old sessions in stores
// of 100 and of 1,000 makes about the same number of file operations
// (opens, stats, names listed), far fewer than the store holds — it asks
// the index which sessions are old and which forks need them, and lists
// no folder when no sweep of leftovers is owed — and keeps its rules: an
// old parent of a fork that is not old stays.
func TestGCTouchesWhatItDeletes(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	const k = 10
	before := time.UnixMilli(100_000)
	ops := map[int]int64{}
	mk := func(st *file.Store, at int64, parent string) string {
		opts := []handle.Option{handle.WithCreatedAt(at)}
		var h handle.Handle
		var err error
		if parent == "" {
			h, err = st.Create(ctx, opts...)
		} else {
			h, err = st.Fork(ctx, parent, 0, opts...)
		}
		require.NoError(t, err)
		_, err = h.Append(ctx, eventlog.Event{Type: "x", Time: at})
		require.NoError(t, err)
		require.NoError(t, h.Close())
		return h.ID()
	}
	now := time.Now().UnixMilli()
	for _, n := range []int{100, 1000} {
		fsys := countfs.New(afero.NewMemMapFs())
		st := file.New(fsys, "/s")
		for range n {
			mk(st, now, "")
		}
		rep, err := st.GC(ctx, before, false) // the first sweep of leftovers
		require.NoError(t, err)
		require.Empty(t, rep.Deleted)
		var old []string
		for i := range k {
			old = append(old, mk(st, int64(1000+i), ""))
		}
		parent := mk(st, 2000, "")
		mk(st, now, parent)
		_, err = st.List(ctx, handle.Page(1, handle.Cursor{}))
		require.NoError(t, err)

		start := fsys.Ops()
		rep, err = st.GC(ctx, before, false)
		require.NoError(t, err)
		ops[n] = fsys.Ops() - start
		require.ElementsMatch(t, old, rep.Deleted)
		require.Equal(t, []string{parent}, rep.Kept, "a fork that is not old needs it")
		require.Empty(t, rep.Leftovers)
		infos, err := st.List(ctx)
		require.NoError(t, err)
		require.Len(t, infos, n+2)
	}
	t.Logf("file operations of a GC of %d: %v", k, ops)
	require.Less(t, ops[1000], int64(1000), "GC does not visit every session")
	require.Less(t, float64(ops[1000]), 1.25*float64(ops[100]), "GC does not grow with the store")
}
