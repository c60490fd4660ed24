package slopenai

import (
	"encoding/json"
	"fmt"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/param"

	"github.com/sessionlog/sessionlog/provider"
)

// ChatNext is what a Chat Completions loop does next, rebuilt from a
// conversation.
type ChatNext struct {
	// Params is the request to send next: the last request's params, its
	// messages followed, when its response is complete, by the response's
	// message as the SDK turns it into a param (ChatCompletionMessage's
	// ToParam; a stream accumulated by ChatCompletionAccumulator) and the
	// tool messages recorded since. Before sending it, the loop adds the
	// tool messages of Pending calls (and, when Done, the next user
	// message).
	Params openai.ChatCompletionNewParams
	// AskAgain, Pending, Done and Empty are as in Next. A Pending call's
	// Type is "function" or "custom".
	AskAgain bool
	Pending  []Call
	Done     bool
	Empty    bool
}

// Chat rebuilds what a Chat Completions loop that never crashed does next
// from conv.
func Chat(conv provider.Conversation) (ChatNext, error) {
	if conv.Request == nil {
		return ChatNext{Empty: true}, nil
	}
	if conv.Request.Provider != ProviderName || conv.Request.API != APIChat {
		return ChatNext{}, fmt.Errorf("%w: the last request is %s %s, not openai chat.completions", ErrConversation, conv.Request.Provider, conv.Request.API)
	}
	_, members, err := split(conv.Request.Body)
	if err != nil {
		return ChatNext{}, fmt.Errorf("%w: request at seq %d: %w", ErrConversation, conv.Request.Seq, err)
	}
	msgs, err := elements(members["messages"])
	if err != nil {
		return ChatNext{}, fmt.Errorf("%w: request at seq %d: messages: %w", ErrConversation, conv.Request.Seq, err)
	}
	list := make([]openai.ChatCompletionMessageParamUnion, 0, len(msgs)+1+len(conv.Inputs))
	for _, m := range msgs {
		list = append(list, param.Override[openai.ChatCompletionMessageParamUnion](m))
	}
	var n ChatNext
	if !conv.Complete() {
		n.AskAgain = true
	} else {
		msg, err := chatMessage(conv.Response)
		if err != nil {
			return ChatNext{}, err
		}
		list = append(list, msg.ToParam())
		answered := map[string]bool{}
		for _, in := range conv.Inputs {
			if in.Provider != ProviderName || in.API != APIChat {
				continue
			}
			list = append(list, param.Override[openai.ChatCompletionMessageParamUnion](in.Content))
			if id := str(in.Content, "tool_call_id"); id != "" {
				answered[id] = true
			}
		}
		for _, tc := range msg.ToolCalls {
			if answered[tc.ID] {
				continue
			}
			c := Call{Type: tc.Type, CallID: tc.ID, Item: json.RawMessage(tc.RawJSON()), Started: contains(conv.Started, tc.ID)}
			switch tc.Type {
			case "custom":
				c.Name, c.Arguments = tc.Custom.Name, tc.Custom.Input
			default:
				c.Name, c.Arguments = tc.Function.Name, tc.Function.Arguments
			}
			n.Pending = append(n.Pending, c)
		}
		n.Done = len(msg.ToolCalls) == 0
	}
	n.Params, err = paramsFrom[openai.ChatCompletionNewParams](conv.Request.Body, "messages", func(p *openai.ChatCompletionNewParams) {
		p.Messages = list
	})
	return n, err
}

// chatMessage returns a complete response's first choice's message: the
// body's, or a stream's as ChatCompletionAccumulator builds it.
func chatMessage(r *provider.Response) (openai.ChatCompletionMessage, error) {
	if !r.Streamed() {
		var c openai.ChatCompletion
		if err := c.UnmarshalJSON(r.Body); err != nil {
			return openai.ChatCompletionMessage{}, fmt.Errorf("%w: response at seq %d: %w", ErrConversation, r.Seq, err)
		}
		if len(c.Choices) == 0 {
			return openai.ChatCompletionMessage{}, fmt.Errorf("%w: response at seq %d has no choice", ErrConversation, r.Seq)
		}
		return c.Choices[0].Message, nil
	}
	var acc openai.ChatCompletionAccumulator
	for _, e := range r.Stream {
		text := e.Text()
		if string(text) == "[DONE]" {
			break
		}
		var chunk openai.ChatCompletionChunk
		if err := chunk.UnmarshalJSON(text); err != nil {
			return openai.ChatCompletionMessage{}, fmt.Errorf("%w: response at seq %d: chunk: %w", ErrConversation, r.Seq, err)
		}
		acc.AddChunk(chunk)
	}
	if len(acc.Choices) == 0 {
		return openai.ChatCompletionMessage{}, fmt.Errorf("%w: response at seq %d has no choice", ErrConversation, r.Seq)
	}
	return acc.Choices[0].Message, nil
}

// ToolMessage returns the tool message that answers call with output.
// For a Started call, give UnknownOutcome as output.
func ToolMessage(call Call, output string) openai.ChatCompletionMessageParamUnion {
	return openai.ToolMessage(output, call.CallID)
}
