package ingest

import (
	"context"
	"errors"
	"iter"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/handle"
)

// allAppender is a store that appends a batch durable all at once
// (handle.FileStore.AppendAll).
type allAppender interface {
	AppendAll(ctx context.Context, id string, expected int64, events iter.Seq2[eventlog.Event, error]) (handle.Info, error)
}

// appendAll appends events (their seqs from expected) to session id as
// one batch, all or nothing, through the store's AppendAll. A store
// without one gets them appended and flushed in batches: what was flushed
// stays if the process dies.
func appendAll(ctx context.Context, st handle.Store, id string, expected int64, events iter.Seq2[eventlog.Event, error]) (handle.Info, error) {
	if a, ok := st.(allAppender); ok {
		return a.AppendAll(ctx, id, expected, events)
	}
	h, err := st.Open(ctx, id, handle.ReadWrite)
	if err != nil {
		return handle.Info{}, err
	}
	if next := h.Seq() + 1; next != expected {
		h.Close()
		return handle.Info{}, &handle.ConflictError{Path: h.Path(), Expected: expected, Next: next}
	}
	err = appendBatches(ctx, h, events)
	if cerr := h.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return handle.Info{}, err
	}
	return st.Stat(ctx, id)
}

// Batches of appendBatches: at most this many events or about this many
// bytes.
const (
	batchEvents = 4096
	batchBytes  = 4 << 20
)

// appendBatches appends events (contiguous seqs, the first the next of
// h's) to the write handle h in batches, each checked to land at its seq
// and flushed.
func appendBatches(ctx context.Context, h handle.Handle, events iter.Seq2[eventlog.Event, error]) error {
	var batch []eventlog.Event
	size := 0
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		if _, err := h.AppendAt(ctx, batch[0].Seq, batch...); err != nil {
			return err
		}
		batch, size = batch[:0], 0
		return h.Flush(ctx)
	}
	for e, err := range events {
		if err != nil {
			return err
		}
		batch = append(batch, e)
		size += eventlog.RowSize(e)
		if len(batch) >= batchEvents || size >= batchBytes {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	return flush()
}

// errStop stops a conversion whose events nobody wants any more.
var errStop = errors.New("ingest: stopped")
