package jetstream

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/internal/testkit/natstest"
)

// documentedConnOptions returns the table of docs/distributed.md's
// "Leaving a silent server": option name → value as written.
func documentedConnOptions(t *testing.T) map[string]string {
	b, err := os.ReadFile("../../docs/distributed.md")
	require.NoError(t, err)
	_, sec, ok := strings.Cut(string(b), "## Leaving a silent server\n")
	require.True(t, ok, "docs/distributed.md has the section")
	sec, _, _ = strings.Cut(sec, "\n## ")
	out := map[string]string{}
	for _, m := range regexp.MustCompile("(?m)^\\| `([^`]+)` \\| ([^ |]+) \\|").FindAllStringSubmatch(sec, -1) {
		out[m[1]] = m[2]
	}
	return out
}

// The connection OpenURL dials leaves a silent server as
// docs/distributed.md says, option by option, and the store's options
// change each (no timing: the values set are read back from the
// connection).
func TestConnOptionsAsDocumented(t *testing.T) {
	doc := documentedConnOptions(t)
	srv := runServer(t)
	for _, tc := range []struct {
		name string
		opts []Option
		want map[string]string // overrides of the documented values
	}{
		{"defaults", nil, nil},
		{"changed", []Option{WithPing(100*time.Millisecond, 4), WithConnectTimeout(3 * time.Second),
			WithReconnectWait(time.Second, 0), WithWriteTimeout(5 * time.Second), WithRequestTimeout(4 * time.Second)},
			map[string]string{"nats.PingInterval": "100ms", "nats.MaxPingsOutstanding": "4", "nats.Timeout": "3s",
				"nats.ReconnectWait": "1s", "nats.ReconnectJitter": "0s", "nats.FlusherTimeout": "5s", "WithRequestTimeout": "4s"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, err := OpenURL(ctx, srv.ClientURL()+"/?sync=always", tc.opts...)
			require.NoError(t, err)
			defer st.Close()
			o := st.JetStream().Conn().Opts
			got := map[string]string{
				"nats.PingInterval":        o.PingInterval.String(),
				"nats.MaxPingsOutstanding": strconv.Itoa(o.MaxPingsOut),
				"nats.Timeout":             o.Timeout.String(),
				"nats.ReconnectWait":       o.ReconnectWait.String(),
				"nats.ReconnectJitter":     o.ReconnectJitter.String(),
				"nats.FlusherTimeout":      o.FlusherTimeout.String(),
				"nats.MaxReconnects":       strconv.Itoa(o.MaxReconnect),
				"WithRequestTimeout":       st.cfg.reqTimeout.String(),
			}
			for name, v := range tc.want {
				require.Contains(t, doc, name)
				doc := doc[name]
				require.NotEqual(t, doc, v, "%s: the changed value differs from the documented one", name)
			}
			for name := range got {
				want, ok := tc.want[name]
				if !ok {
					want, ok = doc[name]
					require.True(t, ok, "docs/distributed.md names %s", name)
				}
				require.Equal(t, want, got[name], name)
			}
			require.Len(t, doc, len(got), "every documented option is checked")
		})
	}
}

// OpenURL's connection reports its moves and asynchronous errors through
// the store's logger, and prints nothing (nats.go's default prints them).
func TestConnLogsThroughLogger(t *testing.T) {
	srv := runServer(t)
	var logs syncBuffer
	st, err := OpenURL(ctx, srv.ClientURL()+"/?sync=always", With(handle.WithLogger(slog.New(slog.NewTextHandler(&logs, nil)))))
	require.NoError(t, err)
	defer st.Close()
	nc := st.JetStream().Conn()
	require.NotNil(t, nc.Opts.AsyncErrorCB)
	nc.Opts.AsyncErrorCB(nc, nil, errors.New("an asynchronous error"))
	require.NoError(t, nc.ForceReconnect())
	natstest.Eventually(t, "the move to be logged", func() bool {
		logs.mu.Lock()
		defer logs.mu.Unlock()
		return strings.Contains(logs.b.String(), "the connection moved")
	})
	logs.mu.Lock()
	defer logs.mu.Unlock()
	require.Contains(t, logs.b.String(), `msg="connection error"`)
	require.Contains(t, logs.b.String(), "an asynchronous error")
	require.Contains(t, logs.b.String(), "the connection left its server")
}

