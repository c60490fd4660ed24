package file_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/spf13/afero"
	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/handle/file"
	"github.com/sessionlog/sessionlog/internal/testkit/sweep"
)

// The rows appenders queue (each prepared in its Append, packed runs
// across Appends) are byte for byte what one encoding of each flush's
// events writes: packed runs, their boundaries, and every other row. Over
// random sessions: appends of 1 to 5 events, of two packed types and
// others, chunks too deep to pack, and flushes at random points: 30
// sessions by default, 100 under SESSIONLOG_SWEEPS=full.
func TestQueuedRowsAreOneEncodingOfEachFlush(t *testing.T) {
	t.Parallel()
	packed := []string{"assistant/chunk", "assistant/reasoning"}
	enc := eventlog.NewEncoder(packed)
	deep := json.RawMessage(strings.Repeat("[", eventlog.MaxDepth) + strings.Repeat("]", eventlog.MaxDepth))
	for seed := range uint64(sweep.Size(30, 100, 100)) {
		rng := rand.New(rand.NewPCG(seed, 1))
		fsys := afero.NewMemMapFs()
		st := file.New(fsys, "/s", func(c *handle.Config) { c.PackTypes = append([]string{}, packed...) })
		h, err := st.Create(t.Context())
		require.NoError(t, err)
		before, err := afero.ReadFile(fsys, h.Path())
		require.NoError(t, err)
		want := before
		var flush []eventlog.Event
		next := int64(0)
		for range 60 {
			batch := make([]eventlog.Event, 1+rng.IntN(5))
			for i := range batch {
				e := eventlog.Event{Type: []string{"assistant/chunk", "assistant/reasoning", "tool/call"}[rng.IntN(3)],
					Time: rng.Int64N(3), Data: json.RawMessage(fmt.Sprintf(`{"text":"%d"}`, next))}
				switch rng.IntN(40) {
				case 0:
					e.Data = deep // a chunk too deep for a packed row is a row of its own
				case 1, 2:
					e.Data = nil
				}
				batch[i] = e
				e.Seq = next
				flush = append(flush, e)
				next++
			}
			_, err := h.Append(t.Context(), batch...)
			require.NoError(t, err)
			if rng.IntN(4) == 0 {
				require.NoError(t, h.Flush(t.Context()))
				want = enc.AppendRows(want, flush)
				flush = flush[:0]
				got, err := afero.ReadFile(fsys, h.Path())
				require.NoError(t, err)
				require.Equal(t, string(want), string(got), "seed %d", seed)
			}
		}
		require.NoError(t, h.Close())
		got, err := afero.ReadFile(fsys, h.Path())
		require.NoError(t, err)
		require.Equal(t, string(enc.AppendRows(want, flush)), string(got), "seed %d", seed)
	}
}
