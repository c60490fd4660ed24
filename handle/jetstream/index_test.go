package jetstream

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"

	natsjs "github.com/nats-io/nats.go/jetstream"
	"github.com/oklog/ulid/v2"
	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/internal/format/logfile"
)

// indexStores returns a store on a fresh prefix and a second one on the
// same prefix with a connection of its own (its messages are counted).
func indexStores(t *testing.T, opts ...Option) (w, r *Store) {
	t.Helper()
	srv := runServer(t)
	prefix := WithPrefix(fmt.Sprintf("ix%d", harnessN.Add(1)))
	w = newStore(t, connect(t, srv), append(opts, prefix)...)
	r = newStore(t, connect(t, srv), append(opts, prefix)...)
	return w, r
}

// made creates a session with labels, one event flushed, closed.
func made(t *testing.T, st *Store, opts ...handle.Option) string {
	t.Helper()
	h, err := st.Create(ctx, opts...)
	require.NoError(t, err)
	_, err = h.Append(ctx, eventlog.Event{Type: "x", Time: 1})
	require.NoError(t, err)
	require.NoError(t, h.Flush(ctx))
	require.NoError(t, h.Close())
	return h.ID()
}

// stats returns what Stat says of each of ids.
func stats(t *testing.T, st *Store, ids ...string) []handle.Info {
	t.Helper()
	var out []handle.Info
	for _, id := range ids {
		in, err := st.Stat(ctx, id)
		require.NoError(t, err)
		out = append(out, in)
	}
	return out
}

// The index answers an ID prefix, a label, a parent and GC's question as
// Stat describes the sessions, and again after its bucket is deleted, its
// built mark removed, or an entry damaged: each is found and the index
// rebuilt or the entry described again and rewritten.
func TestIndexRebuilt(t *testing.T) {
	w, r := indexStores(t)
	a := made(t, w, handle.WithLabels(map[string]string{"task": "5", "k.y": "v w"}))
	b := made(t, w, handle.WithLabels(map[string]string{"task": "6"}))
	f, err := w.Fork(ctx, a, 0)
	require.NoError(t, err)
	require.NoError(t, f.Close())
	fork := f.ID()

	check := func(t *testing.T) {
		t.Helper()
		got, err := r.List(ctx, handle.WithLabels(map[string]string{"task": "5"}))
		require.NoError(t, err)
		require.Equal(t, stats(t, r, a), got)
		got, err = r.List(ctx, handle.WithLabels(map[string]string{"k.y": "v w"}))
		require.NoError(t, err)
		require.Equal(t, stats(t, r, a), got)
		got, err = r.List(ctx, handle.WithID(b[:20]))
		require.NoError(t, err)
		require.Equal(t, stats(t, r, b), got)
		got, err = r.List(ctx, handle.WithID(fork))
		require.NoError(t, err)
		require.Equal(t, stats(t, r, fork), got)
		kids, err := r.Children(ctx, a)
		require.NoError(t, err)
		require.Len(t, kids, 1)
		require.Equal(t, fork, kids[0].ID)
		deps, err := r.Dependents(ctx, a)
		require.NoError(t, err)
		require.Equal(t, []string{fork}, deps)
		all, err := r.List(ctx)
		require.NoError(t, err)
		require.ElementsMatch(t, stats(t, r, a, b, fork), all)
		chain, gone, err := r.Ancestors(ctx, fork)
		require.NoError(t, err)
		require.Empty(t, gone)
		require.Len(t, chain, 1)
		require.Equal(t, a, chain[0].ID)
	}
	check(t)

	t.Run("bucket deleted", func(t *testing.T) {
		require.NoError(t, w.js.DeleteKeyValue(ctx, w.ixBucket()))
		check(t)
		_, err := r.js.KeyValue(ctx, r.ixBucket())
		require.NoError(t, err, "the bucket is made again")
	})
	t.Run("built mark removed", func(t *testing.T) {
		kv, err := w.js.KeyValue(ctx, w.ixBucket())
		require.NoError(t, err)
		require.NoError(t, kv.Purge(ctx, ixBuilt))
		// The entries go too: only a build writes them again.
		require.NoError(t, kv.Purge(ctx, ixKey(b)))
		check(t)
		_, err = kv.Get(ctx, ixKey(b))
		require.NoError(t, err)
	})
	t.Run("entry damaged", func(t *testing.T) {
		kv, err := w.js.KeyValue(ctx, w.ixBucket())
		require.NoError(t, err)
		_, err = kv.Put(ctx, ixKey(b), []byte("{not json"))
		require.NoError(t, err)
		_, err = kv.Put(ctx, ixKey(a), []byte(`{"ss":1,"info":{"ID":"`+a+`","SizeBytes":7}}`)) // stale: names another message
		require.NoError(t, err)
		check(t)
		e, err := kv.Get(ctx, ixKey(b))
		require.NoError(t, err)
		require.Contains(t, string(e.Value()), `"ss":`, "rewritten")
	})
	t.Run("log changed behind the store", func(t *testing.T) {
		h, err := w.Open(ctx, b, handle.ReadWrite)
		require.NoError(t, err)
		_, err = h.Append(ctx, eventlog.Event{Type: "y", Time: 2})
		require.NoError(t, err)
		require.NoError(t, h.Close())
		check(t) // the entry names an older last message: described again
		got, err := r.List(ctx, handle.WithID(b))
		require.NoError(t, err)
		require.Equal(t, "y", got[0].LastType)
	})
}

