package swe_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/importer"
	"github.com/sessionlog/sessionlog/importer/swe"
	"github.com/sessionlog/sessionlog/internal/testkit/importertest"
)

func events(t *testing.T, es []eventlog.Event) []string {
	t.Helper()
	var out []string
	for i, e := range es {
		require.Equal(t, int64(i), e.Seq)
		require.Equal(t, int64(i), e.Time, "no times in the trace: time n for event n")
		out = append(out, importertest.Brief(swe.Name, e))
	}
	return out
}

// The older format: actions in the text, observations as user messages,
// the last observation only in the trajectory.
//
// Regression: the demonstrations (is_demo) became user/message and
// assistant/message, as if typed and answered; they are text nobody
// typed, context/message of kind demo, as is a user message SWE-agent
// writes after the model's first answer that answers no call.
func TestActions(t *testing.T) {
	in := `{"environment":"swe_main","trajectory":[{"action":"ls\n","observation":"a.py"},{"action":"submit\n","observation":"diff"}],
	"history":[
	 {"role":"system","content":"You are…","agent":"primary"},
	 {"role":"user","content":"A demo","is_demo":true},
	 {"role":"assistant","content":"A demo answer","is_demo":true},
	 {"role":"user","content":"Fix the bug"},
	 {"role":"assistant","content":"Look first.\n` + "```" + `\nls\n` + "```" + `","thought":"Look first.","action":"ls\n"},
	 {"role":"user","content":"a.py\n(Open file: n/a)"},
	 {"role":"assistant","content":"Hm.","thought":"Hm."},
	 {"role":"user","content":"Your output was not formatted correctly."},
	 {"role":"assistant","content":"Submit.","thought":"Submit.","action":"submit\n"}],
	"info":{"exit_status":"submitted","model_stats":{"instance_cost":0.5,"tokens_sent":100,"tokens_received":7,"api_calls":2}}}`
	s, err := swe.Parse(strings.NewReader(in), "/runs/x/inst-1.traj")
	require.NoError(t, err)
	require.Equal(t, []string{
		`swe-agent/history @`,
		`context/message {"text":"A demo","kind":"demo","role":"user","source":{"line":2,"record":@}}`,
		`context/message {"text":"A demo answer","kind":"demo","role":"assistant","source":{"line":3,"record":@}}`,
		`turn/start {}`,
		`user/message {"text":"Fix the bug","source":{"line":4,"record":@}}`,
		`step/start {}`,
		`assistant/message {"text":"Look first.","source":{"line":5,"record":@}}`,
		`tool/call {"id":"action-1","name":"ls","args":{"command":"ls"},"source":{"line":5}}`,
		`tool/result {"id":"action-1","output":"a.py\n(Open file: n/a)","source":{"line":6,"record":@}}`,
		`step/end {}`,
		`step/start {}`,
		`assistant/message {"text":"Hm.","source":{"line":7,"record":@}}`,
		`step/end {}`,
		`context/message {"text":"Your output was not formatted correctly.","kind":"harness","role":"user","source":{"line":8,"record":@}}`,
		`step/start {}`,
		`assistant/message {"text":"Submit.","source":{"line":9,"record":@}}`,
		`tool/call {"id":"action-2","name":"submit","args":{"command":"submit"},"source":{"line":9}}`,
		`swe-agent/trajectory @`,
		`tool/result {"id":"action-2","output":"diff","source":{"line":11,"record":@}}`,
		`step/end {}`,
		`swe-agent/document @`,
		`usage {"inputTokens":100,"outputTokens":7,"costMicros":500000}`,
		`turn/end {"kind":"completed","reason":"submitted"}`,
	}, events(t, s.Events))
	require.Equal(t, int64(0), s.CreatedAt)
	require.Equal(t, map[string]string{
		"source": "swe-agent", "sourceFile": "inst-1.traj", "sourceId": "inst-1",
		"swe-agent.environment": "swe_main", "swe-agent.exitStatus": "submitted",
	}, s.Labels)
}

