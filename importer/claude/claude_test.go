package claude_test

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/afero"
	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/importer"
	"github.com/sessionlog/sessionlog/importer/claude"
	"github.com/sessionlog/sessionlog/internal/testkit/importertest"
)

// events renders events as "type data" lines, times left out.
func events(t *testing.T, es []eventlog.Event) []string {
	t.Helper()
	var out []string
	for i, e := range es {
		require.Equal(t, int64(i), e.Seq)
		out = append(out, importertest.Brief(claude.Name, e))
	}
	return out
}

func parse(t *testing.T, lines ...string) importer.Session {
	t.Helper()
	s, err := claude.Parse(strings.NewReader(strings.Join(lines, "\n")+"\n"), "/x/s.jsonl")
	require.NoError(t, err)
	return s
}

const (
	prompt   = `{"type":"user","uuid":"u1","timestamp":"2026-01-01T00:00:00.000Z","sessionId":"S","cwd":"/w","version":"2.1","message":{"role":"user","content":"Fix it"}}`
	thinking = `{"type":"assistant","uuid":"a1","timestamp":"2026-01-01T00:00:01.000Z","message":{"id":"m1","model":"claude-x","content":[{"type":"thinking","thinking":"hm","signature":"sig"}],"usage":{"input_tokens":3,"output_tokens":1,"cache_read_input_tokens":10,"cache_creation_input_tokens":5}}}`
	blank    = `{"type":"assistant","uuid":"a0","timestamp":"2026-01-01T00:00:01.000Z","message":{"id":"m1","model":"claude-x","content":[{"type":"text","text":"\n\n"}]}}`
	call     = `{"type":"assistant","uuid":"a2","timestamp":"2026-01-01T00:00:02.000Z","message":{"id":"m1","model":"claude-x","content":[{"type":"tool_use","id":"t1","name":"Task","input":{"prompt":"look"}}],"usage":{"input_tokens":3,"output_tokens":7,"cache_read_input_tokens":10,"cache_creation_input_tokens":5}}}`
	result   = `{"type":"user","uuid":"u2","timestamp":"2026-01-01T00:00:03.000Z","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":[{"type":"text","text":"found"}]}]},"toolUseResult":{"agentId":"abc"}}`
	answer   = `{"type":"assistant","uuid":"a3","timestamp":"2026-01-01T00:00:04.000Z","message":{"id":"m2","model":"claude-x","content":[{"type":"text","text":"Done <ok>"}],"usage":{"input_tokens":1,"output_tokens":2}}}`
	progress = `{"type":"progress","uuid":"p1","timestamp":"2026-01-01T00:00:03.500Z","data":{"type":"hook_progress"}}`
	stopHook = `{"type":"system","subtype":"stop_hook_summary","uuid":"y1","timestamp":"2026-01-01T00:00:05.000Z"}`
)

