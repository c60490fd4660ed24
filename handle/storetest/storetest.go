package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"filippo.io/age"
	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/handle"
)

// Harness is what the suite needs of a store under test.
type Harness struct {
	// Store is a fresh, empty store.
	Store handle.Store
	// Corrupt damages the stored bytes holding seq in session id (closed)
	// so that they cannot be decoded, leaving valid data after them. It
	// returns the byte offset and seq the resulting *CorruptError must
	// report.
	Corrupt func(t *testing.T, id string, seq int64) (offset, wantSeq int64)
	// Tear drops the last n stored bytes of session id (closed), as a torn
	// last write would: a write no Flush acknowledged, so the store must
	// also forget any record of it (docs/format.md: a tail the store knows was
	// acknowledged is corruption, never a torn tail).
	Tear func(t *testing.T, id string, n int64)
	// Size returns the stored size in bytes of session id.
	Size func(t *testing.T, id string) int64
	// BytesRead returns how many bytes the store has read from its storage
	// so far.
	BytesRead func() int64
	// Lose removes session id's stored log behind the store's back (a
	// parent lost to a disk failure, say).
	Lose func(t *testing.T, id string)
	// AppendAllLimit is how many bytes of rows one Store.AppendAll
	// surely stores, when the store bounds its atomic batch (0: any
	// number); a batch of more than twice as many is refused whole with
	// ErrBatchTooLarge.
	AppendAllLimit int64
	// WithPolicy returns a store on Store's storage whose write handles
	// flush by policy p, Interval's ticks being what the test sends
	// on ticks.
	WithPolicy func(t *testing.T, p handle.FlushPolicy, ticks chan time.Time) handle.Store
	// Sealing returns a new store on Store's storage that seals the
	// sessions it creates for recipients (none: clear) and opens sealed
	// ones with identities (handle.WithRecipients, handle.WithIdentities);
	// it keeps no key another store made. Nil skips the sealed cases.
	Sealing func(t *testing.T, recipients []age.Recipient, identities []age.Identity) handle.Store
	// Raw returns the bytes stored for session id (a file's, a subject's
	// payloads): where the sealed cases look for plaintext.
	Raw func(t *testing.T, id string) []byte
	// ReadUnit is the most log bytes the store may read to yield one event
	// of a closed session (a zstd frame, a message; 0: about the event's
	// own). The cases that check a read is bounded, or that span units,
	// write a unit and some events, no more.
	ReadUnit int64
}

type testCase struct {
	name string
	run  func(t *testing.T, hs Harness)
}

// Run runs the contract suite; newHarness is called once per case.
func Run(t *testing.T, newHarness func(t *testing.T) Harness) { RunPart(t, 0, 1, newHarness) }

// RunPart runs the cases whose place in the suite is part modulo parts:
// a store tested in several configurations can run each case once, in
// one of them (part i of n in the i-th), and every case in each where
// time allows (parts 1). newHarness is called once per case.
func RunPart(t *testing.T, part, parts int, newHarness func(t *testing.T) Harness) {
	for i, tc := range cases {
		if i%parts != part {
			continue
		}
		t.Run(tc.name, func(t *testing.T) {
			tc.run(t, newHarness(t))
		})
	}
}

var cases = []testCase{
	{"RoundTrip", testRoundTrip},
	{"PackedRunsRoundTrip", testPacked},
	{"ReadSlicesAndBounds", testReadSlices},
	{"WriterReadsOwnUnflushedAppends", testReadOwnAppends},
	{"AppendAtConflictWritesNothing", testAppendAtConflict},
	{"InvalidEventRejectsWholeBatch", testInvalidBatch},
	{"SecondWriterLocked", testSecondWriter},
	{"ReadOnlyCannotAppend", testReadOnly},
	{"ReadOnlyFollowsWriter", testFollow},
	{"ClosedHandleErrors", testClosed},
	{"ReopenContinuesSeq", testReopen},
	{"TornTailRecoveredAndCut", testTorn},
	{"CorruptionReportedNeverSkipped", testCorrupt},
	{"StatAndListReadBoundedBytes", testStatBounded},
	{"ListFiltersAndOrder", testList},
	{"ListPages", testListPages},
	{"CreateWithIDAndExists", testCreateWithID},
	{"Delete", testDelete},
	{"InvalidIDsRefused", testInvalidIDs},
	{"ContextCancellation", testContext},
	{"ConcurrentAppendersContiguous", testConcurrent},
	{"ForkReadsInheritedPrefix", testFork},
	{"ForkOfForkAndAbandonedBranch", testForkChain},
	{"ForkPointChecked", testForkPoint},
	{"ChildInheritsNothingAndOutlivesParent", testChild},
	{"DeleteProtectsForks", testDeleteProtection},
	{"LostParentIsLineageError", testLostParent},
	{"DigestCoversInheritedPrefix", testForkDigest},
	{"CreateFromRoundTrip", testCreateFromRoundTrip},
	{"CreateFromAllOrNothing", testCreateFromAllOrNothing},
	{"CreateFromFork", testCreateFromFork},
	{"CreateFromLarge", testCreateFromLarge},
	{"CreateFromDigest", testCreateFromDigest},
	{"CreateFromDerived", testCreateFromDerived},
	{"AppendAllRefused", testAppendAllRefused},
	{"AppendAll", testAppendAll},
	{"Detach", testDetach},
	{"TreeChildrenAncestors", testTree},
	{"DerivedData", testDerived},
	{"Tail", testTail},
	{"GC", testGC},
	{"FlushPolicies", testFlushPolicies},
	{"RedactionAtWrite", testRedaction},
	{"Sealed", testSealed},
}

