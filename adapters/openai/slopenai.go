package slopenai

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/param"

	"github.com/sessionlog/sessionlog/provider"
)

// Record returns the client option that records every Responses and Chat
// Completions call made through the client in ps.
func Record(ps *provider.Session) option.RequestOption {
	return option.WithMiddleware(ps.Middleware())
}

// Provider and API names of the provider records this package reads.
const (
	ProviderName = "openai"
	APIResponses = "responses"
	APIChat      = "chat.completions"
)

// UnknownOutcome is the output a resumed loop gives a call that was marked
// started (provider.Session.BeginTool) and has no recorded result: the
// process stopped while the tool ran, so whether its effect happened is
// not known. The model is told so, and decides (docs/format.md §8,
// "Resume").
const UnknownOutcome = "sessionlog: the agent stopped while this tool was running; its outcome is unknown. Check its effect before running it again."

// ErrConversation is returned, wrapped, when a conversation cannot be
// turned into the SDK's params (another API's records, a body or response
// that does not decode).
var ErrConversation = errors.New("slopenai: conversation cannot be rebuilt")

// Call is a tool call of the last response that has no result recorded.
type Call struct {
	// Type is the output item's type ("function_call", "custom_tool_call",
	// ...; "function" or "custom" for Chat Completions).
	Type string
	// CallID is the id the output must carry.
	CallID string
	// Name is the tool's name.
	Name string
	// Arguments holds a function call's arguments (a custom tool call's
	// input).
	Arguments string
	// Item is the call as the provider sent it.
	Item json.RawMessage
	// Started is true when the loop marked the call started
	// (provider.Session.BeginTool) before the process stopped: a
	// write-effect call whose outcome is unknown. A call that is not
	// started never ran (or is read-effect) and is run.
	Started bool
}

// RecordOutput records a Responses input item (a function_call_output, a
// custom_tool_call_output, ...) in ps, durably: call it as soon as the
// tool has run, before the next request.
func RecordOutput(ctx context.Context, ps *provider.Session, item any) error {
	b, err := json.Marshal(item)
	if err != nil {
		return fmt.Errorf("slopenai: %w", err)
	}
	_, err = ps.Input(ctx, ProviderName, APIResponses, b)
	return err
}

// RecordToolMessage records a Chat Completions message (a tool message)
// in ps, durably: call it as soon as the tool has run.
func RecordToolMessage(ctx context.Context, ps *provider.Session, msg any) error {
	b, err := json.Marshal(msg)
	if err != nil {
		return fmt.Errorf("slopenai: %w", err)
	}
	_, err = ps.Input(ctx, ProviderName, APIChat, b)
	return err
}

// split returns a JSON object's members in order, raw.
func split(obj []byte) ([]string, map[string]json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(obj))
	t, err := dec.Token()
	if err != nil {
		return nil, nil, err
	}
	if d, ok := t.(json.Delim); !ok || d != '{' {
		return nil, nil, errors.New("not a JSON object")
	}
	var keys []string
	m := map[string]json.RawMessage{}
	for dec.More() {
		kt, err := dec.Token()
		if err != nil {
			return nil, nil, err
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, nil, err
		}
		k := kt.(string)
		if _, dup := m[k]; !dup {
			keys = append(keys, k)
		}
		m[k] = raw
	}
	return keys, m, nil
}

// Canonical returns data re-encoded through any (unmarshal, marshal):
// object keys sorted, whitespace and escapes normalised. Two requests are
// the same request when their canonical forms are equal.
func Canonical(data []byte) ([]byte, error) {
	var v any
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return json.Marshal(v)
}

func sameJSON(a, b []byte) bool {
	ca, err1 := Canonical(a)
	cb, err2 := Canonical(b)
	return err1 == nil && err2 == nil && bytes.Equal(ca, cb)
}

// paramsFrom fills p (a params struct that UnmarshalJSON fills) from a
// recorded request body, with list as its list member, so that p
// marshals to the body exactly as canonical JSON: members the SDK's
// types do not give back as they were are set as extra fields.
// "stream" is dropped: the SDK sets it by the method called.
func paramsFrom[T param.ParamStruct, P interface {
	*T
	json.Unmarshaler
	SetExtraFields(map[string]any)
}](body []byte, listKey string, setList func(*T)) (T, error) {
	var p T
	keys, members, err := split(body)
	if err != nil {
		return p, fmt.Errorf("%w: request body: %w", ErrConversation, err)
	}
	delete(members, "stream")
	// Decode every member but the list (set by setList).
	rest := map[string]json.RawMessage{}
	for k, v := range members {
		if k != listKey {
			rest[k] = v
		}
	}
	rb, err := json.Marshal(rest)
	if err != nil {
		return p, fmt.Errorf("%w: %w", ErrConversation, err)
	}
	if err := P(&p).UnmarshalJSON(rb); err != nil {
		return p, fmt.Errorf("%w: request body: %w", ErrConversation, err)
	}
	setList(&p)
	got, err := json.Marshal(p)
	if err != nil {
		return p, fmt.Errorf("%w: %w", ErrConversation, err)
	}
	_, gm, err := split(got)
	if err != nil {
		return p, fmt.Errorf("%w: %w", ErrConversation, err)
	}
	extras := map[string]any{}
	for _, k := range keys {
		if k == listKey || k == "stream" {
			continue
		}
		if g, ok := gm[k]; !ok || !sameJSON(g, members[k]) {
			extras[k] = members[k]
		}
	}
	for k := range gm {
		if _, ok := members[k]; !ok && k != listKey {
			extras[k] = param.Omit
		}
	}
	if len(extras) > 0 {
		P(&p).SetExtraFields(extras)
	}
	return p, nil
}

// elements splits a JSON array into its elements.
func elements(arr json.RawMessage) ([]json.RawMessage, error) {
	var out []json.RawMessage
	if err := json.Unmarshal(arr, &out); err != nil {
		return nil, err
	}
	return out, nil
}

// str reads a string member of a JSON object ("" when absent).
func str(obj json.RawMessage, key string) string {
	var m map[string]json.RawMessage
	if json.Unmarshal(obj, &m) != nil {
		return ""
	}
	var s string
	_ = json.Unmarshal(m[key], &s)
	return s
}

func contains(ids []string, id string) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}
