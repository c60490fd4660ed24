package handle

import (
	"context"
	"fmt"
	"iter"
	"time"

	"github.com/sessionlog/sessionlog/eventlog"
)

// fileEngine is the file store's StoreBackend: a session is a file in the
// store's folder, its writer hold the lock on <ID>.lock. The FileStore's
// Store methods are the store core's over it; its file operations
// (Convert, Compact, Repair, …) are its own.
type fileEngine struct{ s *FileStore }

var _ StoreBackend = fileEngine{}

func (e fileEngine) Where() string { return fmt.Sprintf("%q", e.s.dir) }

func (e fileEngine) IDs(context.Context) ([]string, error) { return e.s.ids() }

func (e fileEngine) Headers(ctx context.Context) ([]Info, error) { return e.s.headers(ctx) }

func (e fileEngine) Exists(ctx context.Context, id string) error {
	_, err := e.s.existing(ctx, id)
	return err
}

func (e fileEngine) Stat(ctx context.Context, id string) (Info, error) { return e.s.stat(ctx, id) }

func (e fileEngine) Open(ctx context.Context, id string, mode Mode, op OpenParams) (Handle, error) {
	return e.s.openMode(ctx, id, mode, op)
}

// OpenTail opens a TailReader (see StoreBackend).
func (e fileEngine) OpenTail(ctx context.Context, id string) (Tail, error) {
	loc, err := e.s.existing(ctx, id)
	if err != nil {
		return nil, err
	}
	t, err := e.s.openTail(ctx, id, id, loc)
	if err != nil {
		return nil, err // not a nil *TailReader in a non-nil Tail
	}
	return t, nil
}

func (e fileEngine) WriterHeld(_ context.Context, id string) (bool, error) { return e.s.Writing(id) }

func (e fileEngine) Create(ctx context.Context, ns NewSession) (Handle, error) {
	return e.s.create(ctx, ns)
}

func (e fileEngine) CreateFrom(ctx context.Context, ns NewSession, events iter.Seq2[eventlog.Event, error]) (Info, error) {
	return e.s.createFrom(ctx, ns, events)
}

func (e fileEngine) Hold(_ context.Context, id string) (func(), error) {
	lock, err := lockFile(e.s.fs, e.s.lockPath(id))
	if err != nil {
		return nil, err
	}
	return func() { lock.unlock() }, nil
}

// Remove removes the session's files under its lock, which the core
// holds: only a holder may remove a lock file (see lockFile).
func (e fileEngine) Remove(_ context.Context, id string) error { return e.s.removeLog(id) }

// Replace rewrites the session's file (temp file, fsync, rename, fsync
// the folder) in the encoding and, for a sealed session, under the keys
// it has.
func (e fileEngine) Replace(ctx context.Context, id string, hdr eventlog.Header, events iter.Seq2[eventlog.Event, error]) error {
	loc, err := e.s.locate(ctx, id)
	if err != nil {
		return err
	}
	plan, err := e.s.rewritePlan(ctx, loc, hdr, loc.enc)
	if err != nil {
		return err
	}
	if err := e.s.rewrite(ctx, id, loc, loc.enc, hdr, plan, events); err != nil {
		return err
	}
	e.s.dropDerived(id)
	return nil
}

func (e fileEngine) Leftovers(_ context.Context, _ time.Time, keep func(id string) bool, dryRun bool) ([]string, error) {
	return e.s.leftovers(keep, dryRun), nil
}

func (e fileEngine) GetDerived(ctx context.Context, id, key string) ([]byte, error) {
	return e.s.GetDerived(ctx, id, key)
}

func (e fileEngine) PutDerived(ctx context.Context, id, key string, data []byte) error {
	return e.s.PutDerived(ctx, id, key, data)
}

func (e fileEngine) DeleteDerived(ctx context.Context, id, key string) error {
	return e.s.DeleteDerived(ctx, id, key)
}
