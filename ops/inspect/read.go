package inspect

import (
	"context"
	"errors"
	"iter"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/handle"
)

// A Read is one checked read of a log's events from..to (logtool cat):
// it reads from the first event whatever from says, so that the log
// digest of every checkpoint it passes is checked, with the checker every
// reader of the library uses (eventlog.Digest.AddChecked). What it found
// beside the events is in its fields once Events is done.
type Read struct {
	log      Log
	from, to int64

	// Path is the log's location, once opened; Torn the torn tail its
	// open found, which is not read (docs/format.md §9), or nil.
	Path string
	Torn *eventlog.TornTail
	// Mismatches are the checkpoints that fail their check, in order: a
	// log digest that does not match the events before it (an
	// *eventlog.LogDigestError) or data that does not parse (an
	// *eventlog.CorruptError).
	Mismatches []error
	// Unchecked says why no digest was checked, nil when they were: a
	// fork whose parent is gone is read from its fork point on (from past
	// it), but its digests cover its parent's events too.
	Unchecked error
}

// NewRead returns a checked read of l's events with from <= seq <= to
// (to may be handle.End).
func NewRead(l Log, from, to int64) *Read { return &Read{log: l, from: from, to: to} }

// Events yields the events, a fork's inherited ones first, and an error
// last when the read fails. A damaged log (a *eventlog.CorruptError)
// yields the events before its damage, then the error: those the read got
// to, and, when the open refused the log before any, those a salvage read
// finds before the damage (a log that is a file: Log.Salvage). Events can
// be ranged over once.
func (r *Read) Events(ctx context.Context) iter.Seq2[eventlog.Event, error] {
	return func(yield func(eventlog.Event, error) bool) {
		next := r.from // the next seq to yield: a second pass yields nothing twice
		out := func(e eventlog.Event) bool {
			if e.Seq < next {
				return true
			}
			next = e.Seq + 1
			return yield(e, nil)
		}
		check := eventlog.NewDigest()
		r.Mismatches = nil
		checked := func(e eventlog.Event) bool {
			if err := check.AddChecked(e); err != nil {
				r.Mismatches = append(r.Mismatches, err)
			}
			return out(e)
		}
		stopped, err := r.read(ctx, 0, checked)
		if stopped {
			return
		}
		if errors.Is(err, handle.ErrLineage) && r.from > 0 && next == r.from {
			r.Unchecked, r.Mismatches = err, nil
			if stopped, err = r.read(ctx, r.from, out); stopped {
				return
			}
		}
		var ce *eventlog.CorruptError
		if errors.As(err, &ce) && ce.Seq > 0 {
			// The events before the damage, read past the open's refusal.
			check, r.Mismatches = eventlog.NewDigest(), nil
			if stopped, err = r.beforeDamage(ctx, ce, checked); stopped {
				return
			}
		}
		if err != nil {
			yield(eventlog.Event{}, err)
		}
	}
}

// read opens the log and hands fn its events from..r.to; stopped is true
// when fn stopped the read.
func (r *Read) read(ctx context.Context, from int64, fn func(eventlog.Event) bool) (stopped bool, err error) {
	h, err := r.log.Open(ctx)
	if err != nil {
		return false, err
	}
	defer h.Close()
	r.Path, r.Torn = h.Path(), h.Torn()
	for e, err := range h.Read(ctx, from, r.to) {
		if err != nil {
			return false, err
		}
		if !fn(e) {
			return true, nil
		}
	}
	return false, nil
}

// beforeDamage is BeforeDamage for Events: stopped is true when fn
// stopped the read.
func (r *Read) beforeDamage(ctx context.Context, ce *eventlog.CorruptError, fn func(eventlog.Event) bool) (stopped bool, err error) {
	errStop := errors.New("stop")
	err = BeforeDamage(ctx, r.log, ce, func(e eventlog.Event) error {
		if e.Seq > r.to {
			return errStop
		}
		if !fn(e) {
			stopped = true
			return errStop
		}
		return nil
	})
	switch {
	case stopped:
		return true, nil
	case errors.Is(err, errStop):
		return false, ce
	}
	return false, err
}

// BeforeDamage hands fn the events of l before the damage ce names (a
// fork's inherited ones first), read past the open's refusal as a salvage
// reads them, up to the first gap, then returns ce: what a damaged log
// can show without any claim that it is clean. fn's error ends the read
// and is returned. A log that is not a file has no salvage read: ce at
// once.
func BeforeDamage(ctx context.Context, l Log, ce *eventlog.CorruptError, fn func(eventlog.Event) error) error {
	if !l.IsFile() {
		return ce
	}
	errEnd := errors.New("the damage")
	var ferr error
	next := int64(-1)
	_, err := l.Salvage(ctx, func(e eventlog.Event) error {
		if e.Seq >= ce.Seq || next >= 0 && e.Seq != next {
			return errEnd // the damage, or what a salvage found past it
		}
		next = e.Seq + 1
		ferr = fn(e)
		return ferr
	})
	switch {
	case ferr != nil:
		return ferr
	case err != nil && !errors.Is(err, errEnd) && !errors.Is(err, eventlog.ErrCorrupt):
		return err
	}
	return ce
}
