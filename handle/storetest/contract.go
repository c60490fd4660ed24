package storetest

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/handle"
)

// The cases of the store-wide operations: detach, the tree, derived data,
// what a writer holds, GC.

func testDetach(t *testing.T, hs Harness) {
	parent := create(t, hs)
	appendFlush(t, parent, events(0, 6))
	fork, err := hs.Store.Fork(ctx, parent.ID(), 3)
	require.NoError(t, err)
	appendFlush(t, fork, events(20, 2))
	want := canon(readAll(t, fork, 0, handle.End))
	wantDigest, _, err := fork.LogDigest(ctx)
	require.NoError(t, err)
	require.ErrorIs(t, hs.Store.Detach(ctx, fork.ID()), handle.ErrLocked, "under its writer lock")
	require.NoError(t, fork.Close())
	require.NoError(t, parent.Close())

	deps, err := hs.Store.Dependents(ctx, parent.ID())
	require.NoError(t, err)
	require.Equal(t, []string{fork.ID()}, deps)
	require.NoError(t, hs.Store.Detach(ctx, fork.ID()))
	require.NoError(t, hs.Store.Detach(ctx, parent.ID()), "a session that is not a fork is left as it is")
	deps, err = hs.Store.Dependents(ctx, parent.ID())
	require.NoError(t, err)
	require.Empty(t, deps)
	require.NoError(t, hs.Store.Delete(ctx, parent.ID()))
	r := open(t, hs, fork.ID(), handle.ReadOnly)
	require.Nil(t, r.Header().Parent)
	require.Equal(t, want, canon(readAll(t, r, 0, handle.End)))
	got, _, err := r.LogDigest(ctx)
	require.NoError(t, err)
	require.Equal(t, wantDigest, got, "every digest is kept")
}

func testTree(t *testing.T, hs Harness) {
	root := create(t, hs)
	appendFlush(t, root, events(0, 4))
	fork, err := hs.Store.Fork(ctx, root.ID(), 2)
	require.NoError(t, err)
	t.Cleanup(func() { fork.Close() })
	appendFlush(t, fork, events(10, 1))
	forkOfFork, err := hs.Store.Fork(ctx, fork.ID(), 3)
	require.NoError(t, err)
	t.Cleanup(func() { forkOfFork.Close() })
	child := create(t, hs, handle.WithParent(eventlog.Parent{ID: root.ID(), Seq: 1, Mode: eventlog.ModeChild}))
	other := create(t, hs)

	roots, err := hs.Store.Tree(ctx)
	require.NoError(t, err)
	shape := map[string][]string{}
	var walk func(n *handle.Node)
	walk = func(n *handle.Node) {
		shape[n.Header.ID] = []string{}
		for _, c := range n.Children {
			shape[n.Header.ID] = append(shape[n.Header.ID], c.Header.ID)
			walk(c)
		}
	}
	var rootIDs []string
	for _, r := range roots {
		rootIDs = append(rootIDs, r.Header.ID)
		walk(r)
	}
	require.ElementsMatch(t, []string{root.ID(), other.ID()}, rootIDs)
	require.ElementsMatch(t, []string{fork.ID(), child.ID()}, shape[root.ID()])
	require.Equal(t, []string{forkOfFork.ID()}, shape[fork.ID()])

	kids, err := hs.Store.Children(ctx, fork.ID())
	require.NoError(t, err)
	require.Len(t, kids, 1)
	require.Equal(t, forkOfFork.ID(), kids[0].ID)
	chain, gone, err := hs.Store.Ancestors(ctx, forkOfFork.ID())
	require.NoError(t, err)
	require.Empty(t, gone)
	require.Len(t, chain, 2)
	require.Equal(t, []string{fork.ID(), root.ID()}, []string{chain[0].ID, chain[1].ID})

	for _, h := range []handle.Handle{child, root, fork, forkOfFork} {
		require.NoError(t, h.Close())
	}
	require.NoError(t, hs.Store.Delete(ctx, root.ID(), handle.Cascade()))
	_, gone, err = hs.Store.Ancestors(ctx, child.ID())
	require.NoError(t, err)
	require.Equal(t, root.ID(), gone, "a child outlives its parent")
	_, _, err = hs.Store.Ancestors(ctx, root.ID())
	require.ErrorIs(t, err, handle.ErrNotFound)
}