var ctx = context.Background()

// event returns a deterministic event whose data depends on i.
func event(i int) eventlog.Event {
	types := []string{"user/message", "assistant/chunk", "assistant/chunk", "tool/call", "tool/result"}
	data := fmt.Sprintf(`{"i":%d,"text":%q}`, i, strings.Repeat("x", i%37))
	return eventlog.Event{Type: types[i%len(types)], Time: int64(1764450000000 + i), Data: json.RawMessage(data)}
}

func events(from, n int) []eventlog.Event {
	evs := make([]eventlog.Event, n)
	for i := range evs {
		evs[i] = event(from + i)
	}
	return evs
}

// incompressible returns an event whose data does not compress, so that
// its row or frame is larger than any metadata a store writes after it.
func incompressible(n int) eventlog.Event {
	b := make([]byte, n)
	x := uint32(2463534242) ^ uint32(n)*2654435761 | 1 // a stream of its own for each n
	for i := range b {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		b[i] = 'a' + byte(x%26)
	}
	return eventlog.Event{Type: "tool/result", Time: 1, Data: json.RawMessage(`{"output":"` + string(b) + `"}`)}
}

// canon renders events for byte-exact comparison.
func canon(evs []eventlog.Event) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = string(eventlog.AppendCanon(nil, e))
	}
	return out
}

// withSeqs sets seqs from first on.
func withSeqs(evs []eventlog.Event, first int64) []eventlog.Event {
	out := make([]eventlog.Event, len(evs))
	for i, e := range evs {
		e.Seq = first + int64(i)
		out[i] = e
	}
	return out
}

func readAll(t *testing.T, h handle.Handle, from, to int64) []eventlog.Event {
	t.Helper()
	var out []eventlog.Event
	for e, err := range h.Read(ctx, from, to) {
		require.NoError(t, err)
		out = append(out, e)
	}
	return out
}

func create(t *testing.T, hs Harness, opts ...handle.Option) handle.Handle {
	t.Helper()
	h, err := hs.Store.Create(ctx, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { h.Close() })
	return h
}

func appendFlush(t *testing.T, h handle.Handle, evs []eventlog.Event) int64 {
	t.Helper()
	last, err := h.Append(ctx, evs...)
	require.NoError(t, err)
	require.NoError(t, h.Flush(ctx))
	return last
}

func open(t *testing.T, hs Harness, id string, mode handle.Mode) handle.Handle {
	t.Helper()
	h, err := hs.Store.Open(ctx, id, mode)
	require.NoError(t, err)
	t.Cleanup(func() { h.Close() })
	return h
}

func testRoundTrip(t *testing.T, hs Harness) {
	h := create(t, hs)
	require.True(t, h.Writable())
	require.Equal(t, int64(-1), h.Seq())
	evs := events(0, 50)
	last := appendFlush(t, h, evs)
	require.Equal(t, int64(49), last)
	require.Equal(t, int64(49), h.DurableSeq())
	require.Equal(t, canon(withSeqs(evs, 0)), canon(readAll(t, h, 0, handle.End)))
	require.NoError(t, h.Close())

	r := open(t, hs, h.ID(), handle.ReadOnly)
	require.False(t, r.Writable())
	require.Equal(t, int64(49), r.Seq())
	require.Equal(t, canon(withSeqs(evs, 0)), canon(readAll(t, r, 0, handle.End)))

	// Data is stored compacted, escapes left as they were; null data reads as nil.
	w := open(t, hs, h.ID(), handle.ReadWrite)
	appendFlush(t, w, []eventlog.Event{
		{Type: "x", Time: 0, Data: json.RawMessage("{ \"a\" : [1, 2],\n \"b\":\"\\u0041 b\" }")},
		{Type: "y", Time: 5},
	})
	got := readAll(t, w, 50, handle.End)
	require.Equal(t, []string{
		`{"seq":50,"type":"x","time":0,"data":{"a":[1,2],"b":"\u0041 b"}}`,
		`{"seq":51,"type":"y","time":5,"data":null}`,
	}, canon(got))
}

func testPacked(t *testing.T, hs Harness) {
	h := create(t, hs)
	var evs []eventlog.Event
	for i := range 40 {
		e := eventlog.Event{Type: "assistant/chunk", Time: int64(100 + i%3), Data: json.RawMessage(fmt.Sprintf(`{"text":"c%d"}`, i))}
		if i%10 == 9 {
			e = eventlog.Event{Type: "assistant/message", Time: 7}
		}
		evs = append(evs, e)
		// Chunks appended one at a time, flushed in uneven groups.
		_, err := h.Append(ctx, e)
		require.NoError(t, err)
		if i%7 == 3 {
			require.NoError(t, h.Flush(ctx))
		}
	}
	require.NoError(t, h.Close())
	r := open(t, hs, h.ID(), handle.ReadOnly)
	require.Equal(t, canon(withSeqs(evs, 0)), canon(readAll(t, r, 0, handle.End)))
}

