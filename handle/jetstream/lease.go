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
// revision check, so of two writers taking or renewing it one fails. Its
// entries are read from the bucket's leader, never from a replica that may
// lag.
type lease struct {
	s     *Store
	key   string
	owner string

	mu    sync.Mutex
	rev   uint64
	until int64 // the deadline: Until of the last write acknowledged
}

// errLeaseRace: the entry changed between reading and writing it.
var errLeaseRace = errors.New("jetstream: the lease entry changed meanwhile")

// acquire takes session id's lease: handle.ErrLocked while another writer
// holds one that has not expired. It returns nil when leases are off.
func (s *Store) acquire(ctx context.Context, id string) (*lease, error) {
	if s.cfg.readOnly {
		return nil, readOnlyErr("write " + id)
	}
	if s.leases == nil {
		return nil, nil
	}
	l := &lease{s: s, key: id, owner: nuid.Next()}
	for range 4 {
		held, rev, live, err := l.read(ctx)
		if err != nil {
			return nil, fmt.Errorf("jetstream: lease of %s: %w", id, err)
		}
		if live && s.cfg.hc.Now().UnixMilli() < held.Until {
			return nil, fmt.Errorf("%w: %s (lease held until %s)", handle.ErrLocked, s.path(id), time.UnixMilli(held.Until).UTC().Format(time.RFC3339))
		}
		if live {
			s.cfg.hc.Logger.Info("taking over an expired lease", "id", id, "expired", time.UnixMilli(held.Until))
		}
		err = s.do(ctx, "lease of "+id, func(ctx context.Context) error { return l.write(ctx, rev) })
		if errors.Is(err, errLeaseRace) {
			continue // taken or released meanwhile: look again
		}
		if err != nil {
			return nil, fmt.Errorf("jetstream: lease of %s: %w", id, err)
		}
		return l, nil
	}
	return nil, fmt.Errorf("%w: %s (lease contended)", handle.ErrLocked, s.path(id))
}

// entry reads the lease's entry from the bucket's leader (one try): its
// value and revision, and whether it is live (not deleted). A missing key
// has revision 0; a deleted one, that of its delete marker.
func (l *lease) entry(ctx context.Context) (leaseValue, uint64, bool, error) {
	bucket := l.s.cfg.prefix + "_leases"
	m, err := l.s.leaderGet(ctx, "KV_"+bucket, msgGetReq{LastFor: "$KV." + bucket + "." + l.key})
	if errors.Is(err, natsjs.ErrMsgNotFound) {
		return leaseValue{}, 0, false, nil
	}
	if err != nil {
		return leaseValue{}, 0, false, err
	}
	if op := m.Header.Get("KV-Operation"); op == "DEL" || op == "PURGE" {
		return leaseValue{}, m.Sequence, false, nil
	}
	// As before: an unreadable entry holds nothing and is taken over.
	var held leaseValue
	if json.Unmarshal(m.Data, &held) != nil {
		return leaseValue{}, m.Sequence, true, nil
	}
	return held, m.Sequence, true, nil
}

// read is entry through transient failures.
func (l *lease) read(ctx context.Context) (held leaseValue, rev uint64, live bool, err error) {
	err = l.s.do(ctx, "lease of "+l.key, func(ctx context.Context) error {
		var err error
		held, rev, live, err = l.entry(ctx)
		return err
	})
	return held, rev, live, err
}

// write replaces the entry at revision rev by this lease, until now plus
// the TTL (one try). After a try whose outcome was unknown, a revision
// mismatch may be that try having landed: the entry is read again, and if
// it is this lease's, that is success. Otherwise errLeaseRace.
func (l *lease) write(ctx context.Context, rev uint64) error {
	until := l.s.cfg.hc.Now().Add(l.s.cfg.leaseTTL).UnixMilli()
	val, err := json.Marshal(leaseValue{Owner: l.owner, Until: until})
	if err != nil {
		return err
	}
	got, err := l.s.leaseUpdate(ctx, l.key, val, rev)
	if err == nil {
		l.rev, l.until = got, until
		return nil
	}
	if !isWrongLast(err) {
		return err
	}
	held, got, live, gerr := l.entry(ctx)
	if gerr != nil {
		return gerr
	}
	if live && held.Owner == l.owner {
		l.rev, l.until = got, held.Until
		return nil
	}
	return errLeaseRace
}

// renew extends the lease. A renewal that fails transiently (no answer,
// no leader during an election) is retried until the lease's deadline or
// until ctx ends; it fails with handle.ErrLocked when another writer took
// the lease, and with handle.ErrUnavailable when the deadline passed
// without a renewal.
func (l *lease) renew(ctx context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	for try := 0; ; try++ {
		err := l.s.attempt(ctx, func(tctx context.Context) error { return l.write(tctx, l.rev) })
		switch {
		case err == nil:
			return nil
		case ctx.Err() != nil:
			return ctx.Err()
		case errors.Is(err, errLeaseRace):
			return fmt.Errorf("%w: %s: the lease was taken by another writer", handle.ErrLocked, l.s.path(l.key))
		case !l.s.transient(err):
			return fmt.Errorf("jetstream: renewing the lease of %s: %w", l.s.path(l.key), err)
		case l.s.cfg.hc.Now().UnixMilli() >= l.until:
			return fmt.Errorf("jetstream: the lease of %s expired at %s without a renewal: %w: %w", l.s.path(l.key),
				time.UnixMilli(l.until).UTC().Format(time.RFC3339), handle.ErrUnavailable, err)
		}
		l.s.cfg.hc.Logger.Warn("lease renewal failed, retrying", "id", l.key, "try", try+1, "err", err)
		if timedOut(err) {
			l.s.heal()
		}
		if err := sleep(ctx, backoff(try)); err != nil {
			return err
		}
	}
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
	del := func(ctx context.Context) error { return l.s.leases.Delete(ctx, l.key, natsjs.LastRevision(l.rev)) }
	if err := l.s.do(ctx, "release the lease of "+l.key, del); err != nil {
		l.s.cfg.hc.Logger.Warn("releasing a lease failed; it expires on its own", "id", l.key, "err", err)
	}
}

// writerHeld reports whether a writer holds session id's lease now (one
// that has not expired by the store's clock), without taking it: asking
// never makes a writer fail. With leases off it is always false. See
// handle.Store.WriterHeld.
func (s *Store) writerHeld(ctx context.Context, id string) (bool, error) {
	if s.leases == nil {
		return false, nil
	}
	held, _, live, err := (&lease{s: s, key: id}).read(ctx)
	if err != nil {
		return false, fmt.Errorf("jetstream: lease of %s: %w", id, err)
	}
	// As acquire decides: an unreadable entry (Until 0) holds nothing.
	return live && s.cfg.hc.Now().UnixMilli() < held.Until, nil
}