func TestParse(t *testing.T) {
	s := parse(t, `{"type":"file-history-snapshot","messageId":"x","snapshot":{}}`, prompt, blank, thinking, call, progress, result, answer, stopHook,
		`{"type":"summary","summary":"Fixing it","leafUuid":"a3"}`)
	require.Equal(t, []string{
		`claude/file-history-snapshot @`,
		`turn/start {}`,
		`user/message {"text":"Fix it","source":{"line":2,"record":@}}`,
		`step/start {}`,
		`claude/assistant @`,
		`assistant/reasoning {"text":"hm","signature":"sig","source":{"line":4,"record":@}}`,
		`tool/call {"id":"t1","name":"Task","args":{"prompt":"look"},"source":{"line":5,"record":@}}`,
		`claude/progress @`,
		`tool/result {"id":"t1","output":"found","source":{"line":7,"record":@}}`,
		`usage {"inputTokens":18,"outputTokens":7,"cachedTokens":10,"cacheWriteTokens":5,"model":"claude-x"}`,
		`step/end {}`,
		`step/start {}`,
		`assistant/message {"text":"Done <ok>","source":{"line":8,"record":@}}`,
		`usage {"inputTokens":1,"outputTokens":2,"model":"claude-x"}`,
		`step/end {}`,
		`turn/end {"kind":"completed"}`,
		`claude/system @`,
		`claude/summary @`,
	}, events(t, s.Events))
	require.Equal(t, int64(1767225600000), s.CreatedAt)
	require.Equal(t, int64(1767225605000), s.Events[len(s.Events)-1].Time, "turn/end at the stop hook")
	require.Equal(t, int64(1767225603000), s.Events[9].Time, "usage at the last event's time")
	require.Equal(t, map[string]string{
		"source": "claude", "sourceFile": "s.jsonl", "sourceId": "S", "cwd": "/w", "claude.version": "2.1",
		"model": "claude-x", "title": "Fixing it",
	}, s.Labels)
	require.Equal(t, map[string]importer.Spawn{"abc": {Seq: 6, Call: "t1"}}, s.Spawns)
	require.Equal(t, map[string]int{"file-history-snapshot": 1, "progress": 1, "blank text block": 1}, s.Unmapped)

	again := parse(t, `{"type":"file-history-snapshot","messageId":"x","snapshot":{}}`, prompt, blank, thinking, call, progress, result, answer, stopHook,
		`{"type":"summary","summary":"Fixing it","leafUuid":"a3"}`)
	require.Equal(t, s, again, "deterministic")
}

func TestTurns(t *testing.T) {
	second := `{"type":"user","uuid":"u3","timestamp":"2026-01-01T00:00:06.000Z","message":{"role":"user","content":[{"type":"text","text":"more"},{"type":"image","source":{}}]}}`
	meta := `{"type":"user","uuid":"u4","isMeta":true,"timestamp":"2026-01-01T00:00:06.000Z","message":{"role":"user","content":"<local-command-stdout>ok</local-command-stdout>"}}`
	interrupt := `{"type":"user","uuid":"u5","timestamp":"2026-01-01T00:00:07.000Z","message":{"role":"user","content":[{"type":"text","text":"[Request interrupted by user]"}]}}`
	compact := `{"type":"user","uuid":"u6","isCompactSummary":true,"timestamp":"2026-01-01T00:00:08.000Z","message":{"role":"user","content":"Summary: fixed"}}`
	boundary := `{"type":"system","subtype":"compact_boundary","uuid":"y2","timestamp":"2026-01-01T00:00:08.000Z","content":"Conversation compacted"}`
	apiErr := `{"type":"system","subtype":"api_error","uuid":"y3","level":"error","timestamp":"2026-01-01T00:00:09.000Z","content":"overloaded"}`
	sidechain := `{"type":"assistant","uuid":"z1","isSidechain":true,"message":{"id":"mz","content":[{"type":"text","text":"sub"}]}}`
	s := parse(t, prompt, answer, second, meta, call, interrupt, prompt, answer, boundary, compact, apiErr, sidechain, call)
	require.Equal(t, []string{
		`turn/start {}`,
		`user/message {"text":"Fix it","source":{"line":1,"record":@}}`,
		`step/start {}`,
		`assistant/message {"text":"Done <ok>","source":{"line":2,"record":@}}`,
		// A new prompt ends the answered turn.
		`usage {"inputTokens":1,"outputTokens":2,"model":"claude-x"}`,
		`step/end {}`,
		`turn/end {"kind":"completed"}`,
		`turn/start {}`,
		`user/message {"text":"more\n\n[image]","source":{"line":3,"record":@}}`,
		// Claude Code's own words are context, not a prompt.
		`context/message {"text":"<local-command-stdout>ok</local-command-stdout>","kind":"meta","source":{"line":4,"record":@}}`,
		`step/start {}`,
		`tool/call {"id":"t1","name":"Task","args":{"prompt":"look"},"source":{"line":5,"record":@}}`,
		// The user interrupts: the call gets a synthetic result, the turn
		// ends, its reason the marker.
		`tool/result {"id":"t1","error":"no result in the trace: it ends before this call's result was recorded","synthetic":true}`,
		`usage {"inputTokens":18,"outputTokens":7,"cachedTokens":10,"cacheWriteTokens":5,"model":"claude-x"}`,
		`step/end {}`,
		`turn/end {"kind":"interrupted","reason":"[Request interrupted by user]","source":{"line":6,"record":@}}`,
		`turn/start {}`,
		`user/message {"text":"Fix it","source":{"line":7,"record":@}}`,
		`step/start {}`,
		`assistant/message {"text":"Done <ok>","source":{"line":8,"record":@}}`,
		`usage {"inputTokens":1,"outputTokens":2,"model":"claude-x"}`,
		`step/end {}`,
		// What system lines say is context; the boundary closes the step.
		`context/message {"text":"Conversation compacted","kind":"system:compact_boundary","source":{"line":9,"record":@}}`,
		`context/compacted {"summary":"Summary: fixed","source":{"line":10,"record":@}}`,
		`context/message {"text":"overloaded","kind":"system:api_error","source":{"line":11,"record":@}}`,
		`claude/assistant @`, // the sidechain line
		// The call at the end has no result: the trace ends mid-turn.
		`step/start {}`,
		`tool/call {"id":"t1","name":"Task","args":{"prompt":"look"},"source":{"line":13,"record":@}}`,
		`tool/result {"id":"t1","error":"no result in the trace: it ends before this call's result was recorded","synthetic":true}`,
		`usage {"inputTokens":18,"outputTokens":7,"cachedTokens":10,"cacheWriteTokens":5,"model":"claude-x"}`,
		`step/end {}`,
		`turn/end {"kind":"interrupted","reason":"the trace ends mid-turn"}`,
	}, events(t, s.Events))
	require.Equal(t, 1, s.Unmapped["sidechain assistant"])
}

