package provider

import (
	"encoding/json"
	"strings"
)

// AnthropicMessages is the codec of Anthropic's Messages API
// (POST /v1/messages), streamed or not.
type AnthropicMessages struct{}

// Provider returns "anthropic".
func (AnthropicMessages) Provider() string { return "anthropic" }

// API returns "messages".
func (AnthropicMessages) API() string { return "messages" }

// Match reports whether path is the Messages endpoint (not its
// count_tokens or batches siblings).
func (AnthropicMessages) Match(path string) bool { return strings.HasSuffix(path, "/v1/messages") }

// ListKey returns "messages".
func (AnthropicMessages) ListKey() string { return "messages" }

// Complete reports whether the response is a whole message: a JSON body,
// or a stream that reached message_stop.
func (AnthropicMessages) Complete(r *Response) bool {
	if r.Status/100 != 2 {
		return false
	}
	if !r.Streamed() {
		return str(r.Body, "type") == "message"
	}
	for _, e := range r.Stream {
		if e.Event == "message_stop" || str(e.Data, "type") == "message_stop" {
			return true
		}
	}
	return false
}

// DeriveRequest turns the new user messages into user/message (a new
// turn when they hold text) and their tool_result blocks into tool/result.
func (AnthropicMessages) DeriveRequest(d *Deriver, items []json.RawMessage) {
	for _, it := range items {
		if str(it, "role") != "user" {
			continue
		}
		content, _ := getMember(it, "content")
		var text string
		if json.Unmarshal(content, &text) == nil {
			d.userText(text)
			continue
		}
		var blocks []json.RawMessage
		_ = json.Unmarshal(content, &blocks)
		var texts []string
		for _, b := range blocks {
			switch str(b, "type") {
			case "text":
				texts = append(texts, str(b, "text"))
			case "tool_result":
				anthropicResult(d, b)
			}
		}
		if len(texts) > 0 {
			d.userText(strings.Join(texts, "\n"))
		}
	}
}

func anthropicResult(d *Deriver, b json.RawMessage) {
	id := str(b, "tool_use_id")
	if d.HasResult(id) {
		return
	}
	content, _ := getMember(b, "content")
	m := object{"id": id, "output": textOf(content)}
	if v, ok := getMember(b, "is_error"); ok && string(v) == "true" {
		m["error"] = textOf(content)
		delete(m, "output")
	}
	d.Add("tool/result", m)
}

// DeriveInput derives a tool/result from a tool_result block.
func (AnthropicMessages) DeriveInput(d *Deriver, content json.RawMessage) {
	if str(content, "type") == "tool_result" {
		anthropicResult(d, content)
	}
}

// DeriveResponse derives, block by block in order: thinking and
// redacted_thinking as assistant/reasoning, text as assistant/message,
// tool_use (and server tools) as tool/call, a server tool's result as
// tool/result; then usage.
func (AnthropicMessages) DeriveResponse(d *Deriver, r *Response) (calls []string, stop string) {
	msg := anthropicMessage(r)
	for _, b := range msg.Content {
		switch str(b, "type") {
		case "thinking":
			sig := str(b, "signature")
			d.Add("assistant/reasoning", withOpt(object{"text": str(b, "thinking")}, "signature", sig, sig != ""))
		case "redacted_thinking":
			d.Add("assistant/reasoning", object{"text": "", "redacted": true})
		case "text":
			d.Add("assistant/message", object{"text": str(b, "text")})
		case "tool_use", "server_tool_use", "mcp_tool_use":
			input, ok := getMember(b, "input")
			if !ok {
				input = json.RawMessage("{}")
			}
			id := str(b, "id")
			d.Add("tool/call", object{"id": id, "name": str(b, "name"), "args": input})
			if str(b, "type") == "tool_use" {
				calls = append(calls, id)
			}
		default:
			if id := str(b, "tool_use_id"); id != "" { // a server tool's result
				content, _ := getMember(b, "content")
				d.Add("tool/result", object{"id": id, "output": content})
			}
		}
	}
	usage(d, msg.Usage, msg.Model, msg.ServiceTier)
	return calls, msg.StopReason
}

// Final: the model answered without asking for a tool, and did not pause
// a server tool's long turn.
func (AnthropicMessages) Final(calls []string, stop string) bool {
	return len(calls) == 0 && stop != "tool_use" && stop != "pause_turn"
}

type anthropicMsg struct {
	Model       string
	StopReason  string
	ServiceTier string
	Content     []json.RawMessage
	Usage       map[string]json.RawMessage
}

