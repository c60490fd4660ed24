package codex_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/importer"
	"github.com/sessionlog/sessionlog/importer/codex"
	"github.com/sessionlog/sessionlog/internal/testkit/importertest"
)

// FuzzParse converts arbitrary bytes as a rollout: an error is a clear
// format error naming a line, and a session is one the log takes as it is,
// the same for the same bytes, keeping every record. testdata/fuzz/FuzzParse
// holds more seeds: the short lines of the head of the real rollout.
func FuzzParse(f *testing.F) {
	lines := func(ls ...string) []byte { return []byte(strings.Join(ls, "\n") + "\n") }
	turn := rec(1, "event_msg", `{"type":"task_started"}`)
	for _, in := range [][]byte{
		lines(rec(0, "session_meta", meta), turn, rec(1, "turn_context", `{"model":"m"}`),
			rec(2, "response_item", `{"type":"message","role":"user","content":[{"type":"input_text","text":"a<b"}]}`),
			rec(3, "response_item", `{"type":"reasoning","summary":[{"type":"summary_text","text":"r"}]}`),
			rec(3, "response_item", `{"type":"function_call","name":"f","arguments":"{\"a\":1}","call_id":"c"}`),
			rec(4, "event_msg", `{"type":"token_count","info":{"total_token_usage":{"input_tokens":5,"cached_input_tokens":1,"output_tokens":2}}}`),
			rec(4, "response_item", `{"type":"function_call_output","call_id":"c","output":{"content":"x","success":true}}`),
			rec(5, "compacted", `{"message":"s"}`),
			rec(6, "event_msg", `{"type":"task_complete"}`),
			rec(7, "event_msg", `{"type":"thread_rolled_back","num_turns":1}`)),
		// Edge cases: empty, torn, wrong types, huge and negative numbers,
		// deep nesting, invalid UTF-8.
		nil,
		[]byte(rec(0, "session_meta", meta) + "\n" + `{"timestamp":"2026`),
		lines(rec(0, "session_meta", `{"id":5,"source":{"subagent":"x"}}`), rec(1, "response_item", `{"type":"message","content":"x"}`)),
		lines(rec(1, "event_msg", `{"type":"token_count","info":{"total_token_usage":{"input_tokens":9223372036854775807,"output_tokens":-1}}}`),
			rec(2, "event_msg", `{"type":"token_count","info":{"total_token_usage":{"input_tokens":-9223372036854775808}}}`)),
		lines(rec(1, "event_msg", `{"type":"thread_rolled_back","num_turns":-3}`), turn, rec(2, "event_msg", `{"type":"thread_rolled_back","num_turns":4294967296}`)),
		lines(rec(1, "response_item", `{"type":"function_call","arguments":"`+strings.Repeat("[", 5000)+strings.Repeat("]", 5000)+`"}`)),
		lines("{\"timestamp\":\"x\",\"type\":\"response_item\",\"payload\":{\"type\":\"message\",\"role\":\"user\",\"content\":[{\"text\":\"\xff\"}]}}"),
		lines(`{"timestamp":"1969-12-31T23:59:59Z","type":"compacted","payload":[]}`, `{"type":"a b","payload":1}`),
		// A line the builder drops (invalid UTF-8 outside what is read)
		// after it changed the parser: a call, a step's end.
		lines(rec(0, "session_meta", meta), rec(1, "response_item", `{"type":"message","role":"assistant","content":[]}`),
			rec(2, "response_item", "{\"type\":\"function_call\",\"call_id\":\"c\",\"x\":\"\x87\"}"),
			rec(3, "event_msg", "{\"type\":\"token_count\",\"info\":{\"total_token_usage\":{\"input_tokens\":5}},\"x\":\"\x87\"}"),
			rec(4, "event_msg", `{"type":"thread_rolled_back","num_turns":1}`)),
	} {
		f.Add(in)
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		s, err := codex.Parse(bytes.NewReader(in), "/s/rollout-x.jsonl")
		again, err2 := codex.Parse(bytes.NewReader(in), "/s/rollout-x.jsonl")
		if err != nil {
			importertest.CheckError(t, err, in, importer.ErrFormat)
			require.EqualError(t, err2, err.Error(), "deterministic")
			return
		}
		require.NoError(t, err2)
		require.Equal(t, s, again, "deterministic")
		importertest.CheckSession(t, s, codex.Name)
		importertest.CheckLossless(t, codex.New(), in, s)
		checkOrder(t, s.Events)
		importertest.CheckBadRecords(t, codex.New(), in, s)
	})
}

// checkOrder checks the shape the mapping makes: turns do not nest, steps
// do not nest and are inside a turn, a turn ends outside a step, a
// model's message, reasoning and calls are inside a step, a usage comes
// just before a step/end, a prompt is inside a turn but outside a step,
// and the end of the file leaves no turn or step open. A rollback goes
// back to an event after which no turn was open (the one before a
// turn/start), and the shape goes on from there.
func checkOrder(t *testing.T, es []eventlog.Event) {
	t.Helper()
	type open struct{ turn, step bool }
	var at []open // the shape after each event
	var o open
	for i, e := range es {
		switch e.Type {
		case "turn/start":
			require.False(t, o.turn, "seq %d: turn/start in a turn", i)
			o.turn = true
		case "turn/end":
			require.True(t, o.turn, "seq %d: turn/end outside a turn", i)
			require.False(t, o.step, "seq %d: turn/end in a step", i)
			o.turn = false
		case "step/start":
			require.True(t, o.turn, "seq %d: step/start outside a turn", i)
			require.False(t, o.step, "seq %d: step/start in a step", i)
			o.step = true
		case "step/end":
			require.True(t, o.step, "seq %d: step/end outside a step", i)
			o.step = false
		case "usage":
			require.True(t, o.step, "seq %d: usage outside a step", i)
			require.Less(t, i+1, len(es), "seq %d: usage last", i)
			require.Equal(t, "step/end", es[i+1].Type, "seq %d: usage just before step/end", i)
		case "assistant/message", "assistant/reasoning", "tool/call":
			require.True(t, o.step, "seq %d: %s outside a step", i, e.Type)
		case "user/message":
			require.True(t, o.turn, "seq %d: user/message outside a turn", i)
			require.False(t, o.step, "seq %d: user/message in a step", i)
		case "tool/result":
			require.True(t, o.turn, "seq %d: tool/result outside a turn", i)
		case "context/compacted":
			require.False(t, o.step, "seq %d: compaction in a step", i)
		case eventlog.TypeRollback:
			require.False(t, o.step, "seq %d: rollback in a step", i)
			rb, err := eventlog.ParseRollback(e.Data)
			require.NoError(t, err, "seq %d", i)
			require.True(t, rb.To >= 0 && rb.To < int64(i), "seq %d: rollback to %d", i, rb.To)
			o = at[rb.To]
			require.False(t, o.turn, "seq %d: rollback to %d, in a turn", i, rb.To)
		default:
			require.True(t, e.Type == importer.TypeContext || strings.HasPrefix(e.Type, codex.Name+"/"), "seq %d: type %q", i, e.Type)
		}
		at = append(at, o)
	}
	require.False(t, o.step, "the end of the file closes the step")
	require.False(t, o.turn, "the end of the file closes the turn")
}
