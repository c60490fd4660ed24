package projection_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/projection"
)

// reads lists the types each projection looks at; lifecycle lists those
// that take effect even with a wrong shape.
var (
	transcriptReads = set("user/message", "assistant/reasoning", "assistant/message", "tool/call", "tool/result",
		"context/compacted", "slot/switch", "step/start", "step/end", "assistant/chunk")
	reads = map[string]map[string]bool{
		"agent": set("turn/start", "step/start", "step/end", "turn/end", "usage", "tool/call", "tool/approval",
			"tool/result", "memory/set", "memory/delete", "provider/state", "slot/switch", "context/compacted", "plan/set"),
		"transcript":   transcriptReads,
		"conversation": transcriptReads, // it reads as the transcript does
	}
	lifecycle = set("turn/start", "step/start", "step/end", "turn/end")
)

func set(keys ...string) map[string]bool {
	m := make(map[string]bool, len(keys))
	for _, k := range keys {
		m[k] = true
	}
	return m
}

// tricky is session() followed by the cases that move indexes around:
// late and replaced results, a result before its call, degraded events.
func tricky() []eventlog.Event {
	evs := session()
	return append(evs, from(int64(len(evs)),
		ev("step/start", `{}`),
		ev("assistant/message", `{"text":"a"}`),
		ev("tool/call", `{"id":"d1","name":"t","args":{}}`),
		ev("tool/call", `{"id":"d2","name":"t","args":{}}`),
		ev("tool/result", `{"id":"d3","output":"early"}`),
		ev("tool/result", `{"id":"d1","output":"o1"}`),
		ev("step/start", `{}`),
		ev("assistant/message", `{"text":"b"}`),
		ev("tool/call", `{"id":"d3","name":"t","args":{}}`),
		ev("tool/result", `{"id":"d2","output":"late"}`),
		ev("tool/result", `{"id":"d1","output":"again"}`),
		ev("usage", `{"inputTokens":"x","outputTokens":1}`),
		ev("user/message", `[]`),
		ev("turn/end", `{"kind":1}`),
		ev("assistant/reasoning", `{"text":"left over"}`),
		ev("slot/switch", `{"slot":"s2"}`),
		// Streamed text: replaced by a message, made final by a call, by
		// a step's end, left partial, and cut by a late result.
		ev("step/start", `{}`),
		ev("assistant/chunk", `{"text":"x"}`),
		ev("assistant/message", `{"text":"x!"}`),
		ev("step/start", `{}`),
		ev("assistant/chunk", `{"text":"p"}`),
		ev("assistant/chunk", `{"text":"q"}`),
		ev("tool/call", `{"id":"s1","name":"t","args":{}}`),
		ev("step/start", `{}`),
		ev("assistant/chunk", `{"text":"r"}`),
		ev("tool/result", `{"id":"d3","output":"mid-stream"}`),
		ev("assistant/chunk", `{"text":"s"}`),
		ev("step/end", `{}`),
		ev("step/start", `{}`),
		ev("assistant/chunk", `{"text":"cut"}`),
		ev("step/start", `{}`),
		ev("assistant/chunk", `{"text":"open"}`),
		ev("assistant/chunk", `{"text":"ing"}`),
	)...)
}

