// Package anthropictest is a fake of Anthropic's Messages API for tests:
// an httptest server that checks requests as the API does and answers
// them from a deterministic model script, streamed or not.
//
// The checks: every thinking block's signature must be the one the fake
// issued for its text (an HMAC with a key of the fake), every
// redacted_thinking block's data must be intact, every tool_use must be
// answered by a tool_result in the next message (and every tool_result
// answer a tool_use of the message before), and, with thinking on, an
// assistant message that calls tools must start with thinking. A request
// that fails one gets 400 invalid_request_error ("Invalid signature in
// thinking block", …), as the API answers.
//
// The script answers from the request alone, so a loop that resumes and
// sends the same request gets the same response: each user message with
// text starts a turn; step s of turn t calls the tools Plan(t, s) gives
// (thinking first, quoting the last tool result it was sent, then a
// redacted_thinking block from the second step on, a text, the tool_use
// blocks), and the step with no tools answers with text and end_turn.
//
// It knows nothing of sessionlog.
package anthropictest

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
)

// Call is a tool call the script makes.
type Call struct {
	Name  string
	Input map[string]string
}

// Point is a moment of the fake's handling of a request, for a test to
// act at (kill its client, say).
type Point struct {
	// Kind is "request" (received and checked, nothing answered yet),
	// "partial" (a stream's first half sent and flushed) or "response"
	// (the whole response written and flushed).
	Kind string
	// N counts the requests the server received since Reset, from 0.
	N int
}

// Received is a request the fake received.
type Received struct {
	// Body is the request body as canonical JSON (decoded and encoded
	// again: keys sorted).
	Body string
	// Status is what the fake answered.
	Status int
	// Error is the message of a 400, else "".
	Error string
}

// Server is the fake. It is safe for concurrent use.
type Server struct {
	*httptest.Server
	plan  func(turn, step int) []Call
	hook  func(Point)
	quote string
	key   []byte
	mu    sync.Mutex
	got   []Received
}

// Option configures a Server.
type Option func(*Server)

// WithHook sets a func called at each Point, synchronously: the handler
// goes on when it returns.
func WithHook(f func(Point)) Option { return func(s *Server) { s.hook = f } }

// WithQuote names the one tool whose results the thinking quotes (by
// default, every tool's).
func WithQuote(tool string) Option { return func(s *Server) { s.quote = tool } }

// New starts a fake whose model follows plan: plan(t, s) gives the tool
// calls of step s of turn t (both from 0); none ends the turn with a text
// answer.
func New(plan func(turn, step int) []Call, opts ...Option) *Server {
	s := &Server{plan: plan, key: []byte("anthropictest signing key")}
	for _, o := range opts {
		o(s)
	}
	s.Server = httptest.NewServer(http.HandlerFunc(s.handle))
	return s
}

// Requests returns the requests received since Reset, in order.
func (s *Server) Requests() []Received {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Received(nil), s.got...)
}

// Reset forgets the requests received (and restarts Point.N).
func (s *Server) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.got = nil
}

// Sign returns the signature the fake issues for a thinking text.
func (s *Server) Sign(thinking string) string {
	m := hmac.New(sha256.New, s.key)
	m.Write([]byte("thinking\x00" + thinking))
	return base64.StdEncoding.EncodeToString(m.Sum(nil))
}

// Redacted returns redacted_thinking data the fake issues: a payload and
// its MAC.
func (s *Server) Redacted(payload string) string {
	m := hmac.New(sha256.New, s.key)
	m.Write([]byte("redacted\x00" + payload))
	return base64.StdEncoding.EncodeToString([]byte(payload)) + "." + hex.EncodeToString(m.Sum(nil))
}

func (s *Server) redactedOK(data string) bool {
	p, _, ok := strings.Cut(data, ".")
	if !ok {
		return false
	}
	payload, err := base64.StdEncoding.DecodeString(p)
	return err == nil && s.Redacted(string(payload)) == data
}

type block = map[string]any

type request struct {
	Stream   bool                   `json:"stream"`
	Model    string                 `json:"model"`
	Thinking *struct{ Type string } `json:"thinking"`
	Messages []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
}

func blocksOf(raw json.RawMessage) []block {
	var text string
	if json.Unmarshal(raw, &text) == nil {
		return []block{{"type": "text", "text": text}}
	}
	var bs []block
	_ = json.Unmarshal(raw, &bs)
	return bs
}

