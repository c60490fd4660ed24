package slopenai_test

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"

	slopenai "github.com/sessionlog/sessionlog/adapters/openai"
)

// fakeResponses is an httptest handler of the Responses API that checks
// requests as the API does:
//   - every function_call (custom_tool_call) in the input is answered by a
//     function_call_output (custom_tool_call_output) with its call_id later
//     in the input, and no output answers a call that is not there;
//   - a reasoning item's encrypted_content is what the fake made for that
//     item: a MAC over its id and summary; an altered item gets a 400.
//
// Its replies are a function of the request's step (user messages plus
// call outputs in the input), so a request asked again gets the same
// reply. Streamed requests get server-sent events ending in
// response.completed. It keeps every body it was sent.
type fakeResponses struct {
	key    []byte
	script func(step int) []map[string]any
	// replies, when set, are the replies in the order of the requests
	// (step is then the request's index).
	replies [][]map[string]any

	received
}

// received keeps the bodies a fake received, in order.
type received struct {
	mu     sync.Mutex
	bodies [][]byte
}

// receive keeps body and returns its index.
func (r *received) receive(body []byte) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.bodies = append(r.bodies, body)
	return len(r.bodies) - 1
}

// sent returns the bodies received, each canonical, a body equal to the
// one before it (a request asked again) left out.
func (r *received) sent() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, b := range r.bodies {
		c, err := slopenai.Canonical(b)
		if err != nil {
			c = b
		}
		if len(out) > 0 && out[len(out)-1] == string(c) {
			continue
		}
		out = append(out, string(c))
	}
	return out
}

func (f *fakeResponses) seal(id string, summary json.RawMessage) string {
	canon, _ := slopenai.Canonical(summary)
	payload := base64.StdEncoding.EncodeToString(append([]byte(id+"\x00"), canon...))
	m := hmac.New(sha256.New, f.key)
	m.Write([]byte(payload))
	return payload + "." + hex.EncodeToString(m.Sum(nil))
}

func (f *fakeResponses) verify(item map[string]json.RawMessage) error {
	var id, enc string
	_ = json.Unmarshal(item["id"], &id)
	if err := json.Unmarshal(item["encrypted_content"], &enc); err != nil || enc == "" {
		return fmt.Errorf("reasoning item %s has no encrypted_content", id)
	}
	if enc != f.seal(id, item["summary"]) {
		return fmt.Errorf("the encrypted content for item %s could not be verified", id)
	}
	return nil
}

// fakeCallKinds are the output items the client answers, and the input
// item type that answers each (the API's reference, not the adapter's).
var fakeCallKinds = map[string]string{
	"function_call": "function_call_output", "custom_tool_call": "custom_tool_call_output",
	"computer_call": "computer_call_output", "local_shell_call": "local_shell_call_output",
	"shell_call": "shell_call_output", "apply_patch_call": "apply_patch_call_output",
}

func isFakeCallOutput(typ string) bool {
	for _, o := range fakeCallKinds {
		if o == typ {
			return true
		}
	}
	return false
}

// check returns the API's error for a request body, or the step.
func (f *fakeResponses) check(body []byte) (step int, stream bool, err error) {
	var req map[string]json.RawMessage
	if err := json.Unmarshal(body, &req); err != nil {
		return 0, false, err
	}
	_ = json.Unmarshal(req["stream"], &stream)
	var items []map[string]json.RawMessage
	if err := json.Unmarshal(req["input"], &items); err != nil {
		return 0, false, fmt.Errorf("input is not a list of items: %w", err)
	}
	open := map[string]bool{}
	var order []string
	for _, it := range items {
		var typ, role, callID string
		_ = json.Unmarshal(it["type"], &typ)
		_ = json.Unmarshal(it["role"], &role)
		_ = json.Unmarshal(it["call_id"], &callID)
		switch {
		case fakeCallKinds[typ] != "":
			open[callID] = true
			order = append(order, callID)
		case isFakeCallOutput(typ):
			if !open[callID] {
				return 0, stream, fmt.Errorf("no tool call found for function call output with call_id %s", callID)
			}
			delete(open, callID)
			step++
		case typ == "reasoning":
			if err := f.verify(it); err != nil {
				return 0, stream, err
			}
		case typ == "" || typ == "message":
			if role == "user" {
				step++
			}
		}
	}
	for _, id := range order {
		if open[id] {
			return 0, stream, fmt.Errorf("no tool output found for function call %s", id)
		}
	}
	return step, stream, nil
}

// response returns the response object of a step, reasoning items
// sealed.
func (f *fakeResponses) response(step int) map[string]any {
	var out []map[string]any
	if f.replies != nil {
		if step < len(f.replies) {
			out = f.replies[step]
		}
	} else {
		out = f.script(step)
	}
	for _, it := range out {
		if it["type"] == "reasoning" {
			s, _ := json.Marshal(it["summary"])
			it["encrypted_content"] = f.seal(it["id"].(string), s)
		}
	}
	return map[string]any{
		"id": fmt.Sprintf("resp_%d", step), "object": "response", "created_at": 1700000000 + step,
		"status": "completed", "model": "fake-model", "output": out,
		"usage": map[string]any{"input_tokens": 10 * step, "output_tokens": 5, "total_tokens": 10*step + 5,
			"input_tokens_details": map[string]any{"cached_tokens": 0}, "output_tokens_details": map[string]any{"reasoning_tokens": 3}},
	}
}