func TestDegradedShapes(t *testing.T) {
	tests := []struct{ typ, data, reason string }{
		{"turn/start", `5`, "data is a number, want an object"},
		{"turn/start", `"s"`, "data is a string, want an object"},
		{"user/message", `{"text":5}`, "text: got number, want string"},
		{"user/message", `{"text":null}`, "missing text"},
		{"user/message", `{}`, "missing text"},
		{"user/message", ``, "missing text"},
		{"user/message", `null`, "missing text"},
		{"user/message", `{"text":"a","slot":1}`, "slot: got number, want string"},
		{"user/message", `[{"text":"a"}]`, "data is an array, want an object"},
		{"user/message", `{"text":"a"`, "data is not valid JSON"},
		{"step/start", `true`, "data is a bool, want an object"},
		{"assistant/reasoning", `{"text":true}`, "text: got bool, want string"},
		{"assistant/reasoning", `{"text":"a","signature":1}`, "signature: got number, want string"},
		{"assistant/message", `{"text":{}}`, "text: got object, want string"},
		{"assistant/message", `{"text":"a","slot":[]}`, "slot: got array, want string"},
		{"tool/call", `{"id":1,"name":"n","args":{}}`, "id: got number, want string"},
		{"tool/call", `{"id":"x","name":2,"args":{}}`, "name: got number, want string"},
		{"tool/call", `{"id":"x","name":"n"}`, "missing args"},
		{"tool/call", `{"name":"n","args":{}}`, "missing id"},
		{"tool/call", `{"id":"x","name":"n","args":{},"effect":3}`, "effect: got number, want string"},
		{"tool/approval", `{"id":1,"decision":"approved"}`, "id: got number, want string"},
		{"tool/approval", `{"id":"c1","decision":2}`, "decision: got number, want string"},
		{"tool/approval", `{"id":"c1"}`, "missing decision"},
		{"tool/approval", `{"id":"c1","decision":"maybe"}`, `decision: got "maybe", want "approved" or "denied"`},
		{"tool/approval", `{"id":"c1","decision":"approved","by":3}`, "by: got number, want string"},
		{"tool/result", `{"id":1}`, "id: got number, want string"},
		{"tool/result", `{"output":"o"}`, "missing id"},
		{"tool/result", `{"id":"c1","error":2}`, "error: got number, want string"},
		{"tool/result", `{"id":"c1","synthetic":"yes"}`, "synthetic: got string, want boolean"},
		{"usage", `{"inputTokens":"1","outputTokens":1}`, "inputTokens: got string, want integer"},
		{"usage", `{"inputTokens":1,"outputTokens":1.5}`, "outputTokens: got number 1.5, want integer"},
		{"usage", `{"inputTokens":1e3,"outputTokens":1}`, "inputTokens: got number 1e3, want integer"},
		{"usage", `{"inputTokens":99999999999999999999,"outputTokens":1}`, "inputTokens: got number 99999999999999999999, want integer"},
		{"usage", `{"inputTokens":1,"outputTokens":1,"cachedTokens":true}`, "cachedTokens: got bool, want integer"},
		{"usage", `{"inputTokens":1,"outputTokens":1,"costMicros":"x"}`, "costMicros: got string, want integer"},
		{"usage", `{"inputTokens":1,"outputTokens":1,"model":5}`, "model: got number, want string"},
		{"usage", `{"outputTokens":1}`, "missing inputTokens"},
		{"usage", `{"inputTokens":1}`, "missing outputTokens"},
		{"step/end", `1`, "data is a number, want an object"},
		{"turn/end", `{"kind":5}`, "kind: got number, want string"},
		{"turn/end", `{"kind":"failed","reason":6}`, "reason: got number, want string"},
		{"memory/set", `{"key":1,"value":1}`, "key: got number, want string"},
		{"memory/set", `{"key":"k"}`, "missing value"},
		{"memory/delete", `{"key":1}`, "key: got number, want string"},
		{"provider/state", `{"provider":1,"state":1}`, "provider: got number, want string"},
		{"provider/state", `{"provider":"p"}`, "missing state"},
		{"slot/switch", `{"slot":1}`, "slot: got number, want string"},
		{"context/compacted", `{"summary":1}`, "summary: got number, want string"},
		{"plan/set", `{}`, "missing plan"},
	}
	prefix := numbered(
		ev("turn/start", `{}`),
		ev("user/message", `{"text":"u"}`),
		ev("step/start", `{}`),
		ev("assistant/message", `{"text":"a"}`),
		ev("tool/call", `{"id":"c1","name":"t","args":{}}`),
	)
	for _, tc := range tests {
		t.Run(tc.typ+" "+tc.data, func(t *testing.T) {
			bad := ev(tc.typ, tc.data)
			bad.Seq, bad.Time = int64(len(prefix)), 9999
			for _, p := range projections() {
				apply(p, prefix)
				before := withoutDegraded(t, marshal(t, p))
				require.NotPanics(t, func() { p.Apply(bad) })
				after := marshal(t, p)
				var got struct{ Degraded []projection.Degraded }
				require.NoError(t, json.Unmarshal([]byte(after), &got))
				if !reads[p.Name()][tc.typ] {
					require.Empty(t, got.Degraded, p.Name())
					require.Equal(t, before, withoutDegraded(t, after), "%s does not read %s", p.Name(), tc.typ)
					continue
				}
				require.Equal(t, []projection.Degraded{{Seq: bad.Seq, Type: tc.typ, Reason: tc.reason}}, got.Degraded, p.Name())
				if !lifecycle[tc.typ] {
					require.Equal(t, before, withoutDegraded(t, after), "a degraded %s changes nothing else in %s", tc.typ, p.Name())
				}
			}
		})
	}
}

// withoutDegraded is a marshalled state without its degraded list.
func withoutDegraded(t *testing.T, state string) map[string]json.RawMessage {
	t.Helper()
	var m map[string]json.RawMessage
	require.NoError(t, json.Unmarshal([]byte(state), &m))
	delete(m, "degraded")
	return m
}

