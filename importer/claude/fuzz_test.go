package claude_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/importer"
	"github.com/sessionlog/sessionlog/importer/claude"
	"github.com/sessionlog/sessionlog/internal/testkit/importertest"
)

// FuzzParse converts arbitrary bytes as a transcript. testdata/fuzz/FuzzParse
// holds a few more seeds: lines of a real transcript, and what the fuzzer
// found.
func FuzzParse(f *testing.F) {
	lines := func(ls ...string) []byte { return []byte(strings.Join(ls, "\n") + "\n") }
	for _, in := range [][]byte{
		lines(`{"type":"file-history-snapshot","messageId":"x","snapshot":{}}`, prompt, blank, thinking, call, progress, result, answer, stopHook,
			`{"type":"summary","summary":"Fixing it","leafUuid":"a3"}`),
		lines(prompt, call, `{"type":"user","uuid":"u5","message":{"content":[{"type":"text","text":"[Request interrupted by user]"}]}}`),
		lines(prompt, answer, `{"type":"user","isCompactSummary":true,"message":{"content":"S"}}`, `{"type":"system","subtype":"compact_boundary"}`,
			`{"type":"system","subtype":"api_error","level":"error","content":{"a":[1]}}`),
		lines(prompt, `{"type":"assistant","isSidechain":true,"message":{"content":[{"type":"text","text":"sub"}]}}`,
			`{"type":"assistant","message":{"content":[{"type":"redacted_thinking"},{"type":"server_tool_use","id":"s1"},{"type":"web_search_tool_result","tool_use_id":"s1","content":[]},{"type":"x"}]}}`),
		lines(`{"type":"user","isMeta":true,"message":{"content":[{"type":"image"},{"type":"document"},{"type":"y"}]}}`),
		lines(prompt, `{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t9","is_error":true,"content":"boom"},{"type":"text","text":"also"}]}}`),
		// Edge cases: empty, blank, torn, wrong types, huge numbers, deep
		// nesting, invalid UTF-8, a line that is not an object.
		nil,
		[]byte("\n \r\n\t\n"),
		[]byte(prompt + "\n" + answer[:len(answer)/2]),
		[]byte(prompt[:40]),
		lines(`{"type":"summary","summary":"only"}`),
		lines(`{"type":5}`),
		lines(`{"type":"user","message":{"content":5}}`),
		lines(`{"type":"user","message":{"content":[{"type":7}]}}`),
		lines(`{"type":"user","message":null}`, `{"type":"assistant","message":"x"}`),
		lines(`{"type":"assistant","timestamp":"1969-12-31T23:59:59Z","message":{"id":"m","content":[],"usage":{"input_tokens":9223372036854775807,"output_tokens":-1,"cache_read_input_tokens":9223372036854775807}}}`),
		lines(`{"type":"assistant","timestamp":"9999-12-31T23:59:59.999Z","message":{"id":"m","content":"","usage":{"input_tokens":1e30}}}`),
		lines(`{"type":"assistant","message":{"content":[{"type":"tool_use","id":"t","input":` + strings.Repeat("[", 500) + strings.Repeat("]", 500) + `}]}}`),
		lines("{\"type\":\"user\",\"uuid\":\"\xff\",\"message\":{\"content\":\"\xfe\xed \u2028 <&>\"}}"),
		lines(`[1,2]`, `"x"`),
		lines(`{"type":"user","toolUseResult":{"agentId":"a"},"message":{"content":[{"type":"tool_result","tool_use_id":"t"}]}}`),
		// Lines the builder drops (invalid UTF-8 outside what is read)
		// after they told the session's title, agent name and labels.
		lines(prompt, "{\"type\":\"custom-title\",\"customTitle\":\"T\",\"x\":\"\x87\"}",
			"{\"type\":\"agent-name\",\"agentName\":\"A\",\"x\":\"\x87\"}", answer),
	} {
		f.Add(in)
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		s, err := claude.Parse(bytes.NewReader(in), "/p/s.jsonl")
		again, err2 := claude.Parse(bytes.NewReader(in), "/p/s.jsonl")
		if err != nil {
			importertest.CheckError(t, err, in, importer.ErrFormat)
			require.EqualError(t, err2, err.Error(), "deterministic")
			return
		}
		require.NoError(t, err2)
		require.Equal(t, s, again, "deterministic")
		require.Equal(t, "s.jsonl", s.Labels["sourceFile"])
		importertest.CheckSession(t, s, claude.Name)
		importertest.CheckLossless(t, claude.New(), in, s)
		checkOrder(t, s.Events)
		importertest.CheckBadRecords(t, claude.New(), in, s)
	})
}

