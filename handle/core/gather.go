package core

import (
	"runtime"
	"sync"
	"time"
)

// gather is group commit's adaptive wait (docs/design.md, "Group commit").
//
// Without it an eager leader takes whatever is pending the moment the
// previous flush returns: with N concurrent appenders, the ones that
// arrived during that flush's fsync, while the ones it just served are
// still on their way back with their next event. The appenders split into
// two halves that alternate, and each fsync carries N/2 events.
//
// So a leader first waits for the appenders it expects: as many Flush
// callers as the previous flush served plus those that came while it ran
// (the concurrency just seen). It stops waiting the moment they are there.
// Callers are counted, not events: a loop that appends forty chunks and
// then flushes is one appender. A lone appender expects one caller, is it,
// and never waits; when concurrency drops, one flush waits out its
// deadline and the next expects what that one found.
//
// The deadline is the previous flush's duration (about what a fsync costs
// the callers anyway), or twice what the last wait that its callers ended
// took, if longer: where a flush is quicker than its callers' way back (no
// fsync, a fast disk, a loaded CPU), one flush's duration ends the waits
// before they are there.
//
// Once they are there, the leader yields the processor once before it
// takes the batch, so that appenders ready to run but not running (more
// appenders than cores) reach Flush and join. Without it the leader, woken
// first, takes just the callers it expected, and on a busy CPU the
// expectation grows only by those that arrive while a flush runs: 64
// appenders without fsync settle at 5 events a flush, each paying for a
// write and a check of the path (docs/performance.md).
//
// Its fields are guarded by the handle's mu.
type gather struct {
	expect  int           // Flush callers the next leader waits for
	queued  int           // callers waiting for a flush that has not started
	carried int           // callers the running flush will serve
	last    time.Duration // how long the previous flush took, at most maxGather
	took    time.Duration // how long the last wait that its callers ended took
	cond    *sync.Cond    // signalled when the expected events are pending or the wait times out
	waiting bool
	expired bool
	round   uint64 // which wait a timer belongs to
	yield   func() // runtime.Gosched; tests replace it
}

// maxGather bounds a leader's wait whatever a slow flush measured.
const maxGather = 2 * time.Millisecond

// caller counts a Flush caller that needs a flush: one the running flush
// already carries its events (inFlight), or one waiting for the next.
func (g *gather) caller(inFlight bool) {
	if inFlight {
		g.carried++
		return
	}
	g.queued++
	if g.waiting && g.queued >= g.expect {
		g.waiting = false
		g.cond.Broadcast()
	}
}

// wait holds the leader, with mu held (and released while waiting), until
// the expected callers are queued or the deadline passes; once they are
// there it yields (mu released) so that ready appenders join. Then it
// moves the queued callers to the flush it starts. It reports whether it
// waited for callers.
func (g *gather) wait(mu *sync.Mutex) bool {
	defer func() { g.carried, g.queued = g.queued, 0 }()
	if g.expect <= 1 || g.last <= 0 {
		return false
	}
	waited := g.queued < g.expect
	if waited {
		if g.cond == nil {
			g.cond = sync.NewCond(mu)
		}
		g.waiting, g.expired = true, false
		g.round++
		round := g.round
		start := time.Now()
		t := time.AfterFunc(g.deadline(), func() {
			mu.Lock()
			if g.round == round { // not a later wait's
				g.expired = true
				g.cond.Broadcast()
			}
			mu.Unlock()
		})
		for !g.expired && g.waiting {
			g.cond.Wait()
		}
		t.Stop()
		g.waiting = false
		if g.expired {
			return true // concurrency dropped: nobody else is on the way
		}
		g.took = time.Since(start)
	}
	mu.Unlock()
	if g.yield != nil {
		g.yield()
	} else {
		runtime.Gosched()
	}
	mu.Lock()
	return waited
}

// deadline is how long the next wait lasts at most: the previous flush's
// duration (at most maxGather, see flushed), or twice what the last wait
// that its callers ended took, if longer, at most maxGather.
func (g *gather) deadline() time.Duration {
	return max(g.last, min(2*g.took, maxGather))
}

// flushed records a flush that took d: the callers it served and those
// queued meanwhile are the concurrency the next leader expects.
func (g *gather) flushed(d time.Duration) {
	g.last = min(d, maxGather)
	g.expect = g.carried + g.queued
	g.carried = 0
}
