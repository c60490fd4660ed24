package jetstream

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"
)

// runServer starts an embedded nats-server with JetStream on, syncing
// every write, in t's temp folder, on a random loopback port; it is shut
// down when t ends.
func runServer(t testing.TB, change ...func(*server.Options)) *server.Server {
	t.Helper()
	o := &server.Options{Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: t.TempDir(),
		NoLog: true, NoSigs: true, SyncAlways: true}
	for _, c := range change {
		c(o)
	}
	s, err := server.NewServer(o)
	require.NoError(t, err)
	s.Start()
	t.Cleanup(func() {
		s.Shutdown()
		s.WaitForShutdown()
	})
	require.True(t, s.ReadyForConnections(10*time.Second), "nats-server did not start")
	return s
}

// connect returns a JetStream context on an in-process connection to s,
// closed when t ends.
func connect(t testing.TB, s *server.Server, opts ...nats.Option) natsjs.JetStream {
	t.Helper()
	nc, err := nats.Connect("", append([]nats.Option{nats.InProcessServer(s)}, opts...)...)
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	js, err := natsjs.New(nc)
	require.NoError(t, err)
	return js
}

// newStore returns a store on s with the options a one-node test server
// needs (it syncs every write).
func newStore(t testing.TB, js natsjs.JetStream, opts ...Option) *Store {
	t.Helper()
	st, err := New(context.Background(), js, append([]Option{WithSyncAlways()}, opts...)...)
	require.NoError(t, err)
	return st
}
