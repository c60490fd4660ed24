package slopenai

import (
	"encoding/json"
	"fmt"
	"maps"

	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/responses"

	"github.com/sessionlog/sessionlog/provider"
)

// callOutputs maps each Responses output item type that the client
// answers to the type of the input item that answers it (by call_id).
var callOutputs = map[string]string{
	"function_call":    "function_call_output",
	"custom_tool_call": "custom_tool_call_output",
	"computer_call":    "computer_call_output",
	"local_shell_call": "local_shell_call_output",
	"shell_call":       "shell_call_output",
	"apply_patch_call": "apply_patch_call_output",
}

func isCallOutput(typ string) bool {
	for _, o := range callOutputs {
		if o == typ {
			return true
		}
	}
	return false
}

// Next is what a Responses loop does next, rebuilt from a conversation.
type Next struct {
	// Params is the request to send next: the last request's params, its
	// input items followed, when its response is complete, by the
	// response's output items as input items (each item's JSON as the
	// provider sent it: reasoning with its id and encrypted_content,
	// messages, calls, every kind) and the inputs recorded since (tool
	// outputs). A string input is then sent as the user message item it
	// stands for. "stream" is not kept: the SDK sets it by the method
	// called. Before sending it, the loop adds the outputs of Pending
	// calls (and, when Done, the next user message).
	Params responses.ResponseNewParams
	// AskAgain is true when the last request has no complete response (the
	// process stopped before it ended, or it failed): Params is that
	// request, to send again from the start of its step.
	AskAgain bool
	// Pending are the response's calls with no output recorded, in order.
	// Run those not Started; give those Started the UnknownOutcome output
	// (OutputFor).
	Pending []Call
	// Done is true when the response is complete and asks the loop for
	// no call (it has none, or the provider answered them in the
	// response): the turn is answered.
	Done bool
	// Empty is true when the conversation holds no Responses request.
	Empty bool
}

// Responses rebuilds what a Responses loop that never crashed does next
// from conv (provider.Session.Conversation, or provider.At for any seq of
// the live branch).
func Responses(conv provider.Conversation) (Next, error) {
	if conv.Request == nil {
		return Next{Empty: true}, nil
	}
	if conv.Request.Provider != ProviderName || conv.Request.API != APIResponses {
		return Next{}, fmt.Errorf("%w: the last request is %s %s, not openai responses", ErrConversation, conv.Request.Provider, conv.Request.API)
	}
	_, members, err := split(conv.Request.Body)
	if err != nil {
		return Next{}, fmt.Errorf("%w: request at seq %d: %w", ErrConversation, conv.Request.Seq, err)
	}
	rawInput, hasInput := members["input"]
	var items []json.RawMessage
	isString := false
	if hasInput {
		if items, err = elements(rawInput); err != nil {
			var s string
			if json.Unmarshal(rawInput, &s) != nil {
				return Next{}, fmt.Errorf("%w: request at seq %d: input is neither a string nor a list", ErrConversation, conv.Request.Seq)
			}
			isString = true
		}
	}
	n := Next{}
	if !conv.Complete() {
		n.AskAgain = true
		n.Params, err = paramsFrom[responses.ResponseNewParams](conv.Request.Body, "input", func(p *responses.ResponseNewParams) {
			if isString {
				var s string
				_ = json.Unmarshal(rawInput, &s)
				p.Input = responses.ResponseNewParamsInputUnion{OfString: param.NewOpt(s)}
			} else if hasInput {
				p.Input = responses.ResponseNewParamsInputUnion{OfInputItemList: inputList(items)}
			}
		})
		return n, err
	}
	if isString {
		// A string input is the user's message: as an item, it is an
		// easy input message.
		var s string
		_ = json.Unmarshal(rawInput, &s)
		b, err := json.Marshal(responses.ResponseInputItemParamOfMessage(s, responses.EasyInputMessageRoleUser))
		if err != nil {
			return Next{}, fmt.Errorf("%w: %w", ErrConversation, err)
		}
		items = []json.RawMessage{b}
	}
	out, err := outputItems(conv.Response)
	if err != nil {
		return Next{}, err
	}
	items = append(items, out...)
	// A call may be answered in the response itself (an output item of
	// its output type, run by the provider) or by an input since.
	answered := map[string]bool{}
	for _, it := range out {
		if isCallOutput(str(it, "type")) {
			answered[str(it, "call_id")] = true
		}
	}
	inResponse := maps.Clone(answered)
	for _, in := range conv.Inputs {
		if in.Provider != ProviderName || in.API != APIResponses {
			continue
		}
		items = append(items, in.Content)
		if id := str(in.Content, "call_id"); id != "" {
			answered[id] = true
		}
	}
	calls := 0
	for _, it := range out {
		typ := str(it, "type")
		if _, ok := callOutputs[typ]; !ok {
			continue
		}
		id := str(it, "call_id")
		if !inResponse[id] {
			calls++
		}
		if answered[id] {
			continue
		}
		args := str(it, "arguments")
		if typ == "custom_tool_call" {
			args = str(it, "input")
		}
		n.Pending = append(n.Pending, Call{Type: typ, CallID: id, Name: str(it, "name"), Arguments: args, Item: it, Started: contains(conv.Started, id)})
	}
	n.Done = calls == 0
	n.Params, err = paramsFrom[responses.ResponseNewParams](conv.Request.Body, "input", func(p *responses.ResponseNewParams) {
		p.Input = responses.ResponseNewParamsInputUnion{OfInputItemList: inputList(items)}
	})
	return n, err
}

