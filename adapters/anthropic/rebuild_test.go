package anthropic_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/spf13/afero"
	"github.com/stretchr/testify/require"

	adapter "github.com/sessionlog/sessionlog/adapters/anthropic"
	"github.com/sessionlog/sessionlog/handle/file"
	"github.com/sessionlog/sessionlog/provider"
)

func newSession(t *testing.T, srv *httptest.Server) (*provider.Session, sdk.Client) {
	ctx := context.Background()
	h, err := file.New(afero.NewOsFs(), t.TempDir()).Create(ctx)
	require.NoError(t, err)
	t.Cleanup(func() { h.Close() })
	ps, err := provider.Open(ctx, h, provider.WithKeys(newKeys(t)))
	require.NoError(t, err)
	return ps, sdk.NewClient(adapter.Record(ps), option.WithBaseURL(srv.URL), option.WithAPIKey("k"), option.WithMaxRetries(0))
}

// TestRebuildResumePolicy checks which calls without a result a resumed
// loop runs: a read call always, a write call that never started, and
// not a write call that started (Unknown); and that a tool the effects
// do not name counts as a write.
func TestRebuildResumePolicy(t *testing.T) {
	ctx := context.Background()
	steps := []step{{stop: "tool_use", blocks: []string{
		sample("thinking", 0, "1"),
		`{"type":"tool_use","id":"r1","name":"reader","input":{}}`,
		`{"type":"tool_use","id":"w1","name":"writer","input":{}}`,
		`{"type":"tool_use","id":"w2","name":"writer","input":{}}`,
		`{"type":"tool_use","id":"r2","name":"reader","input":{}}`,
		`{"type":"tool_use","id":"x1","name":"unnamed","input":{}}`,
	}}}
	srv := scriptServer(t, steps)
	defer srv.Close()
	ps, client := newSession(t, srv)
	p := baseParams()
	p.Messages = []sdk.MessageParam{sdk.NewUserMessage(sdk.NewTextBlock("go"))}
	_, err := client.Messages.New(ctx, p)
	require.NoError(t, err)

	require.NoError(t, adapter.RecordResult(ctx, ps, "r1", "read", false))
	_, err = ps.BeginTool(ctx, "w1")
	require.NoError(t, err)
	require.NoError(t, adapter.RecordResult(ctx, ps, "w1", "wrote", false))
	_, err = ps.BeginTool(ctx, "w2") // started, no result: killed while it ran
	require.NoError(t, err)
	_, err = ps.BeginTool(ctx, "r2")
	require.NoError(t, err)
	_, err = ps.BeginTool(ctx, "x1")
	require.NoError(t, err)

	next, err := adapter.Current(ctx, ps, map[string]adapter.Effect{"reader": adapter.Read, "writer": adapter.Write})
	require.NoError(t, err)
	require.False(t, next.Ask)
	require.False(t, next.Done)
	type call struct {
		id      string
		effect  adapter.Effect
		unknown bool
	}
	var got []call
	for _, c := range next.Run {
		got = append(got, call{c.Use.ID, c.Effect, c.Unknown})
	}
	require.Equal(t, []call{{"w2", adapter.Write, true}, {"r2", adapter.Read, false}, {"x1", adapter.Write, true}}, got)
	last := next.Params.Messages[len(next.Params.Messages)-1].OfUser
	require.NotNil(t, last)
	require.Len(t, last.Content, 2, "the recorded results, as the next user message")
	require.Equal(t, "r1", last.Content[0].OfToolResult.ToolUseID)
	require.Equal(t, "w1", last.Content[1].OfToolResult.ToolUseID)

	require.NoError(t, adapter.OutcomeUnknownResult(ctx, ps, "w2"))
	next, err = adapter.Current(ctx, ps, nil)
	require.NoError(t, err)
	require.Len(t, next.Run, 2)
	res := next.Params.Messages[len(next.Params.Messages)-1].OfUser.Content[2].OfToolResult
	require.True(t, res.IsError.Value)
	require.Equal(t, adapter.OutcomeUnknown, res.Content[0].OfText.Text)
}

// TestRebuildAsksACutStreamAgain: a stream cut before message_stop is
// recorded as an incomplete response, and the rebuild asks the same
// request again.
func TestRebuildAsksACutStreamAgain(t *testing.T) {
	ctx := context.Background()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write([]byte("event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"x\",\"content\":[],\"usage\":{\"input_tokens\":1,\"output_tokens\":1}}}\n\n"))
		w.(http.Flusher).Flush()
		panic(http.ErrAbortHandler) // cut the connection
	}))
	defer srv.Close()
	ps, client := newSession(t, srv)
	p := baseParams()
	p.Messages = []sdk.MessageParam{sdk.NewUserMessage(sdk.NewTextBlock("go"))}
	s := client.Messages.NewStreaming(ctx, p)
	for s.Next() {
	}
	require.Error(t, s.Err())
	_ = s.Close()

	conv, err := ps.Conversation(ctx)
	require.NoError(t, err)
	require.NotNil(t, conv.Response, "the cut stream is recorded")
	require.False(t, conv.Complete())
	next, err := adapter.Rebuild(conv, nil)
	require.NoError(t, err)
	require.True(t, next.Ask)
	require.Empty(t, next.Run)
	want, err := json.Marshal(p)
	require.NoError(t, err)
	got, err := json.Marshal(next.Params)
	require.NoError(t, err)
	require.Equal(t, canon(t, want), canon(t, got))
	require.Equal(t, 1, next.Turns)
}

// TestRebuildRefusesOtherProviders: a conversation of another API is an
// error, not a wrong request.
func TestRebuildRefusesOtherProviders(t *testing.T) {
	_, err := adapter.Rebuild(provider.Conversation{Request: &provider.Request{Provider: "openai", API: "responses", Body: []byte(`{}`)}}, nil)
	require.ErrorIs(t, err, adapter.ErrConversation)
}

// FuzzRebuild: no recorded conversation makes Rebuild panic.
func FuzzRebuild(f *testing.F) {
	f.Add([]byte(`{"model":"m","max_tokens":1,"messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}]}`),
		[]byte(`{"type":"message","role":"assistant","content":[{"type":"tool_use","id":"a","name":"n","input":{}}],"stop_reason":"tool_use"}`),
		[]byte(`{"type":"tool_result","tool_use_id":"a","content":"x"}`), false)
	f.Add([]byte(`{"messages":[]}`), []byte(`{"type":"message_start","message":{"content":[]}}`), []byte(`{}`), true)
	f.Add([]byte(`[]`), []byte(`{"type":"content_block_delta","index":5}`), []byte(`null`), true)
	f.Fuzz(func(t *testing.T, body, resp, input []byte, streamed bool) {
		if !json.Valid(body) || !json.Valid(resp) || !json.Valid(input) {
			return
		}
		conv := provider.Conversation{
			Request:  &provider.Request{Provider: "anthropic", API: "messages", Body: body},
			Response: &provider.Response{Status: 200, Complete: true},
			Inputs:   []provider.Input{{Provider: "anthropic", API: "messages", Content: input}},
			Started:  []string{"a"},
		}
		if streamed {
			conv.Response.Stream = []provider.SSEEvent{{Event: "x", Data: resp}, {Event: "message_stop", Data: []byte(`{"type":"message_stop"}`)}}
		} else {
			conv.Response.Body = resp
		}
		_, _ = adapter.Rebuild(conv, map[string]adapter.Effect{"n": adapter.Read})
	})
}
