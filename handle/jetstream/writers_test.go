package jetstream

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/internal/testkit/sweep"
)

var ctx = context.Background()

func ev(w, i int) eventlog.Event {
	return eventlog.Event{Type: "tool/call", Time: int64(i), Data: json.RawMessage(fmt.Sprintf(`{"w":%d,"i":%d}`, w, i))}
}

func readAll(t *testing.T, h handle.Handle) []eventlog.Event {
	t.Helper()
	var out []eventlog.Event
	for e, err := range h.Read(ctx, 0, handle.End) {
		require.NoError(t, err)
		out = append(out, e)
	}
	return out
}

// Two writers on two connections (two machines) race on every seq: the
// expected-sequence check lets exactly one win; the loser's batch is not
// stored, its handle is poisoned with the conflict, and reopened it goes
// on from the winner's tail.
func TestTwoWritersRaceOneWins(t *testing.T) {
	for _, tc := range []struct {
		name   string
		opts   []Option
		rounds int
	}{
		// Rounds: a sample by default, more under SESSIONLOG_SWEEPS=full.
		{"one message a flush", nil, sweep.Size(40, 1000, 1000)},
		// Every row its own message: each flush is a 2-message atomic
		// batch, and the check is on its first message.
		{"atomic batches", []Option{WithMaxMessageBytes(64)}, sweep.Size(20, 50, 50)},
	} {
		t.Run(tc.name, func(t *testing.T) { raceWriters(t, tc.rounds, tc.opts...) })
	}
}

func raceWriters(t *testing.T, rounds int, opts ...Option) {
	s := runServer(t)
	a := newStore(t, connect(t, s), append(opts, WithoutLease())...)
	b := newStore(t, connect(t, s), append(opts, WithoutLease())...)
	ha, err := a.Create(ctx)
	require.NoError(t, err)
	hb, err := b.Open(ctx, ha.ID(), handle.ReadWrite)
	require.NoError(t, err)
	hs := []handle.Handle{ha, hb}
	defer func() {
		for _, h := range hs {
			h.Close()
		}
	}()

	winners := make([]int, rounds)
	for r := range rounds {
		var wg sync.WaitGroup
		errs := make([]error, 2)
		for w, h := range hs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, err := h.AppendAt(ctx, int64(2*r), ev(w, r), ev(w, r))
				if err == nil {
					err = h.Flush(ctx)
				}
				errs[w] = err
			}()
		}
		wg.Wait()
		won := 0
		for w, err := range errs {
			if err == nil {
				won++
				winners[r] = w
				continue
			}
			var ce *handle.ConflictError
			require.ErrorAs(t, err, &ce, "round %d", r)
			require.Equal(t, int64(2*r+2), ce.Next, "round %d", r)
			require.ErrorAs(t, hs[w].Flush(ctx), new(*handle.ConflictError), "round %d: poisoned", r)
			require.Error(t, hs[w].Close())
			hs[w], err = []*Store{a, b}[w].Open(ctx, ha.ID(), handle.ReadWrite)
			require.NoError(t, err)
		}
		require.Equal(t, 1, won, "round %d: exactly one writer wins", r)
		for _, h := range hs {
			require.Equal(t, int64(2*r+1), h.Seq(), "round %d: both go on from the winner's tail", r)
		}
	}
	r, err := a.Open(ctx, ha.ID(), handle.ReadOnly)
	require.NoError(t, err)
	defer r.Close()
	got := readAll(t, r)
	require.Len(t, got, 2*rounds)
	for i, e := range got {
		require.Equal(t, int64(i), e.Seq)
		require.Equal(t, string(ev(winners[i/2], i/2).Data), string(e.Data), "seq %d is the winner's", i)
	}
}