// inputList turns raw items into the SDK's input list, each item sent as
// it is (param.Override, as the SDK's README turns output items into
// input items).
func inputList(items []json.RawMessage) responses.ResponseInputParam {
	l := make(responses.ResponseInputParam, len(items))
	for i, it := range items {
		l[i] = param.Override[responses.ResponseInputItemUnionParam](it)
	}
	return l
}

// outputItems returns a complete response's output items, raw: the body's,
// or those of a stream's terminal event.
func outputItems(r *provider.Response) ([]json.RawMessage, error) {
	body := r.Body
	if r.Streamed() {
		body = nil
		for i := len(r.Stream) - 1; i >= 0 && body == nil; i-- {
			switch str(r.Stream[i].Data, "type") {
			case "response.completed", "response.incomplete":
				var m map[string]json.RawMessage
				if json.Unmarshal(r.Stream[i].Data, &m) == nil {
					body = m["response"]
				}
			}
		}
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(body, &m); err != nil {
		return nil, fmt.Errorf("%w: response at seq %d: %w", ErrConversation, r.Seq, err)
	}
	if len(m["output"]) == 0 || string(m["output"]) == "null" {
		return nil, nil
	}
	out, err := elements(m["output"])
	if err != nil {
		return nil, fmt.Errorf("%w: response at seq %d: output: %w", ErrConversation, r.Seq, err)
	}
	return out, nil
}

// OutputFor returns the input item that answers call with output: a
// function_call_output, custom_tool_call_output, ... carrying its call_id.
// For a Started call, give UnknownOutcome as output.
func OutputFor(call Call, output string) responses.ResponseInputItemUnionParam {
	switch call.Type {
	case "function_call":
		it := responses.ResponseInputItemParamOfFunctionCallOutput(output)
		it.OfFunctionCallOutput.CallID = param.NewOpt(call.CallID)
		return it
	case "custom_tool_call":
		return param.Override[responses.ResponseInputItemUnionParam](map[string]any{"type": "custom_tool_call_output", "call_id": call.CallID, "output": output})
	}
	return param.Override[responses.ResponseInputItemUnionParam](map[string]any{"type": callOutputs[call.Type], "call_id": call.CallID, "output": output})
}
