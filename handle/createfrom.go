package handle

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"path/filepath"

	"github.com/sessionlog/sessionlog/eventlog"
)

// CreateFrom makes a session holding exactly events, all or nothing (see
// Store.CreateFrom). Under the session's writer lock the whole log is
// written to <ID>.jsonl[.zst].tmp (zstd: in frames of about
// zstdframe.Target bytes), fsynced, renamed to its name, and the
// folder fsynced: until the rename the session does not exist, after the
// folder's fsync it exists whole. A temp file a killed CreateFrom left is
// overwritten by the retry and removed by GC.
func (s *FileStore) CreateFrom(ctx context.Context, events iter.Seq2[eventlog.Event, error], opts ...CreateOption) (Info, error) {
	return s.core.CreateFrom(ctx, events, opts...)
}

// createFrom is fileEngine.CreateFrom.
func (s *FileStore) createFrom(ctx context.Context, ns NewSession, events iter.Seq2[eventlog.Event, error]) (Info, error) {
	hdr := ns.Header
	enc, plan, err := s.newLayout(ns)
	if err != nil {
		return Info{}, err
	}
	id := hdr.ID
	path := filepath.Join(s.dir, id+enc.ext)
	if err := s.absent(ctx, id); err != nil {
		return Info{}, err // before the lock: a session with a writer exists too
	}
	if err := s.makeDir(); err != nil {
		return Info{}, err
	}
	lock, err := s.lockMarked(id)
	if err != nil {
		return Info{}, err
	}
	defer func() {
		s.fs.Remove(s.lockPath(id)) // derived; only its holder removes it (see lockFile)
		lock.unlock()
	}()
	if err := s.absent(ctx, id); err != nil {
		return Info{}, err
	}
	check := &eventCheck{path: path, next: hdr.FirstSeq()}
	if p := hdr.Parent; p != nil && p.Mode == eventlog.ModeFork {
		check.prefix = func() (*eventlog.Digest, error) { return s.digestAt(ctx, *p) }
	}
	tmp := path + tmpExt
	_, sc, err := s.writeCopy(ctx, hdr, check.events(ctx, events), enc, plan, tmp)
	if err == nil {
		err = s.fs.Rename(tmp, path)
	}
	if err != nil {
		s.fs.Remove(tmp)
		if check.err != nil {
			return Info{}, check.err // a refused event, the events' own error, ctx's
		}
		return Info{}, fmt.Errorf("handle: create %q: %w", path, err)
	}
	if err := syncDir(s.fs, s.dir); err != nil {
		// The name may not survive a power cut: take it back, so that a
		// failed CreateFrom leaves nothing that could vanish later.
		s.fs.Remove(path)
		return Info{}, fmt.Errorf("handle: create %q: sync folder: %w", path, err)
	}
	s.saveWritten(ctx, location{path: path, enc: enc}, sc, check)
	s.cfg.log.Debug("session created from events", "id", id, "path", path, "encoding", enc.name, "events", check.next-hdr.FirstSeq())
	// Told, not read back: once the session exists CreateFrom must not fail.
	return check.info(Info{ID: id, Path: path, Encoding: enc.name, Header: hdr, SizeBytes: sc.end, Sealed: plan != nil}), nil
}

// absent returns nil when session id does not exist, else ErrExists (or
// the error that refuses what is there).
func (s *FileStore) absent(ctx context.Context, id string) error {
	_, err := s.locate(ctx, id)
	switch {
	case errors.Is(err, ErrNotFound):
		return nil
	case errors.Is(err, ErrNotRegular):
		return err // what is there is not a session
	}
	return fmt.Errorf("%w: %s in %q", ErrExists, id, s.dir)
}

// digestAt returns the running digest of the logical log of parent p.ID
// up to and including seq p.Seq: where a fork at p starts its own.
func (s *FileStore) digestAt(ctx context.Context, p eventlog.Parent) (*eventlog.Digest, error) {
	h, err := s.Open(ctx, p.ID, ReadOnly)
	if err != nil {
		return nil, fmt.Errorf("handle: the digest of parent %s at seq %d: %w", p.ID, p.Seq, err)
	}
	defer h.Close()
	return h.(*core).digestUpTo(ctx, p.Seq, 0)
}

// eventCheck checks the events of a log written whole (CreateFrom) as
// Append checks appended ones: each storable, at the seq it claims, the
// reserved ones valid against the running digest.
type eventCheck struct {
	path   string
	next   int64 // the seq the next event must carry
	index  int
	dig    *eventlog.Digest
	prefix func() (*eventlog.Digest, error) // a fork's inherited digest; nil: none
	err    error                            // why events stopped
	last   eventlog.Event                   // the last event checked
	marks  []savedDigest                    // the digest's states at the checkpoints checked
}

// info fills in what the checked events say of the session in.
func (c *eventCheck) info(in Info) Info {
	in.Events, in.LastSeq = c.next, c.next-1
	if c.index > 0 {
		in.LastType, in.LastTime = c.last.Type, c.last.Time
	}
	return in
}

// events yields the checked (compacted) events of in, and stops at the
// first error: in's, ctx's, or a refused event's *EventError.
func (c *eventCheck) events(ctx context.Context, in iter.Seq2[eventlog.Event, error]) iter.Seq2[eventlog.Event, error] {
	return func(yield func(eventlog.Event, error) bool) {
		for e, err := range in {
			if err == nil && c.index%4096 == 0 {
				err = ctx.Err()
			}
			if err == nil {
				e, err = c.check(e)
			}
			if err != nil {
				c.err = err
				yield(eventlog.Event{}, err)
				return
			}
			if !yield(e, nil) {
				return
			}
		}
	}
}

func (c *eventCheck) check(e eventlog.Event) (eventlog.Event, error) {
	defer func() { c.index++ }()
	seq := e.Seq
	e, err := eventlog.Storable(e)
	if err == nil && seq != c.next {
		err = fmt.Errorf("%w: seq %d where %d was expected (the events carry the seqs they get, from the header's first)", ErrInvalidEvent, seq, c.next)
	}
	if err != nil {
		return e, &EventError{Path: c.path, Index: c.index, Seq: seq, Err: err}
	}
	if c.dig == nil {
		c.dig = eventlog.NewDigest()
		if c.prefix != nil {
			if c.dig, err = c.prefix(); err != nil {
				return e, err
			}
		}
	}
	batch := [1]eventlog.Event{e}
	dig, err := checkReserved(c.path, batch[:], nil, c.dig, e.Type == eventlog.TypeCheckpoint, &c.marks)
	if err != nil {
		var ee *EventError
		if errors.As(err, &ee) {
			ee.Index = c.index
		}
		return e, err
	}
	c.dig, c.last = dig, e
	c.next++
	return e, nil
}
