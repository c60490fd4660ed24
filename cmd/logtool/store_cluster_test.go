package main

import (
	"encoding/json"
	"testing"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/internal/testkit/natstest"
)

// --store names every seed and the replicas: new makes an R3 stream and
// lease bucket on a three-node cluster; replicas it cannot place fail,
// with no store made.
func TestStoreNATSReplicas(t *testing.T) {
	t.Parallel()
	c := natstest.RunCluster(t)
	url := "nats://" + c.Hosts() + "/cli3?replicas=3&sync=always"
	var res result
	natstest.Eventually(t, "logtool new on an R3 store", func() bool {
		res = logtool(t, "", "--store", url, "new")
		return res.code == 0
	})
	var created struct{ ID string }
	require.NoError(t, json.Unmarshal([]byte(res.stdout), &created))
	res = logtool(t, `{"type":"user/message","data":{"text":"hi"}}`+"\n", "--store", url, "append", created.ID)
	require.Equal(t, 0, res.code, res.stderr)
	require.Equal(t, `{"acked":0}`+"\n", res.stdout)

	nc, err := nats.Connect(c.URLs())
	require.NoError(t, err)
	defer nc.Close()
	js, err := natsjs.New(nc)
	require.NoError(t, err)
	for _, stream := range []string{"cli3", "KV_cli3_leases"} {
		st, err := js.Stream(t.Context(), stream)
		require.NoError(t, err)
		require.Equal(t, 3, st.CachedInfo().Config.Replicas, stream)
	}

	res = logtool(t, "", "--store", "nats://"+c.Hosts()+"/cli5?replicas=5", "new")
	require.Equal(t, exitUsage, res.code, "an environment error")
	require.Contains(t, res.stderr, "cannot be placed")
	_, err = js.Stream(t.Context(), "cli5")
	require.ErrorIs(t, err, natsjs.ErrStreamNotFound)
}
