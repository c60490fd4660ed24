package jetstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	natsjs "github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"

	"github.com/sessionlog/sessionlog/handle"
)

// leaseValue is a lease's KV entry: who holds it and until when (Unix
// milliseconds, by the holder's clock).
type leaseValue struct {
	Owner string `json:"owner"`
	Until int64  `json:"until"`
}

// lease is a writer's hold on a session: a KV entry changed only with a
// revision check, so of two writers taking or renewing it one fails.
type lease struct {
	s     *Store
	key   string
	owner string

	mu  sync.Mutex
	rev uint64
}

// acquire takes session id's lease: handle.ErrLocked while another writer
// holds one that has not expired. It returns nil when leases are off.
func (s *Store) acquire(ctx context.Context, id string) (*lease, error) {
	if s.leases == nil {
		return nil, nil
	}
	l := &lease{s: s, key: id, owner: nuid.Next()}
	val, err := l.value()
	if err != nil {
		return nil, err
	}
	rev, err := s.leases.Create(ctx, id, val)
	for try := 0; errors.Is(err, natsjs.ErrKeyExists) && try < 3; try++ {
		var e natsjs.KeyValueEntry
		e, err = s.leases.Get(ctx, id)
		if errors.Is(err, natsjs.ErrKeyNotFound) { // released meanwhile
			rev, err = s.leases.Create(ctx, id, val)
			continue
		}
		if err != nil {
			break
		}
		var held leaseValue
		if json.Unmarshal(e.Value(), &held) == nil && s.cfg.now().UnixMilli() < held.Until {
			return nil, fmt.Errorf("%w: %s (lease held until %s)", handle.ErrLocked, s.path(id), time.UnixMilli(held.Until).UTC().Format(time.RFC3339))
		}
		s.cfg.log.Info("taking over an expired lease", "id", id, "expired", time.UnixMilli(held.Until))
		rev, err = s.leases.Update(ctx, id, val, e.Revision())
		if isWrongLast(err) || errors.Is(err, natsjs.ErrKeyExists) {
			return nil, fmt.Errorf("%w: %s (lease taken meanwhile)", handle.ErrLocked, s.path(id))
		}
	}
	if err != nil {
		return nil, fmt.Errorf("jetstream: lease of %s: %w", id, err)
	}
	l.rev = rev
	return l, nil
}

func (l *lease) value() ([]byte, error) {
	return json.Marshal(leaseValue{Owner: l.owner, Until: l.s.cfg.now().Add(l.s.cfg.leaseTTL).UnixMilli()})
}

// renew extends the lease; it fails when another writer took it.
func (l *lease) renew(ctx context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	val, err := l.value()
	if err != nil {
		return err
	}
	rev, err := l.s.leases.Update(ctx, l.key, val, l.rev)
	if err != nil {
		return fmt.Errorf("%w: %s: the lease was lost: %v", handle.ErrLocked, l.s.path(l.key), err)
	}
	l.rev = rev
	return nil
}

// release gives the lease up, unless another writer took it meanwhile; a
// nil lease (leases off) does nothing.
func (l *lease) release() {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := l.s.leases.Delete(ctx, l.key, natsjs.LastRevision(l.rev)); err != nil {
		l.s.cfg.log.Warn("releasing a lease failed; it expires on its own", "id", l.key, "err", err)
	}
}

// WriterHeld reports whether a writer holds session id's lease now (one
// that has not expired by the store's clock), without taking it: asking
// never makes a writer fail. With leases off it is always false. See
// handle.Store.
func (s *Store) WriterHeld(ctx context.Context, id string) (bool, error) {
	if err := handle.CheckID(id); err != nil {
		return false, err
	}
	if s.leases == nil {
		return false, nil
	}
	e, err := s.leases.Get(ctx, id)
	if errors.Is(err, natsjs.ErrKeyNotFound) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("jetstream: lease of %s: %w", id, err)
	}
	// As acquire decides: an unreadable entry is taken over, so it holds
	// nothing.
	var held leaseValue
	return json.Unmarshal(e.Value(), &held) == nil && s.cfg.now().UnixMilli() < held.Until, nil
}
