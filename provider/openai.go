package provider

import (
	"encoding/json"
	"strings"
)

// OpenAIResponses is the codec of OpenAI's Responses API (POST
// /responses), streamed or not.
type OpenAIResponses struct{}

// Provider returns "openai".
func (OpenAIResponses) Provider() string { return "openai" }

// API returns "responses".
func (OpenAIResponses) API() string { return "responses" }

// Match reports whether path is the Responses endpoint.
func (OpenAIResponses) Match(path string) bool { return strings.HasSuffix(path, "/responses") }

// ListKey returns "input".
func (OpenAIResponses) ListKey() string { return "input" }

// Complete reports whether the response reached its end: a JSON body whose
// status is completed or incomplete, or a stream with response.completed
// or response.incomplete.
func (OpenAIResponses) Complete(r *Response) bool {
	if r.Status/100 != 2 {
		return false
	}
	resp := responsesBody(r)
	s := str(resp, "status")
	return s == "completed" || s == "incomplete"
}

// responsesBody returns the final response object: the body, or the
// response of a stream's terminal event.
func responsesBody(r *Response) json.RawMessage {
	if !r.Streamed() {
		return r.Body
	}
	for i := len(r.Stream) - 1; i >= 0; i-- {
		switch str(r.Stream[i].Data, "type") {
		case "response.completed", "response.incomplete", "response.failed":
			v, _ := getMember(r.Stream[i].Data, "response")
			return v
		}
	}
	return nil
}

// DeriveRequest turns new user messages into user/message and
// function_call_output items into tool/result.
func (OpenAIResponses) DeriveRequest(d *Deriver, items []json.RawMessage) {
	for _, it := range items {
		switch typ := str(it, "type"); {
		case typ == "function_call_output":
			openaiResult(d, str(it, "call_id"), it, "output")
		case (typ == "" || typ == "message") && str(it, "role") == "user":
			content, _ := getMember(it, "content")
			d.userText(textOf(content))
		}
	}
}

func openaiResult(d *Deriver, id string, it json.RawMessage, key string) {
	if d.HasResult(id) {
		return
	}
	v, _ := getMember(it, key)
	d.Add("tool/result", object{"id": id, "output": textOf(v)})
}

// DeriveInput derives a tool/result from a function_call_output item.
func (OpenAIResponses) DeriveInput(d *Deriver, content json.RawMessage) {
	if str(content, "type") == "function_call_output" {
		openaiResult(d, str(content, "call_id"), content, "output")
	}
}

// DeriveResponse derives the output items in order: reasoning (its
// summary's text) as assistant/reasoning, messages as assistant/message,
// function calls as tool/call; then usage.
func (OpenAIResponses) DeriveResponse(d *Deriver, r *Response) (calls []string, stop string) {
	resp := responsesBody(r)
	out, _ := getMember(resp, "output")
	items, _ := elements(out)
	for _, it := range items {
		switch str(it, "type") {
		case "reasoning":
			s, _ := getMember(it, "summary")
			_, enc := getMember(it, "encrypted_content")
			d.Add("assistant/reasoning", withOpt(object{"text": textOf(s)}, "encrypted", true, enc))
		case "message":
			c, _ := getMember(it, "content")
			d.Add("assistant/message", object{"text": textOf(c)})
		case "function_call", "custom_tool_call":
			id := str(it, "call_id")
			args := json.RawMessage(str(it, "arguments"))
			if !json.Valid(args) {
				args, _ = marshal(str(it, "arguments") + str(it, "input"))
			}
			d.Add("tool/call", object{"id": id, "name": str(it, "name"), "args": args})
			calls = append(calls, id)
		}
	}
	u, _ := getMember(resp, "usage")
	openaiUsage(d, u, "input_tokens", "output_tokens", "input_tokens_details", str(resp, "model"), str(resp, "service_tier"))
	stop = str(resp, "status")
	if inc, ok := getMember(resp, "incomplete_details"); ok && str(inc, "reason") != "" {
		stop = str(inc, "reason")
	}
	return calls, stop
}

// Final: no function call to answer.
func (OpenAIResponses) Final(calls []string, _ string) bool { return len(calls) == 0 }

