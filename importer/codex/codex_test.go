package codex_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/importer"
	"github.com/sessionlog/sessionlog/importer/codex"
	"github.com/sessionlog/sessionlog/internal/testkit/importertest"
)

// rec is a rollout line at second s of 2026-01-01.
func rec(s int, typ, payload string) string {
	return `{"timestamp":"2026-01-01T00:00:0` + string(rune('0'+s)) + `.000Z","type":"` + typ + `","payload":` + payload + `}`
}

const meta = `{"id":"T1","timestamp":"2026-01-01T00:00:00Z","cwd":"/w","originator":"codex-tui","cli_version":"0.125.0","source":"cli","model_provider":"openai"}`

func parse(t *testing.T, lines ...string) importer.Session {
	t.Helper()
	in := strings.Join(lines, "\n") + "\n"
	s, err := codex.Parse(strings.NewReader(in), "/x/rollout-a.jsonl")
	require.NoError(t, err)
	importertest.CheckSession(t, s, codex.Name)
	importertest.CheckLossless(t, codex.New(), []byte(in), s)
	return s
}

func brief(es []eventlog.Event) []string {
	var out []string
	for _, e := range es {
		out = append(out, importertest.Brief(codex.Name, e))
	}
	return out
}

// TestParse covers the mapping rule by rule, one small rollout each.
func TestParse(t *testing.T) {
	turn := rec(1, "event_msg", `{"type":"task_started","turn_id":"u1"}`)
	ctx := rec(1, "turn_context", `{"cwd":"/w","model":"gpt-5"}`)
	user := rec(2, "response_item", `{"type":"message","role":"user","content":[{"type":"input_text","text":"Fix it"}]}`)
	done := rec(9, "event_msg", `{"type":"task_complete","turn_id":"u1"}`)
	for _, tc := range []struct {
		name  string
		lines []string
		want  []string
	}{{
		name:  "session_meta and turn boundaries",
		lines: []string{rec(0, "session_meta", meta), turn, ctx, user, done},
		want: []string{
			`codex/session_meta @`,
			`turn/start {"source":{"line":2,"record":@}}`,
			`codex/turn_context @`,
			`user/message {"text":"Fix it","source":{"line":4,"record":@}}`,
			`turn/end {"kind":"completed","source":{"line":5,"record":@}}`,
		},
	}, {
		name: "messages, reasoning and a call with its output",
		lines: []string{turn,
			rec(2, "response_item", `{"type":"message","role":"developer","content":[{"type":"input_text","text":"rules"}]}`),
			rec(3, "response_item", `{"type":"reasoning","summary":[{"type":"summary_text","text":"look"}],"encrypted_content":"x"}`),
			rec(3, "response_item", `{"type":"function_call","name":"exec_command","arguments":"{\"cmd\":\"ls\"}","call_id":"c1"}`),
			rec(4, "response_item", `{"type":"function_call_output","call_id":"c1","output":"a.go"}`),
			rec(5, "response_item", `{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Done"}]}`),
		},
		want: []string{
			`turn/start {"source":{"line":1,"record":@}}`,
			`context/message {"text":"rules","kind":"developer","role":"developer","source":{"line":2,"record":@}}`,
			`step/start {}`,
			`assistant/reasoning {"text":"look","source":{"line":3,"record":@}}`,
			`tool/call {"id":"c1","name":"exec_command","args":{"cmd":"ls"},"source":{"line":4,"record":@}}`,
			`tool/result {"id":"c1","output":"a.go","source":{"line":5,"record":@}}`,
			`assistant/message {"text":"Done","source":{"line":6,"record":@}}`,
			// The task never completed: the rollout ends mid-turn.
			`step/end {}`,
			`turn/end {"kind":"interrupted","reason":"the trace ends mid-turn"}`,
		},
	}, {
		name: "arguments that are no JSON stay a string; custom tools; web search",
		lines: []string{turn,
			rec(2, "response_item", `{"type":"function_call","name":"f","arguments":"not json","call_id":"c2"}`),
			rec(3, "response_item", `{"type":"custom_tool_call","status":"completed","call_id":"c3","name":"apply_patch","input":"*** Begin Patch"}`),
			rec(4, "response_item", `{"type":"custom_tool_call_output","call_id":"c3","output":"ok"}`),
			rec(5, "response_item", `{"type":"web_search_call","status":"completed","action":{"type":"search","query":"q"}}`),
		},
		want: []string{
			`turn/start {"source":{"line":1,"record":@}}`,
			`step/start {}`,
			`tool/call {"id":"c2","name":"f","args":"not json","source":{"line":2,"record":@}}`,
			`tool/call {"id":"c3","name":"apply_patch","args":{"input":"*** Begin Patch"},"source":{"line":3,"record":@}}`,
			`tool/result {"id":"c3","output":"ok","source":{"line":4,"record":@}}`,
			`tool/call {"id":"web_search-1","name":"web_search","args":{"type":"search","query":"q"},"source":{"line":5,"record":@}}`,
			`tool/result {"id":"web_search-1","output":"completed","source":{"line":5}}`,
			`tool/result {"id":"c2","error":"no result in the trace: it ends before this call's result was recorded","synthetic":true}`,
			`step/end {}`,
			`turn/end {"kind":"interrupted","reason":"the trace ends mid-turn"}`,
		},
	}, {
		name: "token_count: per-call deltas of the running total, a repeat makes none",
		lines: []string{turn, ctx,
			rec(2, "response_item", `{"type":"message","role":"assistant","content":[{"type":"output_text","text":"a"}]}`),
			rec(3, "event_msg", `{"type":"token_count","info":{"total_token_usage":{"input_tokens":100,"cached_input_tokens":0,"output_tokens":10},"last_token_usage":{"input_tokens":100,"cached_input_tokens":0,"output_tokens":10}}}`),
			rec(4, "event_msg", `{"type":"token_count","info":{"total_token_usage":{"input_tokens":100,"cached_input_tokens":0,"output_tokens":10}}}`),
			rec(5, "response_item", `{"type":"message","role":"assistant","content":[{"type":"output_text","text":"b"}]}`),
			rec(6, "event_msg", `{"type":"token_count","info":{"total_token_usage":{"input_tokens":250,"cached_input_tokens":90,"output_tokens":15}}}`),
			rec(7, "event_msg", `{"type":"token_count","info":null}`),
		},
		want: []string{
			`turn/start {"source":{"line":1,"record":@}}`,
			`codex/turn_context @`,
			`step/start {}`,
			`assistant/message {"text":"a","source":{"line":3,"record":@}}`,
			`usage {"inputTokens":100,"outputTokens":10,"model":"gpt-5","source":{"line":4,"record":@}}`,
			`step/end {}`,
			`codex/event_msg/token_count @`,
			`step/start {}`,
			`assistant/message {"text":"b","source":{"line":6,"record":@}}`,
			`usage {"inputTokens":150,"outputTokens":5,"cachedTokens":90,"model":"gpt-5","source":{"line":7,"record":@}}`,
			`step/end {}`,
			`codex/event_msg/token_count @`,
			`turn/end {"kind":"interrupted","reason":"the trace ends mid-turn"}`,
		},
	}, {
		name:  "compacted",
		lines: []string{turn, rec(2, "compacted", `{"message":"Summary so far","replacement_history":[]}`)},
		want: []string{
			`turn/start {"source":{"line":1,"record":@}}`,
			`context/compacted {"summary":"Summary so far","source":{"line":2,"record":@}}`,
			`turn/end {"kind":"interrupted","reason":"the trace ends mid-turn"}`,
		},
	}, {
		name: "thread_rolled_back: a rollback to the event before the dropped turns",
		lines: []string{rec(0, "session_meta", meta),
			turn, user, done, // turn at seq 1
			turn, user, done, // turn at seq 4
			turn, user, done, // turn at seq 7
			rec(9, "event_msg", `{"type":"thread_rolled_back","num_turns":2}`),
			rec(9, "event_msg", `{"type":"thread_rolled_back","num_turns":5}`),
		},
		want: []string{
			`codex/session_meta @`,
			`turn/start {"source":{"line":2,"record":@}}`,
			`user/message {"text":"Fix it","source":{"line":3,"record":@}}`,
			`turn/end {"kind":"completed","source":{"line":4,"record":@}}`,
			`turn/start {"source":{"line":5,"record":@}}`,
			`user/message {"text":"Fix it","source":{"line":6,"record":@}}`,
			`turn/end {"kind":"completed","source":{"line":7,"record":@}}`,
			`turn/start {"source":{"line":8,"record":@}}`,
			`user/message {"text":"Fix it","source":{"line":9,"record":@}}`,
			`turn/end {"kind":"completed","source":{"line":10,"record":@}}`,
			`rollback {"to":3,"reason":"codex: thread rolled back 2 turns"}`,
			`codex/event_msg/thread_rolled_back @`,
			// More turns than are left: back to before the first.
			`rollback {"to":0,"reason":"codex: thread rolled back 5 turns"}`,
			`codex/event_msg/thread_rolled_back @`,
		},
	}, {
		name: "a new task while one is open interrupts it; the UI's record of a prompt is one (Desktop)",
		lines: []string{turn,
			rec(2, "event_msg", `{"type":"user_message","message":"Fix it"}`),
			turn,
			rec(3, "event_msg", `{"type":"turn_aborted","reason":"interrupted"}`),
		},
		want: []string{
			`turn/start {"source":{"line":1,"record":@}}`,
			`user/message {"text":"Fix it","source":{"line":2,"record":@}}`,
			`turn/end {"kind":"interrupted","reason":"a new task started"}`,
			`turn/start {"source":{"line":3,"record":@}}`,
			`turn/end {"kind":"interrupted","reason":"interrupted","source":{"line":4,"record":@}}`,
		},
	}, {
		name: "a prompt recorded twice (item, then event) is one user/message; what Codex wrote is context",
		lines: []string{turn,
			rec(2, "response_item", `{"type":"message","role":"user","content":[{"type":"input_text","text":"# AGENTS.md instructions for /w\n\n<INSTRUCTIONS>x</INSTRUCTIONS>"},{"type":"input_text","text":"<environment_context>e</environment_context>"}]}`),
			user,
			rec(2, "event_msg", `{"type":"user_message","message":"Fix it","images":[]}`),
			rec(3, "event_msg", `{"type":"user_message","message":"<user_instructions>u</user_instructions>","kind":"user_instructions"}`),
			rec(4, "event_msg", `{"type":"item_completed","item":{"type":"UserMessage","content":[{"type":"text","text":"and this"}]}}`),
			done,
		},
		want: []string{
			`turn/start {"source":{"line":1,"record":@}}`,
			`context/message {"text":"# AGENTS.md instructions for /w\n\n<INSTRUCTIONS>x</INSTRUCTIONS>","kind":"instructions","role":"user","source":{"line":2,"record":@}}`,
			`context/message {"text":"<environment_context>e</environment_context>","kind":"environment","role":"user","source":{"line":2}}`,
			`user/message {"text":"Fix it","source":{"line":3,"record":@}}`,
			`codex/event_msg/user_message @`,
			`context/message {"text":"<user_instructions>u</user_instructions>","kind":"instructions","role":"user","source":{"line":5,"record":@}}`,
			`user/message {"text":"and this","source":{"line":6,"record":@}}`,
			`turn/end {"kind":"completed","source":{"line":7,"record":@}}`,
		},
	}, {
		// Regression: Codex's plugins, subagents, skills-section, js_repl and
		// child-agents fragments were missing from the markers: user/message.
		name: "every contextual fragment Codex writes as user input is context",
		lines: []string{turn,
			rec(2, "response_item", `{"type":"message","role":"user","content":[{"type":"input_text","text":"<plugins>\ncal\n</plugins>"},{"type":"input_text","text":"<subagents>\n- a\n</subagents>"},{"type":"input_text","text":"<skills_section>\ns\n</skills_section>"},{"type":"input_text","text":"<js_repl_instructions>j</js_repl_instructions>"},{"type":"input_text","text":"<child_agents_instructions>c</child_agents_instructions>"}]}`),
			done,
		},
		want: []string{
			`turn/start {"source":{"line":1,"record":@}}`,
			`context/message {"text":"<plugins>\ncal\n</plugins>","kind":"instructions","role":"user","source":{"line":2,"record":@}}`,
			`context/message {"text":"<subagents>\n- a\n</subagents>","kind":"instructions","role":"user","source":{"line":2}}`,
			`context/message {"text":"<skills_section>\ns\n</skills_section>","kind":"instructions","role":"user","source":{"line":2}}`,
			`context/message {"text":"<js_repl_instructions>j</js_repl_instructions>","kind":"instructions","role":"user","source":{"line":2}}`,
			`context/message {"text":"<child_agents_instructions>c</child_agents_instructions>","kind":"instructions","role":"user","source":{"line":2}}`,
			`turn/end {"kind":"completed","source":{"line":3,"record":@}}`,
		},
	}, {
		name: "the first rollouts: a header, bare items, state markers; a turn a prompt",
		lines: []string{`{"id":"L1","timestamp":"2025-06-01T10:00:00Z","instructions":null}`, `{"record_type":"state"}`,
			`{"type":"message","role":"user","content":[{"type":"input_text","text":"one"}]}`,
			`{"type":"message","role":"assistant","content":[{"type":"output_text","text":"1"}]}`,
			`{"type":"message","role":"user","content":[{"type":"input_text","text":"two"}]}`,
			`{"type":"function_call","name":"shell","arguments":"{}","call_id":"k"}`,
			`{"type":"function_call_output","call_id":"k","output":{"content":"denied","success":false}}`,
			`{"type":"message","role":"assistant","content":[{"type":"output_text","text":"2"}]}`,
		},
		want: []string{
			`codex/session_meta @`,
			`codex/state @`,
			`turn/start {}`,
			`user/message {"text":"one","source":{"line":3,"record":@}}`,
			`step/start {}`,
			`assistant/message {"text":"1","source":{"line":4,"record":@}}`,
			`step/end {}`,
			`turn/end {"kind":"completed"}`,
			`turn/start {}`,
			`user/message {"text":"two","source":{"line":5,"record":@}}`,
			`step/start {}`,
			`tool/call {"id":"k","name":"shell","args":{},"source":{"line":6,"record":@}}`,
			`tool/result {"id":"k","error":"denied","source":{"line":7,"record":@}}`,
			`assistant/message {"text":"2","source":{"line":8,"record":@}}`,
			`step/end {}`,
			`turn/end {"kind":"completed"}`,
		},
	}, {
		name:  "no task events: a turn_context starts each turn",
		lines: []string{ctx, user, rec(3, "response_item", `{"type":"message","role":"assistant","content":[{"type":"output_text","text":"a"}]}`), ctx, user},
		want: []string{
			`turn/start {"source":{"line":1,"record":@}}`,
			`user/message {"text":"Fix it","source":{"line":2,"record":@}}`,
			`step/start {}`,
			`assistant/message {"text":"a","source":{"line":3,"record":@}}`,
			`step/end {}`,
			`turn/end {"kind":"completed"}`,
			`turn/start {"source":{"line":4,"record":@}}`,
			`user/message {"text":"Fix it","source":{"line":5,"record":@}}`,
			`turn/end {"kind":"interrupted","reason":"the trace ends mid-turn"}`,
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			s := parse(t, tc.lines...)
			require.Equal(t, tc.want, brief(s.Events))
		})
	}
}

