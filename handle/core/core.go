package core

import (
	"github.com/sessionlog/sessionlog/handle"

	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/handle/internal/lineage"
	"github.com/sessionlog/sessionlog/secrets/redact"
)

// writeCore is the Handle of every store: the write core over a Backend (see
// Backend and docs/design.md, "The write core").
//
// A write handle appends to pending under mu; Flush makes one caller the
// leader, which takes everything pending, has the backend store it (one
// write, one fsync on files) and wakes the others (group commit). Rows
// reach the backend only in a flush, and a flush starts only after the
// previous one's Write returned.
type writeCore struct {
	b      Backend
	store  *Store
	hdr    eventlog.Header
	path   string
	writer bool
	enc    *eventlog.Encoder
	red    *redact.Redactor // nil: appends are not redacted
	policy handle.FlushPolicy
	log    *slog.Logger
	ticker func(time.Duration) (<-chan time.Time, func())

	mu        sync.Mutex
	next      int64            // next seq to assign (writer) or to read (reader)
	durable   int64            // last seq made durable
	pending   []eventlog.Event // appended, not yet taken by a flush
	tails     [][]byte         // the prepared bytes of pending's rows, nil for packed events (see queue)
	inflight  []eventlog.Event // being written by the current flush
	spare     []eventlog.Event // the last flush's batch, emptied: the next pending
	spareTail [][]byte         // the last flush's tails, emptied: the next tails
	out       []byte           // the last flush's rows, emptied: the leader's buffer
	flushing  bool
	gathering bool        // the running flush has not taken its batch yet: it will take all that is pending
	flight    *flushRound // the running flush, or the last one
	taken     int64       // last seq of the running flush's batch
	gather                // the leader's wait for concurrent appenders
	err       error       // poison: a write or fsync failed, a conflict dropped events
	closing   bool
	closed    bool
	torn      *eventlog.TornTail

	stop   chan struct{} // stops the interval flusher and the renewals
	cancel context.CancelFunc
	stopWG sync.WaitGroup

	parentMu sync.Mutex
	parent   *writeCore // a fork's parent, opened read-only on first need

	digMu sync.Mutex       // serializes the digest's initialisation
	dig   *eventlog.Digest // running log digest (under mu), nil until first needed
	marks []savedDigest    // its states at the checkpoints appended, saved on Close (under mu)
}

func newCore(b Backend, c HandleConfig) *writeCore {
	h := &writeCore{b: b, store: c.Store, hdr: c.Header, path: c.Path, writer: c.Writer, enc: c.Encoder, red: c.Redactor,
		policy: c.Policy, log: c.Logger, ticker: c.Ticker,
		next: c.Next, durable: c.Next - 1, torn: c.Torn}
	if h.log == nil {
		h.log = slog.New(slog.DiscardHandler)
	}
	if h.ticker == nil {
		h.ticker = realTicker
	}
	if h.enc == nil {
		h.enc = eventlog.NewEncoder(nil)
	}
	if !h.writer {
		return h
	}
	h.stop = make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel = cancel
	if d := h.policy.Interval; d > 0 {
		h.every(d, func() bool {
			if err := h.Flush(context.Background()); err != nil {
				h.log.Error("interval flush failed", "path", h.path, "err", err)
				return false
			}
			return true
		})
	}
	if d := b.RenewEvery(); d > 0 {
		h.every(d, func() bool {
			if err := b.Renew(ctx); err != nil {
				if ctx.Err() == nil {
					h.log.Error("the writer's hold was lost; handle poisoned", "path", h.path, "err", err)
					h.poison(err)
				}
				return false
			}
			return true
		})
	}
	return h
}

// every runs do every d on a goroutine of its own until Close stops it or
// do returns false.
func (h *writeCore) every(d time.Duration, do func() bool) {
	h.stopWG.Add(1)
	go func() {
		defer h.stopWG.Done()
		ticks, stop := h.ticker(d)
		defer stop()
		for {
			select {
			case <-h.stop:
				return
			case <-ticks:
				if !do() {
					return
				}
			}
		}
	}()
}

// poison makes every later call fail with err (a *PoisonedError).
func (h *writeCore) poison(err error) {
	h.mu.Lock()
	if h.err == nil {
		h.err = &handle.PoisonedError{Path: h.path, Err: err}
	}
	h.mu.Unlock()
}

func (h *writeCore) ID() string               { return h.hdr.ID }
func (h *writeCore) Path() string             { return h.path }
func (h *writeCore) Header() eventlog.Header  { return h.hdr }
func (h *writeCore) Writable() bool           { return h.writer }
func (h *writeCore) Torn() *eventlog.TornTail { return h.torn }

func (h *writeCore) Seq() int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.next - 1
}

func (h *writeCore) DurableSeq() int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.durable
}

