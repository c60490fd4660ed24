package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/handle"
)

// The cases of the contract's all-or-nothing creation (Store.CreateFrom).

// Events yields evs, then err when it is not nil: the events CreateFrom
// takes.
func Events(evs []eventlog.Event, err error) iter.Seq2[eventlog.Event, error] {
	return func(yield func(eventlog.Event, error) bool) {
		for _, e := range evs {
			if !yield(e, nil) {
				return
			}
		}
		if err != nil {
			yield(eventlog.Event{}, err)
		}
	}
}

// requireAbsent checks that no reader finds session id.
func requireAbsent(t *testing.T, hs Harness, id string) {
	t.Helper()
	_, err := hs.Store.Stat(ctx, id)
	require.ErrorIs(t, err, handle.ErrNotFound, "Stat")
	_, err = hs.Store.Open(ctx, id, handle.ReadOnly)
	require.ErrorIs(t, err, handle.ErrNotFound, "Open")
	infos, err := hs.Store.List(ctx)
	require.NoError(t, err)
	for _, in := range infos {
		require.NotEqual(t, id, in.ID, "List")
	}
}

// packedRun is a batch with runs of chunks between other events, seqs from
// first on.
func packedRun(first int64, n int) []eventlog.Event {
	var evs []eventlog.Event
	for i := range n {
		e := eventlog.Event{Type: "assistant/chunk", Time: int64(100 + i%3), Data: json.RawMessage(fmt.Sprintf(`{"text":"c%d"}`, i))}
		if i%10 == 9 {
			e = eventlog.Event{Type: "assistant/message", Time: 7, Data: json.RawMessage(`{"text":"m"}`)}
		}
		evs = append(evs, e)
	}
	return withSeqs(evs, first)
}

func testCreateFromRoundTrip(t *testing.T, hs Harness) {
	const id = "01JDX3N0Q3Z8Y6W2D1V5K7M9PA"
	evs := packedRun(0, 50)
	evs[9].Data = json.RawMessage(`{ "text" : "spaced" }`)
	labels := map[string]string{"agent": "coder"}
	info, err := hs.Store.CreateFrom(ctx, Events(evs, nil), handle.WithID(id), handle.WithLabels(labels), handle.WithCreatedAt(1764450000000))
	require.NoError(t, err)
	require.Equal(t, id, info.ID)
	require.Equal(t, int64(50), info.Events)
	require.Equal(t, int64(49), info.LastSeq)
	require.Equal(t, "assistant/message", info.LastType)
	require.Equal(t, labels, info.Header.Labels)
	require.Equal(t, int64(1764450000000), info.Header.CreatedAt)

	r := open(t, hs, id, handle.ReadOnly)
	got := readAll(t, r, 0, handle.End)
	require.Equal(t, `{"seq":9,"type":"assistant/message","time":7,"data":{"text":"spaced"}}`, canon(got[9:10])[0], "data stored compacted")
	evs[9].Data = json.RawMessage(`{"text":"spaced"}`)
	require.Equal(t, canon(evs), canon(got))
	w := open(t, hs, id, handle.ReadWrite)
	require.Equal(t, int64(50), appendFlush(t, w, events(0, 1)), "a writer continues after the events")

	empty, err := hs.Store.CreateFrom(ctx, Events(nil, nil))
	require.NoError(t, err)
	require.Equal(t, int64(-1), empty.LastSeq)
	require.Empty(t, readAll(t, open(t, hs, empty.ID, handle.ReadOnly), 0, handle.End))

	_, err = hs.Store.CreateFrom(ctx, Events(evs, nil), handle.WithID(id))
	require.ErrorIs(t, err, handle.ErrExists)
	require.Len(t, readAll(t, open(t, hs, id, handle.ReadOnly), 0, handle.End), 51, "an existing session is left as it was")
}

