package replay_test

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
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

// agentLog returns a log of n events of the agent vocabulary, seeded:
// turns of messages, streamed chunks, reasoning, tool calls and results
// of many sizes, memory and plans, with rollbacks to earlier seqs and
// checkpoints among them.
func agentLog(seed uint64, n int) *memLog {
	r := rand.New(rand.NewPCG(seed, 1))
	m := &memLog{}
	d := eventlog.NewDigest()
	add := func(typ, data string) {
		e := eventlog.Event{Seq: int64(len(m.evs)), Type: typ, Time: int64(len(m.evs)), Data: json.RawMessage(data)}
		if data == "" {
			e.Data = nil
		}
		d.Add(e)
		m.evs = append(m.evs, e)
	}
	text := func() string { return strings.Repeat(fmt.Sprintf("w%d ", r.IntN(1000)), 1+r.IntN(400)) }
	for call := 0; len(m.evs) < n; call++ {
		switch k := r.IntN(12); {
		case k == 0:
			add("user/message", fmt.Sprintf(`{"text":%q}`, text()))
		case k == 1:
			add("step/start", `{}`)
		case k == 2:
			for range 1 + r.IntN(6) {
				add("assistant/chunk", fmt.Sprintf(`{"text":%q}`, text()[:5]))
			}
		case k == 3:
			add("assistant/message", fmt.Sprintf(`{"text":%q}`, text()))
		case k == 4:
			add("assistant/reasoning", fmt.Sprintf(`{"text":%q,"signature":"s%d"}`, text(), call))
		case k == 5:
			add("tool/call", fmt.Sprintf(`{"id":"c%d","name":"read","args":{"path":%q}}`, call, text()))
			add("tool/result", fmt.Sprintf(`{"id":"c%d","output":{"lines":[%q]}}`, call, text()))
		case k == 6:
			add("step/end", "")
		case k == 7:
			add("memory/set", fmt.Sprintf(`{"key":"k%d","value":%q}`, r.IntN(4), text()))
		case k == 8:
			add("plan/set", fmt.Sprintf(`{"plan":[%q]}`, text()))
		case k == 9 && len(m.evs) > 0:
			add(eventlog.TypeRollback, fmt.Sprintf(`{"to":%d}`, r.IntN(len(m.evs))))
		case k == 10:
			add(eventlog.TypeCheckpoint, fmt.Sprintf(`{"log":%q}`, d.String()))
		default:
			add("context/compacted", fmt.Sprintf(`{"summary":%q}`, text()))
		}
	}
	return m
}

// owned is a Source that can only Read: events with data of their own.
type owned struct{ replay.Source }

// scribbler is a BorrowingSource over a memLog whose ReadBorrowed lends
// every event's data in one buffer, written over with '#' once the next
// event is asked for, as a log's reader reuses its buffers.
type scribbler struct {
	*memLog
	borrowed int
}

func (s *scribbler) ReadBorrowed(ctx context.Context, from, to int64) iter.Seq2[eventlog.Event, error] {
	return func(yield func(eventlog.Event, error) bool) {
		var buf []byte
		for e, err := range s.Read(ctx, from, to) {
			if e.Data != nil {
				buf = append(buf[:0], e.Data...)
				e.Data = buf[:len(buf):len(buf)]
			}
			s.borrowed++
			ok := yield(e, err)
			for i := range buf {
				buf[i] = '#'
			}
			if !ok {
				return
			}
		}
	}
}

var builtins = func() []projection.Projection {
	return []projection.Projection{projection.NewAgent(), projection.NewTranscript(), projection.NewConversation()}
}

// A replay that borrows its events' data (the reader reuses it for the
// next event) rebuilds the same states as one given data of its own for
// every event: the built-in projections copy what they keep, and so does
// the engine's read-ahead, across rollbacks and kept states, on one core
// and on two. Two random logs of 1,500 events by default, four of 3,000
// under SESSIONLOG_SWEEPS=full.
func TestBorrowedReplayEqualsOwned(t *testing.T) {
	for _, procs := range []int{1, 2} {
		t.Run(fmt.Sprintf("GOMAXPROCS=%d", procs), func(t *testing.T) {
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
			for seed := range uint64(sweep.Size(2, 4, 4)) {
				log := agentLog(seed, sweep.Size(1500, 3000, 3000))
				last := log.Seq()
				want := replayStates(t, owned{log}, builtins, last, replay.WithSnapshotEvery(64))
				src := &scribbler{memLog: log}
				got := replayStates(t, src, builtins, last, replay.WithSnapshotEvery(64))
				require.Equal(t, want, got, "seed %d", seed)
				require.GreaterOrEqual(t, src.borrowed, len(log.evs), "seed %d: the replay borrowed", seed)
			}
		})
	}
}

