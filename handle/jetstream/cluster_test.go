package jetstream

import (
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/handle"
)

// cluster is three nats-servers routed to each other on loopback.
type cluster struct {
	t     *testing.T
	opts  []*server.Options
	nodes []*server.Server
}

func freePort(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// runCluster starts three nodes, each in its own temp folder; they are
// shut down when t ends.
func runCluster(t *testing.T) *cluster {
	c := &cluster{t: t}
	var routes []string
	ports := make([]int, 3)
	for i := range ports {
		ports[i] = freePort(t)
		routes = append(routes, fmt.Sprintf("nats://127.0.0.1:%d", ports[i]))
	}
	for i := range 3 {
		c.opts = append(c.opts, &server.Options{ServerName: fmt.Sprintf("n%d", i), Host: "127.0.0.1", Port: freePort(t),
			JetStream: true, StoreDir: t.TempDir(), NoLog: true, NoSigs: true,
			Cluster: server.ClusterOpts{Name: "sessionlog", Host: "127.0.0.1", Port: ports[i]},
			Routes:  server.RoutesFromStr(strings.Join(routes, ","))})
		c.nodes = append(c.nodes, nil)
		c.start(i)
	}
	t.Cleanup(func() {
		for _, s := range c.nodes {
			if s != nil {
				s.Shutdown()
				s.WaitForShutdown()
			}
		}
	})
	return c
}

func (c *cluster) start(i int) {
	s, err := server.NewServer(c.opts[i].Clone())
	require.NoError(c.t, err)
	s.Start()
	require.True(c.t, s.ReadyForConnections(10*time.Second))
	c.nodes[i] = s
}

func (c *cluster) kill(i int) {
	c.nodes[i].Shutdown()
	c.nodes[i].WaitForShutdown()
	c.nodes[i] = nil
}

func (c *cluster) urls() string {
	var urls []string
	for _, o := range c.opts {
		urls = append(urls, fmt.Sprintf("nats://127.0.0.1:%d", o.Port))
	}
	return strings.Join(urls, ",")
}

// lastSeq is the stream's last seq as node i holds it.
func (c *cluster) lastSeq(i int, stream string) uint64 {
	acc, err := c.nodes[i].JszAccount(&server.JSzOptions{Account: "$G", Streams: true})
	if err != nil {
		return 0
	}
	for _, sd := range acc.Streams {
		if sd.Name == stream {
			return sd.State.LastSeq
		}
	}
	return 0
}

// eventually polls cond for what the servers do on their own timers
// (elections, catching up); it fails after a bound.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// A three-node cluster with R3 streams: a node killed while appenders
// publish loses no acknowledged event, every log goes on contiguously,
// and the node catches up when it comes back.
func TestClusterNodeLoss(t *testing.T) {
	c := runCluster(t)
	nc, err := nats.Connect(c.urls(), nats.MaxReconnects(-1), nats.ReconnectWait(20*time.Millisecond), nats.DontRandomize())
	require.NoError(t, err)
	defer nc.Close()
	js, err := natsjs.New(nc)
	require.NoError(t, err)
	var st *Store
	eventually(t, "the cluster to accept an R3 stream", func() bool {
		st, err = New(ctx, js, WithReplicas(3), WithoutLease(), WithStrictDurability())
		return err == nil
	})
	t.Logf("%v cluster up", time.Now())
	info, err := st.stream.Info(ctx)
	require.NoError(t, err)
	victim := -1 // a follower of the stream, preferably the node the client uses
	for i, o := range c.opts {
		if o.ServerName != info.Cluster.Leader && (victim < 0 || nc.ConnectedUrl() == fmt.Sprintf("nats://127.0.0.1:%d", o.Port)) {
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
	c.kill(victim)
	t.Logf("%v killed", time.Now())
	close(killed)
	eventually(t, "appends after the kill", func() bool { return afterKill.Load() >= appenders*50 })
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

	c.start(victim)
	t.Logf("%v restarted", time.Now())
	want := max(c.lastSeq((victim+1)%3, st.Stream()), c.lastSeq((victim+2)%3, st.Stream()))
	require.NotZero(t, want)
	eventually(t, "the restarted node to catch up", func() bool { return c.lastSeq(victim, st.Stream()) >= want })
}