// testCreateFromAllOrNothing refuses, or fails part way, in every way the
// caller can make it: nothing of the session is left, and the retry with
// good events succeeds.
func testCreateFromAllOrNothing(t *testing.T, hs Harness) {
	good := packedRun(0, 30)
	stop := errors.New("the source broke")
	badAt := func(i int, e eventlog.Event) []eventlog.Event {
		evs := slices.Clone(good)
		e.Seq = int64(i)
		evs[i] = e
		return evs
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	for i, tc := range []struct {
		name  string
		ctx   context.Context
		evs   []eventlog.Event
		err   error // the events' own error, after evs
		want  error
		index int // the *EventError's, when want is one of its reasons
	}{
		{name: "invalid event", evs: badAt(17, eventlog.Event{Type: "tool call"}), want: eventlog.ErrInvalidEvent, index: 17},
		{name: "invalid JSON", evs: badAt(3, eventlog.Event{Type: "x", Data: json.RawMessage(`{"a":`)}), want: eventlog.ErrInvalidEvent, index: 3},
		{name: "seq gap", evs: append(slices.Clone(good[:5]), good[6:]...), want: eventlog.ErrInvalidEvent, index: 5},
		{name: "seqs not from zero", evs: withSeqs(good, 1), want: eventlog.ErrInvalidEvent, index: 0},
		{name: "rollback not below itself", evs: badAt(20, eventlog.Event{Type: eventlog.TypeRollback, Data: json.RawMessage(`{"to":20}`)}), want: eventlog.ErrInvalidEvent, index: 20},
		{name: "checkpoint with a wrong digest", evs: badAt(12, eventlog.Event{Type: eventlog.TypeCheckpoint,
			Data: json.RawMessage(`{"log":"sha256:0000000000000000000000000000000000000000000000000000000000000000"}`)}), want: eventlog.ErrInvalidEvent, index: 12},
		{name: "the events fail", evs: good[:25], err: stop, want: stop},
		{name: "cancelled", ctx: cancelled, evs: good, want: context.Canceled},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id := fmt.Sprintf("01JDX3N0Q3Z8Y6W2D1V5K7M9P%c", 'A'+i)
			c := ctx
			if tc.ctx != nil {
				c = tc.ctx
			}
			_, err := hs.Store.CreateFrom(c, Events(tc.evs, tc.err), handle.WithID(id))
			require.ErrorIs(t, err, tc.want)
			var ee *handle.EventError
			if errors.Is(tc.want, eventlog.ErrInvalidEvent) {
				require.ErrorAs(t, err, &ee)
				require.Equal(t, tc.index, ee.Index)
			}
			requireAbsent(t, hs, id)
			info, err := hs.Store.CreateFrom(ctx, Events(good, nil), handle.WithID(id))
			require.NoError(t, err, "the retry succeeds")
			require.Equal(t, int64(29), info.LastSeq)
			require.Equal(t, canon(good), canon(readAll(t, open(t, hs, id, handle.ReadOnly), 0, handle.End)))
		})
	}
}

// testCreateFromFork makes a fork holding its own events, a checkpoint
// among them that covers the inherited prefix, and a child.
func testCreateFromFork(t *testing.T, hs Harness) {
	parent := create(t, hs)
	appendFlush(t, parent, events(0, 8))
	require.NoError(t, parent.Close())
	own := withSeqs(events(100, 4), 5)
	d := eventlog.NewDigest()
	for _, e := range append(withSeqs(events(0, 5), 0), own[:2]...) {
		d.Add(e)
	}
	cp := eventlog.Event{Seq: 7, Type: eventlog.TypeCheckpoint, Time: 1, Data: json.RawMessage(`{"log":"` + d.String() + `"}`)}
	own = slices.Insert(own, 2, cp)
	own = withSeqs(own, 5)
	p := eventlog.Parent{ID: parent.ID(), Seq: 4, Mode: eventlog.ModeFork}
	info, err := hs.Store.CreateFrom(ctx, Events(own, nil), handle.WithParent(p))
	require.NoError(t, err)
	require.Equal(t, &p, info.Header.Parent)
	require.Equal(t, int64(10), info.Events)
	f := open(t, hs, info.ID, handle.ReadOnly)
	require.Equal(t, canon(append(withSeqs(events(0, 5), 0), own...)), canon(readAll(t, f, 0, handle.End)))

	_, err = hs.Store.CreateFrom(ctx, Events(withSeqs(own, 0), nil), handle.WithParent(p))
	require.ErrorIs(t, err, eventlog.ErrInvalidEvent, "a fork's events start after the fork point")
	_, err = hs.Store.CreateFrom(ctx, Events(nil, nil), handle.WithParent(eventlog.Parent{ID: parent.ID(), Seq: 8, Mode: eventlog.ModeFork}))
	require.ErrorIs(t, err, handle.ErrLineage)

	child, err := hs.Store.CreateFrom(ctx, Events(withSeqs(events(50, 2), 0), nil),
		handle.WithParent(eventlog.Parent{ID: parent.ID(), Seq: 3, Mode: eventlog.ModeChild, Call: "c1"}))
	require.NoError(t, err)
	require.Equal(t, int64(1), child.LastSeq, "a child's events start at seq 0")
	kids, err := hs.Store.Children(ctx, parent.ID())
	require.NoError(t, err)
	require.ElementsMatch(t, []string{info.ID, child.ID}, []string{kids[0].ID, kids[1].ID})
}

