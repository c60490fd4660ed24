package storetest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/handle"
)

// testFlushPolicies: explicit flushes only when asked; Every n makes
// the Append that leaves n unflushed events return once they are durable;
// Interval flushes on its ticks, and Close stops it and flushes.
func testFlushPolicies(t *testing.T, hs Harness) {
	ev := eventlog.Event{Type: "x"}
	stored := func(t *testing.T, st handle.Store, id string) int64 {
		t.Helper()
		info, err := st.Stat(ctx, id)
		require.NoError(t, err)
		return info.LastSeq
	}
	t.Run("explicit", func(t *testing.T) {
		h := create(t, hs)
		for range 100 {
			_, err := h.Append(ctx, ev)
			require.NoError(t, err)
		}
		require.Equal(t, int64(-1), h.DurableSeq(), "nothing is flushed unless asked")
		require.Equal(t, int64(-1), stored(t, hs.Store, h.ID()))
		require.NoError(t, h.Flush(ctx))
		require.Equal(t, int64(99), h.DurableSeq())
		require.Equal(t, int64(99), stored(t, hs.Store, h.ID()))
	})
	t.Run("every N", func(t *testing.T) {
		st := hs.WithPolicy(t, handle.FlushPolicy{Every: 3}, nil)
		h, err := st.Create(ctx)
		require.NoError(t, err)
		t.Cleanup(func() { h.Close() })
		for i, want := range []int64{-1, -1, 2, 2, 2, 5, 5} {
			last, err := h.Append(ctx, ev)
			require.NoError(t, err)
			require.Equal(t, int64(i), last)
			require.Equal(t, want, h.DurableSeq(), "after appending seq %d", i)
			require.Equal(t, want, stored(t, hs.Store, h.ID()), "stored after appending seq %d", i)
		}
		last, err := h.Append(ctx, ev, ev, ev, ev)
		require.NoError(t, err)
		require.Equal(t, last, h.DurableSeq(), "a batch that reaches N is durable when Append returns")
		require.Equal(t, last, stored(t, hs.Store, h.ID()))
	})
	t.Run("interval", func(t *testing.T) {
		ticks := make(chan time.Time)
		st := hs.WithPolicy(t, handle.FlushPolicy{Interval: time.Hour}, ticks)
		h, err := st.Create(ctx)
		require.NoError(t, err)
		_, err = h.Append(ctx, ev, ev)
		require.NoError(t, err)
		require.Equal(t, int64(-1), h.DurableSeq())
		ticks <- time.Time{} // the flusher takes it and flushes
		ticks <- time.Time{} // taken only once that flush returned
		require.Equal(t, int64(1), h.DurableSeq())
		require.Equal(t, int64(1), stored(t, hs.Store, h.ID()))
		_, err = h.Append(ctx, ev)
		require.NoError(t, err)
		require.NoError(t, h.Close(), "Close stops the flusher and flushes")
		require.Equal(t, int64(2), stored(t, hs.Store, h.ID()))
	})
}
