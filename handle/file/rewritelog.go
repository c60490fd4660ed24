package file

import (
	"github.com/sessionlog/sessionlog/handle"

	"context"
	"fmt"
	"io"

	"github.com/sessionlog/sessionlog/eventlog"
)

// ExportSealed writes sealed session id's logical log, events 0..to, to w
// as a standalone sealed raw log (as transfer.Export writes a clear one:
// no parent, a fork's inherited events its own rows, its canonical lines
// the session's): the same key records, so the same identities read it,
// and every row sealed under the session's newest data key. Nothing of
// the content is written in clear. It returns how many events it wrote;
// a session that is not sealed is refused (handle.ErrNotSealed).
func (s *Store) ExportSealed(ctx context.Context, id string, w io.Writer, to int64) (int64, error) {
	h, err := s.Open(ctx, id, handle.ReadOnly)
	if err != nil {
		return 0, err
	}
	defer h.Close()
	loc, err := s.locate(ctx, id)
	if err != nil {
		return 0, err
	}
	hdr := h.Header()
	hdr.Parent = nil
	plan, err := s.rewritePlan(ctx, loc, hdr, &s.raw)
	if err != nil {
		return 0, err
	}
	if plan == nil {
		return 0, fmt.Errorf("%w: %s", handle.ErrNotSealed, h.Path())
	}
	n := int64(0)
	events := func(yield func(eventlog.Event, error) bool) {
		for e, err := range h.Read(ctx, 0, to) {
			if err == nil && e.Seq != n {
				err = fmt.Errorf("handle: export %s: event %d where %d was expected", h.Path(), e.Seq, n)
			}
			if err != nil {
				yield(eventlog.Event{}, err)
				return
			}
			n++
			if !yield(e, nil) {
				return
			}
		}
		if n != to+1 {
			yield(eventlog.Event{}, fmt.Errorf("handle: export %s: the log ended at seq %d, before seq %d", h.Path(), n-1, to))
		}
	}
	cw := &copyWriter{f: w, dst: &s.raw, enc: s.enc, plan: plan}
	if _, err := cw.copyLog(ctx, hdr, events); err != nil {
		return n, err
	}
	return n, nil
}
