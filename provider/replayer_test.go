package provider_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/afero"
	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/handle/file"
	"github.com/sessionlog/sessionlog/provider"
)

// toyLoop is a two-call tool loop on the Messages wire format: it asks,
// runs the tool the model asked for, and sends its result.
func toyLoop(t *testing.T, mw func(*http.Request, func(*http.Request) (*http.Response, error)) (*http.Response, error), system string, tool func() string) error {
	t.Helper()
	call := func(body string) ([]byte, error) {
		req, err := http.NewRequest(http.MethodPost, "http://model.invalid/v1/messages", strings.NewReader(body))
		require.NoError(t, err)
		resp, err := mw(req, func(*http.Request) (*http.Response, error) { return nil, fmt.Errorf("no network in this test") })
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		return io.ReadAll(resp.Body)
	}
	u := `{"role":"user","content":"read a"}`
	first, err := call(fmt.Sprintf(`{"model":"m","system":%q,"max_tokens":9,"metadata":{"user_id":"run-%d"},"messages":[%s]}`, system, len(system), u))
	if err != nil {
		return err
	}
	var msg struct{ Content json.RawMessage }
	if evs, _ := provider.ParseSSE(first); len(evs) > 0 {
		msg.Content = json.RawMessage(`[{"type":"tool_use","id":"tu_1","name":"read","input":{}}]`)
	} else {
		require.NoError(t, json.Unmarshal(first, &msg))
	}
	second := fmt.Sprintf(`{"model":"m","system":%q,"max_tokens":9,"messages":[%s,{"role":"assistant","content":%s},{"role":"user","content":[{"type":"tool_result","tool_use_id":"tu_1","content":%q}]}]}`, system, u, msg.Content, tool())
	_, err = call(second)
	return err
}

// record runs toyLoop against a fake model, recording it.
func record(t *testing.T, system string, tool func() string) (handle.Handle, *provider.Session, int) {
	replies := []string{
		`{"id":"m1","type":"message","role":"assistant","model":"m","content":[{"type":"tool_use","id":"tu_1","name":"read","input":{}}],"stop_reason":"tool_use","usage":{"input_tokens":1,"output_tokens":1}}`,
		reply("the file says ok", "end_turn"),
	}
	n := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, replies[n])
		n++
	}))
	t.Cleanup(srv.Close)
	h, ps, _ := newSession(t)
	rec := ps.Middleware()
	toSrv := func(req *http.Request, _ func(*http.Request) (*http.Response, error)) (*http.Response, error) {
		req.URL.Scheme, req.URL.Host = "http", strings.TrimPrefix(srv.URL, "http://")
		return rec(req, http.DefaultClient.Do)
	}
	require.NoError(t, toyLoop(t, toSrv, system, tool))
	return h, ps, n
}

func TestReplayerServesTheRecording(t *testing.T) {
	ctx := context.Background()
	secret := func() string { return "contents AKIAIOSFODNN7EXAMPLE" }
	h, ps, calls := record(t, "be brief", secret)
	require.Equal(t, 2, calls)

	for _, keys := range []*provider.Keys{ps.Keys(), nil} {
		t.Run(fmt.Sprintf("keys=%v", keys != nil), func(t *testing.T) {
			rp, err := provider.NewReplayer(ctx, h, provider.ReplayKeys(keys))
			require.NoError(t, err)
			require.NoError(t, toyLoop(t, rp.Middleware(), "be brief", secret), "every request matches; metadata.user_id is volatile")
			require.Zero(t, rp.Remaining())
			require.Empty(t, rp.ToolDivergences())
		})
	}
	t.Run("a changed system prompt names system and the seq", func(t *testing.T) {
		rp, err := provider.NewReplayer(ctx, h, provider.ReplayKeys(ps.Keys()))
		require.NoError(t, err)
		err = toyLoop(t, rp.Middleware(), "be verbose", secret)
		var de *provider.DivergenceError
		require.ErrorAs(t, err, &de)
		require.ErrorIs(t, err, provider.ErrDiverged)
		require.Equal(t, "system", de.Path)
		require.Equal(t, `"be brief"`, de.Recorded)
		require.Equal(t, `"be verbose"`, de.Live)
		require.Equal(t, int64(0), de.Seq)
		require.Equal(t, 0, de.Call)
	})
	t.Run("a changed tool output is reported and the run goes on", func(t *testing.T) {
		rp, err := provider.NewReplayer(ctx, h, provider.ReplayKeys(ps.Keys()))
		require.NoError(t, err)
		require.NoError(t, toyLoop(t, rp.Middleware(), "be brief", func() string { return "other" }))
		d := rp.ToolDivergences()
		require.Len(t, d, 1)
		require.Equal(t, "tu_1", d[0].CallID)
		require.Equal(t, "messages[2].content[0].content", d[0].Path)
		require.Equal(t, `"other"`, d[0].Live)
	})
	t.Run("tools from the log", func(t *testing.T) {
		rp, err := provider.NewReplayer(ctx, h, provider.ReplayKeys(ps.Keys()), provider.ToolsFromLog())
		require.NoError(t, err)
		res, ok := rp.ToolResult("tu_1")
		require.True(t, ok)
		require.Contains(t, string(res), "AKIAIOSFODNN7EXAMPLE")
	})
	t.Run("more calls than recorded", func(t *testing.T) {
		rp, err := provider.NewReplayer(ctx, h, provider.ReplayKeys(ps.Keys()), provider.HandOverAfter(0, nil))
		require.NoError(t, err)
		require.Equal(t, 1, rp.Remaining())
		err = toyLoop(t, rp.Middleware(), "be brief", secret)
		require.ErrorContains(t, err, "no network", "after the hand-over the next middleware is called")
	})
}

