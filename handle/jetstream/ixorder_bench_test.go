package jetstream

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/handle"
)

// BenchmarkIndex measures, on one in-process server, what the session
// index costs at two store sizes: the first page of 50 by activity, a GC
// dry run with nothing old, and a session created, given one event and
// closed (the close writes its entry, leaf and nodes).
func BenchmarkIndex(b *testing.B) {
	for _, n := range []int{200, 2000} {
		srv := runServer(b)
		st := newStore(b, connect(b, srv), WithPrefix(fmt.Sprintf("bix%d", harnessN.Add(1))))
		for i := range n {
			h, err := st.Create(ctx, handle.WithCreatedAt(baseMs-int64(i)*60_000))
			require.NoError(b, err)
			_, err = h.Append(ctx, eventlog.Event{Type: "x", Time: baseMs - int64(i)*60_000})
			require.NoError(b, err)
			require.NoError(b, h.Close())
		}
		b.Run(fmt.Sprintf("page50/sessions=%d", n), func(b *testing.B) {
			for b.Loop() {
				got, err := st.List(ctx, handle.Page(50, handle.Cursor{}))
				require.NoError(b, err)
				require.Len(b, got, 50)
			}
		})
		b.Run(fmt.Sprintf("gc-dry/sessions=%d", n), func(b *testing.B) {
			for b.Loop() {
				_, err := st.GC(ctx, time.UnixMilli(baseMs-int64(n+1)*60_000), true)
				require.NoError(b, err)
			}
		})
		b.Run(fmt.Sprintf("create-close/sessions=%d", n), func(b *testing.B) {
			for b.Loop() {
				h, err := st.Create(ctx)
				require.NoError(b, err)
				_, err = h.Append(ctx, eventlog.Event{Type: "x", Time: baseMs + 1})
				require.NoError(b, err)
				require.NoError(b, h.Close())
			}
		})
	}
}
