package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/handle"
)

// The cases of the contract's all-or-nothing batch (Store.AppendAll).

// closedSession makes a session holding evs (seqs from 0), closed.
func closedSession(t *testing.T, hs Harness, evs []eventlog.Event) string {
	t.Helper()
	h := create(t, hs)
	if len(evs) > 0 {
		appendFlush(t, h, evs)
	}
	require.NoError(t, h.Close())
	return h.ID()
}

// digestOf returns the log digest of evs.
func digestOf(evs []eventlog.Event) string {
	d := eventlog.NewDigest()
	for _, e := range evs {
		d.Add(e)
	}
	return d.String()
}

// testAppendAllRefused refuses a batch in every way the caller can make it
// fail: nothing of it is stored, and the session takes the good batch
// after.
func testAppendAllRefused(t *testing.T, hs Harness) {
	old := withSeqs(events(0, 6), 0)
	id := closedSession(t, hs, old)
	good := withSeqs(packedRun(0, 30), 6)
	badAt := func(i int, e eventlog.Event) []eventlog.Event {
		evs := slices.Clone(good)
		e.Seq = int64(6 + i)
		evs[i] = e
		return evs
	}
	stop := errors.New("the source broke")
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	for _, tc := range []struct {
		name     string
		ctx      context.Context
		expected int64
		evs      []eventlog.Event
		err      error // the events' own error, after evs
		want     error // nil: a *ConflictError
		index    int   // the *EventError's, when want is one of its reasons
	}{
		{name: "behind", expected: 5, evs: withSeqs(good, 5)},
		{name: "ahead", expected: 7, evs: withSeqs(good, 7)},
		{name: "seq gap", expected: 6, evs: append(slices.Clone(good[:5]), good[6:]...), want: eventlog.ErrInvalidEvent, index: 5},
		{name: "seqs not from expected", expected: 6, evs: withSeqs(good, 7), want: eventlog.ErrInvalidEvent, index: 0},
		{name: "invalid event", expected: 6, evs: badAt(17, eventlog.Event{Type: "tool call"}), want: eventlog.ErrInvalidEvent, index: 17},
		{name: "rollback not below itself", expected: 6, evs: badAt(20, eventlog.Event{Type: eventlog.TypeRollback, Data: json.RawMessage(`{"to":26}`)}), want: eventlog.ErrInvalidEvent, index: 20},
		{name: "checkpoint with a wrong digest", expected: 6, evs: badAt(12, eventlog.Event{Type: eventlog.TypeCheckpoint,
			Data: json.RawMessage(`{"log":"sha256:0000000000000000000000000000000000000000000000000000000000000000"}`)}), want: eventlog.ErrInvalidEvent, index: 12},
		{name: "the events fail", expected: 6, evs: good[:25], err: stop, want: stop},
		{name: "cancelled", ctx: cancelled, expected: 6, evs: good, want: context.Canceled},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := ctx
			if tc.ctx != nil {
				c = tc.ctx
			}
			_, err := hs.Store.AppendAll(c, id, tc.expected, Events(tc.evs, tc.err))
			if tc.want != nil {
				require.ErrorIs(t, err, tc.want)
			}
			var ee *handle.EventError
			if errors.Is(tc.want, eventlog.ErrInvalidEvent) {
				require.ErrorAs(t, err, &ee)
				require.Equal(t, tc.index, ee.Index)
			}
			if tc.want == nil {
				var ce *handle.ConflictError
				require.ErrorAs(t, err, &ce)
				require.Equal(t, int64(6), ce.Next)
			}
			require.Equal(t, canon(old), canon(readAll(t, open(t, hs, id, handle.ReadOnly), 0, handle.End)), "nothing of the batch stored")
		})
	}
	info, err := hs.Store.AppendAll(ctx, id, 6, Events(good, nil))
	require.NoError(t, err)
	require.Equal(t, int64(35), info.LastSeq)
	require.Equal(t, canon(append(old, good...)), canon(readAll(t, open(t, hs, id, handle.ReadOnly), 0, handle.End)))

	_, err = hs.Store.AppendAll(ctx, "01JDX3N0Q3Z8Y6W2D1V5K7M9PB", 0, Events(nil, nil))
	require.ErrorIs(t, err, handle.ErrNotFound)
	w := open(t, hs, id, handle.ReadWrite)
	_, err = hs.Store.AppendAll(ctx, id, 36, Events(withSeqs(events(0, 1), 36), nil))
	require.ErrorIs(t, err, handle.ErrLocked, "under the writer lock")
	require.NoError(t, w.Close())
}

