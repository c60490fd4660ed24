package provider

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// The event types of provider records (docs/format.md, "Provider records").
const (
	// TypeRequest is one model call's request: its body as sent, without
	// credentials or transport headers.
	TypeRequest = "provider/request"
	// TypeResponse is the response to the request it names: its JSON body,
	// or its server-sent events in order with their boundaries.
	TypeResponse = "provider/response"
	// TypeInput is content the agent adds to the conversation between two
	// requests (a tool's result), recorded as soon as it exists, in the
	// provider's own shape, so that a resumed loop sends it exactly.
	TypeInput = "provider/input"
)

// ErrRecord is returned, wrapped, for a provider record that cannot be
// read: a wrong shape, a base that is not the previous request, a sealed
// original that the keys cannot open.
var ErrRecord = errors.New("provider: bad record")

// Request is one model call's request.
type Request struct {
	// Seq is the request's seq in the log (0 before it is recorded).
	Seq int64 `json:"-"`
	// Provider and API name the wire format ("anthropic" "messages",
	// "openai" "responses", "openai" "chat.completions").
	Provider string `json:"provider"`
	API      string `json:"api"`
	// Method and Path are the HTTP request's ("POST", "/v1/messages").
	Method string `json:"method"`
	Path   string `json:"path"`
	// Header holds the request headers that change what the provider does
	// (versions, beta flags): never credentials (KeptRequestHeaders).
	Header map[string]string `json:"header,omitempty"`
	// Body is the request body as sent: JSON, compacted.
	Body json.RawMessage `json:"body"`
}

// Response is the response to a request.
type Response struct {
	// Seq is the response's seq in the log (0 before it is recorded).
	Seq int64 `json:"-"`
	// Request is the seq of the request it answers.
	Request int64 `json:"request"`
	// Status is the HTTP status.
	Status int `json:"status"`
	// Header holds the response headers worth keeping (the provider's
	// request id, the content type; KeptResponseHeaders).
	Header map[string]string `json:"header,omitempty"`
	// Body is the JSON body of a response that was not streamed.
	Body json.RawMessage `json:"body,omitempty"`
	// Stream holds a streamed response's events, in order.
	Stream []SSEEvent `json:"stream,omitempty"`
	// Complete is true when the response ended as the provider ends it
	// (Codec.Complete): the body read to its end, a stream up to its last
	// event. A response that is not complete is asked again.
	Complete bool `json:"complete"`
}

// Streamed reports whether the response was a stream of events.
func (r *Response) Streamed() bool { return r.Stream != nil }

// Input is content the agent added to the conversation after a response
// (a tool's result), in the provider's own shape.
type Input struct {
	// Seq is the input's seq in the log.
	Seq int64 `json:"-"`
	// Provider and API name the wire format, as for Request.
	Provider string `json:"provider"`
	API      string `json:"api"`
	// Content is the provider's JSON for it (an Anthropic tool_result
	// block, an OpenAI function_call_output item, a chat tool message).
	Content json.RawMessage `json:"content"`
}

// KeptRequestHeaders are the request headers a record keeps (in lower
// case): what selects the provider's behaviour. Credentials and transport
// headers are never kept.
var keptRequestHeaders = []string{"anthropic-version", "anthropic-beta", "openai-beta"}

// keptResponseHeaders are the response headers a record keeps.
var keptResponseHeaders = []string{"content-type", "request-id", "x-request-id"}

// requestData is a provider/request's data as stored.
type requestData struct {
	Provider string            `json:"provider"`
	API      string            `json:"api"`
	Method   string            `json:"method"`
	Path     string            `json:"path"`
	Header   map[string]string `json:"header,omitempty"`
	// Base, when set, says that the body's list member (Codec.ListKey)
	// holds only the items after the first Keep items of the list of
	// the request at Seq, which is the previous request of the live
	// branch.
	Base *base           `json:"base,omitempty"`
	Body json.RawMessage `json:"body"`
}

type base struct {
	Seq  int64 `json:"seq"`
	Keep int   `json:"keep"`
}

func decodeRequest(data []byte) (requestData, error) {
	var d requestData
	if err := strictUnmarshal(data, &d); err != nil {
		return d, fmt.Errorf("%w: %s: %w", ErrRecord, TypeRequest, err)
	}
	if d.Provider == "" || d.API == "" || len(d.Body) == 0 {
		return d, fmt.Errorf("%w: %s needs provider, api and body", ErrRecord, TypeRequest)
	}
	if d.Base != nil && d.Base.Keep < 0 {
		return d, fmt.Errorf("%w: %s: base.keep %d is negative", ErrRecord, TypeRequest, d.Base.Keep)
	}
	return d, nil
}

func decodeResponse(data []byte) (Response, error) {
	var r Response
	if err := strictUnmarshal(data, &r); err != nil {
		return r, fmt.Errorf("%w: %s: %w", ErrRecord, TypeResponse, err)
	}
	return r, nil
}

func decodeInput(data []byte) (Input, error) {
	var in Input
	if err := strictUnmarshal(data, &in); err != nil {
		return in, fmt.Errorf("%w: %s: %w", ErrRecord, TypeInput, err)
	}
	if len(in.Content) == 0 {
		return in, fmt.Errorf("%w: %s needs content", ErrRecord, TypeInput)
	}
	return in, nil
}

// strictUnmarshal decodes JSON refusing unknown keys: a record's keys are
// exact, as everywhere in the format.
func strictUnmarshal(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("trailing data")
	}
	return nil
}

// marshal encodes v without escaping HTML characters: raw JSON members
// keep their bytes.
func marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrRecord, err)
	}
	return bytes.TrimRight(b.Bytes(), "\n"), nil
}

// compact returns data compacted (whitespace removed, escapes as they
// were), as the log stores data.
func compact(data []byte) ([]byte, error) {
	var b bytes.Buffer
	if err := json.Compact(&b, data); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}