// costOf returns the messages r's connection received while q ran.
func costOf(t *testing.T, r *Store, q func()) uint64 {
	t.Helper()
	before := r.js.Conn().Stats().InMsgs
	q()
	return r.js.Conn().Stats().InMsgs - before
}

// An ID prefix, a label and a parent are answered from the keys they
// match: their cost, in messages received, is the same in a store of 10
// sessions and of 40 (give or take a consumer's status message), while
// listing every session grows with the store.
func TestIndexQueryCostsItsAnswer(t *testing.T) {
	w, r := indexStores(t)
	parent := made(t, w, handle.WithLabels(map[string]string{"task": "p"}))
	f, err := w.Fork(ctx, parent, 0)
	require.NoError(t, err)
	require.NoError(t, f.Close())
	_, err = r.List(ctx) // opens the index
	require.NoError(t, err)
	type costs struct{ prefix, label, children, all uint64 }
	measure := func() costs {
		var c costs
		c.prefix = costOf(t, r, func() {
			got, err := r.List(ctx, handle.WithID(parent[:24]))
			require.NoError(t, err)
			require.Len(t, got, 1)
		})
		c.label = costOf(t, r, func() {
			got, err := r.List(ctx, handle.WithLabels(map[string]string{"task": "p"}))
			require.NoError(t, err)
			require.Len(t, got, 1)
		})
		c.children = costOf(t, r, func() {
			got, err := r.Children(ctx, parent)
			require.NoError(t, err)
			require.Len(t, got, 1)
		})
		c.all = costOf(t, r, func() {
			_, err := r.List(ctx)
			require.NoError(t, err)
		})
		return c
	}
	grow := func(n int) {
		for i := range n {
			made(t, w, handle.WithLabels(map[string]string{"task": strconv.Itoa(i)}))
		}
	}
	grow(8)
	measure() // entries described once, written back
	small := measure()
	grow(30)
	measure()
	large := measure()
	require.InDelta(t, small.prefix, large.prefix, 2, "an ID prefix")
	require.InDelta(t, small.label, large.label, 2, "a label")
	require.InDelta(t, small.children, large.children, 2, "a parent's children")
	require.GreaterOrEqual(t, large.all, small.all+30, "every session listed")
}

// A create or delete killed between its index step and its log step
// leaves an entry whose subject has no session: no answer names it, and
// once no writer holds its lease the next answer removes it. Present
// sessions are all named.
func TestIndexKilledBetweenSteps(t *testing.T) {
	w, r := indexStores(t)
	kept := made(t, w)
	deleted := made(t, w)
	kv, err := w.ix(ctx)
	require.NoError(t, err)

	// Create killed after the entry, before the header's publish, its
	// lease still held.
	hdr := logfile.NewHeader(ulid.Make().String(), 1)
	hdr.Labels = map[string]string{"task": "k"}
	l, err := w.acquire(ctx, hdr.ID)
	require.NoError(t, err)
	require.NoError(t, w.ixCreating(ctx, hdr, false))
	// Delete killed after the purge, before the entry's removal.
	require.NoError(t, w.purge(ctx, natsjs.WithPurgeSubject(w.Subject(deleted))))

	names := func() []string {
		t.Helper()
		var out []string
		for _, q := range [][]handle.Option{nil, {handle.WithLabels(map[string]string{"task": "k"})}, {handle.WithID(hdr.ID)}, {handle.WithID(deleted)}} {
			got, err := r.List(ctx, q...)
			require.NoError(t, err)
			for _, in := range got {
				out = append(out, in.ID)
			}
		}
		return out
	}
	require.Equal(t, []string{kept}, names())
	_, err = kv.Get(ctx, ixKey(hdr.ID))
	require.NoError(t, err, "kept while its writer holds the lease")
	_, err = kv.Get(ctx, ixKey(deleted))
	require.ErrorIs(t, err, natsjs.ErrKeyNotFound, "no writer: removed")

	l.release() // the killed creator's lease expires
	require.Equal(t, []string{kept}, names())
	_, err = kv.Get(ctx, ixKey(hdr.ID))
	require.ErrorIs(t, err, natsjs.ErrKeyNotFound)
	_, ok, err := jsIndex{r}.Header(context.Background(), hdr.ID)
	require.NoError(t, err)
	require.False(t, ok)
}

