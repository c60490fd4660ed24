package jetstream

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	natsjs "github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/internal/testkit/sweep"
)

const dayMs = int64(24 * time.Hour / time.Millisecond)

// baseMs is the tests' "now" for activity: sessions are made at times
// around it (WithCreatedAt, and their one event's time).
const baseMs = int64(1_700_000_000_000)

// activeAt creates a session last active at ms (created then, its one
// event then), closed.
func activeAt(t *testing.T, st *Store, ms int64, opts ...handle.Option) string {
	t.Helper()
	h, err := st.Create(ctx, append([]handle.Option{handle.WithCreatedAt(ms)}, opts...)...)
	require.NoError(t, err)
	_, err = h.Append(ctx, eventlog.Event{Type: "x", Time: ms})
	require.NoError(t, err)
	require.NoError(t, h.Close())
	return h.ID()
}

// ids returns the IDs of infos, in order.
func idsOf(infos []handle.Info) []string {
	out := make([]string, len(infos))
	for i, in := range infos {
		out[i] = in.ID
	}
	return out
}

// byActivity orders infos as a page does.
func byActivity(infos []handle.Info) []handle.Info {
	out := slices.Clone(infos)
	slices.SortFunc(out, func(a, b handle.Info) int {
		return cmp.Or(cmp.Compare(b.LastActive(), a.LastActive()), strings.Compare(b.ID, a.ID))
	})
	return out
}

// looked returns the sessions r's index answers checked against their
// logs while q ran, and the messages r's connection received.
func looked(t *testing.T, r *Store, q func()) (looks int64, msgs uint64) {
	t.Helper()
	l := r.looks.Load()
	msgs = costOf(t, r, q)
	return r.looks.Load() - l, msgs
}

// A page by activity is answered from the activity keys: it checks only
// the sessions on it (and those a writer is changing) against their
// logs, and its cost in messages does not grow with sessions elsewhere in
// the order; the pages, cursor after cursor, are List's sessions in
// ls's order, a live writer's session by its activity now.
func TestIndexPageCostsThePage(t *testing.T) {
	w, r := indexStores(t)
	var recent []string
	for i := range 6 {
		recent = append(recent, activeAt(t, w, baseMs+int64(i)*3_600_000, handle.WithLabels(map[string]string{"n": "r"})))
	}
	first := func() []handle.Info {
		got, err := r.List(ctx, handle.Page(3, handle.Cursor{}))
		require.NoError(t, err)
		return got
	}
	first() // opens the index
	looks, small := looked(t, r, func() { require.Equal(t, []string{recent[5], recent[4], recent[3]}, idsOf(first())) })
	require.EqualValues(t, 3, looks, "only the page is checked")
	// Older sessions, a week apart: more than a node's 16 children, so
	// that a cost growing with them would pass the delta below.
	older := sweep.Size(24, 60, 60)
	for i := range older {
		activeAt(t, w, baseMs-int64(i+1)*7*dayMs)
	}
	looks, large := looked(t, r, func() { require.Equal(t, []string{recent[5], recent[4], recent[3]}, idsOf(first())) })
	require.EqualValues(t, 3, looks, "only the page is checked")
	require.InDelta(t, small, large, 16, "%d older sessions add at most a node's 16 children to the first page", older)

	// A writer appends to an old session: its page place is its activity
	// now, while its handle is open and after it closes.
	all, err := r.List(ctx)
	require.NoError(t, err)
	oldest := byActivity(all)[len(all)-1].ID
	h, err := w.Open(ctx, oldest, handle.ReadWrite)
	require.NoError(t, err)
	_, err = h.Append(ctx, eventlog.Event{Type: "y", Time: baseMs + 10*3_600_000})
	require.NoError(t, err)
	require.NoError(t, h.Flush(ctx))
	require.Equal(t, []string{oldest, recent[5], recent[4]}, idsOf(first()))
	require.NoError(t, h.Close())
	require.Equal(t, []string{oldest, recent[5], recent[4]}, idsOf(first()))

	all, err = r.List(ctx)
	require.NoError(t, err)
	require.Len(t, all, 6+older)
	var paged []handle.Info
	cur := handle.Cursor{}
	for {
		got, err := r.List(ctx, handle.Page(7, cur))
		require.NoError(t, err)
		if len(got) == 0 {
			break
		}
		paged = append(paged, got...)
		cur = got[len(got)-1].Cursor()
	}
	require.Equal(t, byActivity(all), paged)
	// A label's page reads the label's entries and checks only the page.
	looks, _ = looked(t, r, func() {
		got, err := r.List(ctx, handle.Page(2, handle.Cursor{}), handle.WithLabels(map[string]string{"n": "r"}))
		require.NoError(t, err)
		require.Equal(t, []string{recent[5], recent[4]}, idsOf(got), "a label filter")
		got, err = r.List(ctx, handle.Page(2, got[1].Cursor()), handle.WithLabels(map[string]string{"n": "r"}))
		require.NoError(t, err)
		require.Equal(t, []string{recent[3], recent[2]}, idsOf(got), "after its cursor")
	})
	require.EqualValues(t, 4, looks)
}

