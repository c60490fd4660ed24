package jetstream

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/nats-io/nats.go"
)

// errMoved: a try ended because the connection left the server it was
// sent to (the server stopped answering pings, or died). Its request may
// or may not have been acted on: it is retried as any other whose outcome
// is unknown.
var errMoved = errors.New("jetstream: the connection left the server the request went to")

// connWatch ends the tries in flight when the store's connection leaves
// its server. A request sent to a server that then stopped answering gets
// no reply on the next one either: without the watch it would wait out
// its whole request timeout after the client had already moved on.
type connWatch struct {
	nc *nats.Conn
	ch chan nats.Status

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
func (w *connWatch) close() { w.stop.Do(func() { w.nc.RemoveStatusListener(w.ch) }) }

// attempt runs one try of op, bounded by the request timeout and ended
// early, with an error wrapping errMoved, when the connection leaves its
// server meanwhile.
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
