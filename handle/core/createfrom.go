package core

import (
	"github.com/sessionlog/sessionlog/handle"

	"context"
	"errors"
	"fmt"
	"iter"

	"github.com/sessionlog/sessionlog/eventlog"
)

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
func (c *eventCheck) info(in handle.Info) handle.Info {
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
		err = fmt.Errorf("%w: seq %d where %d was expected (the events carry the seqs they get, from the header's first)", eventlog.ErrInvalidEvent, seq, c.next)
	}
	if err != nil {
		return e, &handle.EventError{Path: c.path, Index: c.index, Seq: seq, Err: err}
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
		var ee *handle.EventError
		if errors.As(err, &ee) {
			ee.Index = c.index
		}
		return e, err
	}
	c.dig, c.last = dig, e
	c.next++
	return e, nil
}