// testCreateFromDigest: the digest of a session CreateFrom made is that of
// its events, and a writer's first checkpoint on it verifies.
func testCreateFromDigest(t *testing.T, hs Harness) {
	evs := packedRun(0, 300)
	info, err := hs.Store.CreateFrom(ctx, Events(evs, nil))
	require.NoError(t, err)
	w := open(t, hs, info.ID, handle.ReadWrite)
	got, next, err := w.LogDigest(ctx)
	require.NoError(t, err)
	want := eventlog.NewDigest()
	for _, e := range evs {
		want.Add(e)
	}
	require.Equal(t, int64(300), next)
	require.Equal(t, want.String(), got)
	_, err = w.Append(ctx, eventlog.Event{Type: eventlog.TypeCheckpoint, Data: json.RawMessage(`{"log":"` + got + `"}`)})
	require.NoError(t, err)
	require.NoError(t, w.Flush(ctx))
}

// testCreateFromLarge spans many flushes, messages and frames.
func testCreateFromLarge(t *testing.T, hs Harness) {
	evs := make([]eventlog.Event, 0, 600)
	for i := range 600 {
		e := incompressible(9000 + i)
		if i%3 != 0 {
			e = event(i)
		}
		evs = append(evs, e)
	}
	evs = withSeqs(evs, 0)
	info, err := hs.Store.CreateFrom(ctx, Events(evs, nil))
	require.NoError(t, err)
	require.Equal(t, int64(599), info.LastSeq)
	require.Equal(t, canon(evs), canon(readAll(t, open(t, hs, info.ID, handle.ReadOnly), 0, handle.End)))
}

// testCreateFromDerived: CreateFrom leaves what a writer's Close leaves —
// the saved digest and its states at the checkpoints — so that neither a
// writer's first checkpoint nor a fork at one of the log's checkpoints
// hashes the log again. The logs are a read unit (a zstd frame) and a few
// events more, at least 40 events of 25 kB.
func testCreateFromDerived(t *testing.T, hs Harness) {
	var evs []eventlog.Event
	for i := range max(40, int(hs.ReadUnit/25000)+8) {
		evs = append(evs, incompressible(25000+i))
	}
	evs = withSeqs(evs, 0)
	at := int64(len(evs) - 5) // the checkpoint
	plain, err := hs.Store.CreateFrom(ctx, Events(evs, nil))
	require.NoError(t, err)
	size := hs.Size(t, plain.ID)
	w := open(t, hs, plain.ID, handle.ReadWrite)
	before := hs.BytesRead()
	got, next, err := w.LogDigest(ctx)
	require.NoError(t, err)
	require.Less(t, hs.BytesRead()-before, size/3, "the digest from its saved state, not from the log")
	require.Equal(t, int64(len(evs)), next)
	require.Equal(t, digestOf(evs), got)
	require.NoError(t, w.Close())

	cp := eventlog.Event{Seq: at, Type: eventlog.TypeCheckpoint, Time: 1, Data: json.RawMessage(`{"log":"` + digestOf(evs[:at]) + `"}`)}
	evs = withSeqs(slices.Insert(evs, int(at), cp), 0)
	info, err := hs.Store.CreateFrom(ctx, Events(evs, nil))
	require.NoError(t, err)
	f, err := hs.Store.Fork(ctx, info.ID, at)
	require.NoError(t, err)
	t.Cleanup(func() { f.Close() })
	readAll(t, f, 0, 0) // opens the parent, which a JetStream reader reads whole
	before = hs.BytesRead()
	got, next, err = f.LogDigest(ctx)
	require.NoError(t, err)
	require.Less(t, hs.BytesRead()-before, size/3, "the fork's digest from the state at the checkpoint")
	require.Equal(t, at+1, next)
	require.Equal(t, digestOf(evs[:at+1]), got)
}
