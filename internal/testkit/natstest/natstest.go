package natstest

import (
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"
)

// Run starts one node syncing every write (sync_interval: always), on a
// random loopback port; change adjusts its options first.
func Run(tb testing.TB, change ...func(*server.Options)) *server.Server {
	tb.Helper()
	o := &server.Options{Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: tb.TempDir(),
		NoLog: true, NoSigs: true, SyncAlways: true}
	for _, c := range change {
		c(o)
	}
	s := start(tb, o)
	tb.Cleanup(func() { stop(s) })
	return s
}

// startWait bounds a node's start: its listeners bound.
const startWait = 10 * time.Second

func start(tb testing.TB, o *server.Options) *server.Server { return startWithin(tb, o, startWait) }

func startWithin(tb testing.TB, o *server.Options, wait time.Duration) *server.Server {
	tb.Helper()
	s, err := server.NewServer(o)
	require.NoError(tb, err)
	errs := &errLog{}
	s.SetLoggerV2(errs, false, false, false)
	s.Start()
	if !s.ReadyForConnections(wait) {
		s.Shutdown()
		tb.Fatalf("nats-server did not start: %s", errs)
	}
	return s
}

// errLog keeps a server's errors (a listener that could not bind is one)
// for the message of a start that failed; the rest is dropped as NoLog
// would.
type errLog struct {
	mu    sync.Mutex
	lines []string
}

func (l *errLog) add(format string, v ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.lines) < 20 {
		l.lines = append(l.lines, fmt.Sprintf(format, v...))
	}
}

func (l *errLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.lines) == 0 {
		return "no error logged"
	}
	return strings.Join(l.lines, "; ")
}

func (l *errLog) Noticef(string, ...any)         {}
func (l *errLog) Warnf(string, ...any)           {}
func (l *errLog) Debugf(string, ...any)          {}
func (l *errLog) Tracef(string, ...any)          {}
func (l *errLog) Errorf(format string, v ...any) { l.add(format, v...) }
func (l *errLog) Fatalf(format string, v ...any) { l.add(format, v...) }

func stop(s *server.Server) {
	s.Shutdown()
	s.WaitForShutdown()
}

// Connect returns a JetStream context on a connection to s (in-process
// when no URL option is given), closed when the test ends.
func Connect(tb testing.TB, s *server.Server, opts ...nats.Option) natsjs.JetStream {
	tb.Helper()
	nc, err := nats.Connect("", append([]nats.Option{nats.InProcessServer(s)}, opts...)...)
	require.NoError(tb, err)
	tb.Cleanup(nc.Close)
	js, err := natsjs.New(nc)
	require.NoError(tb, err)
	return js
}

// Cluster is three nodes routed to each other on loopback.
type Cluster struct {
	tb    testing.TB
	opts  []*server.Options
	Nodes []*server.Server // nil for a node that is down
}

// RunCluster starts three nodes (default sync interval: R3 quorum makes
// writes durable), each in its own temp folder. Each node binds its own
// route port (a port picked free and bound later can be taken in
// between by a parallel test) and routes to the nodes before it; once all
// are up, every node's options name all three, so a restarted node finds
// the others.
func RunCluster(tb testing.TB) *Cluster {
	c := &Cluster{tb: tb}
	// The folders first: cleanups run last-registered first, so the nodes
	// stop before their folders are removed.
	dirs := []string{tb.TempDir(), tb.TempDir(), tb.TempDir()}
	tb.Cleanup(func() {
		for i, s := range c.Nodes {
			if s == nil {
				continue
			}
			// A node whose folder went first would write into a folder
			// being removed (and fail the removal, under load).
			if _, err := os.Stat(dirs[i]); err != nil {
				tb.Errorf("natstest: node %d's folder was removed before the node stopped: %v", i, err)
			}
			stop(s)
		}
	})
	var routes []string
	for i, dir := range dirs {
		c.opts = append(c.opts, &server.Options{ServerName: fmt.Sprintf("n%d", i), Host: "127.0.0.1", Port: -1,
			JetStream: true, StoreDir: dir, NoLog: true, NoSigs: true,
			Cluster: server.ClusterOpts{Name: "sessionlog", Host: "127.0.0.1", Port: -1},
			Routes:  server.RoutesFromStr(strings.Join(routes, ","))})
		c.Nodes = append(c.Nodes, nil)
		c.Start(i)
		c.opts[i].Cluster.Port = c.Nodes[i].ClusterAddr().Port
		routes = append(routes, fmt.Sprintf("nats://127.0.0.1:%d", c.opts[i].Cluster.Port))
	}
	for _, o := range c.opts {
		o.Routes = server.RoutesFromStr(strings.Join(routes, ","))
	}
	return c
}

// Start starts node i (again, on its folder and ports).
func (c *Cluster) Start(i int) {
	c.Nodes[i] = start(c.tb, c.opts[i].Clone())
	c.opts[i].Port = c.Nodes[i].Addr().(*net.TCPAddr).Port // a restart keeps it
}

// Kill shuts node i down.
func (c *Cluster) Kill(i int) {
	stop(c.Nodes[i])
	c.Nodes[i] = nil
}

// Name returns node i's server name.
func (c *Cluster) Name(i int) string { return c.opts[i].ServerName }

// URL returns node i's client URL.
func (c *Cluster) URL(i int) string { return fmt.Sprintf("nats://127.0.0.1:%d", c.opts[i].Port) }

// Hosts returns every node's host:port, comma-separated, as a store URL
// names them.
func (c *Cluster) Hosts() string {
	return strings.ReplaceAll(c.URLs(), "nats://", "")
}

// URLs returns every node's client URL, comma-separated.
func (c *Cluster) URLs() string { return strings.Join([]string{c.URL(0), c.URL(1), c.URL(2)}, ",") }

// LastSeq is stream's last seq as node i holds it (0 when it has none).
func (c *Cluster) LastSeq(i int, stream string) uint64 {
	acc, err := c.Nodes[i].JszAccount(&server.JSzOptions{Account: "$G", Streams: true})
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

// Eventually polls cond for what servers do on their own timers
// (elections, catching up) and fails the test after a bound.
func Eventually(tb testing.TB, what string, cond func() bool) {
	tb.Helper()
	for deadline := time.Now().Add(30 * time.Second); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			tb.Fatalf("timed out waiting for %s", what)
		}
	}
}
