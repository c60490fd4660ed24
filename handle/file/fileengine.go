package file

import (
	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/handle/core"

	"context"
	"errors"
	"fmt"
	"iter"
	"path/filepath"
	"time"

	"github.com/sessionlog/sessionlog/eventlog"
)

// fileEngine is the file store's StoreBackend: a session is a file in the
// store's folder, its writer hold the lock on <ID>.lock. The Store's
// Store methods are the store core's over it; its file operations
// (Convert, Compact, Repair, …) are its own.
type fileEngine struct{ s *Store }

var _ core.StoreBackend = fileEngine{}

func (e fileEngine) Where() string { return fmt.Sprintf("%q", e.s.dir) }

func (e fileEngine) IDs(context.Context) ([]string, error) { return e.s.ids() }

func (e fileEngine) Headers(ctx context.Context) ([]handle.Info, error) { return e.s.headers(ctx) }

func (e fileEngine) Exists(ctx context.Context, id string) error {
	_, err := e.s.existing(ctx, id)
	return err
}

func (e fileEngine) Stat(ctx context.Context, id string) (handle.Info, error) {
	return e.s.stat(ctx, id)
}

func (e fileEngine) Open(ctx context.Context, id string, mode handle.Mode) (core.Backend, core.HandleConfig, error) {
	return e.s.openMode(ctx, id, mode)
}

// OpenTail opens a TailReader (see StoreBackend).
func (e fileEngine) OpenTail(ctx context.Context, id string) (handle.Tail, error) {
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

func (e fileEngine) Create(ctx context.Context, ns core.NewSession) (core.Backend, core.HandleConfig, error) {
	return e.s.create(ctx, ns)
}

func (e fileEngine) CreateFrom(ctx context.Context, ns core.NewSession, events iter.Seq2[eventlog.Event, error]) (handle.Info, error) {
	return e.s.createFrom(ctx, ns, events)
}

func (e fileEngine) Hold(_ context.Context, id string) (func(), error) {
	lock, err := e.s.lockMarked(id)
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

func (e fileEngine) Leftovers(_ context.Context, before time.Time, keep func(id string) bool, dryRun bool) ([]string, error) {
	return e.s.leftovers(before, keep, dryRun), nil
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

// Index is the session index (sindex.go).
func (e fileEngine) Index() core.Index { return fileIndex(e) }

// fileIndex answers core.Index from the session index.
type fileIndex fileEngine

func (e fileIndex) List(ctx context.Context, lc handle.ListQuery) ([]handle.Info, error) {
	return withIndex(ctx, e.s, func(v *view) ([]handle.Info, error) { return v.list(ctx, lc) })
}

func (e fileIndex) Children(ctx context.Context, id string) ([]handle.Info, error) {
	return withIndex(ctx, e.s, func(v *view) ([]handle.Info, error) {
		ds, err := v.children(ctx, id)
		var out []handle.Info
		for _, d := range ds {
			out = append(out, handle.Info{ID: d.info.ID, Path: d.info.Path, Header: *headerOf(d)})
		}
		return out, err
	})
}

func (e fileIndex) Header(ctx context.Context, id string) (eventlog.Header, bool, error) {
	var hdr eventlog.Header
	var ok bool
	_, err := withIndex(ctx, e.s, func(v *view) ([]handle.Info, error) {
		d, present, err := v.get(ctx, id)
		if err != nil || !present {
			return nil, err
		}
		if h := headerOf(d); h != nil {
			hdr, ok = *h, true
		}
		return nil, nil
	})
	return hdr, ok, err
}

func (e fileIndex) Older(ctx context.Context, cutoff int64) ([]handle.Info, map[string][]string, error) {
	forks := map[string][]string{}
	olds, err := withIndex(ctx, e.s, func(v *view) ([]handle.Info, error) {
		clear(forks)
		olds, err := v.older(ctx, cutoff)
		for _, in := range olds {
			if err != nil {
				break
			}
			var ds []described
			ds, err = v.children(ctx, in.ID)
			for _, d := range ds {
				if h := headerOf(d); h != nil && h.Parent.Mode == eventlog.ModeFork {
					forks[in.ID] = append(forks[in.ID], d.info.ID)
				}
			}
		}
		return olds, err
	})
	return olds, forks, err
}

// withIndex runs q on the store's index, rebuilding it once when q finds
// it damaged.
func withIndex(ctx context.Context, s *Store, q func(v *view) ([]handle.Info, error)) ([]handle.Info, error) {
	for try := 0; ; try++ {
		v, err := s.index(ctx)
		if err != nil {
			return nil, err
		}
		out, err := q(v)
		v.close()
		if errors.Is(err, errSindexDamaged) && try == 0 {
			s.cfg.Logger.Info("session index damaged: rebuilt", "dir", s.dir)
			s.fs.Remove(filepath.Join(s.dir, cacheDir, sindexName))
			continue
		}
		return out, err
	}
}
