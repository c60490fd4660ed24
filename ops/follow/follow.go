package follow

import (
	"context"
	"errors"
	"io/fs"
	"iter"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/handle/file"
)

// Target is a session to follow: how to open it afresh (read-only) and
// how to describe where it lives now, without reading its log.
type Target interface {
	Open(ctx context.Context) (handle.Handle, error)
	Stat(ctx context.Context) (handle.Info, error)
}

// Session is the target of session id of st.
func Session(st handle.Store, id string) Target { return storeTarget{st, id} }

type storeTarget struct {
	st handle.Store
	id string
}

func (t storeTarget) Open(ctx context.Context) (handle.Handle, error) {
	return t.st.Open(ctx, t.id, handle.ReadOnly)
}
func (t storeTarget) Stat(ctx context.Context) (handle.Info, error) { return t.st.Stat(ctx, t.id) }

// File is the target of the log file at path (a freely named export, say),
// read through st, the file store of its folder.
func File(st *file.Store, path string) Target { return fileTarget{st, path} }

type fileTarget struct {
	st   *file.Store
	path string
}

func (t fileTarget) Open(ctx context.Context) (handle.Handle, error) {
	return t.st.OpenPath(ctx, t.path)
}
func (t fileTarget) Stat(ctx context.Context) (handle.Info, error) { return t.st.StatPath(ctx, t.path) }

type config struct {
	from, last int64 // from: the first seq; last >= 0: the last n events instead
	notes      func(Note)
}

// Option configures Open.
type Option func(*config)

// From starts at seq (default 0: the log from its start).
func From(seq int64) Option { return func(c *config) { c.from, c.last = seq, -1 } }

// Last starts n events before the end of the log as it is at Open (tail
// -n).
func Last(n int64) Option { return func(c *config) { c.last = max(n, 0) } }

// WithNotes calls fn with each Note, as it happens (default: nothing).
func WithNotes(fn func(Note)) Option { return func(c *config) { c.notes = fn } }

// Follower follows one session; see the package doc.
type Follower struct {
	t     Target
	src   handle.Handle
	path  string      // the log src reads
	info  handle.Info // the session as the last look found it
	next  int64       // the next seq to yield
	shown ring        // digests of the last events yielded
	notes func(Note)
	begun bool // the first look is done
	gone  bool // the session was missing at the last look, and that was said
	stale bool // a read failed: the log changed while it was read
	unrd  bool // the session could not be opened at the last look, and that was said
}

// Open opens t and returns a Follower at the start Last or From says.
// What stops the open (the session not found, corrupt) is its error.
func Open(ctx context.Context, t Target, opts ...Option) (*Follower, error) {
	c := config{last: -1}
	for _, o := range opts {
		o(&c)
	}
	src, err := t.Open(ctx)
	if err != nil {
		return nil, err
	}
	f := &Follower{t: t, src: src, path: src.Path(), notes: c.notes, next: max(c.from, 0)}
	if c.last >= 0 {
		f.next = max(0, src.Seq()+1-c.last)
	}
	if f.notes == nil {
		f.notes = func(Note) {}
	}
	return f, nil
}

// Next returns the seq of the next event the Follower yields.
func (f *Follower) Next() int64 { return f.next }

// Handle returns the handle the Follower reads now: it changes when the
// Follower opens the session anew.
func (f *Follower) Handle() handle.Handle { return f.src }

// Close closes the handle the Follower reads.
func (f *Follower) Close() error { return f.src.Close() }

// Poll looks once and yields the events appended since the last look, in
// seq order, first opening the session anew when its log changed under
// the Follower (each such change is a Note). The first look yields the
// events from the start on and its read errors (a corrupt row, say);
// after it, a read that fails is a passing change (the next look opens
// the session anew) and only the context's error is yielded.
func (f *Follower) Poll(ctx context.Context) iter.Seq2[eventlog.Event, error] {
	return func(yield func(eventlog.Event, error) bool) {
		if err := ctx.Err(); err != nil {
			yield(eventlog.Event{}, err)
			return
		}
		if !f.begun {
			f.begun = true
			if info, err := f.t.Stat(ctx); err == nil {
				f.info = info
			}
			for e, err := range f.src.Read(ctx, f.next, handle.End) {
				if err != nil {
					yield(eventlog.Event{}, err)
					return
				}
				if !f.emit(e, yield) {
					return
				}
			}
			return
		}
		f.look(ctx, yield)
	}
}

// emit yields e and remembers it.
func (f *Follower) emit(e eventlog.Event, yield func(eventlog.Event, error) bool) bool {
	f.shown.add(e)
	f.next = e.Seq + 1
	return yield(e, nil)
}

