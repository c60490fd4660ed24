package slopenai_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http/httptest"
	"strings"
	"testing"

	"filippo.io/age"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/spf13/afero"
	"github.com/stretchr/testify/require"

	slopenai "github.com/sessionlog/sessionlog/adapters/openai"
	"github.com/sessionlog/sessionlog/handle/file"
	"github.com/sessionlog/sessionlog/provider"
)

type chatConversation struct {
	first   []any
	turns   []string
	replies []map[string]any
	stream  bool
}

// chatMessage returns a reply's message: text (or a refusal), with
// annotations, and calls tool calls (custom ones too when custom).
func (g *gen) chatMessage(calls int, custom bool) map[string]any {
	m := map[string]any{"role": "assistant", "content": g.text(), "refusal": nil}
	if !custom {
		// Streams carry text and function calls only.
		switch g.r.IntN(3) {
		case 0:
			m["content"], m["refusal"] = nil, g.text()
		case 1:
			m["annotations"] = []any{map[string]any{"type": "url_citation", "url_citation": map[string]any{"url": "https://example.com", "title": g.text(), "start_index": 0, "end_index": 1}}}
		}
	}
	if calls > 0 {
		if g.r.IntN(2) == 0 {
			m["content"] = nil
		}
		var tcs []map[string]any
		for range calls {
			if custom && g.r.IntN(2) == 0 {
				tcs = append(tcs, map[string]any{"id": g.id("call"), "type": "custom",
					"custom": map[string]any{"name": g.toolName(), "input": g.text()}})
				continue
			}
			tcs = append(tcs, map[string]any{"id": g.id("call"), "type": "function",
				"function": map[string]any{"name": g.toolName(), "arguments": fmt.Sprintf(`{"q":%q}`, g.text())}})
		}
		m["tool_calls"] = tcs
	}
	return m
}

// chatFirst returns the first request's messages: one of each role the
// SDK's ChatCompletionMessageParamUnion has (developer, system, user,
// assistant, tool, function), content as text and as parts.
func (g *gen) chatFirst(turn string) []any {
	id := g.id("call")
	return []any{
		map[string]any{"role": "developer", "content": []any{map[string]any{"type": "text", "text": g.text()}}},
		map[string]any{"role": "system", "content": g.text(), "name": "sys"},
		map[string]any{"role": "user", "content": []any{map[string]any{"type": "text", "text": g.text()}, map[string]any{"type": "image_url", "image_url": map[string]any{"url": "https://example.com/a.png", "detail": "low"}}}},
		map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "text", "text": g.text()}}, "tool_calls": []any{map[string]any{"id": id, "type": "function", "function": map[string]any{"name": "read_0", "arguments": "{}"}}}, "x_future": g.value(2)},
		map[string]any{"role": "tool", "tool_call_id": id, "content": []any{map[string]any{"type": "text", "text": g.text()}}},
		map[string]any{"role": "assistant", "content": nil, "refusal": g.text()},
		map[string]any{"role": "function", "name": "legacy", "content": g.text()},
		map[string]any{"role": "user", "content": turn},
	}
}

func (g *gen) chatConversation() chatConversation {
	c := chatConversation{stream: g.r.IntN(2) == 0}
	c.first = g.chatFirst(g.text())
	for range 1 + g.r.IntN(3) {
		c.turns = append(c.turns, g.text())
		for range g.r.IntN(3) {
			c.replies = append(c.replies, g.chatMessage(1+g.r.IntN(3), !c.stream))
		}
		c.replies = append(c.replies, g.chatMessage(0, !c.stream))
	}
	return c
}

// chatLoop is the uncrashed Chat Completions loop: the response's message
// as the SDK turns it into a param (a stream accumulated), then a tool
// message per call, recorded as soon as it exists.
func chatLoop(ctx context.Context, t *testing.T, client openai.Client, ps *provider.Session, c chatConversation) {
	params := openai.ChatCompletionNewParams{Model: "fake-model", Temperature: openai.Float(0.5)}
	for _, m := range c.first {
		params.Messages = append(params.Messages, param.Override[openai.ChatCompletionMessageParamUnion](m))
	}
	turn := 1
	for {
		var msg openai.ChatCompletionMessage
		if c.stream {
			s := client.Chat.Completions.NewStreaming(ctx, params)
			var acc openai.ChatCompletionAccumulator
			for s.Next() {
				acc.AddChunk(s.Current())
			}
			require.NoError(t, s.Err())
			require.NoError(t, s.Close())
			msg = acc.Choices[0].Message
		} else {
			r, err := client.Chat.Completions.New(ctx, params)
			require.NoError(t, err)
			msg = r.Choices[0].Message
		}
		params.Messages = append(params.Messages, msg.ToParam())
		for _, tc := range msg.ToolCalls {
			if strings.HasPrefix(tc.Function.Name+tc.Custom.Name, "write_") {
				_, err := ps.BeginTool(ctx, tc.ID)
				require.NoError(t, err)
			}
			m := openai.ToolMessage("ran "+tc.ID+" "+akia, tc.ID)
			require.NoError(t, slopenai.RecordToolMessage(ctx, ps, m))
			params.Messages = append(params.Messages, m)
		}
		if len(msg.ToolCalls) == 0 {
			if turn == len(c.turns) {
				return
			}
			params.Messages = append(params.Messages, openai.UserMessage(c.turns[turn]))
			turn++
		}
	}
}