func TestParseErrors(t *testing.T) {
	for name, in := range map[string]string{
		"empty":       "",
		"text":        "hello\n",
		"no messages": `{"type":"session","version":0}` + "\n" + `{"type":"turn/start"}` + "\n",
		"bad content": `{"type":"user","message":{"content":5}}` + "\n",
		"not object":  `[1,2]` + "\n",
	} {
		t.Run(name, func(t *testing.T) {
			_, err := claude.Parse(strings.NewReader(in), "f.jsonl")
			require.Error(t, err)
			require.True(t, errors.Is(err, importer.ErrFormat), "%v", err)
		})
	}
	// Bookkeeping lines only: a transcript without a conversation.
	s, err := claude.Parse(strings.NewReader(`{"type":"summary","summary":"Old","leafUuid":"x"}`+"\n"+`{"type":"file-history-snapshot","snapshot":{}}`+"\n"), "f.jsonl")
	require.NoError(t, err)
	require.Equal(t, []string{"claude/summary", "claude/file-history-snapshot"}, types(s.Events), "kept as records")
	require.Equal(t, "Old", s.Labels["title"])

	// A torn last line (no newline, not JSON) is left out and reported,
	// not an error.
	s, err = claude.Parse(strings.NewReader(prompt+"\n"+answer+"\n"+`{"type":"assist`), "f.jsonl")
	require.NoError(t, err)
	require.Equal(t, &importer.Torn{Line: 3, Offset: int64(len(prompt) + len(answer) + 2), Bytes: 15}, s.Torn)
}

