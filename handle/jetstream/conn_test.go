package jetstream

import (
	"context"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/require"
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
			if err := nc.PublishRequest("sink", inbox, nil); err != nil {
				return err
			}
			_, err = s.NextMsgWithContext(ctx)
			return err
		})
	}()
	_, err = sub.NextMsg(30 * time.Second) // the request reached the server
	require.NoError(t, err)
	require.NoError(t, nc.ForceReconnect())
	err = <-done
	require.ErrorIs(t, err, errMoved)
	require.True(t, st.transient(err))

	// Tries that ended, moved or not, leave nothing in the watch.
	require.NoError(t, st.attempt(ctx, func(context.Context) error { return nil }))
	st.watch.mu.Lock()
	defer st.watch.mu.Unlock()
	require.Empty(t, st.watch.tries)
}