// A leaf that no longer says its session's activity (its entry says
// another) is dropped by the walk that finds it, and a node left empty
// by the next one: neither changes an answer.
func TestIndexStaleLeafDropped(t *testing.T) {
	w, r := indexStores(t)
	a := activeAt(t, w, baseMs)
	b := activeAt(t, w, baseMs-dayMs)
	kv, err := w.ix(ctx)
	require.NoError(t, err)
	stray := ixLeaf(baseMs+5*365*dayMs, b)
	require.NoError(t, w.ixPlace(ctx, kv, b, baseMs+5*365*dayMs))
	got, err := r.List(ctx, handle.Page(5, handle.Cursor{}))
	require.NoError(t, err)
	require.Equal(t, []string{a, b}, idsOf(got))
	_, err = kv.Get(ctx, stray)
	require.Error(t, err, "the stray leaf is dropped")
	got, err = r.List(ctx, handle.Page(5, handle.Cursor{}))
	require.NoError(t, err)
	require.Equal(t, []string{a, b}, idsOf(got))
	nodes, err := r.ixIDs(ctx, kv, "d.*")
	require.NoError(t, err)
	require.Len(t, nodes, 1, "the stray leaf's empty nodes are dropped")
}

// GC checks against their logs only the old sessions (and the forks of
// each), and lists no subject: its cost is the same in a store of 10
// fresh sessions and of 40.
func TestGCTouchesWhatItDeletes(t *testing.T) {
	cost := func(fresh int) (int64, uint64) {
		w, r := indexStores(t)
		activeAt(t, w, baseMs-400*dayMs)
		parent := activeAt(t, w, baseMs-300*dayMs)
		f, err := w.Fork(ctx, parent, 0, handle.WithCreatedAt(baseMs))
		require.NoError(t, err)
		require.NoError(t, f.Close())
		for i := range fresh {
			activeAt(t, w, baseMs-int64(i)*dayMs)
		}
		_, err = r.List(ctx, handle.WithID(parent)) // opens the index
		require.NoError(t, err)
		var rep handle.GCReport
		looks, msgs := looked(t, r, func() {
			rep, err = r.GC(ctx, time.UnixMilli(baseMs-200*dayMs), false)
			require.NoError(t, err)
		})
		require.Len(t, rep.Deleted, 1)
		require.Equal(t, []string{parent}, rep.Kept, "its fork is fresh")
		all, err := r.List(ctx)
		require.NoError(t, err)
		require.Len(t, all, fresh+2)
		return looks, msgs
	}
	l10, m10 := cost(10)
	l40, m40 := cost(40)
	require.Equal(t, l10, l40, "sessions checked")
	require.LessOrEqual(t, l10, int64(6))
	require.InDelta(t, m10, m40, 4, "messages")
}

