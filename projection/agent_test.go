package projection_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/projection"
)

func TestAgentIdentity(t *testing.T) {
	a := projection.NewAgent()
	require.Equal(t, "agent/v1", projection.ID(a))
	s := a.State()
	require.Equal(t, int64(-1), s.CurrentTurnStart)
	require.Equal(t, `{"turns":0,"turnOpen":false,"currentTurnStart":-1,"steps":0,"stepOpen":false,"usage":{"inputTokens":0,"outputTokens":0,"cachedTokens":0,"costMicros":0}}`, marshal(t, a))
}

func TestAgentEvents(t *testing.T) {
	tests := []struct {
		name   string
		events []eventlog.Event
		check  func(t *testing.T, s projection.AgentState)
	}{{
		name:   "turn/start opens a turn",
		events: numbered(ev("turn/start", `{"input":{"any":"thing"}}`)),
		check: func(t *testing.T, s projection.AgentState) {
			require.Equal(t, 1, s.Turns)
			require.True(t, s.TurnOpen)
			require.Equal(t, int64(0), s.CurrentTurnStart)
		},
	}, {
		name:   "turn/end closes it and records the stop",
		events: numbered(ev("turn/start", ``), ev("turn/end", `{"kind":"paused","reason":"waiting for the user"}`)),
		check: func(t *testing.T, s projection.AgentState) {
			require.Equal(t, 1, s.Turns)
			require.False(t, s.TurnOpen)
			require.Equal(t, int64(-1), s.CurrentTurnStart)
			require.Equal(t, &projection.Stop{Seq: 1, Time: 1010, Kind: "paused", Reason: "waiting for the user"}, s.LastStop)
		},
	}, {
		name:   "an unknown kind is kept as it is",
		events: numbered(ev("turn/start", ``), ev("turn/end", `{"kind":"exploded"}`)),
		check: func(t *testing.T, s projection.AgentState) {
			require.Equal(t, "exploded", s.LastStop.Kind)
			require.Empty(t, s.Degraded)
		},
	}, {
		name:   "a second turn/start without turn/end",
		events: numbered(ev("turn/start", ``), ev("turn/start", ``)),
		check: func(t *testing.T, s projection.AgentState) {
			require.Equal(t, 2, s.Turns)
			require.True(t, s.TurnOpen)
			require.Equal(t, int64(1), s.CurrentTurnStart)
		},
	}, {
		name:   "steps",
		events: numbered(ev("step/start", `{}`), ev("step/end", `{}`), ev("step/start", ``)),
		check: func(t *testing.T, s projection.AgentState) {
			require.Equal(t, 2, s.Steps)
			require.True(t, s.StepOpen)
		},
	}, {
		name: "usage overall and per named model",
		events: numbered(
			ev("usage", `{"inputTokens":100,"outputTokens":20,"cachedTokens":50,"costMicros":300,"model":"m1"}`),
			ev("usage", `{"inputTokens":1,"outputTokens":2,"model":"m1"}`),
			ev("usage", `{"inputTokens":5,"outputTokens":6,"model":"m2"}`),
			ev("usage", `{"inputTokens":7,"outputTokens":8}`),
			ev("usage", `{"inputTokens":9,"outputTokens":10,"model":""}`),
		),
		check: func(t *testing.T, s projection.AgentState) {
			require.Equal(t, projection.Usage{InputTokens: 122, OutputTokens: 46, CachedTokens: 50, CostMicros: 300}, s.Usage)
			require.Equal(t, map[string]projection.Usage{
				"m1": {InputTokens: 101, OutputTokens: 22, CachedTokens: 50, CostMicros: 300},
				"m2": {InputTokens: 5, OutputTokens: 6},
			}, s.UsageByModel)
		},
	}, {
		name: "memory set, update, delete",
		events: numbered(
			ev("memory/set", `{"key":"a","value":1,"metadata":{"m":1}}`),
			ev("memory/set", `{"key":"b","value":"x"}`),
			ev("memory/set", `{"key":"a","value":[2],"metadata":null}`),
			ev("memory/delete", `{"key":"b"}`),
			ev("memory/delete", `{"key":"never"}`),
		),
		check: func(t *testing.T, s projection.AgentState) {
			require.Equal(t, map[string]projection.MemoryEntry{
				"a": {Value: json.RawMessage(`[2]`), CreatedAt: 1000, UpdatedAt: 1020, CreatedSeq: 0, UpdatedSeq: 2},
			}, s.Memory)
			require.Empty(t, s.Degraded)
		},
	}, {
		name:   "provider state, latest wins",
		events: numbered(ev("provider/state", `{"provider":"p","state":1}`), ev("provider/state", `{"provider":"p","state":{"n":2}}`), ev("provider/state", `{"provider":"q","state":null}`)),
		check: func(t *testing.T, s projection.AgentState) {
			require.Equal(t, map[string]json.RawMessage{"p": json.RawMessage(`{"n":2}`), "q": json.RawMessage(`null`)}, s.Providers)
		},
	}, {
		name:   "slot, plan, compaction",
		events: numbered(ev("slot/switch", `{"slot":"fast"}`), ev("plan/set", `{"plan":["a","b"]}`), ev("context/compacted", `{"summary":"héllo"}`)),
		check: func(t *testing.T, s projection.AgentState) {
			require.Equal(t, "fast", s.Slot)
			require.JSONEq(t, `["a","b"]`, string(s.Plan))
			require.Equal(t, &projection.Compaction{Seq: 2, Time: 1020, SummaryLen: 6}, s.LastCompaction)
		},
	}, {
		name: "tool calls pending until their result",
		events: numbered(
			ev("tool/call", `{"id":"c1","name":"read_file","args":{},"effect":"read"}`),
			ev("tool/call", `{"id":"c2","name":"bash","args":{}}`),
			ev("tool/call", `{"id":"c3","name":"edit","args":null,"effect":"write"}`),
			ev("tool/approval", `{"id":"c2","decision":"approved"}`),
			ev("tool/approval", `{"id":"c3","decision":"denied","by":"policy"}`),
			ev("tool/result", `{"id":"c1","output":"x"}`),
			ev("tool/result", `{"id":"c1","output":"again"}`),
		),
		check: func(t *testing.T, s projection.AgentState) {
			require.Equal(t, map[string]projection.PendingCall{
				"c2": {Seq: 1, Name: "bash", Approval: projection.ApprovalApproved},
				"c3": {Seq: 2, Name: "edit", Effect: "write", Approval: projection.ApprovalDenied},
			}, s.PendingCalls)
			require.Empty(t, s.Degraded)
		},
	}, {
		name:   "an approval for a call not pending",
		events: numbered(ev("tool/approval", `{"id":"zz","decision":"approved"}`)),
		check: func(t *testing.T, s projection.AgentState) {
			require.Empty(t, s.PendingCalls)
			require.Equal(t, []projection.Degraded{{Seq: 0, Type: "tool/approval", Reason: `approval for a call that is not pending: "zz"`}}, s.Degraded)
		},
	}, {
		name:   "a call id already pending",
		events: numbered(ev("tool/call", `{"id":"c1","name":"a","args":{}}`), ev("tool/call", `{"id":"c1","name":"b","args":{}}`)),
		check: func(t *testing.T, s projection.AgentState) {
			require.Equal(t, "a", s.PendingCalls["c1"].Name)
			require.Equal(t, []projection.Degraded{{Seq: 1, Type: "tool/call", Reason: `duplicate call id "c1"`}}, s.Degraded)
		},
	}, {
		name:   "messages, chunks and reasoning are not the agent's",
		events: numbered(ev("user/message", `5`), ev("assistant/chunk", `{"text":1}`), ev("assistant/reasoning", `[]`), ev("assistant/message", `{}`)),
		check: func(t *testing.T, s projection.AgentState) {
			require.Equal(t, projection.NewAgent().State(), s)
		},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.check(t, agentAfter(tc.events))
		})
	}
}