// Function calling: tool_calls and tool messages; a reused call id gets a
// suffix so each call keeps its result.
func TestToolCalls(t *testing.T) {
	call := func(id string) string {
		return `{"role":"assistant","content":"Run.","thought":"Run.","action":"ls","tool_calls":[{"id":"` + id + `","type":"function","function":{"name":"bash","arguments":"{\"command\":\"ls\"}"}}]}`
	}
	tool := func(id string) string {
		return `{"role":"tool","content":"out","tool_call_ids":["` + id + `"]}`
	}
	in := `{"trajectory":[{},{}],"history":[{"role":"user","content":"Go"},` + call("c1") + `,` + tool("c1") + `,` + call("c1") + `,` + tool("c1") + `],
	"info":{"exit_status":"submitted (exit_cost)"},"replay_config":"{\"agent\":{\"model\":{\"name\":\"gpt-x\"}}}"}`
	s, err := swe.Parse(strings.NewReader(in), "r.traj")
	require.NoError(t, err)
	require.Equal(t, []string{
		`turn/start {}`,
		`user/message {"text":"Go","source":{"line":1,"record":@}}`,
		`step/start {}`,
		`assistant/message {"text":"Run.","source":{"line":2,"record":@}}`,
		`tool/call {"id":"c1","name":"bash","args":{"command":"ls"},"source":{"line":2}}`,
		`tool/result {"id":"c1","output":"out","source":{"line":3,"record":@}}`,
		`step/end {}`,
		`step/start {}`,
		`assistant/message {"text":"Run.","source":{"line":4,"record":@}}`,
		`tool/call {"id":"c1~2","name":"bash","args":{"command":"ls"},"source":{"line":4,"callId":"c1"}}`,
		`tool/result {"id":"c1~2","output":"out","source":{"line":5,"record":@}}`,
		`step/end {}`,
		`swe-agent/trajectory @`,
		`swe-agent/trajectory @`,
		`swe-agent/document @`,
		`turn/end {"kind":"budget","reason":"submitted (exit_cost)"}`,
	}, events(t, s.Events))
	require.Equal(t, "gpt-x", s.Labels["model"])
}

func TestExitStatus(t *testing.T) {
	for status, kind := range map[string]string{
		"submitted": "completed", "exit_cost": "budget", "exit_context": "budget",
		"exit_format": "failed", "exit_error": "failed",
	} {
		s, err := swe.Parse(strings.NewReader(`{"trajectory":[],"history":[{"role":"user","content":"Go"}],"info":{"exit_status":"`+status+`"}}`), "a.traj")
		require.NoError(t, err)
		last := s.Events[len(s.Events)-1]
		require.Equal(t, "turn/end", last.Type)
		require.JSONEq(t, `{"kind":"`+kind+`","reason":"`+status+`"}`, string(last.Data))
	}
	// No exit status: the run was cut short; its turn is closed so.
	s, err := swe.Parse(strings.NewReader(`{"trajectory":[],"history":[{"role":"user","content":"Go"}]}`), "a.traj")
	require.NoError(t, err)
	require.Equal(t, []string{"turn/start", "user/message", "swe-agent/document", "turn/end"}, types(s.Events))
	require.JSONEq(t, `{"kind":"interrupted","reason":"the trace ends mid-turn"}`, string(s.Events[3].Data))
}

func types(es []eventlog.Event) []string {
	var out []string
	for _, e := range es {
		out = append(out, e.Type)
	}
	return out
}

func TestParseErrors(t *testing.T) {
	for name, in := range map[string]string{
		"empty":         ``,
		"jsonl":         `{"type":"user"}` + "\n" + `{"type":"assistant"}`,
		"no history":    `{"trajectory":[]}`,
		"no trajectory": `{"history":[]}`,
		"array":         `[]`,
		"bad info":      `{"trajectory":[],"history":[],"info":5}`,
	} {
		t.Run(name, func(t *testing.T) {
			_, err := swe.Parse(strings.NewReader(in), "a.traj")
			require.Error(t, err)
			require.True(t, errors.Is(err, importer.ErrFormat), "%v", err)
		})
	}
}