// The tree of one session is read from its parent keys: its cost does
// not grow with the store.
func TestTreeOfCostsItsSize(t *testing.T) {
	w, r := indexStores(t)
	root := activeAt(t, w, baseMs)
	f, err := w.Fork(ctx, root, 0)
	require.NoError(t, err)
	require.NoError(t, f.Close())
	c, err := w.Create(ctx, handle.WithParent(eventlog.Parent{ID: f.ID(), Seq: 0, Mode: eventlog.ModeChild}))
	require.NoError(t, err)
	require.NoError(t, c.Close())
	tree := func() {
		n, err := r.TreeOf(ctx, f.ID())
		require.NoError(t, err)
		require.Equal(t, root, n.Header.ID)
		require.Len(t, n.Children, 1)
		require.Len(t, n.Children[0].Children, 1)
		require.Equal(t, c.ID(), n.Children[0].Children[0].Header.ID)
	}
	tree()
	_, small := looked(t, r, tree)
	for i := range 30 {
		activeAt(t, w, baseMs-int64(i)*dayMs)
	}
	tree()
	_, large := looked(t, r, tree)
	require.InDelta(t, small, large, 2)
}

// streamsState is every stream of js (the store's, its buckets') with its
// last seq and message count: what any write changes.
func streamsState(t *testing.T, js natsjs.JetStream) map[string][2]uint64 {
	t.Helper()
	out := map[string][2]uint64{}
	l := js.ListStreams(ctx)
	for si := range l.Info() {
		out[si.Config.Name] = [2]uint64{si.State.LastSeq, si.State.Msgs}
	}
	require.NoError(t, l.Err())
	return out
}

// A read-only store writes nothing: with no index (it answers from the
// stream), with an index whose entry is damaged (it describes the
// session from its log and leaves the entry), and when asked to write
// (handle.ErrReadOnly); on a prefix with no stream it creates none.
func TestReadOnlyWritesNothing(t *testing.T) {
	srv := runServer(t)
	prefix := WithPrefix(fmt.Sprintf("ro%d", harnessN.Add(1)))
	w := newStore(t, connect(t, srv), prefix)
	a := activeAt(t, w, baseMs, handle.WithLabels(map[string]string{"task": "a"}))
	b := activeAt(t, w, baseMs-dayMs)
	f, err := w.Fork(ctx, a, 0)
	require.NoError(t, err)
	require.NoError(t, f.Close())
	require.NoError(t, w.PutDerived(ctx, a, "k", []byte("v")))

	type answers struct {
		all, page, label, prefix []handle.Info
		deps                     []string
		tree                     *handle.Node
		gc                       handle.GCReport
	}
	ask := func(t *testing.T, st *Store) answers {
		t.Helper()
		var an answers
		var err error
		an.all, err = st.List(ctx)
		require.NoError(t, err)
		an.page, err = st.List(ctx, handle.Page(2, handle.Cursor{}))
		require.NoError(t, err)
		an.label, err = st.List(ctx, handle.WithLabels(map[string]string{"task": "a"}))
		require.NoError(t, err)
		an.prefix, err = st.List(ctx, handle.WithID(b[:22]))
		require.NoError(t, err)
		an.deps, err = st.Dependents(ctx, a)
		require.NoError(t, err)
		an.tree, err = st.TreeOf(ctx, f.ID())
		require.NoError(t, err)
		an.gc, err = st.GC(ctx, time.UnixMilli(baseMs+365*dayMs), true)
		require.NoError(t, err)
		_, err = st.GetDerived(ctx, b, "k")
		require.ErrorIs(t, err, handle.ErrNotFound)
		return an
	}
	want := ask(t, w)
	require.Len(t, want.all, 3)
	require.Equal(t, []string{f.ID()}, want.deps)

	check := func(t *testing.T) {
		t.Helper()
		before := streamsState(t, w.js)
		r := newStore(t, connect(t, srv), prefix, WithReadOnly())
		require.Equal(t, want, ask(t, r))
		for what, write := range map[string]func() error{
			"create":        func() error { _, err := r.Create(ctx); return err },
			"open to write": func() error { _, err := r.Open(ctx, a, handle.ReadWrite); return err },
			"delete":        func() error { return r.Delete(ctx, b) },
			"detach":        func() error { return r.Detach(ctx, f.ID()) },
			"gc":            func() error { _, err := r.GC(ctx, time.UnixMilli(baseMs+365*dayMs), false); return err },
			"put derived":   func() error { return r.PutDerived(ctx, a, "k", nil) },
			"rebuild":       func() error { return r.RebuildIndex(ctx) },
		} {
			require.ErrorIs(t, write(), handle.ErrReadOnly, what)
		}
		require.Equal(t, before, streamsState(t, w.js), "nothing written")
	}
	t.Run("no index", func(t *testing.T) {
		require.NoError(t, w.js.DeleteKeyValue(ctx, w.ixBucket()))
		check(t)
	})
	t.Run("index of an older layout", func(t *testing.T) {
		kv, err := w.ix(ctx) // builds it again
		require.NoError(t, err)
		_, err = kv.Put(ctx, ixBuilt, []byte("1"))
		require.NoError(t, err)
		check(t)
	})
	t.Run("entry damaged", func(t *testing.T) {
		require.NoError(t, w.RebuildIndex(ctx))
		kv, err := w.ix(ctx)
		require.NoError(t, err)
		_, err = kv.Put(ctx, ixKey(a), []byte("{not json"))
		require.NoError(t, err)
		check(t)
	})
	t.Run("index gone after New", func(t *testing.T) {
		require.NoError(t, w.RebuildIndex(ctx))
		r := newStore(t, connect(t, srv), prefix, WithReadOnly())
		require.NoError(t, w.js.DeleteKeyValue(ctx, w.ixBucket()))
		before := streamsState(t, w.js)
		_, err := r.List(ctx, handle.Page(2, handle.Cursor{}))
		require.ErrorIs(t, err, ErrNoIndex)
		require.ErrorContains(t, err, "RebuildIndex")
		require.Equal(t, before, streamsState(t, w.js), "nothing written")
	})
	t.Run("no stream", func(t *testing.T) {
		before := streamsState(t, w.js)
		_, err := New(ctx, w.js, WithPrefix(fmt.Sprintf("ro%d", harnessN.Add(1))), WithReadOnly())
		require.ErrorIs(t, err, natsjs.ErrStreamNotFound)
		require.Equal(t, before, streamsState(t, w.js))
	})
}

