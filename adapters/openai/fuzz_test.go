package slopenai_test

import (
	"encoding/json"
	"testing"

	slopenai "github.com/sessionlog/sessionlog/adapters/openai"
	"github.com/sessionlog/sessionlog/provider"
)

// FuzzRebuild: any request body, response body and input, complete or
// not, streamed or not, rebuilds or fails with an error, never a panic.
func FuzzRebuild(f *testing.F) {
	f.Add(`{"model":"m","input":[{"role":"user","content":"hi"}]}`, `{"status":"completed","output":[{"type":"function_call","call_id":"c","name":"n","arguments":"{}"}]}`, `{"type":"function_call_output","call_id":"c","output":"x"}`, true, false)
	f.Add(`{"model":"m","input":"hi","stream":true}`, `{"type":"response.completed","response":{"status":"completed","output":[{"type":"reasoning","id":"rs","summary":[]}]}}`, `{}`, true, true)
	f.Add(`{"model":"m","messages":[{"role":"user","content":"hi"}]}`, `{"object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","tool_calls":[{"id":"c","type":"custom","custom":{"name":"g","input":"i"}}]}}]}`, `{"role":"tool","tool_call_id":"c","content":"x"}`, true, false)
	f.Add(`{"model":"m","messages":[]}`, `{"choices":[{"index":7,"delta":{"tool_calls":[{"index":3,"id":"c"}]}}]}`, `[]`, true, true)
	f.Add(`[]`, `null`, `1`, false, false)
	f.Fuzz(func(t *testing.T, body, resp, input string, complete, streamed bool) {
		r := &provider.Response{Status: 200, Complete: complete}
		if streamed {
			r.Stream = []provider.SSEEvent{{Data: json.RawMessage(resp)}, {Data: json.RawMessage(`"[DONE]"`)}}
		} else {
			r.Body = json.RawMessage(resp)
		}
		for _, api := range []string{slopenai.APIResponses, slopenai.APIChat} {
			conv := provider.Conversation{
				Request:  &provider.Request{Provider: "openai", API: api, Body: json.RawMessage(body)},
				Response: r,
				Inputs:   []provider.Input{{Provider: "openai", API: api, Content: json.RawMessage(input)}},
			}
			if n, err := slopenai.Responses(conv); err == nil {
				_, _ = json.Marshal(n.Params)
			}
			if n, err := slopenai.Chat(conv); err == nil {
				_, _ = json.Marshal(n.Params)
			}
		}
	})
}