func TestSubagents(t *testing.T) {
	fs := afero.NewMemMapFs()
	write := func(path string) { require.NoError(t, afero.WriteFile(fs, path, []byte(prompt+"\n"), 0o600)) }
	write("/p/S.jsonl")
	write("/p/S/subagents/agent-abc.jsonl")
	write("/p/S/subagents/agent-acompact-1.jsonl")
	write("/p/S/subagents/notes.txt")
	kids, err := claude.Subagents(fs, "/p/S.jsonl")
	require.NoError(t, err)
	require.Equal(t, []string{filepath.Join("/p/S/subagents", "agent-abc.jsonl"), filepath.Join("/p/S/subagents", "agent-acompact-1.jsonl")}, kids)
	none, err := claude.Subagents(fs, "/p/S/subagents/agent-abc.jsonl")
	require.NoError(t, err)
	require.Nil(t, none, "a subagent has none")

	// The subagent's session: its key, the Task call's spawn in the parent.
	parent := parse(t, prompt, call, result, answer)
	require.Equal(t, map[string]importer.Spawn{"abc": {Seq: 3, Call: "t1"}}, parent.Spawns)
	sub := parse(t, strings.Replace(prompt, `"uuid":"u1"`, `"uuid":"s1","isSidechain":true,"agentId":"abc"`, 1))
	require.Equal(t, "abc", sub.Key)
	require.Equal(t, "S/agent-abc", sub.ID, "its identity: the session's id and its agent's")
	require.Equal(t, "S", parent.ID)
}

// Regression: an error about a line's content, not its JSON, named no line.
// A bad line after the first cuts the session before it (Partial).
func TestErrorNamesLine(t *testing.T) {
	s, err := claude.Parse(strings.NewReader(prompt+"\n"+`{"type":"user","message":{"content":5}}`+"\n"+answer+"\n"), "f.jsonl")
	require.NoError(t, err)
	require.ErrorIs(t, s.Partial, importer.ErrFormat)
	require.Equal(t, "line 2: message content is neither a string nor an array of blocks", s.Partial.Error())
	require.Equal(t, 1, s.Records, "the lines before it")
	s, err = claude.Parse(strings.NewReader(prompt+"\n{oops\n"+answer+"\n"), "f.jsonl")
	require.NoError(t, err)
	require.Equal(t, 2, s.Partial.Line)
}

// Regression: a usage's counts were summed unchecked, so a sum beyond int64
// wrapped to a negative inputTokens, and negative counts were kept. Such a
// usage now makes no event; it is counted in Dropped.
func TestUsageOutOfRange(t *testing.T) {
	reply := func(usage string) string {
		return `{"type":"assistant","uuid":"a9","message":{"id":"m9","model":"claude-x","content":[{"type":"text","text":"Hi"}],"usage":` + usage + `}}`
	}
	for name, usage := range map[string]string{
		"sum beyond int64": `{"input_tokens":9223372036854775807,"output_tokens":1,"cache_read_input_tokens":1}`,
		"negative input":   `{"input_tokens":-20,"output_tokens":1,"cache_read_input_tokens":10}`,
		"negative output":  `{"input_tokens":5,"output_tokens":-1}`,
	} {
		t.Run(name, func(t *testing.T) {
			s := parse(t, prompt, reply(usage))
			require.Equal(t, []string{
				`turn/start {}`,
				`user/message {"text":"Fix it","source":{"line":1,"record":@}}`,
				`step/start {}`,
				`assistant/message {"text":"Hi","source":{"line":2,"record":@}}`,
				`step/end {}`,
				`turn/end {"kind":"completed"}`,
			}, events(t, s.Events))
			require.Equal(t, 1, s.Unmapped["usage out of range"])
		})
	}
	s := parse(t, prompt, reply(`{"input_tokens":9223372036854775806,"output_tokens":0,"cache_read_input_tokens":1}`))
	require.Equal(t, `usage {"inputTokens":9223372036854775807,"outputTokens":0,"cachedTokens":1,"model":"claude-x"}`, events(t, s.Events)[4],
		"the largest sum is kept")
}