// A writer killed while it holds its session's mark (no close, its lease
// not renewed): while its lease lives every page describes the session
// from its log; once it expired the next page settles it — entry and
// leaf as the log now is, the old leaf and the mark gone.
func TestIndexDeadWriterSettled(t *testing.T) {
	clock := newClock()
	w, r := indexStores(t, With(func(c *handle.Config) { c.Now = clock.now }), WithLeaseTTL(time.Minute), func(c *config) { c.ticker = noTicks })
	old := activeAt(t, w, baseMs-dayMs)
	other := activeAt(t, w, baseMs)
	h, err := w.Open(ctx, old, handle.ReadWrite)
	require.NoError(t, err)
	t.Cleanup(func() { h.Close() })
	_, err = h.Append(ctx, eventlog.Event{Type: "y", Time: baseMs + dayMs})
	require.NoError(t, err)
	require.NoError(t, h.Flush(ctx)) // then killed
	kv, err := r.ix(ctx)
	require.NoError(t, err)

	page := func() {
		t.Helper()
		got, err := r.List(ctx, handle.Page(5, handle.Cursor{}))
		require.NoError(t, err)
		require.Equal(t, []string{old, other}, idsOf(got))
		require.Equal(t, baseMs+dayMs, got[0].LastActive())
	}
	page()
	_, err = kv.Get(ctx, ixMark(old))
	require.NoError(t, err, "its writer's lease lives: the mark stays")
	_, err = kv.Get(ctx, ixLeaf(baseMs-dayMs, old))
	require.NoError(t, err)

	clock.add(2 * time.Minute)
	page()
	_, err = kv.Get(ctx, ixMark(old))
	require.ErrorIs(t, err, natsjs.ErrKeyNotFound, "settled")
	_, err = kv.Get(ctx, ixLeaf(baseMs-dayMs, old))
	require.ErrorIs(t, err, natsjs.ErrKeyNotFound, "the old leaf is dropped")
	_, err = kv.Get(ctx, ixLeaf(baseMs+dayMs, old))
	require.NoError(t, err, "the leaf of its activity now")
	looks, _ := looked(t, r, page)
	require.EqualValues(t, 2, looks, "no session left to describe but the page's")
}