func testDerived(t *testing.T, hs Harness) {
	h := create(t, hs)
	_, err := hs.Store.GetDerived(ctx, h.ID(), "snap-1")
	require.ErrorIs(t, err, handle.ErrNotFound)
	require.NoError(t, hs.Store.PutDerived(ctx, h.ID(), "snap-1", []byte("one")))
	require.NoError(t, hs.Store.PutDerived(ctx, h.ID(), "snap-1", []byte("two")))
	got, err := hs.Store.GetDerived(ctx, h.ID(), "snap-1")
	require.NoError(t, err)
	require.Equal(t, "two", string(got))
	require.NoError(t, hs.Store.DeleteDerived(ctx, h.ID(), "snap-1"))
	require.NoError(t, hs.Store.DeleteDerived(ctx, h.ID(), "snap-1"), "deleting what is not there is no error")
	_, err = hs.Store.GetDerived(ctx, h.ID(), "snap-1")
	require.ErrorIs(t, err, handle.ErrNotFound)
	require.ErrorIs(t, hs.Store.PutDerived(ctx, "not-an-id", "k", nil), handle.ErrInvalidID)
}

// testGC collects everything (a cutoff in the future) but what a writer
// holds and what it forks from; the dry run says exactly that first.
func testGC(t *testing.T, hs Harness) {
	alone := create(t, hs)
	appendFlush(t, alone, events(0, 1))
	require.NoError(t, alone.Close())
	parent := create(t, hs)
	appendFlush(t, parent, events(0, 2))
	require.NoError(t, parent.Close())
	held, err := hs.Store.Fork(ctx, parent.ID(), 1)
	require.NoError(t, err)
	t.Cleanup(func() { held.Close() })
	yes, err := hs.Store.WriterHeld(ctx, held.ID())
	require.NoError(t, err)
	require.True(t, yes)
	no, err := hs.Store.WriterHeld(ctx, alone.ID())
	require.NoError(t, err)
	require.False(t, no)

	before := time.Now().Add(time.Hour)
	dry, err := hs.Store.GC(ctx, before, true)
	require.NoError(t, err)
	require.Equal(t, []string{alone.ID()}, dry.Deleted)
	require.ElementsMatch(t, []string{parent.ID(), held.ID()}, dry.Kept)
	_, err = hs.Store.Stat(ctx, alone.ID())
	require.NoError(t, err, "a dry run deletes nothing")
	rep, err := hs.Store.GC(ctx, before, false)
	require.NoError(t, err)
	require.Equal(t, dry.Deleted, rep.Deleted)
	require.Equal(t, dry.Kept, rep.Kept)
	requireAbsent(t, hs, alone.ID())
}

// testTail: a Tail reads what a read-only handle reads — a fork's
// inherited events first, any slice — with Stat's description as of its
// open; it is refused where Stat is.
func testTail(t *testing.T, hs Harness) {
	parent := create(t, hs, handle.WithLabels(map[string]string{"k": "v"}))
	appendFlush(t, parent, events(0, 40))
	fork, err := hs.Store.Fork(ctx, parent.ID(), 29)
	require.NoError(t, err)
	t.Cleanup(func() { fork.Close() })
	appendFlush(t, fork, events(100, 5))

	tl, err := hs.Store.OpenTail(ctx, fork.ID())
	require.NoError(t, err)
	defer tl.Close()
	info, err := hs.Store.Stat(ctx, fork.ID())
	require.NoError(t, err)
	require.Equal(t, info, tl.Info())
	require.Equal(t, fork.ID(), tl.ID())
	require.Equal(t, info.Path, tl.Path())
	require.Equal(t, info.Header, tl.Header())
	require.Equal(t, int64(34), tl.Seq())
	r := open(t, hs, fork.ID(), handle.ReadOnly)
	for _, span := range [][2]int64{{0, handle.End}, {0, 29}, {28, 31}, {33, 34}, {34, handle.End}} {
		var got []eventlog.Event
		for e, err := range tl.Read(ctx, span[0], span[1]) {
			require.NoError(t, err)
			got = append(got, e)
		}
		require.Equal(t, canon(readAll(t, r, span[0], span[1])), canon(got), "seqs %d..%d", span[0], span[1])
	}
	for _, id := range []string{"01JDX3N0Q3Z8Y6W2D1V5K7M9PA", "not-an-id"} {
		_, serr := hs.Store.Stat(ctx, id)
		_, err := hs.Store.OpenTail(ctx, id)
		require.Error(t, err)
		require.Equal(t, errors.Is(serr, handle.ErrNotFound), errors.Is(err, handle.ErrNotFound))
		require.Equal(t, errors.Is(serr, handle.ErrInvalidID), errors.Is(err, handle.ErrInvalidID))
	}
}
