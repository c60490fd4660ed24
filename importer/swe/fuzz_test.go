package swe_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/importer"
	"github.com/sessionlog/sessionlog/importer/swe"
	"github.com/sessionlog/sessionlog/internal/testkit/importertest"
)

// FuzzParse converts arbitrary bytes as a trajectory. testdata/fuzz/FuzzParse
// holds a few more seeds: two real trajectories cut short, and what the
// fuzzer found.
func FuzzParse(f *testing.F) {
	call := func(id string) string {
		return `{"role":"assistant","content":"Run.","thought":"Run.","action":"ls","tool_calls":[{"id":"` + id + `","type":"function","function":{"name":"bash","arguments":"{\"command\":\"ls\"}"}}]}`
	}
	tool := func(id string) string { return `{"role":"tool","content":"out","tool_call_ids":["` + id + `"]}` }
	for _, in := range []string{
		`{"environment":"swe_main","trajectory":[{"action":"ls\n","observation":"a.py"},{"action":"submit\n","observation":"diff"}],
		"history":[{"role":"system","content":"You are…","agent":"primary"},{"role":"user","content":"A demo","is_demo":true},
		{"role":"assistant","content":"demo","is_demo":true,"action":"ls"},{"role":"user","content":"Fix the bug"},
		{"role":"assistant","content":"Look.","thought":"Look first.","action":"ls\n"},{"role":"user","content":[{"type":"text","text":"a.py"},{"type":"image"}]},
		{"role":"assistant","content":"Submit.","thought":"","action":"submit\n"}],
		"info":{"exit_status":"submitted","model_stats":{"instance_cost":0.5,"tokens_sent":100,"tokens_received":7,"api_calls":2}}}`,
		`{"trajectory":[{},{}],"history":[{"role":"user","content":"Go"},` + call("c1") + `,` + tool("c1") + `,` + call("c1") + `,` + tool("c1") + `],
		"info":{"exit_status":"submitted (exit_cost)"},"replay_config":"{\"agent\":{\"model\":{\"name\":\"gpt-x\"}}}"}`,
		`{"trajectory":[],"history":[` + call("a") + `,` + call("a~2") + `,` + call("a") + `,` + tool("a") + `,` + tool("zz") + `],"replay_config":{"agent":{"model":{"name":"m"}}}}`,
		`{"trajectory":[{"observation":"o"}],"history":[{"role":"assistant","action":"  "},{"role":"tool","content":"x"},{"role":"x"}],"info":{"exit_status":"exit_format"}}`,
		// Edge cases: empty, truncated, wrong types, huge numbers, deep
		// nesting, invalid UTF-8.
		``,
		`{"trajectory":[],"history":[{"role":"user","content":"Go"}],"info":{"exit_st`,
		`{"trajectory":{},"history":[]}`,
		`{"trajectory":[],"history":[{"role":5}]}`,
		`{"trajectory":[],"history":[],"info":{"exit_status":5}}`,
		`{"trajectory":[],"history":[],"info":null,"environment":{"a":1}}`,
		`{"trajectory":[],"history":[{"role":"user","content":"Go"}],"info":{"model_stats":{"instance_cost":1e300,"tokens_sent":-5,"tokens_received":9223372036854775807,"api_calls":1}}}`,
		`{"trajectory":[],"history":[{"role":"user","content":"Go"}],"info":{"model_stats":{"instance_cost":-0.25,"api_calls":1}}}`,
		`{"trajectory":[],"history":[{"role":"assistant","tool_calls":[{"id":"c","function":{"arguments":` + strings.Repeat("[", 3000) + strings.Repeat("]", 3000) + `}}]}]}`,
		"{\"trajectory\":[],\"history\":[{\"role\":\"user\",\"content\":\"\xff\xfe \u2028\"},{\"role\":\"assistant\",\"action\":\"\xc0 x\"}]}",
		`[]`,
	} {
		f.Add([]byte(in))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		s, err := swe.Parse(bytes.NewReader(in), "/runs/x/inst-1.traj")
		if err != nil {
			importertest.CheckError(t, err, in, importer.ErrFormat)
			_, err2 := swe.Parse(bytes.NewReader(in), "/runs/x/inst-1.traj")
			require.EqualError(t, err2, err.Error(), "deterministic")
			return
		}
		again, err := swe.Parse(bytes.NewReader(in), "/runs/x/inst-1.traj")
		require.NoError(t, err)
		require.Equal(t, s, again, "deterministic")
		importertest.CheckSession(t, s, swe.Name)
		importertest.CheckLossless(t, swe.New(), in, s)
		require.Zero(t, s.CreatedAt, "no times in the trace")
		require.Equal(t, "inst-1", s.Labels["sourceId"])
		require.Empty(t, s.Spawns)
		checkShape(t, s.Events)
	})
}

// checkShape checks the shape the package documents: event n at time n;
// one turn, at most, ended by the last event; steps that do not nest, in
// the turn, closed at the end; calls in a step, each with an id of its own;
// usage counts that are not negative.
func checkShape(t *testing.T, es []eventlog.Event) {
	t.Helper()
	turn, ended, step := false, false, false
	ids := map[string]int{}
	for i, e := range es {
		require.Equal(t, int64(i), e.Time, "event n at time n")
		d := importertest.Fields(e)
		switch e.Type {
		case "swe-agent/history", "swe-agent/trajectory", "swe-agent/document", "tool/result", "user/message", "assistant/message":
		case importer.TypeContext:
			var kind string
			require.NoError(t, json.Unmarshal(d["kind"], &kind))
			require.Contains(t, []string{swe.KindDemo, swe.KindHarness}, kind, "seq %d", i)
		case "turn/start":
			require.False(t, turn || ended, "seq %d: a second turn", i)
			turn = true
		case "turn/end":
			require.True(t, turn, "seq %d: turn/end without a turn", i)
			require.Equal(t, len(es)-1, i, "turn/end is the last event")
			var kind string
			require.NoError(t, json.Unmarshal(d["kind"], &kind))
			require.Contains(t, []string{"completed", "budget", "failed", "interrupted"}, kind)
			turn, ended = false, true
		case "step/start":
			require.True(t, turn, "seq %d: step/start outside the turn", i)
			require.False(t, step, "seq %d: step/start in a step", i)
			step = true
		case "step/end":
			require.True(t, step, "seq %d: step/end outside a step", i)
			step = false
		case "tool/call":
			require.True(t, step, "seq %d: tool/call outside a step", i)
			var id string
			require.NoError(t, json.Unmarshal(d["id"], &id), "seq %d: %s", i, e.Data)
			prev, dup := ids[id]
			require.False(t, dup, "seq %d: call id %q used at seq %d already", i, id, prev)
			ids[id] = i
		case "usage":
			var u struct {
				InputTokens, OutputTokens *int64
				CostMicros                int64
			}
			require.NoError(t, json.Unmarshal(e.Data, &u), "seq %d: %s", i, e.Data)
			require.NotNil(t, u.InputTokens)
			require.NotNil(t, u.OutputTokens)
			require.True(t, *u.InputTokens >= 0 && *u.OutputTokens >= 0 && u.CostMicros >= 0, "seq %d: usage %s", i, e.Data)
		default:
			t.Fatalf("seq %d: type %q", i, e.Type)
		}
		if !strings.HasPrefix(e.Type, "swe-agent/") {
			require.NotNil(t, d, "seq %d: data is an object: %s", i, e.Data)
		}
	}
	require.False(t, step, "the end closes the step")
}
