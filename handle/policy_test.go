package handle_test

import (
	"context"
	"testing"
	"time"

	"github.com/spf13/afero"
	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/handle"
)

func TestFlushPolicies(t *testing.T) {
	ctx := context.Background()
	ev := eventlog.Event{Type: "x"}

	t.Run("explicit", func(t *testing.T) {
		h, err := handle.NewFileStore(afero.NewMemMapFs(), "/s").Create(ctx)
		require.NoError(t, err)
		defer h.Close()
		for range 100 {
			_, err := h.Append(ctx, ev)
			require.NoError(t, err)
		}
		require.Equal(t, int64(-1), h.DurableSeq(), "nothing is flushed unless asked")
		require.NoError(t, h.Flush(ctx))
		require.Equal(t, int64(99), h.DurableSeq())
	})

	t.Run("every N", func(t *testing.T) {
		h, err := handle.NewFileStore(afero.NewMemMapFs(), "/s", handle.WithFlushPolicy(handle.FlushEvery(3))).Create(ctx)
		require.NoError(t, err)
		defer h.Close()
		for i, want := range []int64{-1, -1, 2, 2, 2, 5, 5} {
			last, err := h.Append(ctx, ev)
			require.NoError(t, err)
			require.Equal(t, int64(i), last)
			require.Equal(t, want, h.DurableSeq(), "after appending seq %d", i)
		}
		last, err := h.Append(ctx, ev, ev, ev, ev)
		require.NoError(t, err)
		require.Equal(t, last, h.DurableSeq(), "a batch that reaches N is durable when Append returns")
	})

	t.Run("interval", func(t *testing.T) {
		ticks := make(chan time.Time)
		store := handle.NewFileStore(afero.NewMemMapFs(), "/s",
			handle.WithFlushPolicy(handle.FlushInterval(time.Hour)), handle.WithTicker(ticks))
		h, err := store.Create(ctx)
		require.NoError(t, err)
		_, err = h.Append(ctx, ev, ev)
		require.NoError(t, err)
		require.Equal(t, int64(-1), h.DurableSeq())
		ticks <- time.Time{} // the flusher takes it and flushes
		ticks <- time.Time{} // taken only once that flush returned
		require.Equal(t, int64(1), h.DurableSeq())
		_, err = h.Append(ctx, ev)
		require.NoError(t, err)
		require.NoError(t, h.Close(), "Close stops the flusher and flushes")
		info, err := store.Stat(ctx, h.ID())
		require.NoError(t, err)
		require.Equal(t, int64(2), info.LastSeq)
	})
}