// usable reports why the handle cannot be used, if it cannot. Callers hold
// mu.
func (h *writeCore) usable(write bool) error {
	switch {
	case h.closed || (write && h.closing):
		return fmt.Errorf("%w: %q", handle.ErrClosed, h.path)
	case h.err != nil:
		return h.err
	case write && !h.writer:
		return fmt.Errorf("%w: %q", handle.ErrReadOnly, h.path)
	}
	return nil
}

func (h *writeCore) Append(ctx context.Context, events ...eventlog.Event) (int64, error) {
	return h.append(ctx, -1, events)
}

func (h *writeCore) AppendAt(ctx context.Context, expected int64, events ...eventlog.Event) (int64, error) {
	if expected < 0 {
		return 0, &handle.ConflictError{Path: h.path, Expected: expected, Next: h.Seq() + 1}
	}
	return h.append(ctx, expected, events)
}

// flushRound is one flush as its waiters see it. err is set before done is
// closed, so a waiter whose events the flush carries reads its outcome
// without taking mu again: the callers one fsync serves wake all at once
// and do not queue on the mutex on their way out.
type flushRound struct {
	done chan struct{}
	err  error // the poison when the flush failed, a conflict when it was dropped
}

func (h *writeCore) Flush(ctx context.Context) error {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return fmt.Errorf("%w: %q", handle.ErrClosed, h.path)
	}
	target := h.next - 1
	if target > h.durable && h.err == nil {
		// Counted for group commit: carried by the running flush when its
		// batch holds target, else waiting for the next one.
		h.gather.caller(h.flushing && target <= h.taken)
	}
	for {
		switch {
		case h.err != nil:
			err := h.err
			h.mu.Unlock()
			return err
		case h.durable >= target:
			h.mu.Unlock()
			return nil
		}
		if err := ctx.Err(); err != nil {
			h.mu.Unlock()
			return err
		}
		if !h.flushing {
			h.lead()
			continue
		}
		// A flush still gathering takes everything pending, target too:
		// its outcome is this caller's, read without the mutex again.
		r, carried := h.flight, h.gathering || target <= h.taken
		h.mu.Unlock()
		if r.wait(ctx) && carried {
			return r.err // the flush that made target durable, or failed
		}
		h.mu.Lock()
	}
}

// wait waits for the flush to end or ctx to be done, and reports whether
// the flush ended.
func (r *flushRound) wait(ctx context.Context) bool {
	if ctx.Done() == nil {
		<-r.done
		return true
	}
	select {
	case <-r.done:
		return true
	case <-ctx.Done():
	}
	select {
	case <-r.done:
		return true
	default:
		return false
	}
}

// lead runs one flush: everything pending, one Write. Called with mu held;
// releases it while it builds the rows from what the appenders prepared
// (see queue) and writes them.
func (h *writeCore) lead() {
	h.flushing = true
	round := &flushRound{done: make(chan struct{})}
	h.flight = round
	h.gathering = true
	h.gather.wait(&h.mu)
	h.gathering = false
	batch, tails := h.pending, h.tails
	h.pending, h.tails, h.inflight = h.spare[:0], h.spareTail[:0], batch
	h.spare, h.spareTail = nil, nil
	h.taken = h.next - 1
	rows := h.out[:0] // one flush at a time: the leader's alone
	h.out = nil
	h.mu.Unlock()
	started := time.Now()

	var after func()
	var err error
	if len(batch) > 0 {
		rows = h.rows(rows, batch, tails)
		// Not the leader's context: the flush is everyone's.
		after, err = h.b.Write(context.Background(), rows, batch[0].Seq, batch[len(batch)-1].Seq)
	}

	h.mu.Lock()
	h.flushing, h.inflight = false, nil
	h.gather.flushed(time.Since(started))
	switch {
	case errors.As(err, new(*handle.ConflictError)):
		round.err = h.conflicted(batch)
	case err != nil:
		h.err = &handle.PoisonedError{Path: h.path, Err: err}
		round.err = h.err
		h.log.Error("flush failed; handle poisoned", "path", h.path, "err", err)
	case len(batch) > 0:
		h.durable = batch[len(batch)-1].Seq
	}
	if cap(rows) <= 4<<20 { // else not kept: do not pin a large batch's buffers
		clear(batch) // reused: holds no data of events already written
		clear(tails)
		h.spare, h.spareTail, h.out = batch, tails, rows[:0]
	}
	close(round.done)
	if after != nil {
		h.mu.Unlock()
		after()
		h.mu.Lock()
	}
}