// claudeTypes are the types the mapping writes.
var claudeTypes = map[string]bool{
	"turn/start": true, "turn/end": true, "step/start": true, "step/end": true, "usage": true,
	"user/message": true, "assistant/reasoning": true, "assistant/message": true,
	"tool/call": true, "tool/result": true, "context/compacted": true, "context/message": true,
}

// checkOrder checks the shape the package documents: turns do not nest,
// steps do not nest and are inside a turn, a turn ends after its step, a
// usage comes just before a step/end, the end of the file leaves no step
// open, and data holds the keys of its type.
func checkOrder(t *testing.T, es []eventlog.Event) {
	t.Helper()
	turn, step := false, false
	for i, e := range es {
		require.True(t, claudeTypes[e.Type] || strings.HasPrefix(e.Type, "claude/"), "seq %d: type %q", i, e.Type)
		d := importertest.Fields(e)
		require.NotNil(t, d, "seq %d: data is an object: %s", i, e.Data)
		switch e.Type {
		case "turn/start":
			require.False(t, turn, "seq %d: turn/start in a turn", i)
			turn = true
		case "turn/end":
			require.True(t, turn, "seq %d: turn/end outside a turn", i)
			require.False(t, step, "seq %d: turn/end in a step", i)
			var kind string
			require.NoError(t, json.Unmarshal(d["kind"], &kind))
			require.Contains(t, []string{"completed", "interrupted"}, kind)
			turn = false
		case "step/start":
			require.True(t, turn, "seq %d: step/start outside a turn", i)
			require.False(t, step, "seq %d: step/start in a step", i)
			step = true
		case "step/end":
			require.True(t, step, "seq %d: step/end outside a step", i)
			step = false
		case "usage":
			require.True(t, step, "seq %d: usage outside a step", i)
			require.Less(t, i+1, len(es))
			require.Equal(t, "step/end", es[i+1].Type, "seq %d: usage just before step/end", i)
			var u struct{ InputTokens, OutputTokens, CachedTokens, CacheWriteTokens *int64 }
			require.NoError(t, json.Unmarshal(e.Data, &u), "seq %d: %s", i, e.Data)
			require.NotNil(t, u.InputTokens)
			require.NotNil(t, u.OutputTokens)
			checkTokens(t, i, *u.InputTokens, *u.OutputTokens, u.CachedTokens, u.CacheWriteTokens)
		case "assistant/message", "assistant/reasoning":
			require.True(t, step, "seq %d: %s outside a step", i, e.Type)
			fallthrough
		case "user/message":
			var text string
			require.NoError(t, json.Unmarshal(d["text"], &text), "seq %d: text", i)
			require.Contains(t, d, "source")
		case "tool/call":
			require.True(t, step, "seq %d: tool/call outside a step", i)
			require.Contains(t, d, "id")
			require.Contains(t, d, "name")
			require.Contains(t, d, "args")
		case "tool/result":
			require.Contains(t, d, "id")
		case "context/compacted":
			require.False(t, step, "seq %d: compaction in a step", i)
			require.Contains(t, d, "summary")
		case "context/message":
			var text, kind string
			require.NoError(t, json.Unmarshal(d["text"], &text), "seq %d: text", i)
			require.NoError(t, json.Unmarshal(d["kind"], &kind), "seq %d: kind", i)
			require.NotEqual(t, claude.KindPrompt, kind, "seq %d: a prompt is a user/message", i)
		}
	}
	require.False(t, step, "the end of the file closes the step")
	require.False(t, turn, "the end of the file closes the turn")
}

// checkTokens checks a usage's counts: none negative (a wrapped sum would
// be), and inputTokens counting the cache reads and writes too.
func checkTokens(t *testing.T, seq int, in, out int64, cached, written *int64) {
	t.Helper()
	var c, w int64
	if cached != nil {
		c = *cached
	}
	if written != nil {
		w = *written
	}
	require.True(t, in >= 0 && out >= 0 && c >= 0 && w >= 0, "seq %d: token counts %d %d %d %d", seq, in, out, c, w)
	require.True(t, in >= c && in-c >= w, "seq %d: inputTokens %d counts cachedTokens %d and cacheWriteTokens %d", seq, in, c, w)
}
