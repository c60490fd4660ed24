package replay_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/spf13/afero"
	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/handle/file"
	"github.com/sessionlog/sessionlog/internal/testkit/sweep"
	"github.com/sessionlog/sessionlog/projection"
	"github.com/sessionlog/sessionlog/replay"
)

// withLateResults returns log with late tool results added, seeded: after
// some events, a large result for a call made earlier (a second result
// for a call replaces its first; results of other steps' calls come
// between), every rollback still to the event it named and every
// checkpoint with the log digest of what precedes it.
func withLateResults(log *memLog, seed uint64) *memLog {
	r := rand.New(rand.NewPCG(seed, 2))
	out := &memLog{}
	d := eventlog.NewDigest()
	moved := make([]int64, len(log.evs)) // old seq → new
	var calls []string
	add := func(e eventlog.Event) {
		e.Seq, e.Time = int64(len(out.evs)), int64(len(out.evs))
		d.Add(e)
		out.evs = append(out.evs, e)
	}
	for i, e := range log.evs {
		switch e.Type {
		case eventlog.TypeRollback:
			var rb struct{ To int64 }
			if json.Unmarshal(e.Data, &rb) == nil {
				e.Data = json.RawMessage(fmt.Sprintf(`{"to":%d}`, moved[rb.To]))
			}
		case eventlog.TypeCheckpoint:
			e.Data = json.RawMessage(fmt.Sprintf(`{"log":%q}`, d.String()))
		case "tool/call":
			var c struct{ ID string }
			if json.Unmarshal(e.Data, &c) == nil {
				calls = append(calls, c.ID)
			}
		}
		moved[i] = int64(len(out.evs))
		add(e)
		if len(calls) > 0 && r.IntN(8) == 0 {
			text := strings.Repeat(fmt.Sprintf("late%d <&> ", r.IntN(1000)), 100+r.IntN(300))
			add(eventlog.Event{Type: "tool/result",
				Data: json.RawMessage(fmt.Sprintf(`{"id":%q,"output":{"text":%q}}`, calls[r.IntN(len(calls))], text))})
		}
	}
	return out
}

// readCounter counts the reads of a LocatingSource's log bytes: the values
// a replay left in the log, read back.
type readCounter struct {
	replay.LocatingSource
	reads *atomic.Int64
}

func (c readCounter) LogBytes() io.ReaderAt {
	if b := c.LocatingSource.LogBytes(); b != nil {
		return countingReaderAt{b, c.reads}
	}
	return nil
}

type countingReaderAt struct {
	r io.ReaderAt
	n *atomic.Int64
}

func (c countingReaderAt) ReadAt(p []byte, off int64) (int, error) {
	c.n.Add(1)
	return c.r.ReadAt(p, off)
}

// A replay with LocateData through a store's handle rebuilds the states a
// replay of owned events does, byte for byte as WriteState writes them and
// as MarshalState returns them, and State equal: over rollbacks, kept
// states, compactions and late tool results, on one core and on two (zstd:
// two). A raw log leaves large tool outputs in the log (they are read
// back); a zstd log cannot, and holds them as before. One random log by
// default, four under SESSIONLOG_SWEEPS=full.
func TestLocatedReplayEqualsOwned(t *testing.T) {
	for _, c := range []struct {
		enc   string
		procs int
	}{{handle.EncodingRaw, 1}, {handle.EncodingRaw, 2}, {handle.EncodingZstd, 2}} {
		enc, procs := c.enc, c.procs
		t.Run(fmt.Sprintf("%s/GOMAXPROCS=%d", enc, procs), func(t *testing.T) {
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
			var reads atomic.Int64
			for seed := range uint64(sweep.Size(1, 4, 4)) {
				log := withLateResults(agentLog(seed, 1000), seed)
				last := log.Seq()
				want := builtins()
				_, err := replay.Replay(t.Context(), owned{log}, want, replay.WithSnapshotEvery(64))
				require.NoError(t, err)

				h := storedSession(t, log, enc)
				ls, ok := h.(replay.LocatingSource)
				require.True(t, ok, "a store's handle is a LocatingSource")
				before := reads.Load()
				got := builtins()
				res, err := replay.Replay(t.Context(), readCounter{ls, &reads}, got,
					replay.WithSnapshotEvery(64), replay.LocateData())
				require.NoError(t, err)
				require.Equal(t, last, res.Seq)
				require.Positive(t, res.Rollbacks, "seed %d", seed)
				for i := range got {
					var w, g bytes.Buffer
					require.NoError(t, projection.WriteState(&w, want[i]))
					require.NoError(t, projection.WriteState(&g, got[i]))
					require.Equal(t, w.String(), g.String(), "seed %d: %s written", seed, projection.ID(got[i]))
				}
				if enc == handle.EncodingZstd {
					require.Equal(t, before, reads.Load(), "seed %d: a zstd log lends no bytes", seed)
				}
				require.Equal(t, marshalAll(t, want), marshalAll(t, got), "seed %d", seed)
				type transcript interface {
					State() projection.TranscriptState
				}
				for i := range got {
					if tr, ok := got[i].(transcript); ok {
						require.Equal(t, want[i].(transcript).State(), tr.State(), "seed %d: %s", seed, projection.ID(tr.(projection.Projection)))
					}
				}
				require.Equal(t, want[1].(*projection.Transcript).PrefixHashes(), got[1].(*projection.Transcript).PrefixHashes(), "seed %d", seed)
			}
			if enc == handle.EncodingRaw {
				require.Positive(t, reads.Load(), "outputs left in the log (of the states' last messages, not compacted away)")
			}
		})
	}
}