func TestAgentSession(t *testing.T) {
	a := projection.NewAgent()
	apply(a, session())
	require.JSONEq(t, `{
		"turns": 2, "turnOpen": true, "currentTurnStart": 23, "steps": 3, "stepOpen": true,
		"usage": {"inputTokens": 260, "outputTokens": 26, "cachedTokens": 50, "costMicros": 300},
		"usageByModel": {
			"m1": {"inputTokens": 100, "outputTokens": 20, "cachedTokens": 50, "costMicros": 300},
			"m2": {"inputTokens": 150, "outputTokens": 5, "cachedTokens": 0, "costMicros": 0}
		},
		"memory": {"lang": {"value": "rust", "createdAt": 1180, "updatedAt": 1350, "createdSeq": 18, "updatedSeq": 35}},
		"providers": {"anthropic": {"cache": "x"}},
		"slot": "fast",
		"lastCompaction": {"seq": 25, "time": 1250, "summaryLen": 22},
		"plan": null,
		"pendingCalls": {"c3": {"seq": 29, "name": "bash", "approval": "denied"}},
		"lastStop": {"seq": 21, "time": 1210, "kind": "completed"}
	}`, marshal(t, a))
}

// TestAgentLifecycleDegraded: the lifecycle types take effect even when
// their data has the wrong shape.
func TestAgentLifecycleDegraded(t *testing.T) {
	s := agentAfter(numbered(
		ev("turn/start", `5`),
		ev("step/start", `[1]`),
		ev("step/end", `"x"`),
		ev("turn/end", `{"kind":5,"reason":"ran out"}`),
	))
	require.Equal(t, 1, s.Turns)
	require.Equal(t, 1, s.Steps)
	require.False(t, s.StepOpen)
	require.False(t, s.TurnOpen)
	require.Equal(t, &projection.Stop{Seq: 3, Time: 1030, Kind: "", Reason: "ran out"}, s.LastStop)
	require.Equal(t, []projection.Degraded{
		{Seq: 0, Type: "turn/start", Reason: "data is a number, want an object"},
		{Seq: 1, Type: "step/start", Reason: "data is an array, want an object"},
		{Seq: 2, Type: "step/end", Reason: "data is a string, want an object"},
		{Seq: 3, Type: "turn/end", Reason: "kind: got number, want string"},
	}, s.Degraded)

	s = agentAfter(numbered(ev("turn/start", ``), ev("turn/end", ``)))
	require.False(t, s.TurnOpen)
	require.Equal(t, "", s.LastStop.Kind)
	require.Equal(t, []projection.Degraded{{Seq: 1, Type: "turn/end", Reason: "missing kind"}}, s.Degraded)
}