func openaiUsage(d *Deriver, u json.RawMessage, inKey, outKey, detailsKey, model, tier string) {
	if len(u) == 0 || string(u) == "null" {
		return
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(u, &m) != nil {
		return
	}
	num := func(raw json.RawMessage) int64 {
		var v int64
		_ = json.Unmarshal(raw, &v)
		return v
	}
	o := object{"inputTokens": num(m[inKey]), "outputTokens": num(m[outKey])}
	if det, ok := m[detailsKey]; ok {
		if c, ok := getMember(det, "cached_tokens"); ok {
			o["cachedTokens"] = num(c)
		}
	}
	withOpt(o, "serviceTier", tier, tier != "")
	withOpt(o, "model", model, model != "")
	d.Add("usage", o)
}

// OpenAIChat is the codec of OpenAI's Chat Completions API (POST
// /chat/completions), streamed or not.
type OpenAIChat struct{}

// Provider returns "openai".
func (OpenAIChat) Provider() string { return "openai" }

// API returns "chat.completions".
func (OpenAIChat) API() string { return "chat.completions" }

// Match reports whether path is the Chat Completions endpoint.
func (OpenAIChat) Match(path string) bool { return strings.HasSuffix(path, "/chat/completions") }

// ListKey returns "messages".
func (OpenAIChat) ListKey() string { return "messages" }

// Complete reports whether the response reached its end: a JSON body with
// a finish_reason, or a stream that reached [DONE].
func (OpenAIChat) Complete(r *Response) bool {
	if r.Status/100 != 2 {
		return false
	}
	if !r.Streamed() {
		return str(r.Body, "object") == "chat.completion"
	}
	n := len(r.Stream)
	return n > 0 && string(r.Stream[n-1].Text()) == "[DONE]"
}

// DeriveRequest turns new user messages into user/message and tool
// messages into tool/result.
func (OpenAIChat) DeriveRequest(d *Deriver, items []json.RawMessage) {
	for _, it := range items {
		switch str(it, "role") {
		case "user":
			c, _ := getMember(it, "content")
			d.userText(textOf(c))
		case "tool":
			openaiResult(d, str(it, "tool_call_id"), it, "content")
		}
	}
}

// DeriveInput derives a tool/result from a tool message.
func (OpenAIChat) DeriveInput(d *Deriver, content json.RawMessage) {
	if str(content, "role") == "tool" {
		openaiResult(d, str(content, "tool_call_id"), content, "content")
	}
}

// DeriveResponse derives the first choice's message: its text as
// assistant/message, its tool calls as tool/call; then usage.
func (OpenAIChat) DeriveResponse(d *Deriver, r *Response) (calls []string, stop string) {
	var text strings.Builder
	type call struct{ id, name, args string }
	var cs []*call
	var usageRaw json.RawMessage
	var model, tier string
	take := func(chunk json.RawMessage, deltaKey string) {
		if u, ok := getMember(chunk, "usage"); ok && string(u) != "null" {
			usageRaw = u
		}
		if m := str(chunk, "model"); m != "" {
			model = m
		}
		if t := str(chunk, "service_tier"); t != "" {
			tier = t
		}
		ch, _ := getMember(chunk, "choices")
		choices, _ := elements(ch)
		if len(choices) == 0 {
			return
		}
		c := choices[0]
		if fr := str(c, "finish_reason"); fr != "" {
			stop = fr
		}
		msg, _ := getMember(c, deltaKey)
		text.WriteString(str(msg, "content"))
		tc, _ := getMember(msg, "tool_calls")
		tcs, _ := elements(tc)
		for k, t := range tcs {
			idx := k
			if v, ok := getMember(t, "index"); ok {
				_ = json.Unmarshal(v, &idx)
			}
			for len(cs) <= idx && idx < 1<<12 {
				cs = append(cs, &call{})
			}
			if idx >= len(cs) {
				continue
			}
			// A function call's name and arguments are in "function", a
			// custom tool call's name and input in "custom".
			fn, ok := getMember(t, "function")
			argsKey := "arguments"
			if c, isCustom := getMember(t, "custom"); !ok && isCustom {
				fn, argsKey = c, "input"
			}
			if id := str(t, "id"); id != "" {
				cs[idx].id = id
			}
			if n := str(fn, "name"); n != "" {
				cs[idx].name = n
			}
			cs[idx].args += str(fn, argsKey)
		}
	}
	if r.Streamed() {
		for _, e := range r.Stream {
			if json.Valid(e.Text()) {
				take(e.Data, "delta")
			}
		}
	} else {
		take(r.Body, "message")
	}
	if text.Len() > 0 {
		d.Add("assistant/message", object{"text": text.String()})
	}
	for _, c := range cs {
		args := json.RawMessage(c.args)
		if !json.Valid(args) {
			args, _ = marshal(c.args)
		}
		d.Add("tool/call", object{"id": c.id, "name": c.name, "args": args})
		calls = append(calls, c.id)
	}
	openaiUsage(d, usageRaw, "prompt_tokens", "completion_tokens", "prompt_tokens_details", model, tier)
	return calls, stop
}

// Final: no tool call to answer.
func (OpenAIChat) Final(calls []string, stop string) bool {
	return len(calls) == 0 && stop != "tool_calls"
}
