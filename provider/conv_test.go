package provider_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/afero"
	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/checkpoint"
	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/handle/file"
	"github.com/sessionlog/sessionlog/projection"
	"github.com/sessionlog/sessionlog/provider"
	"github.com/sessionlog/sessionlog/replay"
)

// reply is a non-streamed Messages response with one text block.
func reply(text, stop string) string {
	return fmt.Sprintf(`{"id":"m","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":%q}],"stop_reason":%q,"usage":{"input_tokens":1,"output_tokens":1}}`, text, stop)
}

func newSession(t *testing.T) (handle.Handle, *provider.Session, *file.Store) {
	t.Helper()
	ctx := context.Background()
	store := file.New(afero.NewOsFs(), t.TempDir())
	h, err := store.Create(ctx)
	require.NoError(t, err)
	t.Cleanup(func() { h.Close() })
	ps, err := provider.Open(ctx, h, provider.WithKeys(newKeys(t)))
	require.NoError(t, err)
	return h, ps, store
}

func request(msgs ...string) string {
	return `{"model":"m","max_tokens":10,"messages":[` + strings.Join(msgs, ",") + `]}`
}

func TestRequestsStoreOnlyNewItems(t *testing.T) {
	ctx := context.Background()
	h, ps, _ := newSession(t)
	u1, a1, u2 := `{"role":"user","content":"one"}`, `{"role":"assistant","content":[{"type":"text","text":"r1"}]}`, `{"role":"user","content":"two"}`
	s1, err := ps.Request(ctx, provider.Request{Provider: "anthropic", API: "messages", Path: "/v1/messages", Body: []byte(request(u1))})
	require.NoError(t, err)
	_, err = ps.Response(ctx, provider.Response{Request: s1, Status: 200, Body: []byte(reply("r1", "end_turn"))})
	require.NoError(t, err)
	s2, err := ps.Request(ctx, provider.Request{Provider: "anthropic", API: "messages", Path: "/v1/messages", Body: []byte(request(u1, a1, u2))})
	require.NoError(t, err)
	var stored struct {
		Base struct{ Seq, Keep int64 }
		Body struct{ Messages []json.RawMessage }
	}
	for e, err := range h.Read(ctx, s2, s2) {
		require.NoError(t, err)
		require.NoError(t, json.Unmarshal(e.Data, &stored))
	}
	require.Equal(t, s1, stored.Base.Seq)
	require.Equal(t, int64(1), stored.Base.Keep)
	require.Len(t, stored.Body.Messages, 2, "only the items the previous request did not have")

	conv, err := ps.Conversation(ctx)
	require.NoError(t, err)
	require.Equal(t, request(u1, a1, u2), string(conv.Request.Body))
	require.True(t, conv.TurnOpen)
	require.Nil(t, conv.Response)
}

func TestRetryOfAnUnansweredRequestIsOneRecord(t *testing.T) {
	ctx := context.Background()
	_, ps, _ := newSession(t)
	body := []byte(request(`{"role":"user","content":"x"}`))
	s1, err := ps.Request(ctx, provider.Request{Provider: "anthropic", API: "messages", Body: body})
	require.NoError(t, err)
	_, err = ps.Response(ctx, provider.Response{Request: s1, Status: 529, Body: []byte(`{"type":"error"}`)})
	require.NoError(t, err)
	s2, err := ps.Request(ctx, provider.Request{Provider: "anthropic", API: "messages", Body: body})
	require.NoError(t, err)
	require.Equal(t, s1, s2, "a retry asks the same request again")
	conv, err := ps.Conversation(ctx)
	require.NoError(t, err)
	require.False(t, conv.Complete())
}