// TestChatRebuildEqualsUncrashedLoopAtEverySeq is the Responses property
// for Chat Completions: generated tool loops (several calls a message,
// streamed or not, against a fake that checks every tool_call id is
// answered), at every seq.
func TestChatRebuildEqualsUncrashedLoopAtEverySeq(t *testing.T) {
	ctx := context.Background()
	id, err := age.GenerateX25519Identity()
	require.NoError(t, err)
	keys := provider.NewKeys(id)
	r := rand.New(rand.NewPCG(29, 2))
	streamed := map[bool]bool{}
	seen := map[string]bool{}
	for range 6 {
		g := &gen{r: r}
		c := g.chatConversation()
		streamed[c.stream] = true
		for _, m := range c.replies {
			if m["refusal"] != nil {
				seen["refusal"] = true
			}
			if _, ok := m["annotations"]; ok {
				seen["annotations"] = true
			}
			tcs, _ := m["tool_calls"].([]map[string]any)
			for _, tc := range tcs {
				seen[tc["type"].(string)] = true
			}
		}
		fake := &fakeChat{replies: c.replies}
		srv := httptest.NewServer(fake)
		store := file.New(afero.NewMemMapFs(), "/store")
		h, err := store.Create(ctx)
		require.NoError(t, err)
		ps, err := provider.Open(ctx, h, provider.WithKeys(keys))
		require.NoError(t, err)
		client := openai.NewClient(option.WithBaseURL(srv.URL), option.WithAPIKey("sk-test"), option.WithMaxRetries(0), slopenai.Record(ps))
		chatLoop(ctx, t, client, ps, c)
		srv.Close()
		checkEverySeq(ctx, t, h, keys, fake.bodies, chatAPI)
		require.NoError(t, h.Close())
	}
	require.Len(t, streamed, 2, "streamed and not")
	require.Equal(t, map[string]bool{"function": true, "custom": true, "refusal": true, "annotations": true}, seen)
}

var chatAPI = rebuildAPI{
	member: "messages",
	next: func(conv provider.Conversation) (rebuilt, error) {
		n, err := slopenai.Chat(conv)
		return rebuilt{n.Params, n.AskAgain, n.Done, n.Empty, n.Pending}, err
	},
	pending: func(t *testing.T, s int64, item json.RawMessage, c slopenai.Call) {
		var m struct {
			Role       string `json:"role"`
			ToolCallID string `json:"tool_call_id"`
		}
		require.NoError(t, json.Unmarshal(item, &m))
		require.Equal(t, "tool", m.Role)
		require.Equal(t, m.ToolCallID, c.CallID, "seq %d", s)
		require.Equal(t, canon(t, slopenai.ToolMessage(c, "ran "+c.CallID+" "+akia)), string(mustCanon(t, item)))
	},
}

func mustCanon(t testing.TB, b []byte) []byte {
	c, err := slopenai.Canonical(b)
	require.NoError(t, err)
	return c
}

// TestChatFakeChecksToolCallIDs: the chat fake refuses a tool call left
// unanswered and a tool message that answers no call.
func TestChatFakeChecksToolCallIDs(t *testing.T) {
	f := &fakeChat{}
	_, _, err := f.check([]byte(`{"messages":[{"role":"user","content":"hi"},{"role":"assistant","tool_calls":[{"id":"c1"}]},{"role":"tool","tool_call_id":"c1","content":"x"}]}`))
	require.NoError(t, err)
	_, _, err = f.check([]byte(`{"messages":[{"role":"user","content":"hi"},{"role":"assistant","tool_calls":[{"id":"c1"}]}]}`))
	require.ErrorContains(t, err, "did not have response messages")
	_, _, err = f.check([]byte(`{"messages":[{"role":"user","content":"hi"},{"role":"tool","tool_call_id":"c9","content":"x"}]}`))
	require.ErrorContains(t, err, "must be a response")
}
