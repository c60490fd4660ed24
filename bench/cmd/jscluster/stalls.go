package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/handle/jetstream"
	"github.com/sessionlog/sessionlog/internal/testkit/natstest"
)

// A fault: what it does to the cluster, how it is undone, and which node
// it hits.
type fault struct {
	name   string
	victim func(c *cluster) int // -1: every node
	apply  func(c *cluster, i int) error
	undo   func(c *cluster, i int) error
}

var faults = []fault{
	{"follower SIGSTOP", (*cluster).follower,
		func(c *cluster, i int) error { return c.p.Stop(i) }, func(c *cluster, i int) error { return c.p.Cont(i) }},
	{"leader SIGSTOP", (*cluster).leader,
		func(c *cluster, i int) error { return c.p.Stop(i) }, func(c *cluster, i int) error { return c.p.Cont(i) }},
	{"leader SIGKILL", (*cluster).leader,
		func(c *cluster, i int) error { return c.p.Kill(i) }, func(c *cluster, i int) error { return c.p.Start(i) }},
	{"all three SIGKILL, restarted", func(*cluster) int { return -1 }, func(c *cluster, _ int) error {
		for i := range c.p.N() {
			if err := c.p.Kill(i); err != nil {
				return err
			}
		}
		for i := range c.p.N() {
			if err := c.p.Start(i); err != nil {
				return err
			}
		}
		return nil
	}, func(*cluster, int) error { return nil }},
}

// cluster is three nodes and, during a round, the writers appending
// through its fault: writer w on a connection that starts on node w mod 3,
// each on its own session.
type cluster struct {
	p      *natstest.Procs
	ids    []string
	stores []*jetstream.Store
	ackAt  []atomic.Int64 // per writer: when its last flush was acknowledged (Unix ns)
	from   []atomic.Int64 // per writer: when that flush began (Unix ns)
	acks   []atomic.Int64
	errs   atomic.Int64 // errors the writers saw: none is expected
	stop   atomic.Bool
	wg     sync.WaitGroup
}

// stallRow is one fault's stalls: of the writers connected to the node
// hit, and of the writers elsewhere.
type stallRow struct {
	name          string
	onVictim, far []time.Duration
	errs          int64
}

func stalls(ctx context.Context, bin, dir string, writers, rounds int) ([]stallRow, error) {
	p, err := natstest.StartProcs(bin, filepath.Join(dir, "faults"), 3)
	if err != nil {
		return nil, err
	}
	defer p.Close()
	c := &cluster{p: p}
	var rows []stallRow
	for _, f := range faults {
		row := stallRow{name: f.name}
		for range rounds {
			if err := c.healthy(ctx); err != nil {
				return nil, err
			}
			// Fresh connections each round, so that every node has a
			// writer on it when the fault comes.
			if err := c.start(ctx, writers); err != nil {
				return nil, err
			}
			victim := f.victim(c)
			on := make([]int, len(c.stores))
			for w := range c.stores {
				on[w] = c.connectedTo(w)
			}
			stalled, err := c.round(ctx, f, victim)
			row.errs += c.end()
			if err != nil {
				return nil, fmt.Errorf("%s: %w", f.name, err)
			}
			for w, d := range stalled {
				if victim < 0 || on[w] == victim {
					row.onVictim = append(row.onVictim, d)
				} else {
					row.far = append(row.far, d)
				}
			}
		}
		rows = append(rows, row)
	}
	return rows, nil
}

func (c *cluster) open(ctx context.Context, first int) (*jetstream.Store, error) {
	var order []int
	for k := range c.p.N() {
		order = append(order, (first+k)%c.p.N())
	}
	url := fmt.Sprintf("nats://%s/faults?replicas=3&sync=always", c.p.Hosts(order...))
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		st, err := jetstream.OpenURL(ctx, url, jetstream.WithConnOptions(nats.DontRandomize()))
		if err == nil || time.Now().After(deadline) {
			return st, err
		}
	}
}

// start opens the writers' stores and starts the writers, each appending
// and flushing one event at a time (a writer whose call fails counts the
// error and reopens), and waits until each has been acknowledged.
func (c *cluster) start(ctx context.Context, writers int) error {
	c.stop.Store(false)
	c.stores = nil
	c.ackAt, c.from, c.acks = make([]atomic.Int64, writers), make([]atomic.Int64, writers), make([]atomic.Int64, writers)
	c.errs.Store(0)
	for w := range writers {
		st, err := c.open(ctx, w%c.p.N())
		if err != nil {
			return err
		}
		c.stores = append(c.stores, st)
		if len(c.ids) <= w {
			h, err := st.Create(ctx)
			if err != nil {
				return err
			}
			c.ids = append(c.ids, h.ID())
			h.Close()
		}
		h, err := st.Open(ctx, c.ids[w], handle.ReadWrite)
		if err != nil {
			return err
		}
		c.wg.Add(1)
		go c.write(ctx, w, st, h)
	}
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
		ready := true
		for w := range writers {
			ready = ready && c.acks[w].Load() >= 20
		}
		if ready {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("writers not acknowledged within a minute")
		}
	}
}