// Regression: the "~<n>" of a reused call id could give an id the trace
// used itself ("a", "a~2", "a" made two calls "a~2"), so two calls shared
// an id and a result. The next free n is taken instead.
func TestCallIDsUnique(t *testing.T) {
	call := func(id string) string {
		return `{"role":"assistant","content":"Run.","tool_calls":[{"id":"` + id + `","function":{"name":"bash","arguments":"{}"}}]}`
	}
	tool := func(id string) string {
		return `{"role":"tool","content":"out ` + id + `","tool_call_ids":["` + id + `"]}`
	}
	in := `{"trajectory":[],"history":[` + strings.Join([]string{call("a"), tool("a"), call("a~2"), tool("a~2"), call("a"), tool("a"), call("a"), tool("a")}, ",") + `]}`
	s, err := swe.Parse(strings.NewReader(in), "r.traj")
	require.NoError(t, err)
	var got []string
	for _, e := range s.Events {
		if e.Type == "tool/call" || e.Type == "tool/result" {
			got = append(got, importertest.Brief(swe.Name, e))
		}
	}
	require.Equal(t, []string{
		`tool/call {"id":"a","name":"bash","args":{},"source":{"line":1}}`,
		`tool/result {"id":"a","output":"out a","source":{"line":2,"record":@}}`,
		`tool/call {"id":"a~2","name":"bash","args":{},"source":{"line":3}}`,
		`tool/result {"id":"a~2","output":"out a~2","source":{"line":4,"record":@}}`,
		`tool/call {"id":"a~3","name":"bash","args":{},"source":{"line":5,"callId":"a"}}`,
		`tool/result {"id":"a~3","output":"out a","source":{"line":6,"record":@}}`,
		`tool/call {"id":"a~4","name":"bash","args":{},"source":{"line":7,"callId":"a"}}`,
		`tool/result {"id":"a~4","output":"out a","source":{"line":8,"record":@}}`,
	}, got)
}

// Regression: model_stats numbers out of range were kept (negative token
// counts) or converted to nonsense (a cost of 1e300 became a negative
// costMicros, the float conversion being the platform's). Such stats now
// make no usage event; they are counted in Dropped.
func TestUsageOutOfRange(t *testing.T) {
	for name, stats := range map[string]string{
		"negative tokens": `{"instance_cost":0.5,"tokens_sent":-5,"tokens_received":7,"api_calls":1}`,
		"huge cost":       `{"instance_cost":1e300,"tokens_sent":5,"tokens_received":7,"api_calls":1}`,
		"negative cost":   `{"instance_cost":-0.25,"tokens_sent":5,"tokens_received":7,"api_calls":1}`,
	} {
		t.Run(name, func(t *testing.T) {
			s, err := swe.Parse(strings.NewReader(`{"trajectory":[],"history":[{"role":"user","content":"Go"}],"info":{"exit_status":"submitted","model_stats":`+stats+`}}`), "a.traj")
			require.NoError(t, err)
			require.Equal(t, []string{
				`turn/start {}`,
				`user/message {"text":"Go","source":{"line":1,"record":@}}`,
				`swe-agent/document @`,
				`turn/end {"kind":"completed","reason":"submitted"}`,
			}, events(t, s.Events))
			require.Equal(t, map[string]int{"usage out of range": 1}, s.Unmapped)
		})
	}
}

// Regression: call arguments holding JSON nested as deeply as JSON may be
// nest one level deeper once in "args": the import failed with an error
// that was not ErrFormat. It is a format error now, the event's.
func TestDeepArgs(t *testing.T) {
	deep := strings.Repeat("[", 10000) + strings.Repeat("]", 10000)
	in := `{"trajectory":[],"history":[{"role":"assistant","tool_calls":[{"id":"c","function":{"name":"f","arguments":"` + deep + `"}}]}]}`
	_, err := swe.Parse(strings.NewReader(in), "a.traj")
	require.ErrorIs(t, err, importer.ErrFormat)
	require.Contains(t, err.Error(), "seq 3: ")
	require.Contains(t, err.Error(), `"tool/call" is not valid JSON: nesting too deep`)
}

// Regression: a trajectory holding a value over the limit a record may
// have failed as "not a SWE-agent trajectory", even read as one. It says
// what is wrong and where: the part of the document, the value's offset.
func TestValueOverLimit(t *testing.T) {
	big := strings.Repeat("x", 300)
	for _, tc := range []struct{ name, doc, where string }{
		{"history", `{"history":[{"role":"system","content":"s"},{"role":"user","content":"` + big + `"}],"trajectory":[]}`, "history entry 2: offset 44: "},
		{"trajectory", `{"trajectory":[{"observation":"` + big + `"}],"history":[]}`, "trajectory entry 1: offset 15: "},
		{"info", `{"history":[],"trajectory":[],"info":{"submission":"` + big + `"}}`, `"info": offset 37: `},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := importer.Parse(t.Context(), swe.New(), strings.NewReader(tc.doc), "/r/x.traj", importer.NewConfig(importer.MaxLine(256)))
			require.ErrorIs(t, err, importer.ErrTooLarge)
			require.ErrorIs(t, err, importer.ErrFormat)
			require.NotContains(t, err.Error(), "not a SWE-agent trajectory")
			require.Contains(t, err.Error(), tc.where+"importer: value too large: more than the 256 bytes a record may have")
		})
	}
}
