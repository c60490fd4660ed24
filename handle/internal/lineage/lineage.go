// Package lineage reads a session's logical log — a fork's inherited
// events from its parent, then its own — for the write core (package
// handle) and the stores' cheaper readers (handle/file's TailReader),
// written once. It knows rows and headers (eventlog), not stores: the
// caller opens parents and says how a broken lineage is reported.
package lineage

import (
	"context"
	"fmt"

	"github.com/sessionlog/sessionlog/eventlog"
)

// MaxDepth bounds a chain of forks; a longer one is taken for a cycle.
const MaxDepth = 256

// RowReader reads rows, checking each (core.RowReader).
type RowReader interface {
	Next() bool
	Event() eventlog.Event
	Err() error
}

// RangeReader reads a session's logical log from..to, at a depth of
// forks, into yield, and returns false when it stopped early (yield said
// so, or it yielded an error): what every reader of a session does.
type RangeReader func(ctx context.Context, from, to int64, depth int, yield func(eventlog.Event, error) bool) bool

// readLogical yields the events from..to of the logical log of the
// session whose header is hdr (named path in errors): a fork's inherited
// ones first, read by its parent's RangeReader (parent opens it on need)
// and checked to be all there, then own(from, to) for the rest. It returns
// false when it stopped early. The write core and TailReader read through
// it.
func Read(ctx context.Context, hdr eventlog.Header, path string, from, to int64, depth int,
	parent func(context.Context, eventlog.Parent) (RangeReader, error), own func(from, to int64) bool,
	broken func(path string, p eventlog.Parent, reason string) error, yield func(eventlog.Event, error) bool) bool {
	if from > to {
		return true
	}
	if p := hdr.Parent; p != nil && p.Mode == eventlog.ModeFork && from <= p.Seq {
		if !readInherited(ctx, path, *p, from, min(to, p.Seq), depth, parent, broken, yield) {
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
// parent's RangeReader, and checks that the parent holds them all.
func readInherited(ctx context.Context, path string, p eventlog.Parent, from, upto int64, depth int,
	parent func(context.Context, eventlog.Parent) (RangeReader, error), broken func(path string, p eventlog.Parent, reason string) error,
	yield func(eventlog.Event, error) bool) bool {
	if depth >= MaxDepth {
		yield(eventlog.Event{}, broken(path, p, fmt.Sprintf("more than %d forks in a chain (a cycle?)", MaxDepth)))
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
		yield(eventlog.Event{}, broken(path, p, fmt.Sprintf("the parent's log ends before seq %d", upto)))
		return false
	}
	return true
}

// yieldRows yields r's events from..to, checking ctx every 256, then r's
// error if it has one. ok is false when it stopped early (yield said so,
// or it yielded an error); ended is true when r came to its end without
// error (not stopped by to).
func Rows(ctx context.Context, r RowReader, from, to int64, yield func(eventlog.Event, error) bool) (ok, ended bool) {
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