// anthropicMessage rebuilds the message a response holds, enough for the
// derived events: from the JSON body, or by folding the stream's events.
func anthropicMessage(r *Response) anthropicMsg {
	var m anthropicMsg
	if !r.Streamed() {
		m.Model, m.StopReason = str(r.Body, "model"), str(r.Body, "stop_reason")
		c, _ := getMember(r.Body, "content")
		m.Content, _ = elements(c)
		u, _ := getMember(r.Body, "usage")
		_ = json.Unmarshal(u, &m.Usage)
		m.ServiceTier = str(u, "service_tier")
		return m
	}
	type block struct {
		raw  map[string]json.RawMessage
		text map[string]*strings.Builder
	}
	var blocks []*block
	m.Usage = map[string]json.RawMessage{}
	for _, e := range r.Stream {
		var ev struct {
			Type         string                     `json:"type"`
			Index        int                        `json:"index"`
			Message      json.RawMessage            `json:"message"`
			ContentBlock map[string]json.RawMessage `json:"content_block"`
			Delta        map[string]json.RawMessage `json:"delta"`
			Usage        map[string]json.RawMessage `json:"usage"`
		}
		if json.Unmarshal(e.Data, &ev) != nil {
			continue
		}
		switch ev.Type {
		case "message_start":
			m.Model = str(ev.Message, "model")
			u, _ := getMember(ev.Message, "usage")
			_ = json.Unmarshal(u, &m.Usage)
		case "content_block_start":
			for len(blocks) <= ev.Index && ev.Index < 1<<16 {
				blocks = append(blocks, nil)
			}
			if ev.Index < len(blocks) {
				blocks[ev.Index] = &block{raw: ev.ContentBlock, text: map[string]*strings.Builder{}}
			}
		case "content_block_delta":
			if ev.Index < 0 || ev.Index >= len(blocks) || blocks[ev.Index] == nil {
				continue
			}
			b := blocks[ev.Index]
			var t string
			key := map[string]string{"text_delta": "text", "thinking_delta": "thinking", "signature_delta": "signature", "input_json_delta": "partial_json"}
			dt := ""
			_ = json.Unmarshal(ev.Delta["type"], &dt)
			k, ok := key[dt]
			if !ok {
				continue
			}
			_ = json.Unmarshal(ev.Delta[k], &t)
			if b.text[k] == nil {
				b.text[k] = &strings.Builder{}
			}
			b.text[k].WriteString(t)
		case "message_delta":
			var sr string
			_ = json.Unmarshal(ev.Delta["stop_reason"], &sr)
			m.StopReason = sr
			for k, v := range ev.Usage {
				m.Usage[k] = v
			}
		}
	}
	for _, b := range blocks {
		if b == nil {
			continue
		}
		for k, sb := range b.text {
			if k == "partial_json" {
				if js := sb.String(); json.Valid([]byte(js)) {
					b.raw["input"] = json.RawMessage(js)
				}
				continue
			}
			prev := ""
			_ = json.Unmarshal(b.raw[k], &prev)
			v, _ := marshal(prev + sb.String())
			b.raw[k] = v
		}
		raw, _ := marshal(b.raw)
		m.Content = append(m.Content, raw)
	}
	if v, ok := m.Usage["service_tier"]; ok {
		_ = json.Unmarshal(v, &m.ServiceTier)
	}
	return m
}

// usage derives a usage event from Anthropic's usage object: the cache
// creation with its 5-minute and 1-hour split, and the service tier.
func usage(d *Deriver, u map[string]json.RawMessage, model, tier string) {
	if len(u) == 0 {
		return
	}
	n := func(k string) (int64, bool) {
		var v int64
		raw, ok := u[k]
		return v, ok && json.Unmarshal(raw, &v) == nil
	}
	in, _ := n("input_tokens")
	out, _ := n("output_tokens")
	m := object{"inputTokens": in, "outputTokens": out}
	if c, ok := n("cache_read_input_tokens"); ok {
		m["cachedTokens"] = c
	}
	if c, ok := n("cache_creation_input_tokens"); ok {
		m["cacheWriteTokens"] = c
	}
	if raw, ok := u["cache_creation"]; ok {
		var cc struct {
			E5m *int64 `json:"ephemeral_5m_input_tokens"`
			E1h *int64 `json:"ephemeral_1h_input_tokens"`
		}
		if json.Unmarshal(raw, &cc) == nil && (cc.E5m != nil || cc.E1h != nil) {
			m["cacheWriteByTTL"] = object{"5m": deref(cc.E5m), "1h": deref(cc.E1h)}
		}
	}
	withOpt(m, "serviceTier", tier, tier != "")
	withOpt(m, "model", model, model != "")
	d.Add("usage", m)
}

func deref(p *int64) int64 {
	if p == nil {
		return 0
	}
	return *p
}