func testReadSlices(t *testing.T, hs Harness) {
	h := create(t, hs)
	evs := withSeqs(events(0, 30), 0)
	appendFlush(t, h, evs[:20])
	_, err := h.Append(ctx, evs[20:]...) // unflushed tail: slices must span both
	require.NoError(t, err)
	for _, tc := range []struct {
		name     string
		from, to int64
		want     []eventlog.Event
	}{
		{"all", 0, handle.End, evs},
		{"first", 0, 0, evs[:1]},
		{"last", 29, 29, evs[29:]},
		{"middle inclusive", 5, 9, evs[5:10]},
		{"across flushed and unflushed", 18, 22, evs[18:23]},
		{"from past end", 30, handle.End, nil},
		{"to past end", 25, 1000, evs[25:]},
		{"empty range", 9, 5, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, canon(tc.want), canon(readAll(t, h, tc.from, tc.to)))
		})
	}
	// Stopping early is allowed.
	n := 0
	for range h.Read(ctx, 0, handle.End) {
		n++
		if n == 3 {
			break
		}
	}
	require.Equal(t, 3, n)
}

func testReadOwnAppends(t *testing.T, hs Harness) {
	h := create(t, hs)
	evs := withSeqs(events(0, 5), 0)
	_, err := h.Append(ctx, evs...)
	require.NoError(t, err)
	require.Equal(t, int64(4), h.Seq())
	require.Equal(t, int64(-1), h.DurableSeq())
	require.Equal(t, canon(evs), canon(readAll(t, h, 0, handle.End)))
	// A reader sees only what is on disk.
	r := open(t, hs, h.ID(), handle.ReadOnly)
	require.Empty(t, readAll(t, r, 0, handle.End))
}

func testAppendAtConflict(t *testing.T, hs Harness) {
	h := create(t, hs)
	appendFlush(t, h, events(0, 3))
	sizeBefore := hs.Size(t, h.ID())
	for _, expected := range []int64{0, 2, 4, 100, -1} {
		_, err := h.AppendAt(ctx, expected, events(3, 2)...)
		var ce *handle.ConflictError
		require.ErrorAs(t, err, &ce, "expected %d", expected)
		require.Equal(t, int64(3), ce.Next)
		require.Equal(t, expected, ce.Expected, "the error names the seq the caller expected")
	}
	require.NoError(t, h.Flush(ctx))
	require.Equal(t, int64(2), h.Seq())
	require.Equal(t, sizeBefore, hs.Size(t, h.ID()))
	last, err := h.AppendAt(ctx, 3, events(3, 2)...)
	require.NoError(t, err)
	require.Equal(t, int64(4), last)
	require.NoError(t, h.Flush(ctx))
	require.Len(t, readAll(t, h, 0, handle.End), 5)
}

func testInvalidBatch(t *testing.T, hs Harness) {
	h := create(t, hs)
	appendFlush(t, h, events(0, 2))
	sizeBefore := hs.Size(t, h.ID())
	good := events(2, 1)[0]
	huge := eventlog.Event{Type: "tool/result", Data: json.RawMessage(`"` + strings.Repeat("a", eventlog.MaxRowSize) + `"`)}
	for _, tc := range []struct {
		name string
		bad  eventlog.Event
		want error
	}{
		{"empty type", eventlog.Event{Type: ""}, eventlog.ErrInvalidEvent},
		{"bad type char", eventlog.Event{Type: "tool call"}, eventlog.ErrInvalidEvent},
		{"type too long", eventlog.Event{Type: strings.Repeat("a", 129)}, eventlog.ErrInvalidEvent},
		{"bad JSON", eventlog.Event{Type: "x", Data: json.RawMessage(`{"a":`)}, eventlog.ErrInvalidEvent},
		{"two JSON values", eventlog.Event{Type: "x", Data: json.RawMessage(`1 2`)}, eventlog.ErrInvalidEvent},
		{"negative time", eventlog.Event{Type: "x", Time: -1}, eventlog.ErrInvalidEvent},
		// RFC 8259 text is UTF-8 (docs/format.md, Rows). Regression: stored verbatim.
		{"invalid UTF-8", eventlog.Event{Type: "x", Data: json.RawMessage("{\"text\":\"a\xff\xfeb\"}")}, eventlog.ErrInvalidEvent},
		{"too large", huge, eventlog.ErrTooLarge},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := h.Append(ctx, good, tc.bad, good)
			require.ErrorIs(t, err, tc.want)
			var ee *handle.EventError
			require.ErrorAs(t, err, &ee)
			require.Equal(t, 1, ee.Index)
			require.Equal(t, int64(1), h.Seq())
		})
	}
	require.NoError(t, h.Flush(ctx))
	require.Equal(t, sizeBefore, hs.Size(t, h.ID()))
	require.Len(t, readAll(t, h, 0, handle.End), 2)
}

func testSecondWriter(t *testing.T, hs Harness) {
	h := create(t, hs)
	_, err := hs.Store.Open(ctx, h.ID(), handle.ReadWrite)
	require.ErrorIs(t, err, handle.ErrLocked)
	require.ErrorIs(t, hs.Store.Delete(ctx, h.ID()), handle.ErrLocked)
	// Readers are not locked out.
	open(t, hs, h.ID(), handle.ReadOnly)
	require.NoError(t, h.Close())
	w := open(t, hs, h.ID(), handle.ReadWrite)
	require.True(t, w.Writable())
}

