package web

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/internal/app/chatview"
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
		{"tool/result", `{"id":"c","output":"[REDACTED:jwt]","$redacted":[{"path":["<script>",2,"k"],"key":true,"kinds":["<x>","jwt"]}]}`},
		{"vendor/x", `{"a":[{"b":"[REDACTED:jwt]"}],"$redacted":[{"path":["a",0,"b"],"kinds":["jwt"]},{"path":["a",9],"kinds":["<k>"]}]}`},
		{"vendor/x", `{"$redacted":[{"path":[],"kinds":[]},{"path":[1.5]}]}`},
	} {
		f.Add(seed.typ, []byte(seed.data), int64(4))
	}
	tpl, err := parsePages()
	require.NoError(f, err)
	f.Fuzz(func(t *testing.T, typ string, data []byte, seq int64) {
		if seq < 1 {
			seq = 1 // after the call at 0
		}
		e := eventlog.Event{Seq: seq, Type: typ, Time: 1, Data: json.RawMessage(data)}
		var rb []chatview.Rollback
		if r, err := eventlog.ParseRollback(e.Data); err == nil && typ == eventlog.TypeRollback {
			rb = append(rb, chatview.Rollback{Seq: seq, To: r.To})
		}
		b := newPageBuilder("01ARZ3NDEKTSV4RRFFQ69G5FAV", chatview.Options{Branches: chatview.NewBranches(seq, rb)}, -1, 0)
		b.add(eventlog.Event{Seq: 0, Type: "tool/call", Time: 1, Data: json.RawMessage(`{"id":"c","name":"n"}`)})
		b.add(e)
		b.held()
		timeline(b.groups)
		for _, g := range b.groups {
			var buf bytes.Buffer
			require.NoError(t, tpl.ExecuteTemplate(&buf, "group", g))
			requireNoMarkup(t, buf.String())
		}
		b.finish(true)
		for _, it := range flatten(b.groups) {
			var buf bytes.Buffer
			require.NoError(t, tpl.ExecuteTemplate(&buf, "item", it))
			requireNoMarkup(t, buf.String())
		}
	})
}

// requireNoMarkup fails for tags the templates never write.
func requireNoMarkup(t *testing.T, page string) {
	t.Helper()
	out := strings.ToLower(page)
	for _, tag := range []string{"<script", "<img", "<svg", "<iframe", "<x", "<k", "<style", "<form"} {
		require.NotContains(t, out, tag)
	}
}