// conflicted follows a conflict: another writer appended, and the
// backend stored nothing of the batch. Its events and everything queued
// since are dropped, and they were appended before any Flush still to
// come, so no later Flush may return nil (Flush's promise covers every
// event appended before it, whoever appended it): the handle is poisoned
// with a *ConflictError that says where the log now ends. A reopen goes on
// from there. Called with mu held, which it keeps while it asks the
// backend for the tail.
func (h *writeCore) conflicted(batch []eventlog.Event) error {
	dropped := len(batch) + len(h.pending)
	h.pending, h.tails = nil, nil
	cause := &handle.ConflictError{Path: h.path, Expected: batch[0].Seq, Next: -1}
	if next, err := h.b.Tail(context.Background()); err != nil {
		cause.Err = err
	} else {
		cause.Next = next
	}
	h.err = &handle.PoisonedError{Path: h.path, Err: cause}
	h.log.Warn("another writer appended; the queued events were dropped and the handle poisoned", "path", h.path, "dropped", dropped, "err", cause)
	return h.err
}

func (h *writeCore) Read(ctx context.Context, from, to int64) iter.Seq2[eventlog.Event, error] {
	return func(yield func(eventlog.Event, error) bool) {
		h.read(ctx, from, to, 0, false, nil, yield)
	}
}

// ReadBorrowed is Read whose events' Data are borrowed: they may point
// into the reader's buffers, valid only until the next event is yielded,
// and must not be changed. It saves a copy of every event's data for a
// caller that keeps none of it past the next event, or copies what it
// keeps (a replay into projections that say so). Read stays the safe
// default.
func (h *writeCore) ReadBorrowed(ctx context.Context, from, to int64) iter.Seq2[eventlog.Event, error] {
	return func(yield func(eventlog.Event, error) bool) {
		h.read(ctx, from, to, 0, true, nil, yield)
	}
}

// ReadLocated is ReadBorrowed that also gives, with each event, where its
// data lies in the bytes LogBytes returns: the offset of its first byte,
// or -1 when they do not hold it as it is (null data, a fork's inherited
// event, a writer's unflushed one, a log stored compressed or sealed).
// It returns the error that ended the read, nil at its end or when yield
// stopped it.
func (h *writeCore) ReadLocated(ctx context.Context, from, to int64, yield func(e eventlog.Event, at int64) bool) error {
	var loc *dataCursor
	if h.LogBytes() != nil {
		loc = &dataCursor{}
	}
	var err error
	h.read(ctx, from, to, 0, true, loc, func(e eventlog.Event, rerr error) bool {
		if rerr != nil {
			err = rerr
			return false
		}
		return yield(e, loc.at())
	})
	return err
}

// LogBytes returns the bytes of the handle's own log, which the offsets
// ReadLocated gives index, or nil when the backend does not store its rows
// as they are (Locating). They are readable until the handle is closed.
func (h *writeCore) LogBytes() io.ReaderAt {
	if l, ok := h.b.(Locating); ok {
		return l.LogBytes()
	}
	return nil
}

// dataCursor tells a located read where the data of the event it yields
// lies: r is the reader of the handle's own rows while they are read, nil
// otherwise.
type dataCursor struct{ r dataOffsetter }

// dataOffsetter is a RowReader that says where its events' data lies in
// its source (an *eventlog.Reader).
type dataOffsetter interface{ DataOffset() int64 }

// at returns the offset of the current event's data, or -1.
func (c *dataCursor) at() int64 {
	if c == nil || c.r == nil {
		return -1
	}
	return c.r.DataOffset()
}

// borrower is a RowReader that can lend its events' data (an
// *eventlog.Reader); borrowedRows reads through Borrow instead of Event.
type borrower interface {
	RowReader
	Borrow() eventlog.Event
}

type borrowedRows struct{ borrower }

func (b borrowedRows) Event() eventlog.Event { return b.Borrow() }

// read yields the logical log's events from..to: for a fork, the parent's
// first; it returns false when it stopped early (yield said so, or it
// yielded an error). With borrow, events' Data may be borrowed
// (ReadBorrowed); with loc, loc says where the own rows' data lie
// (ReadLocated).
func (h *writeCore) read(ctx context.Context, from, to int64, depth int, borrow bool, loc *dataCursor, yield func(eventlog.Event, error) bool) bool {
	if from > to {
		return true
	}
	h.mu.Lock()
	err := h.usable(false)
	h.mu.Unlock()
	if err != nil {
		yield(eventlog.Event{}, err)
		return false
	}
	parent := func(ctx context.Context, p eventlog.Parent) (lineage.RangeReader, error) {
		ph, err := h.parentHandle(ctx, p)
		if err != nil {
			return nil, err
		}
		return func(ctx context.Context, from, to int64, depth int, yield func(eventlog.Event, error) bool) bool {
			return ph.read(ctx, from, to, depth, borrow, nil, yield) // another log: not located
		}, nil
	}
	return lineage.Read(ctx, h.hdr, h.path, from, to, depth, parent,
		func(from, to int64) bool { return h.readOwn(ctx, from, to, borrow, loc, yield) }, brokenLineage, yield)
}