func testReadOnly(t *testing.T, hs Harness) {
	h := create(t, hs)
	appendFlush(t, h, events(0, 1))
	r := open(t, hs, h.ID(), handle.ReadOnly)
	_, err := r.Append(ctx, events(1, 1)...)
	require.ErrorIs(t, err, handle.ErrReadOnly)
	_, err = r.AppendAt(ctx, 1, events(1, 1)...)
	require.ErrorIs(t, err, handle.ErrReadOnly)
	require.NoError(t, r.Flush(ctx)) // nothing to flush
	require.Len(t, readAll(t, r, 0, handle.End), 1)
}

func testFollow(t *testing.T, hs Harness) {
	h := create(t, hs)
	r := open(t, hs, h.ID(), handle.ReadOnly)
	var want []eventlog.Event
	for round := range 4 {
		evs := events(round*5, 5)
		appendFlush(t, h, evs)
		want = append(want, evs...)
		require.Equal(t, canon(withSeqs(want, 0)), canon(readAll(t, r, 0, handle.End)), "round %d", round)
		require.Equal(t, int64(len(want)-1), r.Seq())
	}
}

func testClosed(t *testing.T, hs Harness) {
	h := create(t, hs)
	appendFlush(t, h, events(0, 1))
	require.NoError(t, h.Close())
	_, err := h.Append(ctx, events(1, 1)...)
	require.ErrorIs(t, err, handle.ErrClosed)
	require.ErrorIs(t, h.Flush(ctx), handle.ErrClosed)
	require.ErrorIs(t, h.Close(), handle.ErrClosed)
	for _, err := range h.Read(ctx, 0, handle.End) {
		require.ErrorIs(t, err, handle.ErrClosed)
	}
	r := open(t, hs, h.ID(), handle.ReadOnly)
	require.NoError(t, r.Close())
	for _, err := range r.Read(ctx, 0, handle.End) {
		require.ErrorIs(t, err, handle.ErrClosed)
	}
}

func testReopen(t *testing.T, hs Harness) {
	h := create(t, hs)
	appendFlush(t, h, events(0, 7))
	// Close flushes what was appended after the last Flush.
	_, err := h.Append(ctx, events(7, 3)...)
	require.NoError(t, err)
	require.NoError(t, h.Close())
	for round := range 3 {
		w := open(t, hs, h.ID(), handle.ReadWrite)
		require.Nil(t, w.Torn())
		require.Equal(t, int64(9+round*2), w.Seq())
		last := appendFlush(t, w, events(10+round*2, 2))
		require.Equal(t, int64(11+round*2), last)
		require.NoError(t, w.Close())
	}
	r := open(t, hs, h.ID(), handle.ReadOnly)
	require.Equal(t, canon(withSeqs(events(0, 16), 0)), canon(readAll(t, r, 0, handle.End)))
}

func testTorn(t *testing.T, hs Harness) {
	h := create(t, hs)
	appendFlush(t, h, events(0, 10))
	require.NoError(t, h.Close())
	acked := hs.Size(t, h.ID())
	w := open(t, hs, h.ID(), handle.ReadWrite)
	appendFlush(t, w, []eventlog.Event{incompressible(600)}) // the write a power cut tears
	require.NoError(t, w.Close())
	hs.Tear(t, h.ID(), (hs.Size(t, h.ID())-acked)/2)
	torn := hs.Size(t, h.ID())

	// Stat passes over the torn tail.
	info, err := hs.Store.Stat(ctx, h.ID())
	require.NoError(t, err)
	require.Equal(t, int64(9), info.LastSeq)

	// A reader reports it and reads the acknowledged events.
	r := open(t, hs, h.ID(), handle.ReadOnly)
	require.Equal(t, &eventlog.TornTail{Offset: acked, Bytes: torn - acked}, r.Torn())
	require.Len(t, readAll(t, r, 0, handle.End), 10)

	w = open(t, hs, h.ID(), handle.ReadWrite)
	require.Equal(t, &eventlog.TornTail{Offset: acked, Bytes: torn - acked}, w.Torn())
	require.Equal(t, int64(9), w.Seq())
	last := appendFlush(t, w, events(100, 2))
	require.Equal(t, int64(11), last)
	require.NoError(t, w.Close())

	again := open(t, hs, h.ID(), handle.ReadWrite)
	require.Nil(t, again.Torn(), "the torn tail was cut before the append")
	want := append(events(0, 10), events(100, 2)...)
	require.Equal(t, canon(withSeqs(want, 0)), canon(readAll(t, again, 0, handle.End)))
}

// testCorrupt damages rows that have data after them: damage in the last
// write may be a torn tail (for zstd, a last frame that fails its checksum
// is one).
func testCorrupt(t *testing.T, hs Harness) {
	for _, seq := range []int64{0, 13, 25} {
		t.Run(fmt.Sprintf("seq %d", seq), func(t *testing.T) {
			h := create(t, hs)
			for i := 0; i < 30; i += 3 { // several flushes: several rows or frames
				appendFlush(t, h, events(i, 3))
			}
			require.NoError(t, h.Close())
			off, wantSeq := hs.Corrupt(t, h.ID(), seq)
			for _, mode := range []handle.Mode{handle.ReadOnly, handle.ReadWrite} {
				_, err := hs.Store.Open(ctx, h.ID(), mode)
				var ce *eventlog.CorruptError
				require.ErrorAs(t, err, &ce, "mode %d", mode)
				require.ErrorIs(t, err, eventlog.ErrCorrupt)
				require.Equal(t, off, ce.Offset)
				require.Equal(t, wantSeq, ce.Seq)
				require.Contains(t, err.Error(), "repair --salvage")
			}
			// The lock was released after the failed open.
			_, err := hs.Store.Open(ctx, h.ID(), handle.ReadWrite)
			require.ErrorIs(t, err, eventlog.ErrCorrupt)
		})
	}
}

