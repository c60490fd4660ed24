package handle

import (
	"context"
	"fmt"
	"io"
	"iter"
	"os"

	"github.com/sessionlog/sessionlog/eventlog"
)

// Rewrite replaces session id's own rows with the events rows yields, in
// one atomic rewrite under the session's writer lock (ErrLocked while a
// writer holds it): a temp file, fsynced and read back, renamed over the
// log, the folder fsynced; sealed as the log was, in its encoding, under
// its header. rows gets a read-only handle on the session as it is (its
// logical log, a fork's inherited events included) and must yield events
// with the session's own seqs, from the header's first on; every event is
// checked as CreateFrom checks it, checkpoints' log digests included. The
// session's derived data is dropped. It is for operations that change a
// log on purpose (a redaction of a stored log: package scrub): what it
// writes breaks every digest a holder of the old file has, unless the
// new events say how.
func (s *FileStore) Rewrite(ctx context.Context, id string, rows func(h Handle) iter.Seq2[eventlog.Event, error]) (Info, error) {
	lock, err := s.lockSession(ctx, id)
	if err != nil {
		return Info{}, err
	}
	defer lock.unlock()
	h, err := s.open(ctx, id, os.O_RDONLY, nil, OpenParams{})
	if err != nil {
		return Info{}, err
	}
	defer h.Close()
	loc, err := s.locate(ctx, id)
	if err != nil {
		return Info{}, err
	}
	hdr := h.Header()
	plan, err := s.rewritePlan(ctx, loc, hdr, loc.enc)
	if err != nil {
		return Info{}, err
	}
	check := &eventCheck{path: loc.path, next: hdr.FirstSeq()}
	if p := hdr.Parent; p != nil && p.Mode == eventlog.ModeFork {
		check.prefix = func() (*eventlog.Digest, error) { return s.digestAt(ctx, *p) }
	}
	if err := s.rewrite(ctx, id, loc, loc.enc, hdr, plan, check.events(ctx, rows(h))); err != nil {
		if check.err != nil {
			return Info{}, check.err
		}
		return Info{}, err
	}
	s.dropDerived(id)
	return s.Stat(ctx, id)
}

// ExportSealed writes sealed session id's logical log, events 0..to, to w
// as a standalone sealed raw log (as transfer.Export writes a clear one:
// no parent, a fork's inherited events its own rows, its canonical lines
// the session's): the same key records, so the same identities read it,
// and every row sealed under the session's newest data key. Nothing of
// the content is written in clear. It returns how many events it wrote;
// a session that is not sealed is refused (ErrNotSealed).
func (s *FileStore) ExportSealed(ctx context.Context, id string, w io.Writer, to int64) (int64, error) {
	h, err := s.Open(ctx, id, ReadOnly)
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
		return 0, fmt.Errorf("%w: %s", ErrNotSealed, h.Path())
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