// readOwn yields the events of the handle's own rows from..to (and a
// writer's unflushed ones); it returns false when it stopped early. loc,
// when not nil, has the reader while the stored rows are read.
func (h *writeCore) readOwn(ctx context.Context, from, to int64, borrow bool, loc *dataCursor, yield func(eventlog.Event, error) bool) bool {
	h.mu.Lock()
	if err := h.usable(false); err != nil {
		h.mu.Unlock()
		yield(eventlog.Event{}, err)
		return false
	}
	// A writer's stored events end where its memory's begin: the backend
	// may have stored the running flush by the time it reads, and those
	// events are yielded from memory, once.
	mem := memRange(from, to, h.inflight, h.pending)
	stored := h.durable
	h.mu.Unlock()
	if !h.writer {
		stored = handle.End
	}

	// A writer's newest events are in memory until flushed: a read that
	// starts there needs nothing from the backend (the Recorder catching up
	// with a foreign append reads just that).
	if from <= min(stored, to) {
		ok := true
		err := h.b.Read(ctx, from, func(r RowReader) {
			if d, ok := r.(dataOffsetter); ok && loc != nil {
				loc.r = d
				defer func() { loc.r = nil }()
			}
			if br, ok := r.(borrower); ok && borrow {
				r = borrowedRows{br}
			}
			var ended bool
			ok, ended = lineage.Rows(ctx, r, from, min(stored, to), yield)
			if ended && !h.writer {
				h.seen(r.NextSeq())
			}
		})
		if err != nil {
			yield(eventlog.Event{}, err)
			return false
		}
		if !ok {
			return false
		}
	}
	for _, e := range mem {
		if e.Seq < from {
			continue
		}
		if e.Seq > to {
			return true
		}
		e.Data = slices.Clone(e.Data)
		if !yield(e, nil) {
			return false
		}
	}
	return true
}

// memRange copies the events from..to of runs, each of contiguous seqs
// and in order (a writer's inflight and pending events): a read of the
// newest events (a Recorder applying what it appended) copies those, not
// the whole queue.
func memRange(from, to int64, runs ...[]eventlog.Event) []eventlog.Event {
	var out []eventlog.Event
	for _, r := range runs {
		if len(r) == 0 || r[0].Seq > to || r[len(r)-1].Seq < from {
			continue
		}
		lo, hi := max(from-r[0].Seq, 0), int64(len(r))
		if last := r[len(r)-1].Seq; to < last {
			hi -= last - to
		}
		out = append(out, r[lo:hi]...)
	}
	return out
}

// seen records how far a read-only handle has read.
func (h *writeCore) seen(next int64) {
	h.mu.Lock()
	if next > h.next {
		h.next, h.durable = next, next-1
	}
	h.mu.Unlock()
}

// parentHandle returns a read-only handle on the fork's parent, opened on
// first need and kept until the fork's handle closes.
func (h *writeCore) parentHandle(ctx context.Context, p eventlog.Parent) (*writeCore, error) {
	h.parentMu.Lock()
	defer h.parentMu.Unlock()
	if h.parent != nil {
		return h.parent, nil
	}
	h.mu.Lock()
	closed := h.closed || h.closing
	h.mu.Unlock()
	if closed {
		return nil, fmt.Errorf("%w: %q", handle.ErrClosed, h.path)
	}
	pc, err := h.store.open(ctx, p.ID, handle.ReadOnly, h.store.cfg)
	if errors.Is(err, handle.ErrNotFound) {
		return nil, &handle.LineageError{Path: h.path, Parent: p.ID, Seq: p.Seq, Reason: "the parent session is missing"}
	}
	if err != nil {
		return nil, err
	}
	h.parent = pc
	return pc, nil
}

func (h *writeCore) Close() error {
	h.mu.Lock()
	if h.closed || h.closing {
		h.mu.Unlock()
		return fmt.Errorf("%w: %q", handle.ErrClosed, h.path)
	}
	h.closing = true
	h.mu.Unlock()

	var err error
	if h.writer {
		close(h.stop)
		h.cancel()
		h.stopWG.Wait()
		err = h.Flush(context.Background())
		if err == nil {
			h.saveDigest(context.Background())
		}
	}
	h.mu.Lock()
	h.closed = true
	h.mu.Unlock()
	if cerr := h.b.Close(context.Background(), h.writer && err == nil); err == nil {
		err = cerr
	}
	h.parentMu.Lock()
	if h.parent != nil {
		h.parent.Close()
	}
	h.parentMu.Unlock()
	return err
}

func realTicker(d time.Duration) (<-chan time.Time, func()) {
	t := time.NewTicker(d)
	return t.C, t.Stop
}
