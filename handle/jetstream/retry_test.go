package jetstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/internal/testkit/natstest"
)

// A publish whose answer was lost or misleading is settled by what the
// stream holds: the flush succeeds, its events are stored once, and the
// handle goes on. Each case fails the first try of every flush in its own
// way; one message a flush, and atomic batches of several.
func TestPublishRetriedOnce(t *testing.T) {
	wrongLast := &natsjs.APIError{Code: 400, ErrorCode: natsjs.JSErrCodeStreamWrongLastSequence, Description: "wrong last sequence: 1"}
	inFlight := &natsjs.APIError{Code: 400, ErrorCode: natsjs.JSErrCodeStreamWrongLastSequenceConstant, Description: "wrong last sequence"}
	for _, tc := range []struct {
		name string
		// first is the first try of a flush: it may publish, and says what
		// the writer hears.
		first func(ctx context.Context, publish func() error) error
		tries int64 // of the five flushes in all
	}{
		{"stored, the acknowledgement lost", func(ctx context.Context, publish func() error) error {
			require.NoError(t, publish())
			return context.DeadlineExceeded
		}, 10},
		// The stream shows the flush stored: no second try.
		{"stored, a resumed stale leader answers wrong last", func(ctx context.Context, publish func() error) error {
			require.NoError(t, publish())
			return wrongLast
		}, 5},
		// What a request in flight gets when the store moves its
		// connection off a server that stopped answering.
		{"stored, the connection moved", func(ctx context.Context, publish func() error) error {
			require.NoError(t, publish())
			return nats.ErrConnectionClosed
		}, 10},
		// What a try gets when the store ends it because the connection
		// left a server that stopped answering (attempt).
		{"stored, the try ended by a move", func(ctx context.Context, publish func() error) error {
			require.NoError(t, publish())
			return fmt.Errorf("%w: %w", errMoved, context.Canceled)
		}, 10},
		{"not stored, no responders", func(context.Context, func() error) error { return natsjs.ErrNoStreamResponse }, 10},
		{"not stored, in flight", func(context.Context, func() error) error { return inFlight }, 10},
	} {
		for _, msgBytes := range []int{0, 200} {
			t.Run(fmt.Sprintf("%s/max message %d", tc.name, msgBytes), func(t *testing.T) {
				opts := []Option{WithoutLease()}
				if msgBytes > 0 {
					opts = append(opts, WithMaxMessageBytes(msgBytes))
				}
				st := newStore(t, connect(t, runServer(t)), opts...)
				h, err := st.Create(ctx)
				require.NoError(t, err)
				defer h.Close()
				var tries atomic.Int64
				st.pubOnce = func(ctx context.Context, msgs []*nats.Msg) (uint64, error) {
					if tries.Add(1)%2 == 1 {
						var seq uint64
						err := tc.first(ctx, func() (err error) { seq, err = st.publishOnce(ctx, msgs); return err })
						if err == nil {
							return seq, nil
						}
						return 0, err
					}
					return st.publishOnce(ctx, msgs)
				}
				var want []string
				for i := range 5 {
					evs := []eventlog.Event{ev(0, i), {Type: "tool/result", Data: json.RawMessage(fmt.Sprintf(`{"output":%q}`, strings.Repeat("x", 300)))}}
					_, err := h.Append(ctx, evs...)
					require.NoError(t, err)
					require.NoError(t, h.Flush(ctx), "flush %d", i)
					for _, e := range evs {
						want = append(want, string(e.Data))
					}
				}
				require.Equal(t, tc.tries, tries.Load())
				r, err := st.Open(ctx, h.ID(), handle.ReadOnly)
				require.NoError(t, err)
				defer r.Close()
				var got []string
				for _, e := range readAll(t, r) {
					got = append(got, string(e.Data))
				}
				require.Equal(t, want, got, "each flush stored once, in order")
			})
		}
	}
}

// A flush whose publish keeps failing transiently fails once the retry
// window has passed, with an error that says the store was unavailable,
// not a conflict and not corruption.
func TestPublishUnavailable(t *testing.T) {
	st := newStore(t, connect(t, runServer(t)), WithoutLease(), WithRetryWindow(200*time.Millisecond))
	h, err := st.Create(ctx)
	require.NoError(t, err)
	defer h.Close()
	st.pubOnce = func(context.Context, []*nats.Msg) (uint64, error) { return 0, nats.ErrNoResponders }
	_, err = h.Append(ctx, ev(0, 0))
	require.NoError(t, err)
	err = h.Flush(ctx)
	require.ErrorIs(t, err, handle.ErrUnavailable)
	require.False(t, errors.As(err, new(*handle.ConflictError)))
	require.NotErrorIs(t, err, eventlog.ErrCorrupt)
}