// A try in flight when the connection leaves its server ends at once with
// errMoved, a transient failure (retried with the same expected seq),
// instead of waiting out the request timeout for a reply that will not
// come.
func TestTryEndsWhenConnectionMoves(t *testing.T) {
	srv := runServer(t)
	st, err := OpenURL(ctx, srv.ClientURL()+"/?sync=always", WithRequestTimeout(time.Minute))
	require.NoError(t, err)
	defer st.Close()
	sink, err := nats.Connect(srv.ClientURL())
	require.NoError(t, err)
	defer sink.Close()
	sub, err := sink.SubscribeSync("sink") // takes requests, answers none
	require.NoError(t, err)
	require.NoError(t, sink.Flush())

	err = unanswered(t, st, sub, func() { require.NoError(t, st.JetStream().Conn().ForceReconnect()) })
	require.ErrorIs(t, err, errMoved)
	require.True(t, st.transient(err))

	// Tries that ended, moved or not, leave nothing in the watch.
	require.NoError(t, st.attempt(ctx, func(context.Context) error { return nil }))
	st.watch.mu.Lock()
	defer st.watch.mu.Unlock()
	require.Empty(t, st.watch.tries)
}

// unanswered runs a try of st whose request goes to sub, which never
// answers; once the request reached sub it calls event, and returns what
// the try ended with.
func unanswered(t *testing.T, st *Store, sub *nats.Subscription, event func()) error {
	nc := st.JetStream().Conn()
	done := make(chan error, 1)
	go func() {
		done <- st.attempt(ctx, func(ctx context.Context) error {
			inbox := nc.NewRespInbox()
			s, err := nc.SubscribeSync(inbox)
			if err != nil {
				return err
			}
			defer s.Unsubscribe()
			if err := nc.PublishRequest(sub.Subject, inbox, nil); err != nil {
				return err
			}
			_, err = s.NextMsgWithContext(ctx)
			return err
		})
	}()
	_, err := sub.NextMsg(30 * time.Second) // the request reached the server
	require.NoError(t, err)
	event()
	return <-done
}

// On a replicated store, a try in flight when the stream or the lease
// bucket elects a new leader ends at once with errMoved: the old leader
// had its request (paused, or gone) and no answer will come from it.
func TestTryEndsWhenLeaderChanges(t *testing.T) {
	t.Parallel() // a cluster of its own; no timed bound
	c := natstest.RunCluster(t)
	nc, err := nats.Connect(c.URLs())
	require.NoError(t, err)
	defer nc.Close()
	js, err := natsjs.New(nc)
	require.NoError(t, err)
	var st *Store
	natstest.Eventually(t, "the cluster to accept an R3 store", func() bool {
		st, err = New(ctx, js, WithReplicas(3))
		return err == nil
	})
	defer st.Close()
	st.cfg.reqTimeout = time.Minute      // a try that is not ended waits this long
	sub, err := nc.SubscribeSync("sink") // takes requests, answers none
	require.NoError(t, err)
	for _, stream := range []string{st.Stream(), "KV_sessionlog_leases"} {
		t.Run(stream, func(t *testing.T) {
			err := unanswered(t, st, sub, func() {
				var resp struct {
					Success bool `json:"success"`
				}
				natstest.Eventually(t, stream+" to step down", func() bool {
					m, err := nc.Request("$JS.API.STREAM.LEADER.STEPDOWN."+stream, nil, 5*time.Second)
					return err == nil && json.Unmarshal(m.Data, &resp) == nil && resp.Success
				})
			})
			require.ErrorIs(t, err, errMoved)
		})
	}
}
