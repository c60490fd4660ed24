package handle

import (
	"context"
	"fmt"
	"iter"
	"os"

	"github.com/sessionlog/sessionlog/eventlog"
)

// AppendAll appends events to session id as one batch that is durable
// all at once or not at all, whenever the process dies or the power
// fails: the whole log, its events then these, is rewritten to a temp
// file under the session's writer lock, fsynced, read back and renamed
// over the old file, and the folder fsynced (as Convert does; the
// encoding is kept). Until the rename the session is as it was; after it,
// it holds every event. A plain Append can make no such promise for a
// batch of many rows: a crash mid-write leaves the first rows whole
// (raw), or the first frames (zstd, one frame per 4 MiB of rows).
//
// expected is the seq the first event must have: the log's next, else a
// *ConflictError and nothing is written. Each event must carry the seq it
// gets; each is checked as Append checks it (a rollback's "to" below its
// own seq); checkpoints are refused (their digests would need the log
// read twice). It costs a copy of the whole log: for batches that must
// not be torn (a re-import's), not for appending as an agent runs. Like
// CreateFrom it stores the events as given, unredacted: the import
// operation redacts what it converts.
func (s *FileStore) AppendAll(ctx context.Context, id string, expected int64, events iter.Seq2[eventlog.Event, error]) (Info, error) {
	lock, err := s.lockSession(ctx, id)
	if err != nil {
		return Info{}, err
	}
	defer lock.unlock()
	loc, err := s.locate(ctx, id)
	if err != nil {
		return Info{}, err
	}
	in, err := s.openLog(ctx, &loc, os.O_RDONLY)
	if err != nil {
		return Info{}, fmt.Errorf("handle: append all: %w", err)
	}
	defer in.Close()
	r := loc.reader(ctx, in, readOpts{})
	hdr, err := r.Header()
	if err != nil {
		return Info{}, err
	}
	var refused error // why the batch was refused: returned as it is
	next := hdr.FirstSeq()
	all := func(yield func(eventlog.Event, error) bool) {
		for e, err := range r.All() {
			if err != nil {
				yield(eventlog.Event{}, err)
				return
			}
			next = e.Seq + 1
			if !yield(e, nil) {
				return
			}
		}
		if next != expected {
			refused = &ConflictError{Path: loc.path, Expected: expected, Next: next}
			yield(eventlog.Event{}, refused)
			return
		}
		for e, err := range events {
			if err == nil {
				err = appendable(e, next)
			}
			if err != nil {
				refused = err
				yield(eventlog.Event{}, err)
				return
			}
			next++
			if !yield(e, nil) {
				return
			}
		}
	}
	plan, err := s.rewritePlan(ctx, loc, hdr, loc.enc)
	if err != nil {
		return Info{}, err
	}
	if err := s.rewrite(ctx, id, loc, loc.enc, hdr, plan, all); err != nil {
		if refused != nil {
			return Info{}, refused
		}
		return Info{}, err
	}
	return s.Stat(ctx, id)
}

// appendable checks an event of a batch AppendAll appends at seq.
func appendable(e eventlog.Event, seq int64) error {
	if e.Seq != seq {
		return fmt.Errorf("%w: an event of seq %d where %d comes", eventlog.ErrInvalidEvent, e.Seq, seq)
	}
	if e.Type == eventlog.TypeCheckpoint {
		return fmt.Errorf("%w: AppendAll takes no checkpoint (seq %d)", eventlog.ErrInvalidEvent, seq)
	}
	if _, err := eventlog.Storable(e); err != nil {
		return fmt.Errorf("%w: seq %d: %w", eventlog.ErrInvalidEvent, seq, err)
	}
	if e.Type == eventlog.TypeRollback {
		rb, err := eventlog.ParseRollback(e.Data)
		if err != nil || rb.To >= seq {
			return fmt.Errorf("%w: seq %d: a rollback to %d", eventlog.ErrInvalidEvent, seq, rb.To)
		}
	}
	return nil
}
