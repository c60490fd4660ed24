package handle

import (
	"context"
	"errors"
	"fmt"

	"github.com/sessionlog/sessionlog/eventlog"
)

// ErrLineage: a fork whose parent is missing, or ends before the fork
// point; wrapped by *LineageError.
var ErrLineage = errors.New("handle: lineage broken")

// maxForkDepth bounds a chain of forks; a longer one is taken for a cycle.
const maxForkDepth = 256

// LineageError names the missing piece of a fork's logical log.
type LineageError struct {
	Path   string // the fork's file
	Parent string // the parent's ID
	Seq    int64  // the fork point
	Reason string
}

// Error implements error.
func (e *LineageError) Error() string {
	return fmt.Sprintf("handle: lineage of %q (forked from %s at seq %d): %s", e.Path, e.Parent, e.Seq, e.Reason)
}

// Unwrap returns ErrLineage.
func (e *LineageError) Unwrap() error { return ErrLineage }

// tooDeep is the error of a chain of more than maxForkDepth forks, met
// at the fork at path, whose parent is p.
func tooDeep(path string, p eventlog.Parent) error {
	return &LineageError{Path: path, Parent: p.ID, Seq: p.Seq, Reason: fmt.Sprintf("more than %d forks in a chain (a cycle?)", maxForkDepth)}
}

// rangeReader reads a session's logical log from..to, at a depth of
// forks, into yield, and returns false when it stopped early (yield said
// so, or it yielded an error): what every reader of a session does.
type rangeReader func(ctx context.Context, from, to int64, depth int, yield func(eventlog.Event, error) bool) bool

// readLogical yields the events from..to of the logical log of the
// session whose header is hdr (named path in errors): a fork's inherited
// ones first, read by its parent's rangeReader (parent opens it on need)
// and checked to be all there, then own(from, to) for the rest. It returns
// false when it stopped early. The write core and TailReader read through
// it.
func readLogical(ctx context.Context, hdr eventlog.Header, path string, from, to int64, depth int,
	parent func(context.Context, eventlog.Parent) (rangeReader, error), own func(from, to int64) bool,
	yield func(eventlog.Event, error) bool) bool {
	if from > to {
		return true
	}
	if p := hdr.Parent; p != nil && p.Mode == eventlog.ModeFork && from <= p.Seq {
		if !readInherited(ctx, path, *p, from, min(to, p.Seq), depth, parent, yield) {
			return false
		}
		from = p.Seq + 1
	}
	if from > to {
		return true
	}
	return own(from, to)
}

// readInherited yields a fork's inherited events from..upto, read by the
// parent's rangeReader, and checks that the parent holds them all.
func readInherited(ctx context.Context, path string, p eventlog.Parent, from, upto int64, depth int,
	parent func(context.Context, eventlog.Parent) (rangeReader, error), yield func(eventlog.Event, error) bool) bool {
	if depth >= maxForkDepth {
		yield(eventlog.Event{}, tooDeep(path, p))
		return false
	}
	read, err := parent(ctx, p)
	if err != nil {
		yield(eventlog.Event{}, err)
		return false
	}
	next := from
	ok := read(ctx, from, upto, depth+1, func(e eventlog.Event, err error) bool {
		if err == nil {
			next = e.Seq + 1
		}
		return yield(e, err)
	})
	if !ok {
		return false
	}
	if next != upto+1 {
		yield(eventlog.Event{}, &LineageError{Path: path, Parent: p.ID, Seq: p.Seq,
			Reason: fmt.Sprintf("the parent's log ends before seq %d", upto)})
		return false
	}
	return true
}

// yieldRows yields r's events from..to, checking ctx every 256, then r's
// error if it has one. ok is false when it stopped early (yield said so,
// or it yielded an error); ended is true when r came to its end without
// error (not stopped by to).
func yieldRows(ctx context.Context, r RowReader, from, to int64, yield func(eventlog.Event, error) bool) (ok, ended bool) {
	for n := 0; r.Next(); n++ {
		if n%256 == 0 && ctx.Err() != nil {
			yield(eventlog.Event{}, ctx.Err())
			return false, false
		}
		e := r.Event()
		if e.Seq > to {
			return true, false
		}
		if e.Seq < from {
			continue
		}
		if !yield(e, nil) {
			return false, false
		}
	}
	if err := r.Err(); err != nil {
		yield(eventlog.Event{}, err)
		return false, false
	}
	return true, true
}