func TestDiffRequests(t *testing.T) {
	ctx := context.Background()
	a, _, _ := record(t, "be brief", func() string { return "one" })
	b, _, _ := record(t, "be brief", func() string { return "two" })
	same, _, _ := record(t, "be brief", func() string { return "one" })

	d, err := provider.DiffRequests(ctx, a, same, nil)
	require.NoError(t, err)
	require.False(t, d.Differs, "metadata.user_id differs but is volatile")
	require.Equal(t, 2, d.CallsA)

	d, err = provider.DiffRequests(ctx, a, b, nil)
	require.NoError(t, err)
	require.True(t, d.Differs)
	require.Equal(t, 1, d.Call, "the first request that differs is the one carrying the tool result")
	require.Equal(t, "messages[2].content[0].content", d.Path)
	require.Equal(t, `"one"`, d.A)
	require.Equal(t, `"two"`, d.B)
	require.Equal(t, 2, d.CallsA)
}

// Fork from a checkpoint with another model: the calls up to the fork
// point are served from the recording (and not recorded again), the rest
// go to a live model and are recorded into the fork.
func TestHandOverIntoAFork(t *testing.T) {
	ctx := context.Background()
	h, ps, _ := record(t, "be brief", func() string { return "out" })
	ex, err := provider.Exchanges(ctx, h, -1, ps.Keys())
	require.NoError(t, err)
	at := ex[0].Response.Seq + 3 // after the first response and its derived events
	for e, err := range h.Read(ctx, at+1, at+1) {
		require.NoError(t, err)
		require.Equal(t, provider.TypeRequest, e.Type, "the fork point is just before the second call")
	}
	store := file.New(afero.NewOsFs(), filepath.Dir(h.Path()))
	fork, err := store.Fork(ctx, h.ID(), at)
	require.NoError(t, err)
	defer fork.Close()
	fs, err := provider.Open(ctx, fork, provider.WithKeys(ps.Keys()))
	require.NoError(t, err)

	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, reply("another model's answer", "end_turn"))
	}))
	defer other.Close()
	rp, err := provider.NewReplayer(ctx, h, provider.ReplayKeys(ps.Keys()), provider.HandOverAfter(at, nil))
	require.NoError(t, err)
	recFork := fs.Middleware()
	chain := func(req *http.Request, _ func(*http.Request) (*http.Response, error)) (*http.Response, error) {
		// option.WithMiddleware(rp.Middleware(), fs.Middleware()): the
		// replayer first; after the hand-over, the fork's recorder, then
		// the live model.
		return rp.Middleware()(req, func(r *http.Request) (*http.Response, error) {
			return recFork(r, func(r *http.Request) (*http.Response, error) {
				r.URL.Scheme, r.URL.Host = "http", strings.TrimPrefix(other.URL, "http://")
				return http.DefaultClient.Do(r)
			})
		})
	}
	require.NoError(t, toyLoop(t, chain, "be brief", func() string { return "out" }))

	fx, err := provider.Exchanges(ctx, fork, -1, ps.Keys())
	require.NoError(t, err)
	require.Len(t, fx, 2, "the inherited call and the live one, none recorded twice")
	require.Greater(t, fx[1].Request.Seq, at)
	require.Contains(t, string(fx[1].Response.Body), "another model's answer")
	require.Equal(t, string(ex[1].Request.Body), string(fx[1].Request.Body), "the same request, answered by the other model")
}
