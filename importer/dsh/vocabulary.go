package dsh

import (
	"encoding/json"
	"strings"
)

// part is one content part of a dsh message.
type part struct {
	Type       string          `json:"type"`
	Text       string          `json:"text"`
	ToolCallID string          `json:"toolCallId"`
	IsError    bool            `json:"isError"`
	Content    json.RawMessage `json:"content"`
}

// reshape rewrites the data of a dsh event whose type is in the docs/format.md §8
// vocabulary into the vocabulary's shape; ok is false when the data is not
// of the dsh shape expected (it is then left as it is).
func reshape(typ string, data json.RawMessage) (out json.RawMessage, ok bool) {
	var v any
	switch typ {
	case "user/message":
		var d struct{ Content []part }
		if json.Unmarshal(data, &d) != nil || d.Content == nil {
			return nil, false
		}
		v = struct {
			Text string `json:"text"`
		}{joinText(d.Content)}
	case "assistant/message":
		var d struct{ Message *struct{ Content []part } }
		if json.Unmarshal(data, &d) != nil || d.Message == nil {
			return nil, false
		}
		v = struct {
			Text string `json:"text"`
		}{joinText(d.Message.Content)}
	case "tool/call":
		var d struct {
			CallID    *string `json:"callId"`
			Name      string
			Arguments json.RawMessage
		}
		if json.Unmarshal(data, &d) != nil || d.CallID == nil {
			return nil, false
		}
		v = struct {
			ID   string          `json:"id"`
			Name string          `json:"name"`
			Args json.RawMessage `json:"args"`
		}{*d.CallID, d.Name, args(d.Arguments)}
	case "tool/result":
		return reshapeResult(data)
	case "turn/end":
		var d struct{ Reason *struct{ Kind string } }
		if json.Unmarshal(data, &d) != nil || d.Reason == nil {
			return nil, false
		}
		v = struct {
			Kind string `json:"kind"`
		}{d.Reason.Kind}
	case "assistant/chunk":
		var d struct{ Chunk *part }
		if json.Unmarshal(data, &d) != nil || d.Chunk == nil || d.Chunk.Type != "text-delta" {
			return nil, false
		}
		v = struct {
			Text string `json:"text"`
		}{d.Chunk.Text}
	default:
		return nil, false
	}
	b, err := marshal(v)
	return b, err == nil
}

func reshapeResult(data json.RawMessage) (json.RawMessage, bool) {
	var d struct {
		Message *struct {
			Source struct {
				CallID string `json:"callId"`
			}
			Content []part
		}
		Error json.RawMessage
	}
	if json.Unmarshal(data, &d) != nil || d.Message == nil {
		return nil, false
	}
	type result struct {
		ID     string `json:"id"`
		Output string `json:"output,omitempty"`
		Error  string `json:"error,omitempty"`
	}
	r := result{ID: d.Message.Source.CallID}
	for _, p := range d.Message.Content {
		if p.Type != "tool-result" {
			continue
		}
		if p.ToolCallID != "" {
			r.ID = p.ToolCallID
		}
		var inner []part
		_ = json.Unmarshal(p.Content, &inner) // not parts: no text
		text := joinText(inner)
		if p.IsError {
			r.Error = text
		} else {
			r.Output = text
		}
		break
	}
	if r.ID == "" {
		return nil, false
	}
	if len(d.Error) > 0 && string(d.Error) != "null" && r.Error == "" {
		r.Error = string(d.Error)
	}
	b, err := marshal(r)
	return b, err == nil
}

// joinText joins the text parts of a message.
func joinText(parts []part) string {
	var b strings.Builder
	for _, p := range parts {
		if p.Type == "text" {
			b.WriteString(p.Text)
		}
	}
	return b.String()
}

// args is a tool call's arguments: dsh stores them as a string of JSON,
// which becomes that JSON; anything else stays as it is.
func args(raw json.RawMessage) json.RawMessage {
	var s string
	if json.Unmarshal(raw, &s) == nil && json.Valid([]byte(s)) {
		return json.RawMessage(s)
	}
	if raw == nil {
		return json.RawMessage("null")
	}
	return raw
}