func testStatBounded(t *testing.T, hs Harness) {
	sizes := map[int]int64{}
	read := map[int]int64{}
	var ids []string
	for _, n := range []int{1000, 10000} {
		h := create(t, hs, handle.WithLabels(map[string]string{"n": fmt.Sprint(n)}))
		for i := 0; i < n; i += 500 {
			appendFlush(t, h, events(i, 500))
		}
		require.NoError(t, h.Close())
		ids = append(ids, h.ID())
		before := hs.BytesRead()
		info, err := hs.Store.Stat(ctx, h.ID())
		require.NoError(t, err)
		read[n] = hs.BytesRead() - before
		sizes[n] = hs.Size(t, h.ID())
		require.Equal(t, int64(n), info.Events)
		require.Equal(t, int64(n-1), info.LastSeq)
		require.Equal(t, event(n-1).Type, info.LastType)
		require.Equal(t, event(n-1).Time, info.LastTime)
		require.Equal(t, sizes[n], info.SizeBytes)
		require.Equal(t, h.ID(), info.ID)
	}
	require.Greater(t, sizes[10000], 5*sizes[1000])
	require.Less(t, read[10000], sizes[10000]/4, "Stat must not read the log")
	require.LessOrEqual(t, read[10000], 2*read[1000]+4096, "Stat's cost must not grow with the log")

	before := hs.BytesRead()
	infos, err := hs.Store.List(ctx)
	require.NoError(t, err)
	require.Len(t, infos, 2)
	require.Less(t, hs.BytesRead()-before, sizes[10000]/4, "List must not read the logs")
}

func testList(t *testing.T, hs Harness) {
	infos, err := hs.Store.List(ctx)
	require.NoError(t, err)
	require.Empty(t, infos)
	a := create(t, hs, handle.WithLabels(map[string]string{"agent": "coder"}))
	b := create(t, hs, handle.WithLabels(map[string]string{"agent": "reviewer"}))
	appendFlush(t, a, events(0, 1)) // the event that spawns c
	c := create(t, hs, handle.WithLabels(map[string]string{"agent": "coder", "cwd": "/src"}),
		handle.WithParent(eventlog.Parent{ID: a.ID(), Seq: 0, Mode: eventlog.ModeChild, Call: "c1"}))
	appendFlush(t, b, events(0, 3))
	ids := func(infos []handle.Info) []string {
		var out []string
		for _, i := range infos {
			out = append(out, i.ID)
		}
		return out
	}
	for _, tc := range []struct {
		name string
		opts []handle.Option
		want []string
	}{
		{"all newest first", nil, []string{c.ID(), b.ID(), a.ID()}},
		{"by label", []handle.Option{handle.WithLabels(map[string]string{"agent": "coder"})}, []string{c.ID(), a.ID()}},
		{"by two labels", []handle.Option{handle.WithLabels(map[string]string{"agent": "coder"}), handle.WithLabels(map[string]string{"cwd": "/src"})}, []string{c.ID()}},
		{"by parent", []handle.Option{handle.WithParent(eventlog.Parent{ID: a.ID()})}, []string{c.ID()}},
		{"no match", []handle.Option{handle.WithLabels(map[string]string{"agent": "none"})}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			infos, err := hs.Store.List(ctx, tc.opts...)
			require.NoError(t, err)
			require.Equal(t, tc.want, ids(infos))
		})
	}
	infos, err = hs.Store.List(ctx, handle.WithParent(eventlog.Parent{ID: a.ID()}))
	require.NoError(t, err)
	require.Equal(t, &eventlog.Parent{ID: a.ID(), Seq: 0, Mode: eventlog.ModeChild, Call: "c1"}, infos[0].Header.Parent)
	require.Equal(t, map[string]string{"agent": "coder", "cwd": "/src"}, infos[0].Header.Labels)
	infos, err = hs.Store.List(ctx, handle.WithLabels(map[string]string{"agent": "reviewer"}))
	require.NoError(t, err)
	require.Equal(t, int64(3), infos[0].Events)
}

func testCreateWithID(t *testing.T, hs Harness) {
	const id = "01JDX3N0Q3Z8Y6W2D1V5K7M9PA"
	h := create(t, hs, handle.WithID(id))
	require.Equal(t, id, h.ID())
	require.Equal(t, id, h.Header().ID)
	require.Equal(t, eventlog.FormatName, h.Header().Format)
	require.NoError(t, h.Close())
	_, err := hs.Store.Create(ctx, handle.WithID(id))
	require.ErrorIs(t, err, handle.ErrExists)
}