// testAppendAll appends batches — empty, with a checkpoint, to a fork,
// larger than a read unit (a zstd frame, a message) — and a writer goes on
// after them with the digest they left.
func testAppendAll(t *testing.T, hs Harness) {
	old := withSeqs(events(0, 4), 0)
	id := closedSession(t, hs, old)
	info, err := hs.Store.AppendAll(ctx, id, 4, Events(nil, nil))
	require.NoError(t, err)
	require.Equal(t, int64(3), info.LastSeq, "an empty batch changes nothing")

	// A checkpoint in the batch covers the log and the batch before it.
	batch := withSeqs(packedRun(0, 20), 4)
	cp := eventlog.Event{Seq: 14, Type: eventlog.TypeCheckpoint, Time: 1,
		Data: json.RawMessage(`{"log":"` + digestOf(append(slices.Clone(old), batch[:10]...)) + `"}`)}
	batch = withSeqs(slices.Insert(batch, 10, cp), 4)
	info, err = hs.Store.AppendAll(ctx, id, 4, Events(batch, nil))
	require.NoError(t, err)
	require.Equal(t, int64(24), info.LastSeq)
	require.Equal(t, int64(25), info.Events)
	require.Equal(t, batch[len(batch)-1].Type, info.LastType)
	want := append(slices.Clone(old), batch...)

	// Larger than a read unit (a zstd frame, a message), than an atomic
	// batch of the small-message store: stored whole, or refused whole.
	var big []eventlog.Event
	size := int64(0)
	for i := range 2 * max(20, int(hs.ReadUnit/30000)+8) {
		e := event(i)
		if i%2 == 0 {
			e = incompressible(30000 + i)
		}
		big = append(big, e)
		size += int64(eventlog.RowSize(e))
	}
	big = withSeqs(big, 25)
	require.Greater(t, size, hs.ReadUnit)
	info, err = hs.Store.AppendAll(ctx, id, 25, Events(big, nil))
	switch limit := hs.AppendAllLimit; {
	case limit > 0 && size > 2*limit:
		require.ErrorIs(t, err, handle.ErrBatchTooLarge, "more than the store's atomic batch")
	case limit == 0 || size <= limit:
		require.NoError(t, err)
		require.Equal(t, int64(24+len(big)), info.LastSeq)
		want = append(want, big...)
	default:
		t.Fatalf("a batch of %d bytes, between the store's limit of %d and twice it", size, limit)
	}

	w := open(t, hs, id, handle.ReadWrite)
	require.Equal(t, canon(want), canon(readAll(t, w, 0, handle.End)))
	got, next, err := w.LogDigest(ctx)
	require.NoError(t, err)
	require.Equal(t, int64(len(want)), next)
	require.Equal(t, digestOf(want), got)
	appendFlush(t, w, []eventlog.Event{{Type: eventlog.TypeCheckpoint, Data: json.RawMessage(`{"log":"` + got + `"}`)}})
	require.NoError(t, w.Close())

	// A fork's batch: its checkpoint covers the inherited prefix.
	f, err := hs.Store.Fork(ctx, id, 9)
	require.NoError(t, err)
	require.NoError(t, f.Close())
	own := withSeqs(events(50, 3), 10)
	fcp := eventlog.Event{Seq: 13, Type: eventlog.TypeCheckpoint, Time: 1,
		Data: json.RawMessage(`{"log":"` + digestOf(append(slices.Clone(want[:10]), own...)) + `"}`)}
	_, err = hs.Store.AppendAll(ctx, f.ID(), 10, Events(append(own, fcp), nil))
	require.NoError(t, err)
	require.Equal(t, canon(append(append(slices.Clone(want[:10]), own...), fcp)),
		canon(readAll(t, open(t, hs, f.ID(), handle.ReadOnly), 0, handle.End)))
}
