package harness

import (
	"sync"

	"github.com/sessionlog/sessionlog/bench/workload"
)

// groupCommit is the group commit the alternatives get, written the way a
// careful application would write it over a store that makes one batch
// durable per call: the first appender that finds no commit running
// becomes the leader, takes every event queued, commits them with one call
// (one write and one fsync), and wakes the appenders it served; the others
// wait. It is eager (the leader takes what is queued the moment the
// previous commit returns) and has no timer. Safe for concurrent use.
type groupCommit struct {
	commit func(first int64, batch []workload.Event) error

	mu      sync.Mutex
	cond    *sync.Cond
	queue   []workload.Event
	spare   []workload.Event
	next    int64 // seq of the next event queued
	durable int64 // seq of the last event committed
	running bool
	err     error
	commits int64
}

// newGroupCommit returns a group commit whose leader calls commit with the
// seq of the batch's first event (from 0) and the batch.
func newGroupCommit(commit func(first int64, batch []workload.Event) error) *groupCommit {
	g := &groupCommit{commit: commit, durable: -1}
	g.cond = sync.NewCond(&g.mu)
	return g
}

// Append queues e and returns once it is committed, or with the error of
// the commit that failed (every later Append fails with it too).
func (g *groupCommit) Append(e workload.Event) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	seq := g.next
	g.next++
	g.queue = append(g.queue, e)
	for g.durable < seq && g.err == nil {
		if g.running {
			g.cond.Wait()
			continue
		}
		g.running = true
		batch, first := g.queue, g.durable+1
		g.queue, g.spare = g.spare[:0], nil
		g.mu.Unlock()
		err := g.commit(first, batch)
		g.mu.Lock()
		g.running = false
		g.commits++
		g.err = err
		g.durable = first + int64(len(batch)) - 1
		g.spare = batch[:0]
		g.cond.Broadcast()
	}
	return g.err
}

// Commits returns the number of commits so far.
func (g *groupCommit) Commits() int64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.commits
}