func testDelete(t *testing.T, hs Harness) {
	h := create(t, hs)
	appendFlush(t, h, events(0, 3))
	keep := create(t, hs)
	require.NoError(t, h.Close())
	require.NoError(t, hs.Store.Delete(ctx, h.ID()))
	_, err := hs.Store.Open(ctx, h.ID(), handle.ReadOnly)
	require.ErrorIs(t, err, handle.ErrNotFound)
	_, err = hs.Store.Stat(ctx, h.ID())
	require.ErrorIs(t, err, handle.ErrNotFound)
	require.ErrorIs(t, hs.Store.Delete(ctx, h.ID()), handle.ErrNotFound)
	infos, err := hs.Store.List(ctx)
	require.NoError(t, err)
	require.Len(t, infos, 1)
	require.Equal(t, keep.ID(), infos[0].ID)
}

func testInvalidIDs(t *testing.T, hs Harness) {
	for _, id := range []string{
		"", "../x", "../../etc/passwd", "01jdx3n0q3z8y6w2d1v5k7m9pa", "01JDX3N0Q3Z8Y6W2D1V5K7M9P",
		"01JDX3N0Q3Z8Y6W2D1V5K7M9PAA", "01JDX3N0Q3Z8Y6W2D1V5K7M9PI", "81JDX3N0Q3Z8Y6W2D1V5K7M9PA",
		"01JDX3N0Q3Z8Y6W2D1V5K7/9PA", "01JDX3N0Q3Z8Y6W2D1V5K7M9P.",
	} {
		t.Run(fmt.Sprintf("%q", id), func(t *testing.T) {
			_, err := hs.Store.Open(ctx, id, handle.ReadOnly)
			require.ErrorIs(t, err, handle.ErrInvalidID)
			_, err = hs.Store.Open(ctx, id, handle.ReadWrite)
			require.ErrorIs(t, err, handle.ErrInvalidID)
			_, err = hs.Store.Stat(ctx, id)
			require.ErrorIs(t, err, handle.ErrInvalidID)
			require.ErrorIs(t, hs.Store.Delete(ctx, id), handle.ErrInvalidID)
			_, err = hs.Store.Create(ctx, handle.WithID(id))
			require.ErrorIs(t, err, handle.ErrInvalidID)
		})
	}
	infos, err := hs.Store.List(ctx)
	require.NoError(t, err)
	require.Empty(t, infos, "no session was created by an invalid ID")
}

func testContext(t *testing.T, hs Harness) {
	h := create(t, hs)
	appendFlush(t, h, events(0, 300))
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	_, err := h.Append(cctx, events(300, 1)...)
	require.ErrorIs(t, err, context.Canceled)
	require.Equal(t, int64(299), h.Seq(), "a cancelled append queues nothing")
	_, err = h.Append(ctx, events(300, 1)...)
	require.NoError(t, err)
	require.ErrorIs(t, h.Flush(cctx), context.Canceled)
	require.Equal(t, int64(299), h.DurableSeq())
	var readErr error
	n := 0
	for _, err := range h.Read(cctx, 0, handle.End) {
		if err != nil {
			readErr = err
			break
		}
		n++
	}
	require.ErrorIs(t, readErr, context.Canceled)
	require.Less(t, n, 300)
	_, err = hs.Store.Create(cctx)
	require.ErrorIs(t, err, context.Canceled)
	_, err = hs.Store.Open(cctx, h.ID(), handle.ReadOnly)
	require.ErrorIs(t, err, context.Canceled)
	_, err = hs.Store.Stat(cctx, h.ID())
	require.ErrorIs(t, err, context.Canceled)
	_, err = hs.Store.List(cctx)
	require.ErrorIs(t, err, context.Canceled)
	// The handle still works with a live context.
	require.NoError(t, h.Flush(ctx))
	require.Equal(t, int64(300), h.DurableSeq())
}

