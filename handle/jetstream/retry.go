package jetstream

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/sessionlog/sessionlog/handle"
)

// JetStream API error codes that mean "not now": the cluster has no
// leader for the meta layer or for the stream, or a new leader is not
// ready yet. Each goes away on its own once an election ends.
const (
	errCodeIncomplete      = 10004 // cluster: incomplete results
	errCodeClusterNotAvail = 10008 // JetStream system temporarily unavailable
	errCodeNotLeader       = 10009 // JetStream cluster can not handle request
	errCodeLastSeqNotReady = 10163 // expected last sequence per subject temporarily unavailable
	errCodeStreamOffline   = 10118 // stream is offline
)

// transient reports whether err is a failure that ends on its own: a
// request nobody answered in time, no server interested in it (a leader
// gone, not yet replaced), a connection being re-established (a request
// in flight when it moves fails "connection closed" while it is not), or
// the server saying that the cluster cannot answer for now. A try the
// store ended because its connection moved (errMoved) is one too.
func (s *Store) transient(err error) bool {
	if errors.Is(err, nats.ErrConnectionClosed) {
		return !s.js.Conn().IsClosed()
	}
	if errors.Is(err, errMoved) || inFlight(err) {
		return true
	}
	var ae *natsjs.APIError
	if errors.As(err, &ae) {
		switch ae.ErrorCode {
		case errCodeIncomplete, errCodeClusterNotAvail, errCodeNotLeader, errCodeLastSeqNotReady, errCodeStreamOffline:
			return true
		}
		return false
	}
	for _, t := range []error{context.DeadlineExceeded, nats.ErrTimeout, nats.ErrNoResponders, natsjs.ErrNoStreamResponse,
		nats.ErrConnectionReconnecting, nats.ErrDisconnected, nats.ErrNoServers, nats.ErrStaleConnection} {
		if errors.Is(err, t) {
			return true
		}
	}
	return false
}

// timedOut reports a request that got no answer at all, which is how a
// paused server looks from a client connected to it.
func timedOut(err error) bool {
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout)
}

// unavailable wraps err, a transient failure that outlasted the retries.
func unavailable(what string, d time.Duration, err error) error {
	return fmt.Errorf("jetstream: %s: %w (retried for %s): %w", what, handle.ErrUnavailable, d.Round(time.Millisecond), err)
}

// do runs op until it succeeds or fails for good. A transient failure is
// retried, each try bounded by the request timeout (and ended as soon as
// the connection leaves its server, see attempt), until the store's
// retry window has passed; then the error wraps handle.ErrUnavailable. A
// try that timed out makes the store check its connection first (see
// heal). When ctx ends, do returns its error (wrapping ErrUnavailable too
// if the last failure was transient and ctx only ran out of time).
func (s *Store) do(ctx context.Context, what string, op func(ctx context.Context) error) error {
	start := time.Now()
	for try := 0; ; try++ {
		err := s.attempt(ctx, op)
		switch {
		case err == nil:
			return nil
		case ctx.Err() != nil:
			if errors.Is(ctx.Err(), context.DeadlineExceeded) && s.transient(err) {
				return unavailable(what, time.Since(start), err)
			}
			return ctx.Err()
		case !s.transient(err):
			return err
		case time.Since(start) >= s.cfg.retryWindow:
			return unavailable(what, time.Since(start), err)
		}
		s.cfg.hc.Logger.Debug("transient failure, retrying", "op", what, "try", try+1, "err", err)
		if timedOut(err) {
			s.heal()
		}
		if err := sleep(ctx, backoff(try)); err != nil {
			return err
		}
	}
}

// backoff is the wait before retry try+1: from 10 ms, doubling, at most
// 250 ms, so that the end of an election is noticed within a quarter of a
// second.
func backoff(try int) time.Duration {
	return min(10*time.Millisecond<<min(try, 5), 250*time.Millisecond)
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// heal checks, after a request timed out, that the server the connection
// is on still answers a ping; if it does not (paused, or its host gone
// without closing the socket), the connection is moved to the next server
// at once instead of after the client's ping interval (two minutes by
// default). One check runs at a time; concurrent callers skip it.
func (s *Store) heal() {
	if !s.healing.CompareAndSwap(false, true) {
		return
	}
	defer s.healing.Store(false)
	nc := s.js.Conn()
	if !nc.IsConnected() {
		return // reconnecting already
	}
	if err := nc.FlushTimeout(s.cfg.probeTimeout); err != nil && nc.IsConnected() {
		s.cfg.hc.Logger.Warn("the server does not answer; reconnecting to another", "server", nc.ConnectedUrlRedacted(), "err", err)
		nc.ForceReconnect()
	}
}
