package slopenai_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	slopenai "github.com/sessionlog/sessionlog/adapters/openai"
)

// TestOutputForAnswersEachCallKind: the output of a call is an input
// item of the type that answers its kind, with its call_id and the
// output given.
func TestOutputForAnswersEachCallKind(t *testing.T) {
	for call, out := range fakeCallKinds {
		t.Run(call, func(t *testing.T) {
			c := slopenai.Call{Type: call, CallID: "call_9", Name: "x"}
			got := canon(t, slopenai.OutputFor(c, slopenai.UnknownOutcome))
			want := canon(t, map[string]any{"type": out, "call_id": "call_9", "output": slopenai.UnknownOutcome})
			require.Equal(t, want, got)
		})
	}
	require.Equal(t,
		canon(t, map[string]any{"role": "tool", "tool_call_id": "c1", "content": "out"}),
		canon(t, slopenai.ToolMessage(slopenai.Call{Type: "function", CallID: "c1"}, "out")))
}