func (c *cluster) write(ctx context.Context, w int, st *jetstream.Store, h handle.Handle) {
	defer c.wg.Done()
	defer func() {
		if h != nil {
			h.Close()
		}
	}()
	data := json.RawMessage(`{"text":"an event of the fault drill"}`)
	for !c.stop.Load() {
		start := time.Now().UnixNano()
		_, err := h.Append(ctx, eventlog.Event{Type: "tool/call", Time: 1764450000000, Data: data})
		if err == nil {
			err = h.Flush(ctx)
		}
		if err != nil {
			c.errs.Add(1)
			h.Close()
			for h, err = st.Open(ctx, c.ids[w], handle.ReadWrite); err != nil; h, err = st.Open(ctx, c.ids[w], handle.ReadWrite) {
				if c.stop.Load() {
					return
				}
				time.Sleep(100 * time.Millisecond)
			}
			continue
		}
		c.from[w].Store(start)
		c.ackAt[w].Store(time.Now().UnixNano())
		c.acks[w].Add(1)
	}
}

// end stops the writers, closes their stores and returns the errors they
// saw.
func (c *cluster) end() int64 {
	c.stop.Store(true)
	c.wg.Wait()
	for _, st := range c.stores {
		st.Close()
	}
	return c.errs.Load()
}

// round applies f to victim and returns, per writer, the time from the
// fault to the acknowledgement of its first flush begun after it; then it
// undoes the fault.
func (c *cluster) round(ctx context.Context, f fault, victim int) ([]time.Duration, error) {
	t0 := time.Now()
	if err := f.apply(c, victim); err != nil {
		return nil, err
	}
	out := make([]time.Duration, len(c.stores))
	for deadline := t0.Add(2 * time.Minute); slices.Contains(out, 0); time.Sleep(time.Millisecond) {
		for w := range c.stores {
			if out[w] == 0 && c.from[w].Load() > t0.UnixNano() {
				out[w] = time.Duration(c.ackAt[w].Load() - t0.UnixNano())
			}
		}
		if time.Now().After(deadline) {
			f.undo(c, victim)
			return nil, fmt.Errorf("writers did not recover within 2 minutes")
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
	}
	return out, f.undo(c, victim)
}

// healthy waits until every node is healthy and the stream, once made,
// has a leader.
func (c *cluster) healthy(ctx context.Context) error {
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
		ok := true
		for i := range c.p.N() {
			ok = ok && c.p.Healthy(i)
		}
		if ok && (len(c.ids) == 0 || c.leader() >= 0) { // no stream before the first round
			return nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("the cluster did not heal within a minute")
		}
	}
}

// leader is the stream's leader as the nodes report it, or -1.
func (c *cluster) leader() int { return c.leaderOf("faults") }

// leaderOf is stream's leader as the nodes report it, or -1.
func (c *cluster) leaderOf(stream string) int {
	for i := range c.p.N() {
		if _, l := c.p.StreamState(i, stream); l != "" {
			return c.p.Index(l)
		}
	}
	return -1
}

// follower is a node that leads neither the stream nor the lease bucket,
// preferably one a writer is connected to (with a writer on each node,
// one always is).
func (c *cluster) follower() int {
	l, ll := c.leader(), c.leaderOf("KV_faults_leases")
	for w := range c.stores {
		if i := c.connectedTo(w); i >= 0 && i != l && i != ll {
			return i
		}
	}
	for i := range c.p.N() {
		if i != l && i != ll {
			return i
		}
	}
	return (l + 1) % c.p.N()
}

// connectedTo is the node writer w's connection is on, or -1.
func (c *cluster) connectedTo(w int) int {
	url := c.stores[w].JetStream().Conn().ConnectedUrl()
	for i := range c.p.N() {
		if c.p.URL(i) == url {
			return i
		}
	}
	return -1
}

func printStalls(w io.Writer, writers, rounds int, rows []stallRow) {
	fmt.Fprintf(w, "\n%d writers (one connection each, spread over three nodes, R3, sync_interval: always), %d rounds of each fault; "+
		"stall: from the fault to a writer's first acknowledged flush begun after it\n\n", writers, rounds)
	fmt.Fprintln(w, "| fault | writers on the node hit: median / worst | writers elsewhere: median / worst | writer errors |")
	fmt.Fprintln(w, "|---|---|---|---|")
	for _, r := range rows {
		fmt.Fprintf(w, "| %s | %s | %s | %d |\n", r.name, medianWorst(r.onVictim), medianWorst(r.far), r.errs)
	}
}

func medianWorst(d []time.Duration) string {
	if len(d) == 0 {
		return "—"
	}
	slices.Sort(d)
	return fmt.Sprintf("%s / %s", sec(d[len(d)/2]), sec(d[len(d)-1]))
}

func sec(d time.Duration) string { return fmt.Sprintf("%.2f s", d.Seconds()) }