// A session put on the stream by other means than a store (here: its
// index entry removed by hand) is named again after RebuildIndex.
func TestRebuildIndexAddsSessions(t *testing.T) {
	w, r := indexStores(t)
	a := made(t, w, handle.WithLabels(map[string]string{"task": "a"}))
	kv, err := w.ix(ctx)
	require.NoError(t, err)
	require.NoError(t, kv.Purge(ctx, ixKey(a)))
	got, err := r.List(ctx, handle.WithID(a))
	require.NoError(t, err)
	require.Empty(t, got, "an entry removed by hand is not noticed")
	require.NoError(t, r.RebuildIndex(ctx))
	got, err = r.List(ctx, handle.WithLabels(map[string]string{"task": "a"}))
	require.NoError(t, err)
	require.Equal(t, stats(t, r, a), got)
}

// A writer that closes leaves its session's entry as the log now is, so
// that answers (a read-only store's too) need not describe it and write
// it again; CreateFrom's too.
func TestIndexWriterSettles(t *testing.T) {
	w, r := indexStores(t)
	kv, err := w.ix(ctx)
	require.NoError(t, err)
	settled := func(id string) {
		t.Helper()
		e, err := kv.Get(ctx, ixKey(id))
		require.NoError(t, err)
		var got ixEntry
		require.NoError(t, json.Unmarshal(e.Value(), &got))
		last, err := r.lastMsg(ctx, r.Subject(id))
		require.NoError(t, err)
		require.Equal(t, last.Sequence, got.SS)
		require.NotNil(t, got.Info)
		require.Equal(t, stats(t, r, id)[0], *got.Info)
	}
	a := made(t, w, handle.WithLabels(map[string]string{"task": "a"}))
	settled(a)
	info, err := w.CreateFrom(ctx, func(yield func(eventlog.Event, error) bool) {
		yield(eventlog.Event{Type: "x", Time: 3}, nil)
	})
	require.NoError(t, err)
	settled(info.ID)
}

// An ID prefix no ID can start with (a wildcard, a space, a lower-case
// letter, a first character past '7', too long) matches nothing, and never
// reaches a key filter as a wildcard.
func TestIndexPrefixNotAnID(t *testing.T) {
	_, r := indexStores(t)
	a := made(t, r)
	for _, tc := range []struct {
		prefix string
		want   []string
	}{
		{"", []string{a}},
		{a[:1], []string{a}},
		{a, []string{a}},
		{"*", nil},
		{">", nil},
		{a[:1] + ".>", nil},
		{a[:1] + " ", nil},
		{strings.ToLower(a[:5]), nil},
		{"8", nil},
		{a + "0", nil},
	} {
		t.Run(tc.prefix, func(t *testing.T) {
			got, err := r.List(ctx, handle.WithID(tc.prefix))
			require.NoError(t, err)
			var ids []string
			for _, in := range got {
				ids = append(ids, in.ID)
			}
			require.Equal(t, tc.want, ids)
		})
	}
}

// Deleting a parent with its forks detached leaves no key naming it: the
// forks' parent keys go with the detach, the parent's entry with the
// delete, and its children are none.
func TestIndexDetachDropsParentKey(t *testing.T) {
	w, r := indexStores(t)
	a := made(t, w)
	f, err := w.Fork(ctx, a, 0)
	require.NoError(t, err)
	require.NoError(t, f.Close())
	require.NoError(t, w.Delete(ctx, a, handle.Detach()))
	kv, err := w.ix(ctx)
	require.NoError(t, err)
	keys, err := w.ixIDs(ctx, kv, "p."+a+".*")
	require.NoError(t, err)
	require.Empty(t, keys)
	_, err = kv.Get(ctx, ixKey(a))
	require.ErrorIs(t, err, natsjs.ErrKeyNotFound)
	got, err := r.List(ctx)
	require.NoError(t, err)
	require.Len(t, got, 1)
	require.Equal(t, f.ID(), got[0].ID)
	require.Nil(t, got[0].Header.Parent)
}