// After a rollback the conversation is the live branch's, and the next
// request's delta is taken from the request the rollback returned to.
func TestConversationFollowsRollbacks(t *testing.T) {
	ctx := context.Background()
	h, ps, _ := newSession(t)
	u1, a1 := `{"role":"user","content":"one"}`, `{"role":"assistant","content":[{"type":"text","text":"r1"}]}`
	s1, err := ps.Request(ctx, provider.Request{Provider: "anthropic", API: "messages", Body: []byte(request(u1))})
	require.NoError(t, err)
	r1, err := ps.Response(ctx, provider.Response{Request: s1, Status: 200, Body: []byte(reply("r1", "end_turn"))})
	require.NoError(t, err)
	mark := h.Seq()
	s2, err := ps.Request(ctx, provider.Request{Provider: "anthropic", API: "messages", Body: []byte(request(u1, a1, `{"role":"user","content":"abandoned"}`))})
	require.NoError(t, err)
	_, err = ps.Response(ctx, provider.Response{Request: s2, Status: 200, Body: []byte(reply("r2", "end_turn"))})
	require.NoError(t, err)

	_, err = checkpoint.Rollback(ctx, h, mark)
	require.NoError(t, err)
	conv, err := ps.Conversation(ctx)
	require.NoError(t, err)
	require.Equal(t, s1, conv.Request.Seq)
	require.Equal(t, r1, conv.Response.Seq)

	want := request(u1, a1, `{"role":"user","content":"kept"}`)
	s3, err := ps.Request(ctx, provider.Request{Provider: "anthropic", API: "messages", Body: []byte(want)})
	require.NoError(t, err)
	got, err := provider.At(ctx, h, s3, ps.Keys())
	require.NoError(t, err)
	require.Equal(t, want, string(got.Request.Body))
	// And at a seq before the rollback, the abandoned branch.
	old, err := provider.At(ctx, h, s2, ps.Keys())
	require.NoError(t, err)
	require.Contains(t, string(old.Request.Body), "abandoned")
}

func TestStreamRecordedWithItsBoundaries(t *testing.T) {
	ctx := context.Background()
	events := []string{
		`{"type":"message_start","message":{"id":"m","type":"message","role":"assistant","model":"m","content":[],"stop_reason":null,"usage":{"input_tokens":3,"output_tokens":0}}}`,
		`{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}`,
		`{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"key AKIAIOSFOD"}}`,
		`{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"NN7EXAMPLE ok"}}`,
		`{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"sig"}}`,
		`{"type":"content_block_stop","index":0}`,
		`{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"tu","name":"read_file","input":{}}}`,
		`{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"path\":"}}`,
		`{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"\"a\"}"}}`,
		`{"type":"content_block_stop","index":1}`,
		`{"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":9}}`,
		`{"type":"message_stop"}`,
	}
	for _, cut := range []int{len(events), 5} {
		t.Run(fmt.Sprintf("%d events", cut), func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				for _, e := range events[:cut] {
					var typ struct{ Type string }
					_ = json.Unmarshal([]byte(e), &typ)
					fmt.Fprintf(w, "event: %s\ndata: %s\n\n", typ.Type, e)
				}
			}))
			defer srv.Close()
			h, ps, store := newSession(t)
			got := post(t, ps.Middleware(), srv.URL, request(`{"role":"user","content":"go"}`))
			evs, _ := provider.ParseSSE(got)
			require.Len(t, evs, cut, "the SDK reads every event")
			conv, err := ps.Conversation(ctx)
			require.NoError(t, err)
			require.Len(t, conv.Response.Stream, cut)
			for i, e := range conv.Response.Stream {
				require.Equal(t, events[i], string(e.Data))
			}
			require.Equal(t, cut == len(events), conv.Complete())
			if cut == len(events) {
				require.Equal(t, []string{"tu"}, conv.Calls)
			}
			st := agentState(t, h)
			require.Equal(t, cut == len(events), st.hasCall)
			if cut == len(events) {
				// The key was sent in two deltas: neither piece is in
				// clear in any file, and the conversation has both.
				require.NoError(t, h.Flush(ctx))
				requireNotInStore(t, store.Dir(), "AKIAIOSFOD", "NN7EXAMPLE")
			}
		})
	}
}

type agentSummary struct{ hasCall bool }

func agentState(t *testing.T, h handle.Handle) agentSummary {
	var s agentSummary
	for e, err := range h.Read(context.Background(), 0, handle.End) {
		require.NoError(t, err)
		if e.Type == "tool/call" {
			s.hasCall = true
		}
	}
	return s
}

