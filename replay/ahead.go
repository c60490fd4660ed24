package replay

import (
	"context"
	"iter"
	"runtime"

	"github.com/sessionlog/sessionlog/eventlog"
)

// A replay's main pass reads the log on a goroutine of its own while it
// folds the events read before: reading (decoding and checking every row)
// costs about three times what the transcript's folds cost, and on two
// cores the two overlap, so a replay takes about what reading the log
// takes. The reads are the Source's, in order, and its events and error
// reach the engine exactly as a range over Read gives them; the goroutine
// is stopped (and the read ended) before the engine reads the Source
// itself — a rollback re-reads the events it returns to — so the Source is
// never read from two goroutines at once.

// aheadBatch is how many events the reading goroutine hands over at once
// (each hand-over can wake a goroutine: a few per 100 ms of reading), and
// aheadBatches how many batches it reads before the engine takes them.
const (
	aheadBatch   = 1024
	aheadBatches = 2
	// aheadBatchBytes ends a batch early: a batch keeps its events' data
	// alive until the engine has folded them.
	aheadBatchBytes = 256 << 10
)

// batch is a run of events read, and the error that ended the read after
// them (nil, or the last batch's). When the read borrows, the events'
// data are copies in arena, which the batch reuses once folded.
type batch struct {
	evs   []located
	arena []byte
	err   error
}

// aheadReader reads src's events from..to ahead of the engine.
type aheadReader struct {
	ch     chan batch
	free   chan batch // batches folded, for the goroutine to fill again
	cancel context.CancelFunc
	done   chan struct{}
	cur    batch
	i      int
	ended  bool
}

// readAhead starts reading src's events from..to on a goroutine, with
// the engine's read. A borrowed event's data is valid only until the
// next event is read, so it is copied into its batch's arena: the engine
// takes the batch's events one by one, and a batch goes back to be
// filled again only once the engine has moved past its last event, so
// each event's data stays valid until the next one, as ReadBorrowed's do.
func (e *engine) readAhead(from, to int64) *aheadReader {
	ctx, cancel := context.WithCancel(e.ctx)
	a := &aheadReader{ch: make(chan batch, aheadBatches), free: make(chan batch, aheadBatches+1),
		cancel: cancel, done: make(chan struct{})}
	borrowed := e.borrowed
	go func() {
		defer close(a.done)
		defer close(a.ch)
		send := func(b batch) bool {
			select {
			case a.ch <- b:
				return true
			case <-ctx.Done():
				return false
			}
		}
		b, made := batch{evs: make([]located, 0, aheadBatch)}, 1
		size := 0
		for ev, err := range e.read(ctx, from, to) {
			if err != nil {
				b.err = err
				send(b)
				return
			}
			if borrowed && ev.Data != nil {
				ev.Data, b.arena = arenaCopy(b.arena, ev.Data)
			}
			b.evs = append(b.evs, ev)
			if size += len(ev.Data); len(b.evs) == aheadBatch || size >= aheadBatchBytes {
				if !send(b) {
					return
				}
				if b, made = a.batchBuf(ctx, made); made == 0 {
					return // cancelled
				}
				size = 0
			}
		}
		if len(b.evs) > 0 {
			send(b)
		}
	}()
	return a
}

// arenaCopy copies d to the free end of arena and returns the copy,
// capped at its length, and arena with it. A d the arena has no room
// for gets an allocation of its own: the arena never grows, since the
// events before hold slices of it.
func arenaCopy(arena, d []byte) (data, rest []byte) {
	if cap(arena)-len(arena) < len(d) {
		if len(d) > aheadBatchBytes/4 || len(arena) > 0 {
			return append([]byte(nil), d...), arena
		}
		arena = make([]byte, 0, aheadBatchBytes+aheadBatchBytes/4)
	}
	n := len(arena)
	arena = append(arena, d...)
	return arena[n:len(arena):len(arena)], arena
}

// next returns the next event, or its error; ok is false at the end of
// the read.
func (a *aheadReader) next() (ev located, err error, ok bool) {
	for a.i >= len(a.cur.evs) {
		if a.cur.err != nil {
			err, a.cur.err = a.cur.err, nil
			a.ended = true
			return located{at: -1}, err, true
		}
		if a.ended {
			return located{at: -1}, nil, false
		}
		b, open := <-a.ch
		if !open {
			a.ended = true
			return located{at: -1}, nil, false
		}
		if cap(a.cur.evs) > 0 {
			select {
			// Every event of it was cleared when taken, and the engine
			// is past the last: its arena may be written again.
			case a.free <- batch{evs: a.cur.evs[:0], arena: a.cur.arena[:0]}:
			default:
			}
		}
		a.cur, a.i = b, 0
	}
	ev = a.cur.evs[a.i]
	a.cur.evs[a.i] = located{} // the projections own it now (unless borrowed: the arena's)
	a.i++
	return ev, nil, true
}

// aheadMade is how many batches a read ahead makes: the one being filled,
// aheadBatches sent, and the engine's. Past them the reading waits for
// the engine to give one back, which it does as it takes the next; without
// the bound, a reading that found none given back yet made one more each
// time, a new arena of garbage that the full free list then dropped.
const aheadMade = aheadBatches + 2

// batchBuf returns an empty batch to fill, given how many were made: one
// the engine folded, else a new one while fewer than aheadMade were made,
// else the next one the engine folds. It returns the count made, 0 when
// ctx was cancelled first.
func (a *aheadReader) batchBuf(ctx context.Context, made int) (batch, int) {
	select {
	case b := <-a.free:
		return b, made
	default:
	}
	if made < aheadMade {
		return batch{evs: make([]located, 0, aheadBatch)}, made + 1
	}
	select {
	case b := <-a.free:
		return b, made
	case <-ctx.Done():
		return batch{}, 0
	}
}

// stop ends the read and waits for its goroutine, dropping what it read
// ahead.
func (a *aheadReader) stop() {
	a.cancel()
	for range a.ch {
	}
	<-a.done
}

// events yields src's events from..to, read ahead (see aheadReader) when
// there is a second core to read on; before a rollback, whose restore
// reads the Source, the read ahead is stopped, and it starts again after
// it.
func (e *engine) events(from, to int64) iter.Seq2[located, error] {
	return func(yield func(located, error) bool) { e.eventsAhead(from, to, yield) }
}

func (e *engine) eventsAhead(from, to int64, yield func(located, error) bool) {
	if runtime.GOMAXPROCS(0) < 2 {
		for ev, err := range e.read(e.ctx, from, to) {
			if !yield(ev, err) {
				return
			}
		}
		return
	}
	for from <= to {
		a := e.readAhead(from, to)
		for {
			ev, err, ok := a.next()
			if !ok {
				a.stop()
				return
			}
			if err != nil || ev.Type == eventlog.TypeRollback {
				a.stop()
				if !yield(ev, err) || err != nil {
					return
				}
				from = ev.Seq + 1
				break
			}
			if !yield(ev, nil) {
				a.stop()
				return
			}
		}
	}
}
