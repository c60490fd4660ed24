package projection_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/projection"
)

// TestConversationKeepsWhatCompactionDrops: the transcript after a
// compaction starts again from the summary; the conversation keeps every
// message before it and marks the summary where it stands, and folds the
// rest the same way.
func TestConversationKeepsWhatCompactionDrops(t *testing.T) {
	var evs []eventlog.Event
	add := func(typ, data string) {
		evs = append(evs, eventlog.Event{Seq: int64(len(evs)), Type: typ, Data: json.RawMessage(data)})
	}
	add("user/message", `{"text":"one"}`)
	add("step/start", `{}`)
	add("assistant/reasoning", `{"text":"r"}`)
	add("assistant/message", `{"text":"two"}`)
	add("tool/call", `{"id":"c","name":"n","args":{}}`)
	add("tool/result", `{"id":"c","output":"o"}`)
	add("step/end", `{}`)
	add("context/compacted", `{"summary":"S"}`)
	add("user/message", `{"text":"three"}`)
	add("context/compacted", `{"summary":7}`) // wrong shape: degraded, changes nothing

	tr, conv := projection.NewTranscript(), projection.NewConversation()
	for _, e := range evs {
		tr.Apply(e)
		conv.Apply(e)
	}
	type msg struct {
		Seq        int64
		Role, Text string
	}
	brief := func(ms []projection.Message) []msg {
		var out []msg
		for _, m := range ms {
			out = append(out, msg{m.Seq, m.Role, m.Text})
		}
		return out
	}
	require.Equal(t, []msg{{7, "summary", "S"}, {8, "user", "three"}}, brief(tr.State().Messages))
	require.Equal(t, []msg{{0, "user", "one"}, {3, "assistant", "two"}, {5, "tool", ""}, {7, "summary", "S"}, {8, "user", "three"}}, brief(conv.State().Messages))
	full := conv.State().Messages
	require.Equal(t, []projection.Reasoning{{Text: "r"}}, full[1].Reasoning)
	require.Equal(t, "c", full[1].ToolCalls[0].ID)
	require.Equal(t, tr.State().Degraded, conv.State().Degraded, "the same reading of every event")
	require.Len(t, conv.State().Degraded, 1)
	require.Equal(t, "conversation/v1", projection.ID(conv))

	// Its state round-trips, and a snapshot restores, the keeping included.
	keeps := func(c *projection.Conversation, how string) {
		c.Apply(eventlog.Event{Seq: 10, Type: "context/compacted", Data: json.RawMessage(`{"summary":"T"}`)})
		require.Len(t, c.State().Messages, 6, "still keeping after %s", how)
	}
	b, err := conv.MarshalState()
	require.NoError(t, err)
	again := projection.NewConversation()
	require.NoError(t, again.UnmarshalState(b))
	keeps(again, "an unmarshal")
	snap, _ := conv.Snapshot()
	require.Error(t, tr.Restore(snap), "a conversation's snapshot is no transcript's")
	other := projection.NewConversation()
	require.NoError(t, other.Restore(snap))
	keeps(other, "a restore")
	tsnap, _ := tr.Snapshot()
	require.Error(t, other.Restore(tsnap))
}
