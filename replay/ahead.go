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
// them (nil, or the last batch's).
type batch struct {
	evs []eventlog.Event
	err error
}

// aheadReader reads src's events from..to ahead of the engine.
type aheadReader struct {
	ch     chan batch
	free   chan []eventlog.Event // batches folded, for the goroutine to fill again
	cancel context.CancelFunc
	done   chan struct{}
	cur    batch
	i      int
	ended  bool
}

// readAhead starts reading src's events from..to on a goroutine.
func readAhead(ctx context.Context, src Source, from, to int64) *aheadReader {
	ctx, cancel := context.WithCancel(ctx)
	a := &aheadReader{ch: make(chan batch, aheadBatches), free: make(chan []eventlog.Event, aheadBatches+1),
		cancel: cancel, done: make(chan struct{})}
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
		evs := make([]eventlog.Event, 0, aheadBatch)
		size := 0
		for ev, err := range src.Read(ctx, from, to) {
			if err != nil {
				send(batch{evs, err})
				return
			}
			evs = append(evs, ev)
			if size += len(ev.Data); len(evs) == aheadBatch || size >= aheadBatchBytes {
				if !send(batch{evs: evs}) {
					return
				}
				evs, size = a.batchBuf(), 0
			}
		}
		if len(evs) > 0 {
			send(batch{evs: evs})
		}
	}()
	return a
}

// next returns the next event, or its error; ok is false at the end of
// the read.
func (a *aheadReader) next() (ev eventlog.Event, err error, ok bool) {
	for a.i >= len(a.cur.evs) {
		if a.cur.err != nil {
			err, a.cur.err = a.cur.err, nil
			a.ended = true
			return eventlog.Event{}, err, true
		}
		if a.ended {
			return eventlog.Event{}, nil, false
		}
		b, open := <-a.ch
		if !open {
			a.ended = true
			return eventlog.Event{}, nil, false
		}
		if cap(a.cur.evs) > 0 {
			select {
			case a.free <- a.cur.evs[:0]: // every event of it was cleared when taken
			default:
			}
		}
		a.cur, a.i = b, 0
	}
	ev = a.cur.evs[a.i]
	a.cur.evs[a.i] = eventlog.Event{} // the projections own it now
	a.i++
	return ev, nil, true
}

// batchBuf returns an empty batch to fill: one the engine folded, else a
// new one.
func (a *aheadReader) batchBuf() []eventlog.Event {
	select {
	case evs := <-a.free:
		return evs
	default:
		return make([]eventlog.Event, 0, aheadBatch)
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
func (e *engine) events(from, to int64) iter.Seq2[eventlog.Event, error] {
	return func(yield func(eventlog.Event, error) bool) { e.eventsAhead(from, to, yield) }
}

func (e *engine) eventsAhead(from, to int64, yield func(eventlog.Event, error) bool) {
	if runtime.GOMAXPROCS(0) < 2 {
		for ev, err := range e.src.Read(e.ctx, from, to) {
			if !yield(ev, err) {
				return
			}
		}
		return
	}
	for from <= to {
		a := readAhead(e.ctx, e.src, from, to)
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