// Renewing a lease through transient failures: failures before the
// lease's deadline are retried and the lease kept (also when a try whose
// answer was lost had renewed it); past the deadline the renewal fails
// with ErrUnavailable, not ErrLocked; a lease another writer took fails
// with ErrLocked.
func TestLeaseRenewal(t *testing.T) {
	timeout := func(context.Context, string, []byte, uint64) (uint64, error) { return 0, context.DeadlineExceeded }
	for _, tc := range []struct {
		name    string
		fail    int  // tries that fail first
		landed  bool // a failing try renews the lease all the same
		expired bool // the clock passes the deadline before renewing
		wantErr error
	}{
		{"transient failures", 3, false, false, nil},
		{"a renewal landed, its answer lost", 1, true, false, nil},
		{"deadline passed", 1 << 30, false, true, handle.ErrUnavailable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock := newClock()
			st := newStore(t, connect(t, runServer(t)), With(func(c *handle.Config) { c.Now = clock.now }), WithLeaseTTL(time.Minute),
				func(c *config) { c.ticker = noTicks })
			// A writer's lease, as a write handle holds it.
			h, err := st.Create(ctx)
			require.NoError(t, err)
			require.NoError(t, h.Close())
			l, err := st.acquire(ctx, h.ID())
			require.NoError(t, err)
			defer l.release()
			var tries atomic.Int64
			st.leaseUpdate = func(ctx context.Context, key string, v []byte, rev uint64) (uint64, error) {
				if tries.Add(1) > int64(tc.fail) {
					return st.leases.Update(ctx, key, v, rev)
				}
				if tc.landed {
					st.leases.Update(ctx, key, v, rev)
				}
				return timeout(ctx, key, v, rev)
			}
			if tc.expired {
				clock.add(2 * time.Minute)
			}
			err = l.renew(ctx)
			if tc.wantErr != nil {
				require.ErrorIs(t, err, tc.wantErr)
				require.NotErrorIs(t, err, handle.ErrLocked)
				return
			}
			require.NoError(t, err)
			held, _, _, err := l.read(ctx)
			require.NoError(t, err)
			require.Equal(t, l.owner, held.Owner)
			require.Equal(t, clock.now().Add(time.Minute).UnixMilli(), held.Until, "renewed")
			require.Equal(t, l.until, held.Until)
		})
	}
	t.Run("taken by another writer", func(t *testing.T) {
		clock := newClock()
		s := runServer(t)
		opts := []Option{With(func(c *handle.Config) { c.Now = clock.now }), WithLeaseTTL(time.Minute), func(c *config) { c.ticker = noTicks }}
		a, b := newStore(t, connect(t, s), opts...), newStore(t, connect(t, s), opts...)
		h, err := a.Create(ctx)
		require.NoError(t, err)
		require.NoError(t, h.Close())
		l, err := a.acquire(ctx, h.ID()) // a writer's lease, as a write handle holds it
		require.NoError(t, err)
		clock.add(2 * time.Minute)
		hb, err := b.Open(ctx, h.ID(), handle.ReadWrite)
		require.NoError(t, err)
		defer hb.Close()
		err = l.renew(ctx)
		require.ErrorIs(t, err, handle.ErrLocked)
		require.NotErrorIs(t, err, handle.ErrUnavailable)
	})
}

// With the server gone, what the store cannot do is ErrUnavailable: not
// "not found", not corruption, not another writer, and a write handle is
// poisoned with it (its flush's outcome is unknown).
func TestServerGoneIsUnavailable(t *testing.T) {
	s := natstest.Run(t)
	nc, err := nats.Connect(s.ClientURL(), nats.MaxReconnects(-1), nats.ReconnectWait(10*time.Millisecond))
	require.NoError(t, err)
	defer nc.Close()
	js, err := natsjs.New(nc)
	require.NoError(t, err)
	st := newStore(t, js, WithRequestTimeout(100*time.Millisecond), WithRetryWindow(500*time.Millisecond),
		func(c *config) { c.ticker = noTicks })
	h, err := st.Create(ctx)
	require.NoError(t, err)
	_, err = h.Append(ctx, ev(0, 0))
	require.NoError(t, err)
	require.NoError(t, h.Flush(ctx))
	_, err = h.Append(ctx, ev(0, 1))
	require.NoError(t, err)
	s.Shutdown()
	s.WaitForShutdown()

	_, statErr := st.Stat(ctx, h.ID())
	_, openErr := st.Open(ctx, h.ID(), handle.ReadOnly)
	_, writeErr := st.Open(ctx, h.ID(), handle.ReadWrite)
	flushErr := h.Flush(ctx)
	var pe *handle.PoisonedError
	require.ErrorAs(t, flushErr, &pe)
	for name, err := range map[string]error{"stat": statErr, "open": openErr, "open for writing": writeErr, "flush": flushErr} {
		require.ErrorIs(t, err, handle.ErrUnavailable, name)
		for _, not := range []error{handle.ErrNotFound, eventlog.ErrCorrupt, handle.ErrLocked} {
			require.NotErrorIs(t, err, not, name)
		}
		require.False(t, errors.As(err, new(*handle.ConflictError)), name)
	}
	h.Close()
}