// Regression: a line whose event grows beyond the row limit once converted
// gave an event the log refuses. It is now a format error naming the line.
// (The event carries the line's record beside its text, so a line of half
// the limit is enough.) A line holding invalid UTF-8 is refused the same
// way: the log would refuse its record.
func TestEventTooLarge(t *testing.T) {
	for _, tc := range []struct {
		name, text, want string
	}{
		{"too large once converted", strings.Repeat("a", eventlog.MaxRowSize/2+1), `line 2: seq 4: eventlog: row too large: the row of a "user/message" event would be `},
		{"invalid UTF-8", "\xff\xfe", `line 2: seq 4: eventlog: invalid event: data of type "user/message" is not valid JSON: invalid UTF-8 in string`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := prompt + "\n" + `{"type":"user","message":{"content":"` + tc.text + `"}}` + "\n"
			require.Less(t, len(in), eventlog.MaxRowSize, "the line itself is within the limit")
			s, err := claude.Parse(strings.NewReader(in), "f.jsonl")
			require.NoError(t, err)
			require.ErrorIs(t, s.Partial, importer.ErrFormat)
			require.Contains(t, s.Partial.Error(), tc.want)
		})
	}
}

func types(es []eventlog.Event) []string {
	var out []string
	for _, e := range es {
		out = append(out, e.Type)
	}
	return out
}

// Regression: a queued command was a user/message whatever queued it, so
// a task notification Claude Code delivers mid-turn (commandMode
// "task-notification") or another session's message (origin "peer") read
// as a prompt. Newer Claude Code says who: origin {"kind":"human"} is the
// person; any other origin, or without one a commandMode other than a
// prompt's, is context. A user line of another origin (a peer's message)
// is, like a task notification, a turn Claude Code started for it.
func TestOrigin(t *testing.T) {
	user := func(uuid, content, extra string) string {
		return `{"type":"user","uuid":"` + uuid + `","timestamp":"2026-01-01T00:00:00.000Z","sessionId":"S","message":{"role":"user","content":` + content + `}` + extra + `}`
	}
	queued := func(uuid, att string) string {
		return `{"type":"attachment","uuid":"` + uuid + `","timestamp":"2026-01-01T00:00:02.000Z","sessionId":"S","attachment":{"type":"queued_command",` + att + `}}`
	}
	s := parse(t,
		user("u1", `"<system-reminder>typed after all</system-reminder>"`, `,"origin":{"kind":"human"}`),
		call,
		queued("q1", `"prompt":"and the tests","commandMode":"prompt","origin":{"kind":"human"}`),
		queued("q2", `"prompt":"<task-notification>done</task-notification>","commandMode":"task-notification"`),
		queued("q3", `"prompt":"from another session","commandMode":"prompt","origin":{"kind":"peer"}`),
		queued("q4", `"prompt":"older, no origin","commandMode":"prompt"`),
		result,
		answer,
		user("u2", `"<cross-session-message from=\"x\">hi</cross-session-message>"`, `,"origin":{"kind":"peer"}`),
		user("u3", `"[Request interrupted by user]"`, `,"origin":{"kind":"human"}`),
	)
	require.Equal(t, []string{
		`turn/start {}`,
		`user/message {"text":"<system-reminder>typed after all</system-reminder>","source":{"line":1,"record":@}}`,
		`step/start {}`,
		`tool/call {"id":"t1","name":"Task","args":{"prompt":"look"},"source":{"line":2,"record":@}}`,
		`user/message {"text":"and the tests","queued":true,"source":{"line":3,"record":@}}`,
		`context/message {"text":"<task-notification>done</task-notification>","kind":"task-notification","source":{"line":4,"record":@}}`,
		`context/message {"text":"from another session","kind":"peer","source":{"line":5,"record":@}}`,
		`user/message {"text":"older, no origin","queued":true,"source":{"line":6,"record":@}}`,
		`tool/result {"id":"t1","output":"found","source":{"line":7,"record":@}}`,
		`usage {"inputTokens":18,"outputTokens":7,"cachedTokens":10,"cacheWriteTokens":5,"model":"claude-x"}`,
		`step/end {}`,
		`step/start {}`,
		`assistant/message {"text":"Done <ok>","source":{"line":8,"record":@}}`,
		`usage {"inputTokens":1,"outputTokens":2,"model":"claude-x"}`,
		`step/end {}`,
		`turn/end {"kind":"completed"}`,
		`turn/start {}`,
		`context/message {"text":"<cross-session-message from=\"x\">hi</cross-session-message>","kind":"peer","source":{"line":9,"record":@}}`,
		`turn/end {"kind":"interrupted","reason":"[Request interrupted by user]","source":{"line":10,"record":@}}`,
	}, events(t, s.Events))
}

