package jetstream

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/nats-io/nats.go"
)

// errMoved: a try ended because its answer would not come: the
// connection left the server it was sent to (the server stopped answering
// pings, or died), or the stream or lease bucket elected a new leader (the
// old one, paused or gone, had it). Its request may or may not have been
// acted on: it is retried as any other whose outcome is unknown.
var errMoved = errors.New("jetstream: the request went to a server or leader since replaced")

// connWatch ends the tries in flight when the store's connection leaves
// its server, or a leader the store uses is replaced. A request sent to a
// server that then stopped answering gets no reply on the next one
// either: without the watch it would wait out its whole request timeout
// after the client, or the cluster, had already moved on.
type connWatch struct {
	nc   *nats.Conn
	ch   chan nats.Status
	subs []*nats.Subscription // leader-elected advisories

	mu    sync.Mutex
	tries map[uint64]context.CancelCauseFunc
	next  uint64
	stop  sync.Once
}

// watchConn starts watching nc's status (nats.Conn.StatusChanged, which
// leaves the caller's own handlers alone) until close.
func watchConn(nc *nats.Conn) *connWatch {
	w := &connWatch{nc: nc, ch: nc.StatusChanged(nats.RECONNECTING, nats.DISCONNECTED),
		tries: map[uint64]context.CancelCauseFunc{}}
	go func() {
		for range w.ch {
			w.moved()
		}
	}()
	return w
}

// leaders also ends the tries in flight when one of streams elects a
// new leader (its advisory). Where the advisories cannot be subscribed to
// (permissions), the request timeout still ends those tries.
func (w *connWatch) leaders(streams ...string) error {
	for _, st := range streams {
		sub, err := w.nc.Subscribe("$JS.EVENT.ADVISORY.STREAM.LEADER_ELECTED."+st, func(*nats.Msg) { w.moved() })
		if err != nil {
			return err
		}
		w.subs = append(w.subs, sub)
	}
	return nil
}

// moved cancels every try in flight with errMoved.
func (w *connWatch) moved() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for k, cancel := range w.tries {
		cancel(errMoved)
		delete(w.tries, k)
	}
}

// track returns ctx, cancelled with errMoved should the connection move
// before done is called.
func (w *connWatch) track(ctx context.Context) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	w.mu.Lock()
	k := w.next
	w.next++
	w.tries[k] = cancel
	w.mu.Unlock()
	return ctx, func() {
		w.mu.Lock()
		delete(w.tries, k)
		w.mu.Unlock()
		cancel(nil)
	}
}

// close stops the watch (the connection stays open).
func (w *connWatch) close() {
	w.stop.Do(func() {
		w.nc.RemoveStatusListener(w.ch)
		for _, sub := range w.subs {
			sub.Unsubscribe()
		}
	})
}

// attempt runs one try of op, bounded by the request timeout and ended
// early, with an error wrapping errMoved, when the connection leaves its
// server or a leader is replaced meanwhile.
func (s *Store) attempt(ctx context.Context, op func(ctx context.Context) error) error {
	tctx, cancel := context.WithTimeout(ctx, s.cfg.reqTimeout)
	defer cancel()
	tctx, done := s.watch.track(tctx)
	defer done()
	err := op(tctx)
	if err != nil && ctx.Err() == nil && errors.Is(context.Cause(tctx), errMoved) {
		return fmt.Errorf("%w: %w", errMoved, err)
	}
	return err
}