func (f *fakeResponses) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	index := f.receive(body)
	step, stream, err := f.check(body)
	if err != nil {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		b, _ := json.Marshal(map[string]any{"error": map[string]any{"type": "invalid_request_error", "message": err.Error()}})
		_, _ = w.Write(b)
		return
	}
	if f.replies != nil {
		step = index
	}
	resp := f.response(step)
	if !stream {
		w.Header().Set("Content-Type", "application/json")
		b, _ := json.Marshal(resp)
		_, _ = w.Write(b)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	var sse bytes.Buffer
	seq := 0
	emit := func(typ string, v map[string]any) {
		v["type"], v["sequence_number"] = typ, seq
		seq++
		b, _ := json.Marshal(v)
		fmt.Fprintf(&sse, "event: %s\ndata: %s\n\n", typ, b)
	}
	created := map[string]any{}
	for k, v := range resp {
		created[k] = v
	}
	created["status"], created["output"] = "in_progress", []any{}
	emit("response.created", map[string]any{"response": created})
	for i, it := range resp["output"].([]map[string]any) {
		emit("response.output_item.added", map[string]any{"output_index": i, "item": it})
		emit("response.output_item.done", map[string]any{"output_index": i, "item": it})
	}
	emit("response.completed", map[string]any{"response": resp})
	_, _ = w.Write(sse.Bytes())
}

// fakeChat is an httptest handler of Chat Completions that checks that
// every assistant message's tool_calls are answered by tool messages with
// their ids before the next assistant or user message. Replies are a
// function of the step (user and tool messages in the request).
type fakeChat struct {
	script func(step int) map[string]any // the choice's message
	// replies, when set, are the messages in the order of the requests.
	replies []map[string]any

	received
}

func (f *fakeChat) check(body []byte) (step int, stream bool, err error) {
	var req struct {
		Stream   bool `json:"stream"`
		Messages []struct {
			Role       string `json:"role"`
			ToolCallID string `json:"tool_call_id"`
			ToolCalls  []struct {
				ID string `json:"id"`
			} `json:"tool_calls"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		return 0, false, err
	}
	open := map[string]bool{}
	for _, m := range req.Messages {
		switch m.Role {
		case "tool":
			if !open[m.ToolCallID] {
				return 0, req.Stream, fmt.Errorf("invalid parameter: messages with role 'tool' must be a response to a preceding message with 'tool_calls' (%s)", m.ToolCallID)
			}
			delete(open, m.ToolCallID)
			step++
			continue
		case "user":
			step++
		}
		if len(open) > 0 {
			return 0, req.Stream, fmt.Errorf("an assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'")
		}
		for _, tc := range m.ToolCalls {
			open[tc.ID] = true
		}
	}
	if len(open) > 0 {
		return 0, req.Stream, fmt.Errorf("tool_call_ids did not have response messages")
	}
	return step, req.Stream, nil
}

func (f *fakeChat) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	index := f.receive(body)
	step, stream, err := f.check(body)
	if err != nil {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		b, _ := json.Marshal(map[string]any{"error": map[string]any{"type": "invalid_request_error", "message": err.Error()}})
		_, _ = w.Write(b)
		return
	}
	var msg map[string]any
	if f.replies != nil {
		i := index
		msg = map[string]any{"role": "assistant", "content": "no more"}
		if i < len(f.replies) {
			msg = f.replies[i]
		}
	} else {
		msg = f.script(step)
	}
	finish := "stop"
	if _, ok := msg["tool_calls"]; ok {
		finish = "tool_calls"
	}
	id := fmt.Sprintf("chatcmpl-%d", step)
	if !stream {
		w.Header().Set("Content-Type", "application/json")
		b, _ := json.Marshal(map[string]any{"id": id, "object": "chat.completion", "created": 1700000000, "model": "fake-model",
			"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish, "logprobs": nil}},
			"usage":   map[string]any{"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}})
		_, _ = w.Write(b)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	var sse strings.Builder
	chunk := func(delta map[string]any, fin any) {
		b, _ := json.Marshal(map[string]any{"id": id, "object": "chat.completion.chunk", "created": 1700000000, "model": "fake-model",
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": fin}}})
		fmt.Fprintf(&sse, "data: %s\n\n", b)
	}
	chunk(map[string]any{"role": "assistant", "content": ""}, nil)
	if c, ok := msg["content"].(string); ok {
		// Two deltas, to be joined.
		h := len(c) / 2
		chunk(map[string]any{"content": c[:h]}, nil)
		chunk(map[string]any{"content": c[h:]}, nil)
	}
	if tcs, ok := msg["tool_calls"].([]map[string]any); ok {
		for i, tc := range tcs {
			fn := tc["function"].(map[string]any)
			args := fn["arguments"].(string)
			h := len(args) / 2
			chunk(map[string]any{"tool_calls": []any{map[string]any{"index": i, "id": tc["id"], "type": "function",
				"function": map[string]any{"name": fn["name"], "arguments": args[:h]}}}}, nil)
			chunk(map[string]any{"tool_calls": []any{map[string]any{"index": i, "function": map[string]any{"arguments": args[h:]}}}}, nil)
		}
	}
	chunk(map[string]any{}, finish)
	sse.WriteString("data: [DONE]\n\n")
	_, _ = w.Write([]byte(sse.String()))
}
