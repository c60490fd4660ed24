package jetstream

import (
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/internal/testkit/natstest"
	"github.com/sessionlog/sessionlog/internal/testkit/sweep"
)

// longRun reports whether the long, measurement-style tests were asked for:
// SESSIONLOG_SWEEPS=long, the switch of scripts/figures.sh.
func longRun() bool { return sweep.Long() }

// maxFollowerGap is the most a writer may go without an acknowledgement
// while one follower of three is paused, whichever node its connection is
// on (docs/distributed.md).
const maxFollowerGap = 2 * time.Second

// gapWriter appends and flushes one event at a time on its own store and
// session, and keeps the time of every acknowledgement.
type gapWriter struct {
	st  *Store
	id  string
	mu  sync.Mutex
	at  []time.Time
	seq []int64
	dat []string
}

func (g *gapWriter) acks() ([]time.Time, int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.at), len(g.at)
}

// node is the node g's connection is on, or -1.
func (g *gapWriter) node(p *natstest.Procs) int {
	return p.Index(g.st.JetStream().Conn().ConnectedServerName())
}

// longestGap is the longest time between two acknowledgements in at that
// bracket or follow t0 (the last before t0 and every one after).
func longestGap(at []time.Time, t0 time.Time) time.Duration {
	from := max(0, slices.IndexFunc(at, func(t time.Time) bool { return t.After(t0) })-1)
	var gap time.Duration
	for i := from + 1; i < len(at); i++ {
		gap = max(gap, at[i].Sub(at[i-1]))
	}
	return gap
}

// The cluster writer never waits on a node it does not need. Three nodes
// as real processes, R3, sync_interval: always, two writers each on its
// own connection. In turn, the node each writer's connection is on is made
// a follower (its stream and lease-bucket leaderships stepped down) and
// paused (SIGSTOP) while quorum holds: no writer, on that node or another,
// goes longer than maxFollowerGap between acknowledgements, none sees an
// error, and every acknowledged event reads back once, at its seq. A
// measurement: it runs under SESSIONLOG_SWEEPS=long.
func TestClusterFollowerPauseGap(t *testing.T) {
	if !longRun() {
		t.Skip("a timed measurement on three server processes: set SESSIONLOG_SWEEPS=long")
	}
	p := natstest.RunProcs(t, 3)
	var logs syncBuffer
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the stores' logs:\n%s", logs.b.String())
		}
	})
	writers := []*gapWriter{{st: openDrillStore(t, p, 0, &logs)}, {st: openDrillStore(t, p, 1, &logs)}}
	for _, g := range writers {
		h, err := g.st.Create(ctx)
		require.NoError(t, err)
		require.NoError(t, h.Close())
		g.id = h.ID()
	}
	var stop atomic.Bool
	var wg sync.WaitGroup
	errs := make(chan error, len(writers))
	for w, g := range writers {
		h, err := g.st.Open(ctx, g.id, handle.ReadWrite)
		require.NoError(t, err)
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer h.Close()
			for i := 0; !stop.Load(); i++ {
				e := ev(w, i)
				seq, err := h.Append(ctx, e)
				if err == nil {
					err = h.Flush(ctx)
				}
				if err != nil {
					errs <- fmt.Errorf("writer %d: %w", w, err)
					return
				}
				g.mu.Lock()
				g.at, g.seq, g.dat = append(g.at, time.Now()), append(g.seq, seq), append(g.dat, string(e.Data))
				g.mu.Unlock()
			}
		}()
	}
	halt := func() {
		stop.Store(true)
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
	}
	defer func() {
		if !stop.Load() {
			halt()
		}
	}()
	admin := openDrillStore(t, p, 2, &logs).JetStream().Conn()
	assets := []string{"sessionlog", "KV_sessionlog_leases"}

	for w, g := range writers {
		victim := g.node(p)
		require.GreaterOrEqual(t, victim, 0, "writer %d is connected", w)
		follower(t, p, admin, assets, victim)
		_, before := g.acks()
		t0 := time.Now()
		require.NoError(t, p.Stop(victim))
		natstest.Eventually(t, "every writer to go on through the pause", func() bool {
			for _, o := range writers {
				if _, n := o.acks(); n < before+50 {
					return false
				}
			}
			return len(errs) == 0 && g.node(p) != victim
		})
		require.NoError(t, p.Cont(victim))
		for o, og := range writers {
			at, _ := og.acks()
			gap := longestGap(at, t0)
			t.Logf("figure: follower SIGSTOP, writer %d's node: writer %d (%s) longest gap between acknowledgements %s",
				w, o, map[bool]string{true: "on it", false: "elsewhere"}[o == w], gap.Round(time.Millisecond))
			require.LessOrEqual(t, gap, maxFollowerGap, "writer %d while node %s (writer %d's) was paused", o, p.Name(victim), w)
		}
		natstest.Eventually(t, "every node to be healthy again", func() bool {
			for i := range p.N() {
				if !p.Healthy(i) {
					return false
				}
			}
			return true
		})
	}
	halt()
	for w, g := range writers {
		r, err := g.st.Open(ctx, g.id, handle.ReadOnly)
		require.NoError(t, err)
		got := readAll(t, r) // the reader checks the seqs are contiguous
		require.NoError(t, r.Close())
		for i, seq := range g.seq {
			require.Less(t, seq, int64(len(got)), "writer %d: acknowledged seq %d lost", w, seq)
			require.Equal(t, g.dat[i], string(got[seq].Data), "writer %d: seq %d", w, seq)
		}
	}
}

// follower makes node i lead none of assets (streams), stepping its
// leaderships down, and waits until each has a leader elsewhere.
func follower(t *testing.T, p *natstest.Procs, nc *nats.Conn, assets []string, i int) {
	t.Helper()
	natstest.Eventually(t, p.Name(i)+" to lead nothing the writers use", func() bool {
		for _, a := range assets {
			leader := ""
			for j := range p.N() {
				if _, l := p.StreamState(j, a); l != "" {
					leader = l
					break
				}
			}
			switch leader {
			case "":
				return false
			case p.Name(i):
				var resp struct {
					Error *struct{ Description string } `json:"error"`
				}
				m, err := nc.Request("$JS.API.STREAM.LEADER.STEPDOWN."+a, nil, 2*time.Second)
				if err == nil && json.Unmarshal(m.Data, &resp) == nil && resp.Error != nil {
					t.Logf("step down %s: %s", a, resp.Error.Description)
				}
				return false
			}
		}
		return true
	})
}