func str(b block, k string) string { v, _ := b[k].(string); return v }

// check returns why the API would refuse req, or "".
func (s *Server) check(req *request) string {
	thinkingOn := req.Thinking != nil && req.Thinking.Type == "enabled"
	for i, m := range req.Messages {
		bs := blocksOf(m.Content)
		var uses []string
		for j, b := range bs {
			switch str(b, "type") {
			case "thinking":
				if m.Role != "assistant" || str(b, "signature") != s.Sign(str(b, "thinking")) {
					return fmt.Sprintf("messages.%d.content.%d: Invalid signature in thinking block", i, j)
				}
			case "redacted_thinking":
				if !s.redactedOK(str(b, "data")) {
					return fmt.Sprintf("messages.%d.content.%d: Invalid redacted_thinking data", i, j)
				}
			case "tool_use":
				uses = append(uses, str(b, "id"))
			}
		}
		if m.Role == "assistant" && len(uses) > 0 && thinkingOn && (len(bs) == 0 || (str(bs[0], "type") != "thinking" && str(bs[0], "type") != "redacted_thinking")) {
			return fmt.Sprintf("messages.%d.content.0: Expected `thinking` or `redacted_thinking`, but found `%s`. When `thinking` is enabled, a final `assistant` message must start with a thinking block", i, str(bs[0], "type"))
		}
		answered := map[string]bool{}
		if i+1 < len(req.Messages) {
			for _, b := range blocksOf(req.Messages[i+1].Content) {
				if str(b, "type") == "tool_result" {
					answered[str(b, "tool_use_id")] = true
				}
			}
		}
		for _, id := range uses {
			if !answered[id] {
				return fmt.Sprintf("messages.%d: `tool_use` ids were found without `tool_result` blocks immediately after: %s", i, id)
			}
		}
		if m.Role == "user" {
			prev := map[string]bool{}
			if i > 0 && req.Messages[i-1].Role == "assistant" {
				for _, b := range blocksOf(req.Messages[i-1].Content) {
					if str(b, "type") == "tool_use" {
						prev[str(b, "id")] = true
					}
				}
			}
			for j, b := range bs {
				if str(b, "type") == "tool_result" && !prev[str(b, "tool_use_id")] {
					return fmt.Sprintf("messages.%d.content.%d: unexpected `tool_use_id` found in `tool_result` blocks: %s", i, j, str(b, "tool_use_id"))
				}
			}
		}
	}
	if n := len(req.Messages); n == 0 || req.Messages[n-1].Role != "user" {
		return "messages: the last message must have role `user`"
	}
	return ""
}

// reply is the script's answer to a valid request.
func (s *Server) reply(req *request) (content []block, stop, id string) {
	turn, step := -1, 0
	lastResult := ""
	names := map[string]string{}
	for _, m := range req.Messages {
		bs := blocksOf(m.Content)
		if m.Role == "user" {
			for _, b := range bs {
				switch str(b, "type") {
				case "text":
					turn, step = turn+1, 0
				case "tool_result":
					if s.quote == "" || names[str(b, "tool_use_id")] == s.quote {
						lastResult = textOf(b["content"])
					}
				}
			}
		} else {
			step++
			for _, b := range bs {
				names[str(b, "id")] = str(b, "name")
			}
		}
	}
	id = fmt.Sprintf("msg_%d_%d", turn, step)
	thinking := fmt.Sprintf("Turn %d, step %d.", turn, step)
	if lastResult != "" {
		thinking += " The last tool said: " + lastResult
	}
	content = []block{{"type": "thinking", "thinking": thinking, "signature": s.Sign(thinking)}}
	if step > 0 {
		content = append(content, block{"type": "redacted_thinking", "data": s.Redacted(id)})
	}
	calls := s.plan(turn, step)
	if len(calls) == 0 {
		return append(content, block{"type": "text", "text": fmt.Sprintf("Done with turn %d.", turn)}), "end_turn", id
	}
	content = append(content, block{"type": "text", "text": "Let me use my tools."})
	for i, c := range calls {
		content = append(content, block{"type": "tool_use", "id": fmt.Sprintf("toolu_%d_%d_%d", turn, step, i), "name": c.Name, "input": c.Input})
	}
	return content, "tool_use", id
}