func TestLabelsAndFork(t *testing.T) {
	fork := `{"id":"T2","cwd":"/w","cli_version":"0.125.0","model_provider":"openai","forked_from_id":"T1"}`
	s := parse(t, rec(0, "session_meta", fork), rec(1, "turn_context", `{"model":"gpt-5"}`), rec(2, "turn_context", `{"model":"gpt-6"}`))
	require.Equal(t, map[string]string{
		"source": "codex", "sourceFile": "rollout-a.jsonl", "sourceId": "T2", "cwd": "/w",
		"codex.cliVersion": "0.125.0", "codex.modelProvider": "openai", "codex.forkedFromId": "T1", "model": "gpt-5",
	}, s.Labels)
	require.Equal(t, "T2", s.Key)
	require.Equal(t, "T1", s.ForkOf)
	require.Equal(t, int64(1767225600000), s.CreatedAt)
}

func TestParseErrors(t *testing.T) {
	for name, in := range map[string]string{
		"not json":      "hello\n",
		"no type":       `{"timestamp":"x"}` + "\n",
		"claude record": `{"type":"user","message":{"content":"hi"}}` + "\n",
	} {
		t.Run(name, func(t *testing.T) {
			_, err := codex.Parse(strings.NewReader(in), "rollout-x.jsonl")
			importertest.CheckError(t, err, []byte(in), importer.ErrFormat)
		})
	}
	// A bad line after the first cuts the session before it.
	s, err := codex.Parse(strings.NewReader(rec(0, "session_meta", meta)+"\n{oops\n"), "rollout-x.jsonl")
	require.NoError(t, err)
	require.Equal(t, 2, s.Partial.Line)
	// A torn last line (no newline, not JSON) is left out and counted.
	s, err = codex.Parse(strings.NewReader(rec(0, "session_meta", meta)+"\n"+`{"timestamp":"2026`), "rollout-x.jsonl")
	require.NoError(t, err)
	require.Equal(t, &importer.Torn{Line: 2, Offset: int64(len(rec(0, "session_meta", meta)) + 1), Bytes: 18}, s.Torn)
	require.Len(t, s.Events, 1)
}

