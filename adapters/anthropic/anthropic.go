package anthropic

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/sessionlog/sessionlog/provider"
)

// Provider and API name the Messages API's provider records.
const (
	Provider = "anthropic"
	API      = "messages"
)

// OutcomeUnknown is the text of the result a started Write call without a
// result gets on resume.
const OutcomeUnknown = "outcome unknown: the process stopped before this call's result was recorded; it may have run and changed something, so check before retrying"

// ErrConversation is returned, wrapped, when the recorded conversation
// cannot be turned into the SDK's types.
var ErrConversation = errors.New("anthropic adapter: conversation")

// Record returns the client option that records every Messages call
// through ps: pass it to anthropic.NewClient.
func Record(ps *provider.Session) option.RequestOption {
	return option.WithMiddleware(ps.Middleware())
}

// Effect says what a tool does to the world, for resume.
type Effect int

const (
	// Write (the default for a tool the map does not name): running it
	// again may repeat an effect.
	Write Effect = iota
	// Read: the tool only reads; running it again is safe.
	Read
)

// Call is a tool call of the last response that has no result yet.
type Call struct {
	// Use is the tool_use block, as the SDK decoded it.
	Use sdk.ToolUseBlock
	// Effect is the tool's, from the map given to Rebuild.
	Effect Effect
	// Unknown is true for a Write call that started and has no result: do
	// not run it; record OutcomeUnknownResult(Use.ID) instead.
	Unknown bool
}

// Next is what a tool loop does next, rebuilt from a conversation.
type Next struct {
	// Params is the request to send next: the last request's parameters
	// with its messages, the response's assistant message and the
	// recorded tool results (as the next user message). Zero when the
	// conversation has no request yet.
	Params sdk.MessageNewParams
	// Ask is true when the last request has no complete response: Params
	// is that request, to send again.
	Ask bool
	// Run lists the tool calls without a result, in the response's order:
	// run each (or record OutcomeUnknownResult when Unknown) and record
	// its result with RecordResult before sending Params.
	Run []Call
	// Done is true when the response asked for no tool (the turn is
	// over): a new user message starts the next turn. Also true when the
	// conversation has no request yet.
	Done bool
	// Turns counts the user messages of Params holding text: the user
	// turns already sent.
	Turns int
}

// Rebuild returns what comes next in conv (a provider.Conversation of
// the Messages API, from provider.Session.Conversation or provider.At).
// effects maps tool names to their Effect.
func Rebuild(conv provider.Conversation, effects map[string]Effect) (Next, error) {
	var n Next
	if conv.Request == nil {
		n.Done = true
		return n, nil
	}
	if conv.Request.Provider != Provider || conv.Request.API != API {
		return n, fmt.Errorf("%w: the last request is %s %s, not Anthropic Messages", ErrConversation, conv.Request.Provider, conv.Request.API)
	}
	if err := json.Unmarshal(conv.Request.Body, &n.Params); err != nil {
		return n, fmt.Errorf("%w: request at seq %d: %w", ErrConversation, conv.Request.Seq, err)
	}
	if !conv.Complete() {
		n.Ask = true
		n.Turns = turns(n.Params.Messages)
		return n, nil
	}
	msg, err := Message(conv.Response)
	if err != nil {
		return n, err
	}
	n.Params.Messages = append(n.Params.Messages, msg.ToParam())
	var results []sdk.ContentBlockParamUnion
	answered := map[string]bool{}
	for _, in := range conv.Inputs {
		var b sdk.ContentBlockParamUnion
		if err := json.Unmarshal(in.Content, &b); err != nil {
			return n, fmt.Errorf("%w: input at seq %d: %w", ErrConversation, in.Seq, err)
		}
		if b.OfToolResult != nil {
			answered[b.OfToolResult.ToolUseID] = true
		}
		results = append(results, b)
	}
	calls := 0
	for _, b := range msg.Content {
		if b.Type != "tool_use" {
			continue
		}
		calls++
		if answered[b.ID] {
			continue
		}
		c := Call{Use: b.AsToolUse(), Effect: effects[b.Name]}
		c.Unknown = c.Effect == Write && slices.Contains(conv.Started, b.ID)
		n.Run = append(n.Run, c)
	}
	if len(results) > 0 {
		n.Params.Messages = append(n.Params.Messages, sdk.NewUserMessage(results...))
	}
	n.Done = calls == 0 && msg.StopReason != sdk.StopReasonPauseTurn
	n.Turns = turns(n.Params.Messages)
	return n, nil
}

// Current returns what comes next at the head of ps's live branch:
// Rebuild of its Conversation.
func Current(ctx context.Context, ps *provider.Session, effects map[string]Effect) (Next, error) {
	conv, err := ps.Conversation(ctx)
	if err != nil {
		return Next{}, err
	}
	return Rebuild(conv, effects)
}

// Message returns a recorded response as the SDK's Message: its JSON
// body decoded, or its stream folded through Message.Accumulate, as a
// live loop folds it.
func Message(r *provider.Response) (sdk.Message, error) {
	var m sdk.Message
	if !r.Streamed() {
		if err := json.Unmarshal(r.Body, &m); err != nil {
			return m, fmt.Errorf("%w: response at seq %d: %w", ErrConversation, r.Seq, err)
		}
		return m, nil
	}
	for i, e := range r.Stream {
		var ev sdk.MessageStreamEventUnion
		if err := ev.UnmarshalJSON(e.Data); err != nil {
			return m, fmt.Errorf("%w: response at seq %d, event %d: %w", ErrConversation, r.Seq, i, err)
		}
		if err := m.Accumulate(ev); err != nil {
			return m, fmt.Errorf("%w: response at seq %d, event %d: %w", ErrConversation, r.Seq, i, err)
		}
	}
	return m, nil
}

// turns counts the user messages holding text.
func turns(ms []sdk.MessageParam) int {
	n := 0
	for _, m := range ms {
		if m.OfUser != nil && slices.ContainsFunc(m.OfUser.Content, func(b sdk.ContentBlockParamUnion) bool { return b.OfText != nil }) {
			n++
		}
	}
	return n
}

// RecordResult records a tool's result durably (provider.Session.Input),
// as soon as the tool has run: a resumed loop sends it as it is.
func RecordResult(ctx context.Context, ps *provider.Session, id, content string, isError bool) error {
	b, err := json.Marshal(sdk.NewToolResultBlock(id, content, isError))
	if err != nil {
		return fmt.Errorf("anthropic adapter: %w", err)
	}
	_, err = ps.Input(ctx, Provider, API, b)
	return err
}

// OutcomeUnknownResult records, for a started Write call without a
// result, the is_error result OutcomeUnknown says.
func OutcomeUnknownResult(ctx context.Context, ps *provider.Session, id string) error {
	return RecordResult(ctx, ps, id, OutcomeUnknown, true)
}
