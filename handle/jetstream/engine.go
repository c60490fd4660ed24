package jetstream

import (
	"context"
	"errors"
	"iter"
	"time"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/handle/core"
)

// engine is the stream under handle's store core (core.StoreBackend):
// a session is a subject, its writer hold the lease. Every decision of a
// Store method is the core's; engine only reads, publishes and purges.
type engine struct{ s *Store }

var _ core.StoreBackend = engine{}

func (e engine) Where() string { return "stream " + e.s.name }

func (e engine) IDs(ctx context.Context) ([]string, error) { return e.s.ids(ctx) }

func (e engine) Headers(ctx context.Context) ([]handle.Info, error) { return e.s.headers(ctx) }

// Exists holds for a subject with any message: one a CreateFrom is still
// making too (a Delete of it waits for its builder's lease).
func (e engine) Exists(ctx context.Context, id string) error {
	if _, err := e.s.lastMsg(ctx, e.s.Subject(id)); err != nil {
		return e.s.notFound(id, err)
	}
	return nil
}

func (e engine) Stat(ctx context.Context, id string) (handle.Info, error) { return e.s.stat(ctx, id) }

// Index is the session index kept in a KV bucket (index.go).
// A read-only store that found none answers from the stream.
func (e engine) Index() core.Index {
	if e.s.ixScan {
		return nil
	}
	return jsIndex(e)
}

// OpenTail: no cheaper Tail than a read-only handle.
func (e engine) OpenTail(context.Context, string) (handle.Tail, error) {
	return nil, errors.ErrUnsupported
}

func (e engine) Open(ctx context.Context, id string, mode handle.Mode) (core.Backend, core.HandleConfig, error) {
	if mode != handle.ReadOnly && e.s.cfg.readOnly {
		return nil, core.HandleConfig{}, readOnlyErr("open " + id + " for writing")
	}
	return e.s.openMode(ctx, id, mode)
}

func (e engine) WriterHeld(ctx context.Context, id string) (bool, error) {
	return e.s.writerHeld(ctx, id)
}

func (e engine) Create(ctx context.Context, ns core.NewSession) (core.Backend, core.HandleConfig, error) {
	if e.s.cfg.readOnly {
		return nil, core.HandleConfig{}, readOnlyErr("create")
	}
	return e.s.create(ctx, ns)
}

func (e engine) CreateFrom(ctx context.Context, ns core.NewSession, events iter.Seq2[eventlog.Event, error]) (handle.Info, error) {
	if e.s.cfg.readOnly {
		return handle.Info{}, readOnlyErr("create")
	}
	return e.s.createFrom(ctx, ns, events)
}

func (e engine) Hold(ctx context.Context, id string) (func(), error) {
	if e.s.cfg.readOnly {
		return nil, readOnlyErr("change " + id)
	}
	l, err := e.s.acquire(ctx, id)
	if err != nil {
		return nil, err
	}
	return l.release, nil
}

func (e engine) Remove(ctx context.Context, id string) error { return e.s.remove(ctx, id) }

func (e engine) Replace(ctx context.Context, id string, hdr eventlog.Header, events iter.Seq2[eventlog.Event, error]) error {
	return e.s.rewrite(ctx, id, hdr, events)
}

// Leftovers are the subjects killed CreateFroms left (derived data goes
// with its session's Delete).
func (e engine) Leftovers(ctx context.Context, before time.Time, _ func(string) bool, dryRun bool) ([]string, error) {
	if !dryRun && e.s.cfg.readOnly {
		return nil, readOnlyErr("gc")
	}
	return e.s.collectIncomplete(ctx, before, dryRun)
}

func (e engine) GetDerived(ctx context.Context, id, key string) ([]byte, error) {
	return e.s.getDerived(ctx, id, key)
}

func (e engine) PutDerived(ctx context.Context, id, key string, data []byte) error {
	if e.s.cfg.readOnly {
		return readOnlyErr("keep derived data of " + id)
	}
	return e.s.putDerived(ctx, id, key, data)
}

func (e engine) DeleteDerived(ctx context.Context, id, key string) error {
	if e.s.cfg.readOnly {
		return readOnlyErr("delete derived data of " + id)
	}
	return e.s.deleteDerived(ctx, id, key)
}