// look is one look after the first.
func (f *Follower) look(ctx context.Context, yield func(eventlog.Event, error) bool) {
	info, err := f.t.Stat(ctx)
	switch {
	case ctx.Err() != nil:
		yield(eventlog.Event{}, ctx.Err())
		return
	case errors.Is(err, handle.ErrNotFound) || errors.Is(err, fs.ErrNotExist):
		if !f.gone {
			f.notes(Note{Kind: Gone, Path: f.path})
			f.gone = true
		}
		return
	case err != nil:
		return // a passing fault: look again at the next look
	}
	was := f.info
	switch {
	case f.stale:
		f.reopen(ctx, info, Note{Kind: Changed, Path: info.Path}, yield)
		return
	case f.gone:
		f.notes(Note{Kind: Back, Path: info.Path})
		f.reopen(ctx, info, Note{}, yield)
		return
	case f.unrd && sameInfo(info, was):
		return // wait for it to change before another open
	case f.unrd:
		f.reopen(ctx, info, Note{}, yield)
		return
	case info.Path != f.path:
		f.reopen(ctx, info, Note{Kind: Moved, Path: info.Path}, yield)
		return
	case info.SizeBytes < was.SizeBytes || f.shown.n > 0 && info.LastSeq < f.next-1:
		f.reopen(ctx, info, Note{Kind: Cut, Path: info.Path, Size: info.SizeBytes, WasSize: was.SizeBytes}, yield)
		return
	case sameInfo(info, was):
		return
	}
	f.info = info
	if !f.stillHolds(ctx, f.src) {
		f.reopen(ctx, info, Note{Kind: Rewritten, Path: info.Path}, yield)
		return
	}
	n, ok := f.drain(ctx, yield)
	if ok && n == 0 && info.LastSeq >= f.next && !f.stale {
		// The store holds events the handle does not reach: it reads a
		// log the session no longer is (replaced under the same name).
		f.reopen(ctx, info, Note{Kind: Replaced, Path: info.Path}, yield)
	}
}

// sameInfo reports whether a and b describe the session as unchanged.
func sameInfo(a, b handle.Info) bool {
	return a.Path == b.Path && a.SizeBytes == b.SizeBytes && a.LastSeq == b.LastSeq &&
		a.LastTime == b.LastTime && a.LastType == b.LastType
}

// stillHolds reports whether src still holds the last event yielded, the
// same: a log cut and written again past its old size holds others.
func (f *Follower) stillHolds(ctx context.Context, src handle.Handle) bool {
	if f.shown.n == 0 {
		return true
	}
	for e, err := range src.Read(ctx, f.next-1, f.next-1) {
		return err == nil && f.shown.holds(e)
	}
	return false
}

// parting is the first seq where src's log differs from the events
// yielded (as far back as the ring remembers), or next when it holds them
// all.
func (f *Follower) parting(ctx context.Context, src handle.Handle) int64 {
	if f.shown.n == 0 {
		return f.next
	}
	from := f.shown.oldest(f.next)
	if last := src.Seq(); last < from {
		return last + 1 // cut before anything remembered
	}
	at := from
	for e, err := range src.Read(ctx, from, f.next-1) {
		if err != nil || e.Seq != at || !f.shown.holds(e) {
			return at
		}
		at++
	}
	return at
}

// reopen opens the session anew and goes on from the first event not
// yielded, or from where the new log parts from what was yielded. why is
// said once the session is open (a Replaced note only when the new log
// held events the old handle did not reach).
func (f *Follower) reopen(ctx context.Context, info handle.Info, why Note, yield func(eventlog.Event, error) bool) {
	src, err := f.t.Open(ctx)
	if err != nil {
		if ctx.Err() != nil {
			yield(eventlog.Event{}, ctx.Err())
			return
		}
		if !f.unrd {
			f.notes(Note{Kind: Unreadable, Path: info.Path, Err: err})
			f.unrd = true
		}
		f.info = info // wait for it to change again
		return
	}
	f.src.Close()
	f.src, f.path, f.info, f.gone, f.stale, f.unrd = src, src.Path(), info, false, false, false
	at := f.parting(ctx, src)
	if why.Kind != Replaced && why.Kind != 0 {
		why.Reopened = true
		f.notes(why)
	}
	if at < f.next {
		f.notes(Note{Kind: Parted, Path: f.path, Seq: at})
		f.next = at
	}
	n, _ := f.drain(ctx, yield)
	if why.Kind == Replaced && n > 0 {
		why.Reopened = true
		f.notes(why)
	}
}

// drain yields the events from next on; n counts them, ok is false when
// the consumer stopped.
func (f *Follower) drain(ctx context.Context, yield func(eventlog.Event, error) bool) (n int, ok bool) {
	for e, err := range f.src.Read(ctx, f.next, handle.End) {
		if err != nil {
			if ctx.Err() != nil {
				yield(eventlog.Event{}, ctx.Err())
				return n, false
			}
			f.stale = true // the next look opens the log anew
			return n, true
		}
		n++
		if !f.emit(e, yield) {
			return n, false
		}
	}
	return n, true
}
