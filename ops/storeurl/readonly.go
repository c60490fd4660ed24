package storeurl

import (
	"context"
	"fmt"
	"io"
	"iter"
	"time"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/secrets/seal"
)

// ReadOnly makes Open return a store that changes nothing: a folder's
// file store reads through a read-only file system (not even a derived
// file is written), a JetStream store writes nothing (jetstream.WithReadOnly:
// without a session index its queries read the stream) and refuses every
// write — a session opened ReadWrite, a creation, an append, a fork, a delete, a detach, a
// GC that is no dry run, derived data put or deleted — with an error
// wrapping handle.ErrReadOnly. It is for a view of a store that must not
// touch it (logtool serve). Derived data then is never kept, so a read
// that would cache it (replay's stored states) recomputes it.
func ReadOnly() Option { return func(c *config) { c.readOnly = true } }

// readOnlyStore is a store whose writes are refused.
type readOnlyStore struct{ handle.Store }

// readOnlySealed is a read-only store that still answers what its store
// tells of a sealed session (handle.SealedExporter), which only reads: a
// verify through it checks a keyless session's framing.
type readOnlySealed struct {
	readOnlyStore
	se handle.SealedExporter
}

func (s readOnlySealed) SealingOf(ctx context.Context, id string) (*handle.Sealing, error) {
	return s.se.SealingOf(ctx, id)
}

func (s readOnlySealed) Framing(ctx context.Context, id string) (*seal.Framing, error) {
	return s.se.Framing(ctx, id)
}

func (s readOnlySealed) ExportSealed(ctx context.Context, id string, w io.Writer, to int64) (int64, error) {
	return s.se.ExportSealed(ctx, id, w, to)
}

func refused(what string) error {
	return fmt.Errorf("storeurl: %s: %w (the store is open read-only)", what, handle.ErrReadOnly)
}

func (readOnlyStore) Create(context.Context, ...handle.Option) (handle.Handle, error) {
	return nil, refused("create")
}

func (readOnlyStore) CreateFrom(context.Context, iter.Seq2[eventlog.Event, error], ...handle.Option) (handle.Info, error) {
	return handle.Info{}, refused("create")
}

func (readOnlyStore) AppendAll(_ context.Context, id string, _ int64, _ iter.Seq2[eventlog.Event, error]) (handle.Info, error) {
	return handle.Info{}, refused("append to " + id)
}

func (s readOnlyStore) Open(ctx context.Context, id string, mode handle.Mode, opts ...handle.Option) (handle.Handle, error) {
	if mode != handle.ReadOnly {
		return nil, refused("open " + id + " for writing")
	}
	return s.Store.Open(ctx, id, mode, opts...)
}

func (readOnlyStore) Fork(_ context.Context, id string, _ int64, _ ...handle.Option) (handle.Handle, error) {
	return nil, refused("fork " + id)
}

func (readOnlyStore) Delete(_ context.Context, id string, _ ...handle.Option) error {
	return refused("delete " + id)
}

func (readOnlyStore) Detach(_ context.Context, id string) error { return refused("detach " + id) }

func (readOnlyStore) Rewrite(_ context.Context, id string, _ func(handle.Handle) iter.Seq2[eventlog.Event, error]) (handle.Info, error) {
	return handle.Info{}, refused("rewrite " + id)
}

func (readOnlyStore) OpenOrCreate(context.Context, map[string]string, ...handle.Option) (handle.Handle, bool, error) {
	return nil, false, refused("open or create")
}

func (readOnlyStore) OpenWhenFree(_ context.Context, id string, _ time.Duration, _ func()) (handle.Handle, error) {
	return nil, refused("open " + id + " for writing")
}

func (s readOnlyStore) GC(ctx context.Context, before time.Time, dryRun bool) (handle.GCReport, error) {
	if !dryRun {
		return handle.GCReport{}, refused("gc")
	}
	return s.Store.GC(ctx, before, true)
}

func (readOnlyStore) PutDerived(_ context.Context, id, _ string, _ []byte) error {
	return refused("keep derived data of " + id)
}

func (readOnlyStore) DeleteDerived(_ context.Context, id, _ string) error {
	return refused("delete derived data of " + id)
}
