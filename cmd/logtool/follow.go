package main

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/handle"
)

// exitInterrupted is the exit status of a command stopped by Ctrl-C
// (128 + SIGINT, as shells report it).
const exitInterrupted = 130

// follower follows a session with tail -F semantics: it notices when the
// session's file is replaced (convert, a repair, a writer that rewrote
// it), cut (repair --salvage) or removed, reopens it, says so on stderr
// and goes on from the next event it has not printed. On a JetStream
// store (s.remote set) it follows the subject instead (pollStore).
type follower struct {
	a     *app
	arg   string
	s     session
	src   handle.Handle
	path  string      // the file src reads
	fi    fs.FileInfo // what the file was when last looked at
	next  int64       // the next seq to print
	shown shownRing   // digests of the last events printed
	print func(eventlog.Event) error
	gone  bool // the file was missing at the last look, and that was said
	stale bool // a read failed: the file changed while it was read
}

// poll prints the events appended since the last poll, first reopening
// the session when its file changed under it. It returns an error only
// for what following cannot get past (output failing, the context done).
func (f *follower) poll(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if f.s.remote != nil {
		return f.pollStore(ctx)
	}
	path, fi, err := f.current()
	switch {
	case errors.Is(err, fs.ErrNotExist) || errors.Is(err, handle.ErrNotFound):
		if !f.gone {
			f.a.note("%s is gone (deleted, or being replaced): waiting for it to come back", f.path)
			f.gone = true
		}
		return nil
	case err != nil:
		return nil // a passing fault: look again at the next poll
	}
	switch {
	case f.stale:
		return f.reopen(ctx, path, fi, fmt.Sprintf("%s changed while it was read", path))
	case f.gone:
		f.a.note("%s is back", path)
		return f.reopen(ctx, path, fi, "")
	case path != f.path:
		return f.reopen(ctx, path, fi, fmt.Sprintf("the session moved to %s (logtool convert)", path))
	case !sameFile(fi, f.fi):
		return f.reopen(ctx, path, fi, fmt.Sprintf("%s was replaced (a convert, a repair or a writer's rewrite)", path))
	case fi.Size() < f.fi.Size():
		return f.reopen(ctx, path, fi, fmt.Sprintf("%s was cut from %d to %s (a repair, or a writer's recovery)", path, f.fi.Size(), plural(fi.Size(), "byte")))
	case fi.Size() == f.fi.Size() && fi.ModTime().Equal(f.fi.ModTime()):
		return nil
	}
	f.fi = fi
	if !f.stillHolds(ctx, f.src) {
		return f.reopen(ctx, path, fi, fmt.Sprintf("%s was rewritten in place", path))
	}
	return f.drain(ctx)
}

// pollStore prints what a writer acknowledged since the last poll on a
// JetStream store: there no file is replaced or cut (no convert, no
// repair), and a read-only handle's Read follows the subject. A read that
// fails (the connection reconnecting, a fork's subject rewritten by a
// detach) is said once; the session is opened anew, and the next poll
// goes on from the first event not printed.
func (f *follower) pollStore(ctx context.Context) error {
	for e, err := range f.src.Read(ctx, f.next, handle.End) {
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if !f.stale {
				f.a.note("%s cannot be read for now, looking again: %v", f.path, oneLine(err.Error()))
				f.stale = true
			}
			if src, err := f.a.openLog(ctx, f.s); err == nil {
				f.src.Close()
				f.src = src
			}
			return nil
		}
		if err := f.printed(e); err != nil {
			return err
		}
	}
	f.stale = false
	return nil
}

// current is the file the session lives in now, and its description.
func (f *follower) current() (string, fs.FileInfo, error) {
	path := f.s.path
	if f.s.store != nil && f.s.id != "" {
		p, err := f.s.store.Path(f.s.id)
		if err != nil {
			return "", nil, err
		}
		path = p
	}
	fi, err := f.a.fs.Stat(path)
	return path, fi, err
}