func TestMatch(t *testing.T) {
	imp := codex.New()
	require.True(t, imp.Match("/s/2026/05/11/rollout-2026-05-11T11-26-55-019e.jsonl"))
	require.False(t, imp.Match("/s/session.jsonl"))
	require.False(t, imp.Match("/s/rollout-a.json"))
}

// Regression: a line the builder drops (here one holding invalid UTF-8,
// which no event may carry) took back its events while the parser kept
// what the line did to it: a step its usage closed stayed closed, a call
// it made stayed pending, a turn it started stayed among those a rollback
// counts, labels and identity it told stayed set. The
// session then ended a turn inside a step, or answered a call it never
// made. The parser is put back as the line found it: a session cut at the
// line is that of the lines before it, and one made past it (SkipBad)
// that of the rollout without it.
func TestDroppedRecordLeavesNoTrace(t *testing.T) {
	bad := func(line string) string { return strings.TrimSuffix(line, "}") + ",\"x\":\"\x87\"}" }
	user := rec(1, "response_item", `{"type":"message","role":"user","content":[{"type":"input_text","text":"go"}]}`)
	answer := rec(2, "response_item", `{"type":"message","role":"assistant","content":[{"type":"output_text","text":"a"}]}`)
	for _, tc := range []struct {
		name  string
		lines []string
	}{
		{"a usage that ends the step", []string{rec(0, "session_meta", meta), answer,
			bad(rec(3, "event_msg", `{"type":"token_count","info":{"total_token_usage":{"input_tokens":5,"output_tokens":2}}}`)), answer}},
		{"a call", []string{rec(0, "session_meta", meta), user,
			bad(rec(3, "response_item", `{"type":"function_call","name":"f","arguments":"{}","call_id":"c"}`)), answer}},
		// The rollback must go back past both turns, not to the turn/start
		// the parser took as written.
		{"a turn_context that starts a turn", []string{rec(0, "session_meta", meta), user,
			bad(rec(3, "turn_context", `{"cwd":"/w"}`)), rec(4, "event_msg", `{"type":"task_started"}`),
			rec(5, "event_msg", `{"type":"thread_rolled_back","num_turns":2}`), user}},
		{"labels and identity", []string{rec(1, "turn_context", `{"model":"m"}`), user, bad(rec(2, "session_meta", meta)), answer}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := []byte(strings.Join(tc.lines, "\n") + "\n")
			importertest.CheckDroppedLine(t, codex.New(), in, "/x/rollout-a.jsonl", 3, checkOrder)
		})
	}
}
