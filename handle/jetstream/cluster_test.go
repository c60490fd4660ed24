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
	"github.com/sessionlog/sessionlog/internal/natstest"
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
// publish loses no acknowledged event, every log goes on contiguously,
// and the node catches up when it comes back.
func TestClusterNodeLoss(t *testing.T) {
	c := natstest.RunCluster(t)
	nc, err := nats.Connect(c.URLs(), nats.MaxReconnects(-1), nats.ReconnectWait(20*time.Millisecond), nats.DontRandomize())
	require.NoError(t, err)
	defer nc.Close()
	js, err := natsjs.New(nc)
	require.NoError(t, err)
	var st *Store
	natstest.Eventually(t, "the cluster to accept an R3 stream", func() bool {
		st, err = New(ctx, js, WithReplicas(3), WithoutLease(), WithStrictDurability())
		return err == nil
	})
	t.Logf("%v cluster up", time.Now())
	info, err := st.stream.Info(ctx)
	require.NoError(t, err)
	victim := -1 // a follower of the stream, preferably the node the client uses
	for i := range 3 {
		if c.Name(i) != info.Cluster.Leader && (victim < 0 || nc.ConnectedUrl() == c.URL(i)) {
			victim = i
		}
	}

	const appenders = 4
	var stop atomic.Bool
	var afterKill atomic.Int64
	killed := make(chan struct{})
	started := make(chan struct{}, appenders)
	acked := make([]map[int64]string, appenders)
	ids := make([]string, appenders)
	var wg sync.WaitGroup
	for w := range appenders {
		h, err := st.Create(ctx)
		require.NoError(t, err)
		ids[w], acked[w] = h.ID(), map[int64]string{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; !stop.Load(); i++ {
				e := ev(w, i)
				seq, err := h.Append(ctx, e)
				if err == nil {
					err = h.Flush(ctx)
				}
				if err != nil { // poisoned: reopen, as an agent loop would
					h.Close()
					if h, err = st.Open(ctx, ids[w], handle.ReadWrite); err != nil {
						t.Errorf("appender %d: reopen: %v", w, err)
						return
					}
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
			h.Close()
		}()
	}
	for range appenders {
		<-started
	}
	t.Logf("%v killing", time.Now())
	c.Kill(victim)
	t.Logf("%v killed", time.Now())
	close(killed)
	natstest.Eventually(t, "appends after the kill", func() bool { return afterKill.Load() >= appenders*50 })
	stop.Store(true)
	wg.Wait()
	t.Logf("%v stopped", time.Now())

	for w, id := range ids {
		r, err := st.Open(ctx, id, handle.ReadOnly)
		require.NoError(t, err)
		got := readAll(t, r) // the reader checks the seqs are contiguous
		require.NoError(t, r.Close())
		for seq, data := range acked[w] {
			require.Less(t, seq, int64(len(got)), "appender %d: acknowledged seq %d lost", w, seq)
			require.Equal(t, data, string(got[seq].Data), "appender %d: seq %d", w, seq)
		}
	}

	c.Start(victim)
	t.Logf("%v restarted", time.Now())
	want := max(c.LastSeq((victim+1)%3, st.Stream()), c.LastSeq((victim+2)%3, st.Stream()))
	require.NotZero(t, want)
	natstest.Eventually(t, "the restarted node to catch up", func() bool { return c.LastSeq(victim, st.Stream()) >= want })
}