func textOf(v any) string {
	switch c := v.(type) {
	case string:
		return c
	case []any:
		var parts []string
		for _, x := range c {
			if b, ok := x.(map[string]any); ok {
				parts = append(parts, str(b, "text"))
			}
		}
		return strings.Join(parts, "")
	}
	return ""
}

func (s *Server) handle(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil || r.URL.Path != "/v1/messages" {
		http.Error(w, "not found", http.StatusNotFound)
		return
	}
	var req request
	jerr := json.Unmarshal(body, &req)
	var v any
	_ = json.Unmarshal(body, &v)
	canon, _ := json.Marshal(v)
	msg := "bad JSON"
	if jerr == nil {
		msg = s.check(&req)
	}
	s.mu.Lock()
	n := len(s.got)
	status := http.StatusOK
	if msg != "" {
		status = http.StatusBadRequest
	}
	s.got = append(s.got, Received{Body: string(canon), Status: status, Error: msg})
	s.mu.Unlock()
	s.at(Point{"request", n})
	if msg != "" {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		b, _ := json.Marshal(map[string]any{"type": "error", "error": map[string]any{"type": "invalid_request_error", "message": msg}})
		_, _ = w.Write(b)
		s.at(Point{"response", n})
		return
	}
	content, stop, id := s.reply(&req)
	usage := block{"input_tokens": 10 * len(req.Messages), "output_tokens": 7, "cache_creation_input_tokens": 3, "cache_read_input_tokens": 2,
		"cache_creation": block{"ephemeral_5m_input_tokens": 1, "ephemeral_1h_input_tokens": 2}, "service_tier": "standard"}
	msgObj := block{"id": id, "type": "message", "role": "assistant", "model": req.Model, "content": content,
		"stop_reason": stop, "stop_sequence": nil, "usage": usage}
	if !req.Stream {
		w.Header().Set("Content-Type", "application/json")
		b, _ := json.Marshal(msgObj)
		_, _ = w.Write(b)
		flush(w)
		s.at(Point{"response", n})
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	events := streamEvents(msgObj, content, stop)
	for i, e := range events {
		b, _ := json.Marshal(e)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", e["type"], b)
		if i == len(events)/2 {
			flush(w)
			s.at(Point{"partial", n})
		}
	}
	flush(w)
	s.at(Point{"response", n})
}

func (s *Server) at(p Point) {
	if s.hook != nil {
		s.hook(p)
	}
}

func flush(w http.ResponseWriter) {
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
}

// streamEvents splits a message into the events the API streams it as.
func streamEvents(msg block, content []block, stop string) []block {
	start := block{}
	for k, v := range msg {
		start[k] = v
	}
	start["content"], start["stop_reason"] = []block{}, nil
	start["usage"] = block{"input_tokens": msg["usage"].(block)["input_tokens"], "output_tokens": 1}
	evs := []block{{"type": "message_start", "message": start}, {"type": "ping"}}
	half := func(s string) []string { h := len(s) / 2; return []string{s[:h], s[h:]} }
	for i, b := range content {
		var first block
		var deltas []block
		switch str(b, "type") {
		case "thinking":
			first = block{"type": "thinking", "thinking": "", "signature": ""}
			for _, p := range half(str(b, "thinking")) {
				deltas = append(deltas, block{"type": "thinking_delta", "thinking": p})
			}
			deltas = append(deltas, block{"type": "signature_delta", "signature": str(b, "signature")})
		case "text":
			first = block{"type": "text", "text": ""}
			for _, p := range half(str(b, "text")) {
				deltas = append(deltas, block{"type": "text_delta", "text": p})
			}
		case "tool_use":
			first = block{"type": "tool_use", "id": b["id"], "name": b["name"], "input": block{}}
			in, _ := json.Marshal(b["input"])
			for _, p := range half(string(in)) {
				deltas = append(deltas, block{"type": "input_json_delta", "partial_json": p})
			}
		default:
			first = b
		}
		evs = append(evs, block{"type": "content_block_start", "index": i, "content_block": first})
		for _, d := range deltas {
			evs = append(evs, block{"type": "content_block_delta", "index": i, "delta": d})
		}
		evs = append(evs, block{"type": "content_block_stop", "index": i})
	}
	evs = append(evs, block{"type": "message_delta", "delta": block{"stop_reason": stop, "stop_sequence": nil}, "usage": msg["usage"]},
		block{"type": "message_stop"})
	return evs
}