// keeper keeps every event's data as it is given: not a Borrower.
type keeper struct{ datas []json.RawMessage }

func (k *keeper) Name() string                  { return "keeper" }
func (k *keeper) Version() int                  { return 1 }
func (k *keeper) Apply(e eventlog.Event)        { k.datas = append(k.datas, e.Data) }
func (k *keeper) Reset()                        { k.datas = nil }
func (k *keeper) MarshalState() ([]byte, error) { return json.Marshal(k.datas) }
func (k *keeper) UnmarshalState(b []byte) error {
	k.datas = nil // else json.Unmarshal writes into the kept data
	return json.Unmarshal(b, &k.datas)
}

// A projection that is not a Borrower may keep the data it is given, so a
// replay into it, even beside Borrowers, never borrows.
func TestReplayLendsOnlyToBorrowers(t *testing.T) {
	log := agentLog(9, 500)
	set := func() []projection.Projection { return []projection.Projection{projection.NewTranscript(), &keeper{}} }
	want := replayStates(t, owned{log}, set, log.Seq())
	src := &scribbler{memLog: log}
	require.Equal(t, want, replayStates(t, src, set, log.Seq()))
	require.Zero(t, src.borrowed)
}

// storedFork stores log's first stored events as a session of a new
// in-memory file store and returns a fork of it at seq at, with the
// fork's own events to append: the log's events past stored, numbered
// from at+1, rollbacks and checkpoints (refused past the parent's) turned
// into plain messages.
func storedFork(t *testing.T, log *memLog, stored int, at int64) (handle.Handle, []eventlog.Event) {
	t.Helper()
	ctx := t.Context()
	st := file.New(afero.NewMemMapFs(), "/s")
	w, err := st.Create(ctx, handle.WithID(log.ID()))
	require.NoError(t, err)
	_, err = w.Append(ctx, log.evs[:stored]...)
	require.NoError(t, err)
	require.NoError(t, w.Close())
	f, err := st.Fork(ctx, log.ID(), at)
	require.NoError(t, err)
	t.Cleanup(func() { f.Close() })
	var own []eventlog.Event
	for i, e := range log.evs[stored:] {
		if e.Type == eventlog.TypeRollback || e.Type == eventlog.TypeCheckpoint {
			e.Type, e.Data = "user/message", json.RawMessage(`{"text":"own"}`)
		}
		e.Seq = at + 1 + int64(i)
		own = append(own, e)
	}
	return f, own
}

// A handle's ReadBorrowed yields what its Read yields, a fork's inherited
// events included, and a replay through it (which borrows) rebuilds the
// states a replay of owned events does.
func TestHandleReadBorrowed(t *testing.T) {
	ctx := t.Context()
	log := agentLog(5, 2000)
	f, own := storedFork(t, log, 1500, 999)
	fork := &memLog{evs: append(slices.Clone(log.evs[:1000]), own...)}
	_, err := f.Append(ctx, own...)
	require.NoError(t, err)
	require.NoError(t, f.Flush(ctx))

	bs, ok := f.(replay.BorrowingSource)
	require.True(t, ok, "a store's handle is a BorrowingSource")
	var read, borrowed []eventlog.Event
	for e, err := range f.Read(ctx, 0, handle.End) {
		require.NoError(t, err)
		read = append(read, e)
	}
	for e, err := range bs.ReadBorrowed(ctx, 0, handle.End) {
		require.NoError(t, err)
		e.Data = append(json.RawMessage(nil), e.Data...)
		borrowed = append(borrowed, e)
	}
	require.Len(t, read, len(fork.evs))
	require.Equal(t, read, borrowed)

	want := replayStates(t, fork, builtins, fork.Seq())
	require.Equal(t, want, replayStates(t, f, builtins, fork.Seq()))
}
