package projection_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/projection"
)

// ev is an event without its seq and time, which numbered assigns; data ""
// means absent.
func ev(typ, data string) eventlog.Event {
	e := eventlog.Event{Type: typ}
	if data != "" {
		e.Data = json.RawMessage(data)
	}
	return e
}

// numbered numbers events from seq 0, with times 1000 + 10*seq.
func numbered(evs ...eventlog.Event) []eventlog.Event {
	out := make([]eventlog.Event, len(evs))
	for i, e := range evs {
		e.Seq, e.Time = int64(i), 1000+10*int64(i)
		out[i] = e
	}
	return out
}

// from is numbered starting at seq first.
func from(first int64, evs ...eventlog.Event) []eventlog.Event {
	out := numbered(evs...)
	for i := range out {
		out[i].Seq += first
		out[i].Time += 10 * first
	}
	return out
}

func apply(p projection.Projection, evs []eventlog.Event) {
	for _, e := range evs {
		p.Apply(e)
	}
}

func marshal(t testing.TB, p projection.Projection) string {
	t.Helper()
	b, err := p.MarshalState()
	require.NoError(t, err)
	return string(b)
}

func agentAfter(evs []eventlog.Event) projection.AgentState {
	a := projection.NewAgent()
	apply(a, evs)
	return a.State()
}

func transcriptAfter(t testing.TB, evs []eventlog.Event) projection.TranscriptState {
	t.Helper()
	tr := projection.NewTranscript()
	for _, e := range evs {
		tr.Apply(e)
		require.NoError(t, projection.CheckIndexes(tr), "after seq %d", e.Seq)
	}
	return tr.State()
}

// projections returns a fresh instance of every built-in projection.
func projections() []projection.Projection {
	return []projection.Projection{projection.NewAgent(), projection.NewTranscript(), projection.NewConversation()}
}

// session is a small session using every type of the vocabulary, plus one
// type outside it.
func session() []eventlog.Event {
	return numbered(
		ev("turn/start", `{"input":"fix the bug"}`),
		ev("user/message", `{"text":"Fix the bug in a.go"}`),
		ev("step/start", `{}`),
		ev("assistant/reasoning", `{"text":"look at a.go first","signature":"sig1"}`),
		ev("assistant/chunk", `{"text":"Let me"}`),
		ev("assistant/chunk", `{"text":" look."}`),
		ev("assistant/message", `{"text":"Let me look."}`),
		ev("tool/call", `{"id":"c1","name":"read_file","args":{"path":"a.go"},"effect":"read"}`),
		ev("tool/result", `{"id":"c1","output":"package a\n<func>"}`),
		ev("tool/call", `{"id":"c2","name":"edit_file","args":{"path":"a.go","text":"x"},"effect":"write"}`),
		ev("tool/approval", `{"id":"c2","decision":"approved","by":"user"}`),
		ev("tool/result", `{"id":"c2","output":{"ok":true}}`),
		ev("usage", `{"inputTokens":100,"outputTokens":20,"cachedTokens":50,"costMicros":300,"model":"m1"}`),
		ev("step/end", `{}`),
		ev("step/start", ``),
		ev("assistant/message", `{"text":"Done."}`),
		ev("usage", `{"inputTokens":150,"outputTokens":5,"model":"m2"}`),
		ev("step/end", `{"finish_reason":"end_turn"}`),
		ev("memory/set", `{"key":"lang","value":"go","metadata":{"src":"user"}}`),
		ev("provider/state", `{"provider":"anthropic","state":{"cache":"x"}}`),
		ev("plan/set", `{"plan":["read","edit"]}`),
		ev("turn/end", `{"kind":"completed"}`),
		ev("slot/switch", `{"slot":"fast"}`),
		ev("turn/start", `{}`),
		ev("user/message", `{"text":"Now add tests","slot":"main"}`),
		ev("context/compacted", `{"summary":"Fixed the bug in a.go."}`),
		ev("custom/thing", `{"x":1}`),
		ev("step/start", `{}`),
		ev("assistant/reasoning", `{"text":"run the tests"}`),
		ev("tool/call", `{"id":"c3","name":"bash","args":{"cmd":"go test"}}`),
		ev("tool/approval", `{"id":"c3","decision":"denied"}`),
		ev("tool/call", `{"id":"c4","name":"grep","args":{"q":"x"},"effect":"read"}`),
		ev("tool/result", `{"id":"c4","output":"a.go:1","synthetic":true,"error":"not run"}`),
		ev("tool/result", `{"id":"c4","output":"a.go:2"}`),
		ev("usage", `{"inputTokens":10,"outputTokens":1}`),
		ev("memory/set", `{"key":"lang","value":"rust"}`),
		ev("memory/set", `{"key":"editor","value":null}`),
		ev("memory/delete", `{"key":"editor"}`),
		ev("plan/set", `{"plan":null}`),
	)
}