// FuzzProjection: provider records of any shape never panic the
// projection or the opening of its conversation.
func FuzzProjection(f *testing.F) {
	f.Add(`{"provider":"anthropic","api":"messages","method":"POST","path":"/v1/messages","body":{"messages":[]}}`, `{"request":0,"status":200,"body":{},"complete":true}`, `{"provider":"anthropic","api":"messages","content":{}}`)
	f.Add(`{"provider":"anthropic","api":"messages","base":{"seq":0,"keep":3},"body":{"messages":[1]}}`, `{"request":5}`, `{}`)
	f.Add(`{"provider":"openai","api":"responses","body":{"input":"x"},"$redacted":[{"path":["body","input"],"kinds":["x"],"sealed":"AAAA"}]}`, `[]`, `null`)
	f.Fuzz(func(t *testing.T, req, resp, in string) {
		p := provider.NewProjection()
		for i, e := range []eventlog.Event{
			{Seq: 0, Type: provider.TypeRequest, Data: []byte(req)},
			{Seq: 1, Type: provider.TypeResponse, Data: []byte(resp)},
			{Seq: 2, Type: provider.TypeInput, Data: []byte(in)},
			{Seq: 3, Type: provider.TypeRequest, Data: []byte(req)},
		} {
			_ = i
			p.Apply(e)
		}
		_, _ = p.Conversation(nil)
		b, err := p.MarshalState()
		require.NoError(t, err)
		require.NoError(t, provider.NewProjection().UnmarshalState(b))
	})
}

var _ projection.Projection = provider.NewProjection()
var _ replay.Source = handle.Handle(nil)

// requireNotInStore fails when any file under dir holds one of the texts.
func requireNotInStore(t *testing.T, dir string, texts ...string) {
	t.Helper()
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, s := range texts {
			require.NotContains(t, string(b), s, path)
		}
		return nil
	})
	require.NoError(t, err)
}

// A tool result recorded as an input is derived once: the request that
// carries it derives no second tool/result.
func TestInputDerivedOnce(t *testing.T) {
	ctx := context.Background()
	h, ps, _ := newSession(t)
	u := `{"role":"user","content":"go"}`
	s1, err := ps.Request(ctx, provider.Request{Provider: "anthropic", API: "messages", Body: []byte(request(u))})
	require.NoError(t, err)
	_, err = ps.Response(ctx, provider.Response{Request: s1, Status: 200, Body: []byte(`{"type":"message","role":"assistant","content":[{"type":"tool_use","id":"tu","name":"x","input":{}}],"stop_reason":"tool_use"}`)})
	require.NoError(t, err)
	result := `{"type":"tool_result","tool_use_id":"tu","content":"out"}`
	_, err = ps.Input(ctx, "anthropic", "messages", []byte(result))
	require.NoError(t, err)
	conv, err := ps.Conversation(ctx)
	require.NoError(t, err)
	require.Equal(t, []string{"tu"}, conv.Results)
	require.Len(t, conv.Inputs, 1)
	_, err = ps.Request(ctx, provider.Request{Provider: "anthropic", API: "messages", Body: []byte(request(u,
		`{"role":"assistant","content":[{"type":"tool_use","id":"tu","name":"x","input":{}}]}`,
		`{"role":"user","content":[`+result+`]}`))})
	require.NoError(t, err)
	n := 0
	for e, err := range h.Read(ctx, 0, handle.End) {
		require.NoError(t, err)
		if e.Type == "tool/result" {
			n++
		}
	}
	require.Equal(t, 1, n)
}

// Usage keeps the provider's cache writes with their split by lifetime
// and the service tier, under the vocabulary's names.
func TestUsageDerived(t *testing.T) {
	ctx := context.Background()
	h, ps, _ := newSession(t)
	s1, err := ps.Request(ctx, provider.Request{Provider: "anthropic", API: "messages", Body: []byte(request(`{"role":"user","content":"x"}`))})
	require.NoError(t, err)
	_, err = ps.Response(ctx, provider.Response{Request: s1, Status: 200, Body: []byte(`{"type":"message","model":"m1","content":[],"stop_reason":"end_turn","usage":{"input_tokens":10,"output_tokens":5,"cache_read_input_tokens":2,"cache_creation_input_tokens":3,"cache_creation":{"ephemeral_5m_input_tokens":1,"ephemeral_1h_input_tokens":2},"service_tier":"priority"}}`)})
	require.NoError(t, err)
	var got string
	for e, err := range h.Read(ctx, 0, handle.End) {
		require.NoError(t, err)
		if e.Type == "usage" {
			got = string(e.Data)
		}
	}
	require.JSONEq(t, `{"inputTokens":10,"outputTokens":5,"cachedTokens":2,"cacheWriteTokens":3,"cacheWriteByTTL":{"5m":1,"1h":2},"serviceTier":"priority","model":"m1"}`, got)
}