// Without LocateData, a replay through a LocatingSource copies what it
// keeps: its states never read the log again.
func TestReplayLocatesOnlyWhenAsked(t *testing.T) {
	log := withLateResults(agentLog(3, 400), 3)
	h := storedSession(t, log, handle.EncodingRaw)
	var reads atomic.Int64
	src := readCounter{h.(replay.LocatingSource), &reads}
	ps := builtins()
	_, err := replay.Replay(t.Context(), src, ps)
	require.NoError(t, err)
	marshalAll(t, ps)
	require.Zero(t, reads.Load())

	// Asked, the same replay leaves values in the log.
	_, err = replay.Replay(t.Context(), src, ps, replay.LocateData())
	require.NoError(t, err)
	marshalAll(t, ps)
	require.Positive(t, reads.Load())
}

// storedSession writes log into a new store of the encoding enc over a
// memory file system, flushing every 100 events, and returns a read-only
// handle on it.
func storedSession(t *testing.T, log *memLog, enc string) handle.Handle {
	t.Helper()
	st := file.New(afero.NewMemMapFs(), "/s", handle.WithEncoding(enc))
	w, err := st.Create(t.Context(), handle.WithID(log.ID()))
	require.NoError(t, err)
	for evs := range slices.Chunk(log.evs, 100) {
		// A flush every 100 events: a read (a rollback's) starts from the
		// nearest, not from the first row.
		_, err = w.Append(t.Context(), evs...)
		require.NoError(t, err)
		require.NoError(t, w.Flush(t.Context()))
	}
	require.NoError(t, w.Close())
	h, err := st.Open(t.Context(), log.ID(), handle.ReadOnly)
	require.NoError(t, err)
	t.Cleanup(func() { h.Close() })
	return h
}

// A store handle's ReadLocated yields what Read yields, and with each
// event of its own log the offset in LogBytes of its data, those bytes
// there; a fork's inherited events, null data and a writer's unflushed
// events have none. A yield that says stop ends the read without error.
func TestHandleReadLocated(t *testing.T) {
	ctx := t.Context()
	log := agentLog(5, 600)
	f, own := storedFork(t, log, 400, 299)
	_, err := f.Append(ctx, own[:150]...)
	require.NoError(t, err)
	require.NoError(t, f.Flush(ctx))
	_, err = f.Append(ctx, own[150:]...) // not flushed: in the writer's memory
	require.NoError(t, err)

	var want []eventlog.Event
	for e, err := range f.Read(ctx, 0, handle.End) {
		require.NoError(t, err)
		want = append(want, e)
	}
	ls := f.(replay.LocatingSource)
	b := ls.LogBytes()
	require.NotNil(t, b)
	var got []eventlog.Event
	located := 0
	require.NoError(t, ls.ReadLocated(ctx, 0, handle.End, func(e eventlog.Event, at int64) bool {
		switch {
		case e.Seq < 300 || e.Seq >= 450 || e.Data == nil:
			require.Equal(t, int64(-1), at, "seq %d", e.Seq)
		default:
			require.GreaterOrEqual(t, at, int64(0), "seq %d", e.Seq)
			stored := make([]byte, len(e.Data))
			_, err := b.ReadAt(stored, at)
			require.NoError(t, err)
			require.Equal(t, string(e.Data), string(stored), "seq %d", e.Seq)
			located++
		}
		e.Data = append(json.RawMessage(nil), e.Data...)
		got = append(got, e)
		return true
	}))
	require.Equal(t, want, got)
	require.Positive(t, located)

	n := 0
	require.NoError(t, ls.ReadLocated(ctx, 0, handle.End, func(eventlog.Event, int64) bool { n++; return n < 10 }))
	require.Equal(t, 10, n)
}
