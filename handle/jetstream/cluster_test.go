package jetstream

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/internal/testkit/natstest"
)

// newStore returns a store on js with the options a one-node test server
// needs (it syncs every write).
func newStore(t testing.TB, js natsjs.JetStream, opts ...Option) *Store {
	t.Helper()
	st, err := New(ctx, js, append([]Option{WithSyncAlways()}, opts...)...)
	require.NoError(t, err)
	return st
}

var (
	runServer = natstest.Run
	connect   = natstest.Connect
)

// A three-node cluster with R3 streams: a node killed while appenders
// publish (first a follower, the node the client uses, then the stream's
// leader) loses no acknowledged event, every log goes on contiguously, and
// the node catches up when it comes back.
func TestClusterNodeLoss(t *testing.T) {
	t.Parallel() // a cluster of its own; no timed bound
	c := natstest.RunCluster(t)
	nc, err := nats.Connect(c.URLs(), nats.MaxReconnects(-1), nats.ReconnectWait(20*time.Millisecond), nats.DontRandomize())
	require.NoError(t, err)
	defer nc.Close()
	// A publish on the killed node's connection times out after 1s
	// (instead of 5s) before it is retried on another.
	js, err := natsjs.New(nc, natsjs.WithDefaultTimeout(time.Second))
	require.NoError(t, err)
	var st *Store
	natstest.Eventually(t, "the cluster to accept an R3 stream", func() bool {
		st, err = New(ctx, js, WithReplicas(3), WithoutLease(), WithStrictDurability())
		return err == nil
	})
	const appenders = 4
	ids := make([]string, appenders)
	acked := make([]map[int64]string, appenders)
	for w := range appenders {
		h, err := st.Create(ctx)
		require.NoError(t, err)
		require.NoError(t, h.Close())
		ids[w], acked[w] = h.ID(), map[int64]string{}
	}
	leader := func() int {
		info, err := st.stream.Info(ctx)
		require.NoError(t, err)
		for i := range 3 {
			if c.Name(i) == info.Cluster.Leader {
				return i
			}
		}
		t.Fatalf("no node leads the stream")
		return -1
	}
	follower := -1
	for i := range 3 {
		if i != leader() && (follower < 0 || nc.ConnectedUrl() == c.URL(i)) {
			follower = i
		}
	}
	for phase, victim := range []func() int{func() int { return follower }, leader} {
		loseNode(t, c, st, phase, victim(), ids, acked)
	}
}

// loseNode runs an appender on each session, kills node victim once each
// acknowledged 20 events, lets each acknowledge more, then checks every
// acknowledged event so far and restarts the node.
func loseNode(t *testing.T, c *natstest.Cluster, st *Store, phase, victim int, ids []string, acked []map[int64]string) {
	var stop atomic.Bool
	var afterKill atomic.Int64
	killed := make(chan struct{})
	started := make(chan struct{}, len(ids))
	var wg sync.WaitGroup
	for w, id := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var h handle.Handle
			for i := 0; !stop.Load(); i++ {
				var err error
				if h == nil { // first, or poisoned: (re)open, as an agent loop would
					if h, err = st.Open(ctx, id, handle.ReadWrite); err != nil {
						t.Errorf("appender %d: open: %v", w, err)
						return
					}
				}
				e := ev(w, phase<<20+i)
				seq, err := h.Append(ctx, e)
				if err == nil {
					err = h.Flush(ctx)
				}
				if err != nil {
					h.Close()
					h = nil
					continue
				}
				acked[w][seq] = string(e.Data)
				switch {
				case i == 20:
					started <- struct{}{}
				case i > 20:
					select {
					case <-killed:
						afterKill.Add(1)
					default:
					}
				}
			}
			if h != nil {
				h.Close()
			}
		}()
	}
	for range ids {
		<-started
	}
	t.Logf("%s phase %d: killing node %d", time.Now().Format("05.000"), phase, victim)
	c.Kill(victim)
	t.Logf("%s phase %d: killed", time.Now().Format("05.000"), phase)
	close(killed)
	natstest.Eventually(t, "appends after the kill", func() bool { return afterKill.Load() >= int64(len(ids))*50 })
	stop.Store(true)
	wg.Wait()
	t.Logf("%s phase %d: appenders stopped", time.Now().Format("05.000"), phase)

	for w, id := range ids {
		r, err := st.Open(ctx, id, handle.ReadOnly)
		require.NoError(t, err)
		got := readAll(t, r) // the reader checks the seqs are contiguous
		require.NoError(t, r.Close())
		for seq, data := range acked[w] {
			require.Less(t, seq, int64(len(got)), "phase %d, appender %d: acknowledged seq %d lost", phase, w, seq)
			require.Equal(t, data, string(got[seq].Data), "phase %d, appender %d: seq %d", phase, w, seq)
		}
	}

	c.Start(victim)
	t.Logf("%s phase %d: restarted", time.Now().Format("05.000"), phase)
	want := max(c.LastSeq((victim+1)%3, st.Stream()), c.LastSeq((victim+2)%3, st.Stream()))
	require.NotZero(t, want)
	natstest.Eventually(t, "the restarted node to catch up", func() bool { return c.LastSeq(victim, st.Stream()) >= want })
	t.Logf("%s phase %d: caught up", time.Now().Format("05.000"), phase)
}
