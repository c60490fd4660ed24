package dsh

import (
	"encoding/json"
	"strings"

	"github.com/sessionlog/sessionlog/importer"
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
// vocabulary into the vocabulary's shape, and says the type the event
// then has (a user/message nobody typed is context); ok is false when the
// data is not of the dsh shape expected (it is then left as it is).
func reshape(typ string, data json.RawMessage) (outType string, out json.RawMessage, ok bool) {
	var v any
	outType = typ
	switch typ {
	case "user/message":
		var d struct {
			Content []part
			Source  *source
		}
		if json.Unmarshal(data, &d) != nil || d.Content == nil {
			return typ, nil, false
		}
		outType, v = userMessage(joinText(d.Content), d.Source)
	case "command/run":
		// A slash command a person typed (dsh's CommandSource: "a
		// human-typed line"); log-only in dsh, the user's input here.
		var d struct {
			Name   *string
			Args   string
			Source *source
		}
		if json.Unmarshal(data, &d) != nil || d.Name == nil {
			return typ, nil, false
		}
		outType, v = userMessage("/"+*d.Name+strings.TrimRight(d.Args, " \t\r\n"), d.Source)
	case "assistant/message":
		var d struct{ Message *struct{ Content []part } }
		if json.Unmarshal(data, &d) != nil || d.Message == nil {
			return typ, nil, false
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
			return typ, nil, false
		}
		v = struct {
			ID   string          `json:"id"`
			Name string          `json:"name"`
			Args json.RawMessage `json:"args"`
		}{*d.CallID, d.Name, args(d.Arguments)}
	case "tool/result":
		out, ok := reshapeResult(data)
		return typ, out, ok
	case "turn/end":
		var d struct{ Reason *struct{ Kind string } }
		if json.Unmarshal(data, &d) != nil || d.Reason == nil {
			return typ, nil, false
		}
		v = struct {
			Kind string `json:"kind"`
		}{d.Reason.Kind}
	case "assistant/chunk":
		var d struct{ Chunk *part }
		if json.Unmarshal(data, &d) != nil || d.Chunk == nil || d.Chunk.Type != "text-delta" {
			return typ, nil, false
		}
		v = struct {
			Text string `json:"text"`
		}{d.Chunk.Text}
	default:
		return typ, nil, false
	}
	b, err := marshal(v)
	return outType, b, err == nil
}

// source is what a dsh message's data.source says of who produced it: its
// kind (dsh's MessageSource, a sum that plugins extend: "user" for what the
// person typed, "plugin", "goal", "skill-invocation", "agent-instructions",
// "session-reference", "subagent-report"…), the plugin of a plugin's
// message, and the form of context it declares (instructions, catalog,
// snapshot, notice, relay, recall).
type source struct {
	Kind   *string `json:"kind"`
	Plugin string  `json:"plugin"`
	Form   string  `json:"form"`
}

// SourceUser is the source kind of a message the person typed; every other
// kind is context a producer injected (dsh's own UI shows it so).
const SourceUser = "user"

// compactPlugin is the plugin of the message a compaction replaces the
// history with (dsh's compaction checkpoint): its text is the summary.
const compactPlugin = "compact"

// userMessage is the event a dsh user/message of text from src becomes:
// user/message {"text"} when the person typed it (source kind "user", or
// no source, as no dsh writes); context/compacted {"summary"} for a
// compaction checkpoint; else context/message {"text","kind","plugin"?,
// "form"?,"role":"user"}, kind being the source's.
func userMessage(text string, src *source) (string, any) {
	switch {
	case src == nil || src.Kind == nil || *src.Kind == SourceUser:
		return "user/message", struct {
			Text string `json:"text"`
		}{text}
	case *src.Kind == "plugin" && src.Plugin == compactPlugin:
		return "context/compacted", struct {
			Summary string `json:"summary"`
		}{text}
	}
	return importer.TypeContext, struct {
		Text   string `json:"text"`
		Kind   string `json:"kind"`
		Plugin string `json:"plugin,omitempty"`
		Form   string `json:"form,omitempty"`
		Role   string `json:"role"`
	}{text, *src.Kind, src.Plugin, src.Form, "user"}
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