func TestUnknownTypesCarriedPast(t *testing.T) {
	unknown := []eventlog.Event{
		ev("custom/thing", `{"text":5}`),
		ev("checkpoint", `{"log":"sha256:00"}`),
		ev("rollback", `{"to":1}`),
		ev("assistant/chunk", `{"text":5}`),
		ev("assistant/chunk", `not json`),
		ev("x", ``),
		ev("User/Message", `{"text":"hi"}`),
	}
	for _, p := range projections() {
		apply(p, session())
		before := marshal(t, p)
		for i, e := range unknown {
			e.Seq = 1000 + int64(i)
			p.Apply(e)
		}
		require.Equal(t, before, marshal(t, p), p.Name())
	}
}

// TestSplitReplay: for every split point, marshalling, unmarshalling into
// a fresh projection and applying the rest gives the bytes of a projection
// that saw every event; and the round trip itself is byte-identical.
func TestSplitReplay(t *testing.T) {
	evs := tricky()
	for _, newP := range []func() projection.Projection{
		func() projection.Projection { return projection.NewAgent() },
		func() projection.Projection { return projection.NewTranscript() },
		func() projection.Projection { return projection.NewConversation() },
	} {
		whole := newP()
		apply(whole, evs)
		want := marshal(t, whole)
		for k := 0; k <= len(evs); k++ {
			first := newP()
			apply(first, evs[:k])
			snap := marshal(t, first)
			second := newP()
			require.NoError(t, second.UnmarshalState([]byte(snap)))
			require.Equal(t, snap, marshal(t, second), "%s round trip at %d", whole.Name(), k)
			apply(second, evs[k:])
			require.Equal(t, want, marshal(t, second), "%s split at %d", whole.Name(), k)
			if tr, ok := second.(*projection.Transcript); ok {
				require.NoError(t, projection.CheckIndexes(tr))
			}
		}
	}
}

func TestDeterministic(t *testing.T) {
	evs := tricky()
	for i, p := range projections() {
		apply(p, evs)
		again := projections()[i]
		apply(again, evs)
		require.Equal(t, marshal(t, p), marshal(t, again), p.Name())
		d1, err := projection.StateDigest(p)
		require.NoError(t, err)
		d2, err := projection.StateDigest(again)
		require.NoError(t, err)
		require.Equal(t, d1, d2)

		// Reset is the empty state, and replaying after it gives the same.
		p.Reset()
		require.Equal(t, marshal(t, projections()[i]), marshal(t, p))
		apply(p, evs)
		require.Equal(t, marshal(t, again), marshal(t, p), p.Name())
	}
}

// TestUnmarshalReplacesEverything: unmarshalling over a busy projection
// leaves nothing of its old state (private indexes included).
func TestUnmarshalReplacesEverything(t *testing.T) {
	evs := tricky()
	for i, p := range projections() {
		fresh := projections()[i]
		apply(fresh, evs[:10])
		snap := marshal(t, fresh)
		apply(p, evs)
		require.NoError(t, p.UnmarshalState([]byte(snap)))
		apply(p, evs[10:])
		apply(fresh, evs[10:])
		require.Equal(t, marshal(t, fresh), marshal(t, p), p.Name())
	}
}

// Data keys are exact (docs/format.md §8: keys a projection does not know are
// ignored): a key in another case is an unknown key. Regression:
// encoding/json matched keys regardless of case, so "EFFECT":"read" made a
// write call safe to retry on resume, and "Text" replaced the text.
func TestDataKeysAreExact(t *testing.T) {
	ev := func(seq int64, typ, data string) eventlog.Event {
		return eventlog.Event{Seq: seq, Type: typ, Data: json.RawMessage(data)}
	}
	evs := []eventlog.Event{
		ev(0, "turn/start", `{}`),
		ev(1, "user/message", `{"text":"hello","Text":"SURPRISE"}`),
		ev(2, "step/start", `{}`),
		ev(3, "tool/call", `{"id":"c1","name":"rm","args":{},"effect":"write","EFFECT":"read"}`),
		ev(4, "tool/call", `{"id":"c2","name":"ls","args":{}}`),
		ev(5, "tool/result", `{"id":"c1","ID":"c2","output":"done"}`),
	}
	agent, tr := projection.NewAgent(), projection.NewTranscript()
	for _, e := range evs {
		agent.Apply(e)
		tr.Apply(e)
	}
	st := agent.State()
	require.Contains(t, st.PendingCalls, "c2", "the result was c1's")
	require.NotContains(t, st.PendingCalls, "c1")
	msgs := tr.State().Messages
	require.Equal(t, "hello", msgs[0].Text)
	require.Equal(t, "write", msgs[1].ToolCalls[0].Effect)
	require.Equal(t, "c1", msgs[2].ToolCallID)
	require.Empty(t, tr.DegradedEvents())

	agent.Reset()
	for _, e := range evs[:4] {
		agent.Apply(e)
	}
	require.Equal(t, "write", agent.State().PendingCalls["c1"].Effect)
}