// A conflict drops the events queued for the flush that met it. They were
// appended before every Flush still to come, so none of those may return
// nil: not one called after another goroutine appended (which once cleared
// the conflict), and the handle takes no more appends. A reopen goes on
// from the other writer's tail.
func TestConflictPoisonsTheWriter(t *testing.T) {
	s := runServer(t)
	a := newStore(t, connect(t, s), WithoutLease())
	b := newStore(t, connect(t, s), WithoutLease())
	ha, err := a.Create(ctx)
	require.NoError(t, err)
	defer ha.Close()
	hb, err := b.Open(ctx, ha.ID(), handle.ReadWrite)
	require.NoError(t, err)
	_, err = hb.Append(ctx, ev(1, 0))
	require.NoError(t, err)
	require.NoError(t, hb.Flush(ctx)) // the other writer takes seq 0
	require.NoError(t, hb.Close())

	_, err = ha.Append(ctx, ev(0, 0)) // goroutine A appends
	require.NoError(t, err)
	err = ha.Flush(ctx) // goroutine C's flush meets the other writer's row
	var ce *handle.ConflictError
	require.ErrorAs(t, err, &ce)
	require.Equal(t, int64(0), ce.Expected)
	require.Equal(t, int64(1), ce.Next, "where the log now ends")
	_, appendErr := ha.Append(ctx, ev(0, 1)) // goroutine B, who never saw it
	flushErr := ha.Flush(ctx)                // goroutine A makes its event durable
	require.ErrorAs(t, flushErr, new(*handle.ConflictError), "A's event was dropped: its Flush must not return nil")
	require.ErrorAs(t, appendErr, new(*handle.ConflictError), "a handle that dropped events takes no more")
	var pe *handle.PoisonedError
	require.ErrorAs(t, flushErr, &pe)
	require.Equal(t, int64(-1), ha.DurableSeq(), "nothing of its own was made durable")
	require.ErrorAs(t, ha.Close(), new(*handle.ConflictError))

	hr, err := a.Open(ctx, ha.ID(), handle.ReadWrite)
	require.NoError(t, err)
	defer hr.Close()
	got := readAll(t, hr)
	require.Len(t, got, 1)
	require.Equal(t, string(ev(1, 0).Data), string(got[0].Data), "only the other writer's event is stored")
	seq, err := hr.Append(ctx, ev(0, 2))
	require.NoError(t, err)
	require.Equal(t, int64(1), seq, "a reopen goes on from the tail")
	require.NoError(t, hr.Flush(ctx))
}

// A flush larger than the server's atomic batch limit goes as several
// batches, each within the limit; a batch over the limit is refused whole.
func TestFlushOverAtomicLimit(t *testing.T) {
	s := runServer(t, func(o *server.Options) { o.JetStreamLimits.MaxBatchSize = 4 })
	js := connect(t, s)
	big := func(i int) eventlog.Event {
		return eventlog.Event{Type: "tool/result", Time: int64(i),
			Data: json.RawMessage(fmt.Sprintf(`{"i":%d,"output":%q}`, i, strings.Repeat("o", 400)))}
	}
	var evs []eventlog.Event
	for i := range 60 {
		evs = append(evs, big(i))
	}

	split := newStore(t, js, WithPrefix("split"), WithMaxMessageBytes(1000), WithMaxBatch(4))
	h, err := split.Create(ctx)
	require.NoError(t, err)
	defer h.Close()
	_, err = h.Append(ctx, evs...)
	require.NoError(t, err)
	require.NoError(t, h.Flush(ctx))
	st := load(t, split, h.ID())
	require.Greater(t, len(st.msgs), 4*4, "the flush spans more messages than four batches hold")
	r, err := split.Open(ctx, h.ID(), handle.ReadOnly)
	require.NoError(t, err)
	defer r.Close()
	require.Len(t, readAll(t, r), len(evs))

	over := newStore(t, js, WithPrefix("over"), WithMaxMessageBytes(1000), WithMaxBatch(10))
	h2, err := over.Create(ctx)
	require.NoError(t, err)
	before := len(load(t, over, h2.ID()).log)
	_, err = h2.Append(ctx, evs...)
	require.NoError(t, err)
	err = h2.Flush(ctx)
	require.ErrorContains(t, err, "too large")
	var pe *handle.PoisonedError
	require.ErrorAs(t, err, &pe)
	require.Error(t, h2.Close())
	require.Len(t, load(t, over, h2.ID()).log, before, "nothing of the refused batch is stored")
	info, err := over.Stat(ctx, h2.ID())
	require.NoError(t, err)
	require.Equal(t, int64(-1), info.LastSeq)
}

