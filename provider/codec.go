package provider

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/sessionlog/sessionlog/eventlog"
)

// Codec knows one provider API's wire format: where its conversation
// items are, when a response is complete, and which agent-vocabulary
// events (docs/format.md §8) a request, a response and an input imply.
// It works on JSON, never on an SDK's types.
type Codec interface {
	// Provider and API name the format ("anthropic", "messages").
	Provider() string
	API() string
	// Match reports whether an HTTP request's path is the API's endpoint.
	Match(path string) bool
	// ListKey is the request body's member that holds the conversation
	// items ("messages", "input").
	ListKey() string
	// Complete reports whether a 2xx response ended as the provider
	// ends it.
	Complete(r *Response) bool
	// DeriveRequest adds the events that the items new in this request
	// imply (user messages, tool results not recorded as inputs).
	DeriveRequest(d *Deriver, items []json.RawMessage)
	// DeriveResponse adds the events of a complete response: reasoning,
	// messages, tool calls, usage; it returns the tool call ids and the
	// stop reason.
	DeriveResponse(d *Deriver, r *Response) (calls []string, stop string)
	// DeriveInput adds the events an input implies (a tool result).
	DeriveInput(d *Deriver, content json.RawMessage)
	// Deltas groups a streamed response's text pieces: each group's
	// strings, joined in order, are one text the provider sent in parts
	// (so a secret split across two events is found in the join).
	Deltas(r *Response) [][]DeltaRef
	// Final reports whether a complete response with these calls and
	// stop reason ends the turn (the model answered; no tool to run).
	Final(calls []string, stop string) bool
}

// Codecs returns the built-in codecs: Anthropic Messages, OpenAI
// Responses and OpenAI Chat Completions.
func Codecs() []Codec {
	return []Codec{AnthropicMessages{}, OpenAIResponses{}, OpenAIChat{}}
}

// Deriver collects the agent-vocabulary events a codec derives.
type Deriver struct {
	time    int64
	events  []eventlog.Event
	results map[string]bool // tool ids with a result since the last response
	err     error
	// turnStarted is set once a turn/start is derived in this batch.
	turnStarted bool
}

// Add appends an event of type typ whose data is v marshalled.
func (d *Deriver) Add(typ string, v any) {
	b, err := marshal(v)
	if err != nil {
		d.err = errors.Join(d.err, err)
		return
	}
	d.events = append(d.events, eventlog.Event{Type: typ, Time: d.time, Data: b})
}

// HasResult reports whether the tool call id already has a result
// recorded (as an input) since the last response.
func (d *Deriver) HasResult(id string) bool { return d.results[id] }

// object is the data of a derived event.
type object = map[string]any

// withOpt sets key when set is true.
func withOpt(m object, key string, v any, set bool) object {
	if set {
		m[key] = v
	}
	return m
}

// members splits a JSON object into its members, values as raw bytes
// exactly as written.
func members(obj []byte) ([]member, error) {
	dec := json.NewDecoder(bytes.NewReader(obj))
	dec.UseNumber()
	t, err := dec.Token()
	if err != nil {
		return nil, err
	}
	if d, ok := t.(json.Delim); !ok || d != '{' {
		return nil, errors.New("not an object")
	}
	var out []member
	for dec.More() {
		kt, err := dec.Token()
		if err != nil {
			return nil, err
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, err
		}
		out = append(out, member{kt.(string), raw})
	}
	return out, nil
}

type member struct {
	key string
	raw json.RawMessage
}

// joinObject is members' inverse.
func joinObject(ms []member) ([]byte, error) {
	b := []byte{'{'}
	for i, m := range ms {
		if i > 0 {
			b = append(b, ',')
		}
		k, err := marshal(m.key)
		if err != nil {
			return nil, err
		}
		b = append(append(append(b, k...), ':'), m.raw...)
	}
	return append(b, '}'), nil
}

// getMember returns the raw value of obj's member key.
func getMember(obj []byte, key string) (json.RawMessage, bool) {
	v, ok := eventlog.Member(obj, key)
	return v, ok
}

// elements splits a JSON array into its elements, raw.
func elements(arr []byte) ([]json.RawMessage, error) {
	var out []json.RawMessage
	if err := json.Unmarshal(arr, &out); err != nil {
		return nil, err
	}
	// json.Unmarshal into RawMessage keeps each element's bytes.
	return out, nil
}

// joinArray is elements' inverse.
func joinArray(items []json.RawMessage) []byte {
	b := []byte{'['}
	for i, it := range items {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, it...)
	}
	return append(b, ']')
}

// str reads a JSON string member of obj ("" when absent or not a string).
func str(obj []byte, key string) string {
	v, ok := getMember(obj, key)
	if !ok {
		return ""
	}
	var s string
	if json.Unmarshal(v, &s) != nil {
		return ""
	}
	return s
}

// codecFor returns the codec whose endpoint path is.
func codecFor(codecs []Codec, path string) Codec {
	for _, c := range codecs {
		if c.Match(path) {
			return c
		}
	}
	return nil
}

// codecNamed returns the codec of provider and api.
func codecNamed(codecs []Codec, provider, api string) (Codec, error) {
	for _, c := range codecs {
		if c.Provider() == provider && c.API() == api {
			return c, nil
		}
	}
	return nil, fmt.Errorf("%w: no codec for %s %s", ErrRecord, provider, api)
}

// textOf joins the text of a content value: a string, or an array of
// blocks with "text" members.
func textOf(v json.RawMessage) string {
	var s string
	if json.Unmarshal(v, &s) == nil {
		return s
	}
	var blocks []json.RawMessage
	if json.Unmarshal(v, &blocks) != nil {
		return ""
	}
	var parts []string
	for _, b := range blocks {
		if t := str(b, "text"); t != "" {
			parts = append(parts, t)
		}
	}
	return strings.Join(parts, "\n")
}

// userText derives a user's text message: the start of a turn (once per
// request), then user/message.
func (d *Deriver) userText(text string) {
	if !d.turnStarted {
		d.turnStarted = true
		d.Add("turn/start", object{})
	}
	d.Add("user/message", object{"text": text})
}
