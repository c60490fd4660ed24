package codex_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

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
	})
}