// testConcurrent: appenders that each append and flush in turn (group
// commit), some of whose appends are rejected in the appender's own
// goroutine before any seq is taken. Every accepted event is durable when
// its Flush returns, at the seq its Append returned; a rejected one takes
// no seq (the seqs stay contiguous); each appender's events are in the
// order it appended them.
func testConcurrent(t *testing.T, hs Harness) {
	h := create(t, hs)
	const writers, per = 16, 25
	var wg sync.WaitGroup
	errs := make(chan error, writers*per*2)
	seqs := make([][]int64, writers) // writer w's i-th event's seq, as Append returned it
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range per {
				if (w+i)%4 == 0 { // rejected before a seq is taken
					bad := eventlog.Event{Type: "tool/call", Data: json.RawMessage(fmt.Sprintf(`{"w":%d,"i":%d`, w, i))}
					if _, err := h.Append(ctx, bad); !errors.Is(err, eventlog.ErrInvalidEvent) {
						errs <- fmt.Errorf("a malformed event: got %v, want ErrInvalidEvent", err)
					}
				}
				e := eventlog.Event{Type: "tool/call", Data: json.RawMessage(fmt.Sprintf(`{"w":%d,"i":%d}`, w, i))}
				last, err := h.Append(ctx, e)
				if err == nil {
					seqs[w] = append(seqs[w], last)
					err = h.Flush(ctx)
				}
				if err == nil && h.DurableSeq() < last {
					err = errors.New("Flush returned before the append was durable")
				}
				if err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.NoError(t, h.Close())
	r := open(t, hs, h.ID(), handle.ReadOnly)
	got := readAll(t, r, 0, handle.End)
	require.Len(t, got, writers*per, "rejected events took no seq")
	for i, e := range got {
		require.Equal(t, int64(i), e.Seq)
	}
	for w, ss := range seqs {
		require.Len(t, ss, per)
		require.True(t, slices.IsSorted(ss), "writer %d's events are in the order it appended them", w)
		for i, seq := range ss {
			require.JSONEq(t, fmt.Sprintf(`{"w":%d,"i":%d}`, w, i), string(got[seq].Data), "the seq Append returned holds the event")
		}
	}
}

func testFork(t *testing.T, hs Harness) {
	parent := create(t, hs)
	appendFlush(t, parent, events(0, 10))
	fork, err := hs.Store.Fork(ctx, parent.ID(), 4, handle.WithLabels(map[string]string{"branch": "b"}))
	require.NoError(t, err)
	t.Cleanup(func() { fork.Close() })
	require.Equal(t, &eventlog.Parent{ID: parent.ID(), Seq: 4, Mode: eventlog.ModeFork}, fork.Header().Parent)
	require.Equal(t, int64(4), fork.Seq())
	last := appendFlush(t, fork, events(100, 3))
	require.Equal(t, int64(7), last, "the fork's first own event has seq at+1")
	appendFlush(t, parent, events(10, 5)) // the parent goes on; the fork does not see it

	want := withSeqs(append(events(0, 5), events(100, 3)...), 0)
	require.Equal(t, canon(want), canon(readAll(t, fork, 0, handle.End)))
	require.Equal(t, canon(want[3:6]), canon(readAll(t, fork, 3, 5)), "a range across the fork point")
	require.NoError(t, fork.Close())

	r := open(t, hs, fork.ID(), handle.ReadOnly)
	require.Equal(t, canon(want), canon(readAll(t, r, 0, handle.End)))
	info, err := hs.Store.Stat(ctx, fork.ID())
	require.NoError(t, err)
	require.Equal(t, int64(8), info.Events, "events include the inherited prefix")
	require.Equal(t, int64(7), info.LastSeq)
	w := open(t, hs, fork.ID(), handle.ReadWrite)
	require.Equal(t, int64(8), appendFlush(t, w, events(103, 1)), "reopen continues the seq")
}

func testForkChain(t *testing.T, hs Harness) {
	root := create(t, hs)
	appendFlush(t, root, events(0, 6))
	// A rollback abandons 3..4; forking inside the abandoned branch works:
	// a fork's logical log is the parent's events, whatever they mean.
	_, err := root.Append(ctx, eventlog.Event{Type: eventlog.TypeRollback, Data: json.RawMessage(`{"to":2}`)})
	require.NoError(t, err)
	require.NoError(t, root.Flush(ctx))
	a, err := hs.Store.Fork(ctx, root.ID(), 4)
	require.NoError(t, err)
	t.Cleanup(func() { a.Close() })
	appendFlush(t, a, events(10, 2)) // 5 6
	b, err := hs.Store.Fork(ctx, a.ID(), 5)
	require.NoError(t, err)
	t.Cleanup(func() { b.Close() })
	appendFlush(t, b, events(20, 2)) // 6 7
	c, err := hs.Store.Fork(ctx, b.ID(), 7)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	appendFlush(t, c, events(30, 1)) // 8
	want := withSeqs(append(append(append(events(0, 5), events(10, 1)...), events(20, 2)...), events(30, 1)...), 0)
	require.Equal(t, canon(want), canon(readAll(t, c, 0, handle.End)))
}

func testForkPoint(t *testing.T, hs Harness) {
	parent := create(t, hs)
	appendFlush(t, parent, events(0, 3))
	for _, at := range []int64{-1, 3, 100} {
		_, err := hs.Store.Fork(ctx, parent.ID(), at)
		require.ErrorIs(t, err, handle.ErrLineage, "at %d", at)
	}
	_, err := hs.Store.Fork(ctx, "01JDX3N0Q3Z8Y6W2D1V5K7M9PA", 0)
	require.ErrorIs(t, err, handle.ErrNotFound)
	f, err := hs.Store.Fork(ctx, parent.ID(), 2) // at the last event: nothing new yet
	require.NoError(t, err)
	t.Cleanup(func() { f.Close() })
	require.Len(t, readAll(t, f, 0, handle.End), 3)
}

func testChild(t *testing.T, hs Harness) {
	parent := create(t, hs)
	appendFlush(t, parent, events(0, 5))
	child := create(t, hs, handle.WithParent(eventlog.Parent{ID: parent.ID(), Seq: 3, Mode: eventlog.ModeChild, Call: "call_1"}))
	require.Equal(t, int64(-1), child.Seq())
	require.Equal(t, int64(0), appendFlush(t, child, events(50, 1)), "a child's rows start at seq 0")
	require.Equal(t, canon(withSeqs(events(50, 1), 0)), canon(readAll(t, child, 0, handle.End)))
	_, err := hs.Store.Create(ctx, handle.WithParent(eventlog.Parent{ID: parent.ID(), Seq: 9, Mode: eventlog.ModeChild}))
	require.ErrorIs(t, err, handle.ErrLineage, "the parent must hold the spawning event")
	require.NoError(t, parent.Close())
	require.NoError(t, hs.Store.Delete(ctx, parent.ID()), "a child does not keep its parent")
	require.NoError(t, child.Close())
	r := open(t, hs, child.ID(), handle.ReadOnly)
	require.Len(t, readAll(t, r, 0, handle.End), 1)
}

func testDeleteProtection(t *testing.T, hs Harness) {
	for _, mode := range []string{"refused", "detach", "cascade"} {
		t.Run(mode, func(t *testing.T) {
			parent := create(t, hs)
			appendFlush(t, parent, events(0, 6))
			fork, err := hs.Store.Fork(ctx, parent.ID(), 3)
			require.NoError(t, err)
			appendFlush(t, fork, events(20, 2))
			forkOfFork, err := hs.Store.Fork(ctx, fork.ID(), 5)
			require.NoError(t, err)
			appendFlush(t, forkOfFork, events(30, 1))
			want := canon(readAll(t, fork, 0, handle.End))
			wantFF := canon(readAll(t, forkOfFork, 0, handle.End))
			require.NoError(t, fork.Close())
			require.NoError(t, forkOfFork.Close())
			require.NoError(t, parent.Close())
			switch mode {
			case "refused":
				err := hs.Store.Delete(ctx, parent.ID())
				var de *handle.DependentsError
				require.ErrorAs(t, err, &de)
				require.ErrorAs(t, err, new(*handle.DependentsError))
				require.Equal(t, []string{fork.ID()}, de.Dependents)
				_, err = hs.Store.Stat(ctx, parent.ID())
				require.NoError(t, err, "nothing was deleted")
			case "detach":
				require.NoError(t, hs.Store.Delete(ctx, parent.ID(), handle.Detach()))
				r := open(t, hs, fork.ID(), handle.ReadOnly)
				require.Nil(t, r.Header().Parent, "the fork stands alone")
				require.Equal(t, want, canon(readAll(t, r, 0, handle.End)))
				rr := open(t, hs, forkOfFork.ID(), handle.ReadOnly)
				require.Equal(t, wantFF, canon(readAll(t, rr, 0, handle.End)))
				w := open(t, hs, fork.ID(), handle.ReadWrite)
				require.Equal(t, int64(6), appendFlush(t, w, events(40, 1)))
			case "cascade":
				require.NoError(t, hs.Store.Delete(ctx, parent.ID(), handle.Cascade()))
				for _, id := range []string{parent.ID(), fork.ID(), forkOfFork.ID()} {
					_, err := hs.Store.Stat(ctx, id)
					require.ErrorIs(t, err, handle.ErrNotFound)
				}
			}
		})
	}
}

func testLostParent(t *testing.T, hs Harness) {
	parent := create(t, hs)
	appendFlush(t, parent, events(0, 4))
	fork, err := hs.Store.Fork(ctx, parent.ID(), 2)
	require.NoError(t, err)
	appendFlush(t, fork, events(10, 1))
	require.NoError(t, fork.Close())
	require.NoError(t, parent.Close())
	hs.Lose(t, parent.ID())
	r := open(t, hs, fork.ID(), handle.ReadOnly)
	var got error
	n := 0
	for _, err := range r.Read(ctx, 0, handle.End) {
		if err != nil {
			got = err
			break
		}
		n++
	}
	var le *handle.LineageError
	require.ErrorAs(t, got, &le)
	require.ErrorIs(t, got, handle.ErrLineage)
	require.Equal(t, parent.ID(), le.Parent)
	require.Zero(t, n)
	// Its own events are still readable.
	require.Len(t, readAll(t, r, 3, handle.End), 1)
}

func testForkDigest(t *testing.T, hs Harness) {
	parent := create(t, hs)
	appendFlush(t, parent, events(0, 7))
	fork, err := hs.Store.Fork(ctx, parent.ID(), 4)
	require.NoError(t, err)
	t.Cleanup(func() { fork.Close() })
	appendFlush(t, fork, events(10, 2))
	d := eventlog.NewDigest()
	for _, e := range readAll(t, fork, 0, handle.End) {
		d.Add(e)
	}
	got, next, err := fork.LogDigest(ctx)
	require.NoError(t, err)
	require.Equal(t, int64(7), next)
	require.Equal(t, d.String(), got)
}

// testListPages pages through List (Limit, Before): the pages join into
// List's whole answer in the order of ByActivity, with a label filter too.
func testListPages(t *testing.T, hs Harness) {
	for i := range 7 {
		h := create(t, hs, handle.WithLabels(map[string]string{"n": fmt.Sprint(i % 2)}))
		if i%3 == 0 {
			appendFlush(t, h, events(i, 1))
		}
		require.NoError(t, h.Close())
	}
	for _, filter := range [][]handle.Option{nil, {handle.WithLabels(map[string]string{"n": "1"})}} {
		all, err := hs.Store.List(ctx, append(slices.Clone(filter), handle.Page(0, handle.Cursor{}))...)
		require.NoError(t, err)
		require.NotEmpty(t, all)
		var pages []handle.Info
		var before handle.Cursor
		for {
			page, err := hs.Store.List(ctx, append(slices.Clone(filter), handle.Page(3, before))...)
			require.NoError(t, err)
			require.LessOrEqual(t, len(page), 3)
			pages = append(pages, page...)
			if len(page) < 3 {
				break
			}
			before = page[len(page)-1].Cursor()
		}
		require.Equal(t, all, pages)
	}
}
