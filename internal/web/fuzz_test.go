package web

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/eventlog"
)

// FuzzRender feeds any event type and data to the page builder and the
// item template: no panic, and no markup from the data reaches the page.
func FuzzRender(f *testing.F) {
	for _, seed := range []struct{ typ, data string }{
		{"user/message", `{"text":"<script>x</script>"}`},
		{"tool/call", `{"id":"c","name":"<x>","args":{"a":"<img src=x>"}}`},
		{"tool/result", `{"id":"c","output":"<script>","error":{"m":"<style>"}}`},
		{"tool/result", `{"id":"c","error":"<svg onload=x>"}`},
		{"usage", `{"inputTokens":1e99,"outputTokens":"x"}`},
		{"rollback", `{"to":-5}`},
		{"rollback", `{"to":3,"label":"<x>"}`},
		{"checkpoint", `{"label":7}`},
		{"turn/end", `{"kind":"<k>"}`},
		{"assistant/reasoning", `"not an object"`},
		{"<script>", `[1,2,"<form>"]`},
		{"context/compacted", `{"summary":"</pre><script>"}`},
	} {
		f.Add(seed.typ, []byte(seed.data), int64(4))
	}
	tpl, err := parsePages()
	require.NoError(f, err)
	f.Fuzz(func(t *testing.T, typ string, data []byte, seq int64) {
		if seq < 0 {
			seq = -seq
		}
		if seq < 0 {
			seq = 0
		}
		e := eventlog.Event{Seq: seq, Type: typ, Time: 1, Data: json.RawMessage(data)}
		b := newBuilder(-1, nil)
		if r, ok := rollbackRange(e); ok {
			require.Less(t, r[1], seq)
			b.branches = append(b.branches, r)
		}
		b.add(eventlog.Event{Seq: seq, Type: "tool/call", Time: 1, Data: json.RawMessage(`{"id":"c"}`)})
		b.add(e)
		timeline(b.turns)
		for _, it := range flatten(b.turns) {
			var buf bytes.Buffer
			require.NoError(t, tpl.ExecuteTemplate(&buf, "item", it))
			out := strings.ToLower(buf.String())
			// Tags the template itself never writes.
			for _, tag := range []string{"<script", "<img", "<svg", "<iframe", "<x", "<k", "<style", "<form"} {
				require.NotContains(t, out, tag)
			}
		}
	})
}
