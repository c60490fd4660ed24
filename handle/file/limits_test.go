package file_test

import (
	"encoding/json"
	"errors"
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

// limitData returns data for the limits property test: mostly small, and
// now and then at or just past a limit the reader enforces (nesting depth,
// row size) or invalid (UTF-8). big counts the 16 MiB values handed out, so
// that a run stays cheap under -race.
func limitData(rng *rand.Rand, typ string, big *int) json.RawMessage {
	nest := func(d int) string { return strings.Repeat("[", d) + strings.Repeat("]", d) }
	switch k := rng.IntN(20); {
	case k < 10:
		return json.RawMessage(`{"text":"` + strings.Repeat("ab", rng.IntN(40)) + `","é":[1,{"x":null}]}`)
	case k < 12:
		return json.RawMessage(nest(eventlog.MaxDepth - 1)) // packable
	case k < 14:
		return json.RawMessage(nest(eventlog.MaxDepth)) // valid alone, too deep to pack
	case k < 15:
		return json.RawMessage(`{"a":` + nest(eventlog.MaxDepth) + `}`) // too deep: refused
	case k < 16:
		return json.RawMessage("\"bad \xff\xfe bytes\"") // refused
	case k < 17 && *big < 2:
		// A row at the size limit (at the widest seq Storable assumes), or
		// one byte past it; each alone fits, two never share a row.
		*big++
		e := eventlog.Event{Seq: 1 << 62, Type: typ, Time: 1764450000000, Data: json.RawMessage(`""`)}
		pad := eventlog.MaxRowSize - eventlog.RowSize(e) + rng.IntN(2)
		return json.RawMessage(`"` + strings.Repeat("x", pad) + `"`)
	case k < 18:
		return nil
	default:
		return json.RawMessage(" [ 1 , \"a b\" ] ") // compacted on append
	}
}

// Property (docs/format.md, Rows: one set of limits): whatever batch Append accepts reads back identically,
// from the writer, after a reopen, and from a reader — raw and zstd, packed
// and not — and a batch it refuses leaves the log as it was. Regression:
// two assistant/chunk events nested MaxDepth deep were accepted and packed
// into a row the reader refuses: the session no longer opened.
func TestAppendedBatchesReadBack(t *testing.T) {
	types := []string{"assistant/chunk", "assistant/chunk", "assistant/chunk", "user/message"}
	for _, enc := range sweepLayouts() {
		for _, pack := range []struct {
			name  string
			types []string
		}{{"packed", eventlog.DefaultPackTypes()}, {"unpacked", []string{}}} {
			t.Run(enc+"/"+pack.name, func(t *testing.T) {
				t.Parallel()
				ctx := t.Context()
				fsys := afero.NewMemMapFs()
				st := file.New(fsys, crashDir, append(inStore(enc), func(c *handle.Config) { c.PackTypes = append([]string{}, pack.types...) })...)
				h, err := st.Create(ctx)
				require.NoError(t, err)
				id := h.ID()
				rng := rand.New(rand.NewPCG(7, uint64(len(enc)+len(pack.name))))
				var want []eventlog.Event
				big, refused := 0, 0
				if !sweep.Full() && len(pack.types) == 0 {
					// A value at the row limit costs the race detector
					// seconds a read: by default only where two could
					// share a row (packed); everywhere under
					// SESSIONLOG_SWEEPS=full.
					big = 2
				}
				for range 30 {
					batch := make([]eventlog.Event, 1+rng.IntN(6))
					for i := range batch {
						typ := types[rng.IntN(len(types))]
						batch[i] = eventlog.Event{Type: typ, Time: 1764450000000 + rng.Int64N(1000), Data: limitData(rng, typ, &big)}
					}
					before := h.Seq()
					last, err := h.Append(ctx, batch...)
					if err != nil {
						refused++
						require.True(t, errors.Is(err, eventlog.ErrInvalidEvent) || errors.Is(err, eventlog.ErrTooLarge), "refused with %v", err)
						require.Equal(t, before, h.Seq(), "a refused batch assigns no seq")
						continue
					}
					require.NoError(t, h.Flush(ctx))
					for i, e := range batch {
						s, err := eventlog.Storable(e)
						require.NoError(t, err)
						s.Seq = last - int64(len(batch)-1-i)
						want = append(want, s)
					}
				}
				require.Positive(t, refused, "the generator reaches the limits")
				require.Greater(t, len(want), 30, "most batches are accepted")
				require.Equal(t, canonLines(want), canonLines(readWholeLog(t, h)), "the writer reads its log back")
				require.NoError(t, h.Close())
				for _, mode := range []handle.Mode{handle.ReadWrite, handle.ReadOnly} {
					r, err := st.Open(ctx, id, mode)
					require.NoError(t, err, "the session opens")
					require.Nil(t, r.Torn())
					require.Equal(t, canonLines(want), canonLines(readWholeLog(t, r)), "mode %v", mode)
					require.NoError(t, r.Close())
				}
			})
		}
	}
}