// Regression: the prompt of a compaction sub-run (agent-acompact-*: "Your
// task is to create a detailed summary…") became a user/message; it is
// Claude Code's instruction, a turn of its own nobody typed.
func TestCompactionRun(t *testing.T) {
	s, err := claude.Parse(strings.NewReader(
		`{"type":"user","uuid":"c1","isSidechain":true,"agentId":"acompact-1","timestamp":"2026-01-01T00:00:00.000Z","sessionId":"S","message":{"role":"user","content":"Your task is to create a detailed summary"}}`+"\n"+
			`{"type":"assistant","uuid":"c2","isSidechain":true,"agentId":"acompact-1","timestamp":"2026-01-01T00:00:01.000Z","sessionId":"S","message":{"id":"m1","model":"claude-x","content":[{"type":"text","text":"<summary>…</summary>"}]}}`+"\n"),
		"/p/S/subagents/agent-acompact-1.jsonl")
	require.NoError(t, err)
	require.Equal(t, []string{
		`turn/start {}`,
		`context/message {"text":"Your task is to create a detailed summary","kind":"compaction","source":{"line":1,"record":@}}`,
		`step/start {}`,
		`assistant/message {"text":"<summary>…</summary>","source":{"line":2,"record":@}}`,
		`step/end {}`,
		`turn/end {"kind":"completed"}`,
	}, events(t, s.Events))
}

// Regression (found by FuzzParse): a record the builder drops (here a
// line holding invalid UTF-8, which no event may carry) took back the
// step/end it wrote for the step before it, while the parser took that
// step as closed: the turn then ended inside a step. The parser's turn
// and step are put back as the dropped record found them, whether the
// conversion stops there or goes past it (SkipBad).
func TestDroppedRecordLeavesNoOpenStep(t *testing.T) {
	first := `{"type":"assistant","uuid":"a0","timestamp":"2026-01-01T00:00:01.000Z","message":{"content":[{"type":"text","text":"one"}]}}`
	bad := "{\"type\":\"assistant\",\"uuid\":\"a1\",\"x\":\"\x87\",\"message\":{\"content\":[{\"type\":\"text\",\"text\":\"two\"}]}}"
	third := `{"type":"assistant","uuid":"a2","message":{"content":[{"type":"text","text":"three"}]}}`
	for _, tc := range []struct {
		name string
		cfg  importer.Config
		want int // assistant messages kept
	}{
		{"stops at the bad record", importer.Config{}, 1},
		{"goes past it", importer.Config{SkipBad: true}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := first + "\n" + bad + "\n" + third + "\n"
			s, err := importer.Parse(t.Context(), claude.New(), strings.NewReader(in), "s.jsonl", tc.cfg)
			require.NoError(t, err)
			checkOrder(t, s.Events)
			n := 0
			for _, e := range s.Events {
				if e.Type == "assistant/message" {
					n++
				}
			}
			require.Equal(t, tc.want, n)
		})
	}
	importertest.CheckDroppedLine(t, claude.New(), []byte(first+"\n"+bad+"\n"+third+"\n"), "s.jsonl", 2, checkOrder)
	// A dropped line that names the session leaves no title or name.
	named := "{\"type\":\"custom-title\",\"customTitle\":\"T\",\"x\":\"\x87\"}\n{\"type\":\"agent-name\",\"agentName\":\"A\"}"
	importertest.CheckDroppedLine(t, claude.New(), []byte(first+"\n"+named+"\n"+third+"\n"), "s.jsonl", 2, checkOrder)
}
