package natstest

import (
	"fmt"
	"net"
	"runtime"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/stretchr/testify/require"
)

// fatalTB records a Fatalf and ends the goroutine as testing's does.
type fatalTB struct {
	testing.TB
	msg string
}

func (f *fatalTB) Helper() {}
func (f *fatalTB) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// A node whose route port is taken fails its start with the server's
// own reason, not only "did not start".
func TestStartReportsTheServersError(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	o := &server.Options{Host: "127.0.0.1", Port: -1, NoLog: true, NoSigs: true,
		Cluster: server.ClusterOpts{Name: "x", Host: "127.0.0.1", Port: l.Addr().(*net.TCPAddr).Port}}
	ftb := &fatalTB{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		startWithin(ftb, o, 200*time.Millisecond)
	}()
	<-done
	require.Contains(t, ftb.msg, "nats-server did not start")
	require.Contains(t, ftb.msg, "address already in use")
}

// The cluster's nodes find each other on the route ports they bound,
// and a node killed and started again rejoins on the same one.
func TestClusterRoutesAndRestart(t *testing.T) {
	c := RunCluster(t)
	Eventually(t, "three routed nodes", func() bool {
		for _, s := range c.Nodes {
			if s.NumRoutes() < 2 {
				return false
			}
		}
		return true
	})
	port := c.opts[0].Cluster.Port
	c.Kill(0)
	c.Start(0)
	require.Equal(t, port, c.Nodes[0].ClusterAddr().Port)
	Eventually(t, "the restarted node routed again", func() bool { return c.Nodes[0].NumRoutes() >= 2 })
}
