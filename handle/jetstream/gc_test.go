package jetstream

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/handle"
)

// GC on a stream decides as on files (the store core's choice): old sessions go,
// forks before their parents; an old parent of a fresh fork stays, and so
// do a session whose writer holds its lease and the old parent of an old
// fork held by a writer. The dry run lists exactly what the real run then
// deletes and keeps, and deletes nothing.
func TestGC(t *testing.T) {
	day := 24 * time.Hour
	clock := newClock()
	now := time.UnixMilli(clock.ms.Load())
	clock.add(-40 * day)
	st := newStore(t, connect(t, runServer(t)), With(func(c *handle.Config) { c.Now = clock.now }), WithLeaseTTL(365*day), func(c *config) { c.ticker = noTicks })
	// session creates a session (a fork of parent at 0 unless parent is "")
	// holding one flushed event of the clock's time; hold keeps its writer.
	session := func(parent string, hold bool) string {
		t.Helper()
		var h handle.Handle
		var err error
		if parent == "" {
			h, err = st.Create(ctx)
		} else {
			h, err = st.Fork(ctx, parent, 0)
		}
		require.NoError(t, err)
		_, err = h.Append(ctx, eventlog.Event{Type: "x", Time: clock.now().UnixMilli()})
		require.NoError(t, err)
		require.NoError(t, h.Flush(ctx))
		if hold {
			t.Cleanup(func() { h.Close() })
		} else {
			require.NoError(t, h.Close())
		}
		return h.ID()
	}
	oldAlone := session("", false)
	oldParent := session("", false)
	oldParent2 := session("", false)
	clock.add(time.Hour)
	oldFork := session(oldParent2, false) // old too: both go, the fork first
	held := session("", true)
	heldParent := session("", false)
	heldFork := session(heldParent, true)
	clock.add(39 * day)
	newFork := session(oldParent, false) // keeps its old parent
	fresh := session("", false)

	before := now.Add(-30 * day)
	dry, err := st.GC(ctx, before, true)
	require.NoError(t, err)
	require.Equal(t, []string{oldFork, oldAlone, oldParent2}, dry.Deleted, "forks first, then oldest activity")
	wantKept := []string{oldParent, held, heldParent, heldFork}
	require.ElementsMatch(t, wantKept, dry.Kept)
	infos, err := st.List(ctx)
	require.NoError(t, err)
	require.Len(t, infos, 9, "a dry run deletes nothing")

	ran, err := st.GC(ctx, before, false)
	require.NoError(t, err)
	require.Equal(t, dry.Deleted, ran.Deleted)
	require.Equal(t, dry.Kept, ran.Kept)
	infos, err = st.List(ctx)
	require.NoError(t, err)
	var ids []string
	for _, in := range infos {
		ids = append(ids, in.ID)
	}
	require.ElementsMatch(t, append(wantKept, newFork, fresh), ids)
	h, err := st.Open(ctx, newFork, handle.ReadOnly)
	require.NoError(t, err)
	defer h.Close()
	require.Len(t, readAll(t, h), 2, "the kept fork still reads its inherited prefix")
}

// WriterHeld says what a writer's Open would find, and takes nothing: a
// writer opens after it was asked.
func TestWriterHeld(t *testing.T) {
	clock := newClock()
	st := newStore(t, connect(t, runServer(t)), With(func(c *handle.Config) { c.Now = clock.now }), WithLeaseTTL(time.Minute), func(c *config) { c.ticker = noTicks })
	h, err := st.Create(ctx)
	require.NoError(t, err)
	id := h.ID()
	for _, tc := range []struct {
		name string
		step func()
		want bool
	}{
		{"held by its creator", func() {}, true},
		{"released by Close", func() { require.NoError(t, h.Close()) }, false},
		{"asking took nothing", func() {
			h, err = st.Open(ctx, id, handle.ReadWrite)
			require.NoError(t, err)
		}, true},
		{"expired", func() { clock.add(2 * time.Minute) }, false},
	} {
		tc.step()
		held, err := st.WriterHeld(ctx, id)
		require.NoError(t, err, tc.name)
		require.Equal(t, tc.want, held, tc.name)
	}
	h.Close()
	_, err = st.WriterHeld(ctx, "not-an-id")
	require.ErrorIs(t, err, handle.ErrInvalidID)
}