// A row larger than a message is cut across messages and reads back
// whole; Stat finds it as the last event.
func TestRowLargerThanMessage(t *testing.T) {
	s := runServer(t)
	st := newStore(t, connect(t, s), WithMaxMessageBytes(300))
	h, err := st.Create(ctx)
	require.NoError(t, err)
	defer h.Close()
	large := eventlog.Event{Type: "tool/result", Time: 3, Data: json.RawMessage(fmt.Sprintf(`{"output":%q}`, strings.Repeat("z", 2000)))}
	_, err = h.Append(ctx, ev(0, 0), large)
	require.NoError(t, err)
	require.NoError(t, h.Flush(ctx))
	_, err = h.Append(ctx, large)
	require.NoError(t, err)
	require.NoError(t, h.Flush(ctx))
	info, err := st.Stat(ctx, h.ID())
	require.NoError(t, err)
	require.Equal(t, int64(2), info.LastSeq)
	require.Equal(t, "tool/result", info.LastType)
	require.Equal(t, int64(len(load(t, st, h.ID()).log)), info.SizeBytes)
	r, err := st.Open(ctx, h.ID(), handle.ReadOnly)
	require.NoError(t, err)
	defer r.Close()
	got := readAll(t, r)
	require.Len(t, got, 3)
	require.Equal(t, string(large.Data), string(got[2].Data))
	// A read from a seq whose row starts inside a message.
	for e, err := range r.Read(ctx, 2, 2) {
		require.NoError(t, err)
		require.Equal(t, int64(2), e.Seq)
	}
}

// fakeClock is a clock tests move by hand.
type fakeClock struct{ ms atomic.Int64 }

func (c *fakeClock) now() time.Time                    { return time.UnixMilli(c.ms.Load()) }
func (c *fakeClock) add(d time.Duration)               { c.ms.Add(d.Milliseconds()) }
func newClock() *fakeClock                             { c := &fakeClock{}; c.ms.Store(1764450000000); return c }
func noTicks(time.Duration) (<-chan time.Time, func()) { return nil, func() {} }

// The lease: a second writer is locked out while it is held and renewed,
// takes it over once it expired, and the old holder can then neither
// renew it nor append.
func TestLease(t *testing.T) {
	s := runServer(t)
	clock := newClock()
	ticks := make(chan time.Time) // a's renewals
	opts := []Option{With(func(c *handle.Config) { c.Now = clock.now }), WithLeaseTTL(time.Minute), func(c *config) { c.ticker = noTicks }}
	a := newStore(t, connect(t, s), append(opts, func(c *config) {
		c.ticker = func(time.Duration) (<-chan time.Time, func()) { return ticks, func() {} }
	})...)
	b := newStore(t, connect(t, s), opts...)
	ha, err := a.Create(ctx)
	require.NoError(t, err)
	_, err = ha.Append(ctx, ev(0, 0))
	require.NoError(t, err)
	require.NoError(t, ha.Flush(ctx))

	// The test waits for a's renewal to land, and renews only once: a
	// second tick as a barrier would start a second renewal, which could
	// run after the clock moves on (a lease renewed for longer, so that b
	// cannot take it) or after b took the lease (a poisoned with ErrLocked
	// before its flush meets b's append).
	renewed := make(chan struct{}, 8)
	update := a.leaseUpdate
	a.leaseUpdate = func(ctx context.Context, key string, value []byte, rev uint64) (uint64, error) {
		defer func() { renewed <- struct{}{} }()
		return update(ctx, key, value, rev)
	}
	_, err = b.Open(ctx, ha.ID(), handle.ReadWrite)
	require.ErrorIs(t, err, handle.ErrLocked)
	clock.add(40 * time.Second)
	ticks <- clock.now() // a renews its lease
	<-renewed
	clock.add(40 * time.Second) // past the first expiry, not the renewed one
	_, err = b.Open(ctx, ha.ID(), handle.ReadWrite)
	require.ErrorIs(t, err, handle.ErrLocked, "a renewed lease holds")
	require.ErrorIs(t, b.Delete(ctx, ha.ID()), handle.ErrLocked)

	clock.add(30 * time.Second) // a is dead: it renewed no more
	hb, err := b.Open(ctx, ha.ID(), handle.ReadWrite)
	require.NoError(t, err, "an expired lease is taken over")
	defer hb.Close()
	_, err = hb.Append(ctx, ev(1, 1))
	require.NoError(t, err)
	require.NoError(t, hb.Flush(ctx))

	// The old holder, paused while it lost its lease, wakes up and appends:
	// the expected-sequence check refuses it.
	_, err = ha.Append(ctx, ev(0, 1))
	require.NoError(t, err)
	require.ErrorAs(t, ha.Flush(ctx), new(*handle.ConflictError))
	require.ErrorAs(t, ha.Close(), new(*handle.ConflictError), "its event was not stored")
	_, err = a.Open(ctx, ha.ID(), handle.ReadWrite)
	require.ErrorIs(t, err, handle.ErrLocked, "the old holder's Close did not release the new holder's lease")
	got := readAll(t, hb)
	require.Equal(t, []string{string(ev(0, 0).Data), string(ev(1, 1).Data)}, []string{string(got[0].Data), string(got[1].Data)})

	require.NoError(t, hb.Close())
	hc, err := a.Open(ctx, ha.ID(), handle.ReadWrite)
	require.NoError(t, err, "Close releases the lease")
	require.NoError(t, hc.Close())
}

