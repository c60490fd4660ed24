package core

import (
	"github.com/sessionlog/sessionlog/handle"

	"context"
	"errors"
	"fmt"
	"iter"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/internal/format/zstdframe"
)

// appendAll is Store.AppendAll for the store core, whose handles are the
// write core's (NewHandle): it opens a write handle on session id of st
// (ErrLocked while another writer holds it), checks that expected is its
// next seq (a *ConflictError otherwise), and hands the events to the
// backend's WriteAll, checked as CreateFrom checks them — each at the seq
// it claims, each as Append checks it, a checkpoint against the log's
// digest — in chunks of about zstdframe.Target bytes of rows. The
// running digest, its states at the batch's checkpoints and the handle's
// seqs move only once the whole batch is durable, so the handle's Close
// leaves the derived records a writer's Close leaves. The events are
// stored as given, unredacted, as CreateFrom stores them.
func appendAll(ctx context.Context, st *Store, id string, expected int64, events iter.Seq2[eventlog.Event, error]) (handle.Info, error) {
	h, err := st.open(ctx, id, handle.ReadWrite, st.cfg)
	if err != nil {
		return handle.Info{}, err
	}
	err = h.appendAll(ctx, expected, events)
	if cerr := h.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return handle.Info{}, err
	}
	return st.Stat(ctx, id)
}

// appendAll is Store.AppendAll on h, a write handle opened for it alone.
func (h *writeCore) appendAll(ctx context.Context, expected int64, events iter.Seq2[eventlog.Event, error]) error {
	h.mu.Lock()
	err := h.usable(true)
	if err == nil && (len(h.pending) > 0 || h.flushing) {
		err = fmt.Errorf("handle: append all to %q: events are queued", h.path)
	}
	next := h.next
	h.mu.Unlock()
	if err != nil {
		return err
	}
	if expected != next {
		return &handle.ConflictError{Path: h.path, Expected: expected, Next: next}
	}
	check := &eventCheck{path: h.path, next: next, prefix: func() (*eventlog.Digest, error) {
		if err := h.initDigest(ctx); err != nil {
			return nil, err
		}
		h.mu.Lock()
		defer h.mu.Unlock()
		return h.dig.Clone(), nil
	}}
	after, err := h.b.WriteAll(ctx, check.rows(ctx, h.enc, events))
	if err != nil {
		if check.err != nil {
			return check.err // refused, the events' own error, ctx's: nothing stored
		}
		if ce := (*handle.ConflictError)(nil); errors.As(err, &ce) {
			next, terr := h.b.Tail(ctx)
			if terr != nil {
				next = -1
			}
			err = &handle.ConflictError{Path: h.path, Expected: expected, Next: next, Err: terr}
		}
		h.poison(err) // what was stored is the backend's to know: Close saves nothing
		return err
	}
	h.mu.Lock()
	h.next, h.durable = check.next, check.next-1
	if check.dig != nil {
		h.dig = check.dig
	}
	h.marks = append(h.marks, check.marks...)
	h.mu.Unlock()
	if after != nil {
		after()
	}
	return nil
}

// rows yields the checked events of in as rows for Backend.WriteAll, in
// chunks of about zstdframe.Target bytes (a zstd log's frames), and
// stops at the first error (see events).
func (c *eventCheck) rows(ctx context.Context, enc *eventlog.Encoder, in iter.Seq2[eventlog.Event, error]) iter.Seq2[Rows, error] {
	return func(yield func(Rows, error) bool) {
		var batch []eventlog.Event
		var buf []byte
		size := 0
		put := func() bool {
			buf = enc.AppendRows(buf[:0], batch)
			r := Rows{Bytes: buf, First: batch[0].Seq, Last: batch[len(batch)-1].Seq}
			batch, size = batch[:0], 0
			return yield(r, nil)
		}
		for e, err := range c.events(ctx, in) {
			if err != nil {
				yield(Rows{}, err)
				return
			}
			rs := eventlog.RowSize(e)
			if size > 0 && size+rs > zstdframe.Target {
				if !put() {
					return
				}
			}
			batch = append(batch, e)
			size += rs
		}
		if len(batch) > 0 {
			put()
		}
	}
}
