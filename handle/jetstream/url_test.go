package jetstream

import (
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/internal/testkit/natstest"
)

func TestParseURL(t *testing.T) {
	for _, tc := range []struct {
		raw  string
		want URL
	}{
		{"nats://127.0.0.1:4222", URL{Servers: []string{"nats://127.0.0.1:4222"}, Prefix: DefaultPrefix}},
		{"nats://h1,h2:4223,[::1]/p?replicas=3&sync=always&lease=20s", URL{
			Servers: []string{"nats://h1:4222", "nats://h2:4223", "nats://[::1]:4222"},
			Prefix:  "p", Replicas: 3, SyncAlways: true, LeaseTTL: 20 * time.Second}},
		{"NATS://u:p%40ss@h1/", URL{Servers: []string{"nats://h1:4222"}, User: "u", Password: "p@ss", Prefix: DefaultPrefix}},
		{"nats://tok@h1?replicas=1", URL{Servers: []string{"nats://h1:4222"}, User: "tok", Prefix: DefaultPrefix, Replicas: 1}},
	} {
		t.Run(tc.raw, func(t *testing.T) {
			got, err := ParseURL(tc.raw)
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
	for _, raw := range []string{
		"", "127.0.0.1:4222", "http://h1", "nats://", "nats://h1,,h2", "nats://h1:0", "nats://h1:x",
		"nats://h1/a/b", "nats://h1/a.b", "nats://h1?replicas=0", "nats://h1?replicas=6", "nats://h1?replicas=x",
		"nats://h1?sync=never", "nats://h1?lease=0s", "nats://h1?lease=x", "nats://h1?lease=1s&lease=2s",
		"nats://h1?replica=3", "nats://h1?%zz",
	} {
		t.Run(raw, func(t *testing.T) {
			_, err := ParseURL(raw)
			require.ErrorIs(t, err, ErrURL)
		})
	}
}

// A password never shows in what the URL prints or in a parse error.
func TestURLRedactsPassword(t *testing.T) {
	u, err := ParseURL("nats://me:secret@h1,h2/p?replicas=3")
	require.NoError(t, err)
	require.Equal(t, "nats://me:***@h1:4222,h2:4222/p?replicas=3", u.String())
	_, err = ParseURL("nats://me:secret@h1?bad=1")
	require.ErrorIs(t, err, ErrURL)
	require.NotContains(t, err.Error(), "secret")
	_, err = ParseURL("nats://token@h1?bad=1")
	require.NotContains(t, err.Error(), "token")
}

// FuzzParseURL: no input makes ParseURL panic, and what it accepts prints
// (String) as a URL that parses to the same (credentials aside, which
// String hides).
func FuzzParseURL(f *testing.F) {
	for _, seed := range []string{
		"nats://127.0.0.1:4222", "nats://h1,h2:4223,[::1]/p?replicas=3&sync=always&lease=20s",
		"nats://u:p@h1/", "nats://tok@h1?replicas=1", "nats://h1?lease=1h2m", "nats://,", "nats://@/?&",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		u, err := ParseURL(raw)
		if err != nil {
			require.ErrorIs(t, err, ErrURL)
			return
		}
		again, err := ParseURL(u.String())
		if u.User != "" || u.Password != "" {
			return // hidden
		}
		require.NoError(t, err, "%q printed as %q", raw, u.String())
		require.Equal(t, u, again)
	})
}

// OpenURL: the URL's replicas go to the stream and the lease bucket;
// replicas the cluster cannot place, or a stream with another count, are
// ErrReplicas, never a silent single replica; no server answering is
// ErrUnavailable.
func TestOpenURLReplicas(t *testing.T) {
	t.Parallel() // servers of its own; no timed bound
	one := natstest.Run(t)
	_, err := OpenURL(ctx, fmt.Sprintf("nats://%s/single?replicas=3", one.Addr()))
	require.ErrorIs(t, err, ErrReplicas, "a single server places one replica")

	st, err := OpenURL(ctx, fmt.Sprintf("nats://%s/r1?sync=always", one.Addr()))
	require.NoError(t, err)
	require.NoError(t, st.Close())
	_, err = OpenURL(ctx, fmt.Sprintf("nats://%s/r1?replicas=3", one.Addr()))
	require.ErrorIs(t, err, ErrReplicas, "the stream exists with one replica")
	require.ErrorContains(t, err, "exists with 1 replica(s), 3 asked for")

	c := natstest.RunCluster(t)
	natstest.Eventually(t, "an R3 store", func() bool {
		st, err = OpenURL(ctx, "nats://"+c.Hosts()+"/r3?replicas=3&sync=always&lease=2s")
		return err == nil
	})
	defer st.Close()
	require.Equal(t, 3, st.stream.CachedInfo().Config.Replicas)
	leases, err := st.js.Stream(ctx, "KV_r3_leases")
	require.NoError(t, err)
	require.Equal(t, 3, leases.CachedInfo().Config.Replicas, "the lease bucket gets the replicas too")
	require.Equal(t, MinReplicatedLeaseTTL, st.cfg.leaseTTL, "a lease on R3 outlasts an election")
	h, err := st.Create(ctx)
	require.NoError(t, err)
	require.NoError(t, h.Close())

	_, err = OpenURL(ctx, "nats://"+c.Hosts()+"/r5?replicas=5")
	require.ErrorIs(t, err, ErrReplicas, "three nodes place three replicas")
	_, err = OpenURL(ctx, "nats://"+c.Hosts()+"/r3?replicas=1")
	require.ErrorIs(t, err, ErrReplicas)

	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	_, err = OpenURL(ctx, "nats://"+addr, WithRequestTimeout(200*time.Millisecond))
	require.ErrorIs(t, err, handle.ErrUnavailable)
	require.NotErrorIs(t, err, ErrURL)
}