// A lease lost while the handle runs (renewal refused) poisons it.
func TestLeaseLostPoisons(t *testing.T) {
	s := runServer(t)
	clock := newClock()
	ticks, stopped := make(chan time.Time), make(chan struct{})
	ticker := func(time.Duration) (<-chan time.Time, func()) { return ticks, func() { close(stopped) } }
	a := newStore(t, connect(t, s), With(func(c *handle.Config) { c.Now = clock.now }), WithLeaseTTL(time.Minute), func(c *config) { c.ticker = ticker })
	b := newStore(t, connect(t, s), With(func(c *handle.Config) { c.Now = clock.now }), WithLeaseTTL(time.Minute), func(c *config) { c.ticker = noTicks })
	ha, err := a.Create(ctx)
	require.NoError(t, err)
	clock.add(2 * time.Minute)
	hb, err := b.Open(ctx, ha.ID(), handle.ReadWrite)
	require.NoError(t, err)
	defer hb.Close()
	ticks <- clock.now() // the renewal runs, fails, and the loop ends
	<-stopped
	_, err = ha.Append(ctx, ev(0, 0))
	var pe *handle.PoisonedError
	require.ErrorAs(t, err, &pe)
	require.ErrorIs(t, err, handle.ErrLocked)
	ha.Close()
}

// A reader on another connection follows a live writer: each read from
// where it stopped returns what was acknowledged since, in order, until it
// has every event.
func TestReaderFollowsLiveWriter(t *testing.T) {
	s := runServer(t)
	w := newStore(t, connect(t, s))
	r := newStore(t, connect(t, s))
	h, err := w.Create(ctx)
	require.NoError(t, err)
	defer h.Close()
	rh, err := r.Open(ctx, h.ID(), handle.ReadOnly)
	require.NoError(t, err)
	defer rh.Close()
	const total = 300
	done := make(chan error, 1)
	go func() {
		for i := 0; i < total; i += 10 {
			evs := make([]eventlog.Event, 10)
			for k := range evs {
				evs[k] = ev(0, i+k)
			}
			if _, err := h.Append(ctx, evs...); err != nil {
				done <- err
				return
			}
			if err := h.Flush(ctx); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	var got []eventlog.Event
	reads := 0
	for len(got) < total {
		for e, err := range rh.Read(ctx, int64(len(got)), handle.End) {
			require.NoError(t, err)
			require.Equal(t, int64(len(got)), e.Seq, "in order, none skipped")
			got = append(got, e)
		}
		require.Equal(t, int64(len(got)-1), rh.Seq())
		reads++
	}
	require.NoError(t, <-done)
	for i, e := range got {
		require.Equal(t, string(ev(0, i).Data), string(e.Data))
	}
	t.Logf("%d reads", reads)
}

// Derived data (replay's stored states) is kept per session and dropped
// with it.
func TestDerived(t *testing.T) {
	st := newStore(t, connect(t, runServer(t)))
	h, err := st.Create(ctx)
	require.NoError(t, err)
	require.NoError(t, h.Close())
	_, err = st.GetDerived(ctx, h.ID(), "snap/agent@1")
	require.ErrorIs(t, err, handle.ErrNotFound)
	require.NoError(t, st.PutDerived(ctx, h.ID(), "snap/agent@1", []byte("state")))
	got, err := st.GetDerived(ctx, h.ID(), "snap/agent@1")
	require.NoError(t, err)
	require.Equal(t, "state", string(got))
	require.NoError(t, st.DeleteDerived(ctx, h.ID(), "snap/agent@1"))
	_, err = st.GetDerived(ctx, h.ID(), "snap/agent@1")
	require.ErrorIs(t, err, handle.ErrNotFound)
	require.NoError(t, st.PutDerived(ctx, h.ID(), "digest", []byte("d")))
	require.NoError(t, st.Delete(ctx, h.ID()))
	_, err = st.GetDerived(ctx, h.ID(), "digest")
	require.ErrorIs(t, err, handle.ErrNotFound, "Delete drops the session's derived data")
	require.ErrorIs(t, st.PutDerived(ctx, "../x", "k", nil), handle.ErrInvalidID)
}