// stillHolds reports whether src still holds the last event printed, the
// same: a file cut and written again past its old size holds others.
func (f *follower) stillHolds(ctx context.Context, src handle.Handle) bool {
	if f.next == 0 {
		return true
	}
	for e, err := range src.Read(ctx, f.next-1, f.next-1) {
		return err == nil && f.shown.holds(e)
	}
	return false
}

// parting is the first seq where src's log differs from the events
// printed (as far back as the ring remembers), or next when it holds them
// all.
func (f *follower) parting(ctx context.Context, src handle.Handle) int64 {
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

// reopen opens the session's file anew and goes on from the first event
// not printed, or from where the new file's log parts from what was
// printed.
func (f *follower) reopen(ctx context.Context, path string, fi fs.FileInfo, why string) error {
	s, err := f.a.resolve(f.arg)
	if err != nil {
		return nil // not there yet: look again at the next poll
	}
	src, err := f.a.openLog(ctx, s)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		f.a.note("%s cannot be read for now, looking again: %v", path, oneLine(err.Error()))
		f.fi = fi // wait for it to change again
		return nil
	}
	f.src.Close()
	f.s, f.src, f.path, f.fi, f.gone, f.stale = s, src, path, fi, false, false
	if why != "" {
		f.a.note("%s: following the new file", why)
	}
	if at := f.parting(ctx, src); at < f.next {
		f.a.note("the log differs from what was shown from seq %d on (it was cut, and perhaps written again): going on from seq %d", at, at)
		f.next = at
	}
	return f.drain(ctx)
}

// drain prints the events from next on.
func (f *follower) drain(ctx context.Context) error {
	for e, err := range f.src.Read(ctx, f.next, handle.End) {
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			// A file changed while it was read: the next poll reopens it.
			f.stale = true
			return nil
		}
		if err := f.printed(e); err != nil {
			return err
		}
	}
	return nil
}

// printed prints e and remembers it.
func (f *follower) printed(e eventlog.Event) error {
	if err := f.print(e); err != nil {
		return err
	}
	f.shown.add(e)
	f.next = e.Seq + 1
	return nil
}

// shownRingSize is how many printed events a follower remembers, to find
// where a rewritten log parts from what it printed.
const shownRingSize = 1024

// shownRing holds the digests of the last events printed, by seq.
type shownRing struct {
	sums  [shownRingSize][sha256.Size]byte
	seqs  [shownRingSize]int64
	n     int64 // events added
	first int64 // the first seq printed
}

func (r *shownRing) add(e eventlog.Event) {
	if r.n == 0 {
		r.first = e.Seq
	}
	i := e.Seq % shownRingSize
	r.sums[i], r.seqs[i] = sha256.Sum256(eventlog.Canon(e)), e.Seq
	r.n++
}

// holds reports whether e is the event printed at its seq.
func (r *shownRing) holds(e eventlog.Event) bool {
	i := e.Seq % shownRingSize
	return r.n > 0 && r.seqs[i] == e.Seq && r.sums[i] == sha256.Sum256(eventlog.Canon(e))
}

// oldest is the first seq the ring remembers, the events up to next-1
// having been printed.
func (r *shownRing) oldest(next int64) int64 {
	return max(next-shownRingSize, r.first, 0)
}

// sameFile reports whether a and b describe one file (the same inode on
// the OS file system).
func sameFile(a, b fs.FileInfo) bool {
	if a == nil || b == nil {
		return false
	}
	if a.Sys() == nil || b.Sys() == nil { // a file system without inodes
		return a.Name() == b.Name()
	}
	return os.SameFile(a, b)
}

// note says something on stderr, one line starting with "logtool: ".
func (a *app) note(format string, args ...any) {
	fmt.Fprintf(a.stderr, "logtool: %s\n", oneLine(fmt.Sprintf(format, args...)))
}

// errInterrupted is what a command stopped by Ctrl-C reports.
var errInterrupted = errors.New("interrupted")
