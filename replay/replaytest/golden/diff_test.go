package golden_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/projection"
	"github.com/sessionlog/sessionlog/replay/replaytest/golden"
)

func TestCompare(t *testing.T) {
	long := strings.Repeat("abcdefghij", 30)
	tests := []struct {
		name      string
		want, got string
		path      string // "" with match: no mismatch
		match     bool
		message   string // the whole one-line message
		contains  []string
		diffCount int
	}{
		{name: "equal bytes", want: `{"a":1}`, got: `{"a":1}`, match: true},
		{name: "formatting only", want: "{\n  \"a\": [1, 2],\n  \"b\": \"<\"\n}\n", got: `{"a":[1,2],"b":"\u003c"}`, match: true},
		{
			name:    "changed string in an array of objects",
			want:    `{"messages":[{"seq":0,"text":"a"},{"seq":1,"text":"b"},{"seq":2,"text":"c"},{"seq":3,"text":"Hello"}]}`,
			got:     `{"messages":[{"seq":0,"text":"a"},{"seq":1,"text":"b"},{"seq":2,"text":"c"},{"seq":3,"text":"Hullo"}]}`,
			path:    "messages[3].text",
			message: `messages[3].text: golden "Hello", got "Hullo"`,
		},
		{
			name:      "first of several, in document order",
			want:      `{"turns":2,"steps":5,"usage":{"inputTokens":10}}`,
			got:       `{"turns":3,"steps":5,"usage":{"inputTokens":11}}`,
			path:      "turns",
			message:   `turns: golden 2, got 3 (first of 2 differences)`,
			diffCount: 2,
		},
		{
			name:    "missing key",
			want:    `{"lastStop":{"seq":9,"kind":"completed","reason":"done"}}`,
			got:     `{"lastStop":{"seq":9,"kind":"completed"}}`,
			path:    "lastStop.reason",
			message: `lastStop.reason: golden "done", got (absent)`,
		},
		{
			name:    "extra key",
			want:    `{"a":1}`,
			got:     `{"a":1,"slot":"main"}`,
			path:    "slot",
			message: `slot: golden (absent), got "main"`,
		},
		{
			name:    "extra element",
			want:    `{"messages":[{"seq":0}]}`,
			got:     `{"messages":[{"seq":0},{"seq":4,"role":"user"}]}`,
			path:    "messages[1]",
			message: `messages[1]: golden (absent), got {"seq":4,"role":"user"}`,
		},
		{
			name:    "type change",
			want:    `{"plan":["a","b"]}`,
			got:     `{"plan":"a, b"}`,
			path:    "plan",
			message: `plan: golden ["a","b"], got "a, b"`,
		},
		{
			name:    "map key that is no identifier",
			want:    `{"usageByModel":{"model-a":{"inputTokens":1}}}`,
			got:     `{"usageByModel":{"model-a":{"inputTokens":2}}}`,
			path:    `usageByModel["model-a"].inputTokens`,
			message: `usageByModel["model-a"].inputTokens: golden 1, got 2`,
		},
		{
			name:    "key order",
			want:    `{"a":1,"b":2}`,
			got:     `{"b":2,"a":1}`,
			path:    "",
			message: `(root): keys in another order: golden a,b, got b,a`,
		},
		{
			name:    "root scalar",
			want:    `null`,
			got:     `{}`,
			path:    "",
			message: `(root): golden null, got {}`,
		},
		{
			name:     "long strings show a window around the change",
			want:     `{"text":"` + long + `"}`,
			got:      `{"text":"` + long[:200] + "X" + long[201:] + `"}`,
			path:     "text",
			contains: []string{"text: strings differ at character 200 (golden 300 characters, got 300)", `golden …"` + long[170:200] + `a`, `got …"` + long[170:200] + `X`},
		},
		{
			name:     "golden not JSON",
			want:     `{"a":`,
			got:      `{"a":1}`,
			path:     "",
			contains: []string{"the golden file is not JSON", "regenerate it"},
		},
		{
			name:    "html characters are shown as they are",
			want:    `{"t":"a<b"}`,
			got:     `{"t":"a>b"}`,
			path:    "t",
			message: `t: golden "a<b", got "a>b"`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := golden.Compare([]byte(tc.want), []byte(tc.got))
			if tc.match {
				require.Nil(t, m, "%v", m)
				require.Empty(t, golden.Diff([]byte(tc.want), []byte(tc.got)))
				return
			}
			require.NotNil(t, m)
			require.Equal(t, tc.path, m.Path)
			msg := golden.Diff([]byte(tc.want), []byte(tc.got))
			require.Equal(t, m.String(), msg)
			require.NotContains(t, msg, "\n", "one line, as logtool prints errors")
			if tc.message != "" {
				require.Equal(t, tc.message, msg)
			}
			for _, s := range tc.contains {
				require.Contains(t, msg, s)
			}
			if tc.diffCount > 0 {
				require.Equal(t, tc.diffCount, m.Count)
			}
		})
	}
}

func TestMarshal(t *testing.T) {
	p := projection.NewTranscript()
	p.Apply(eventlog.Event{Seq: 0, Type: "user/message", Time: 1, Data: json.RawMessage(`{"text":"hi <b>"}`)})
	b, err := golden.Marshal(p)
	require.NoError(t, err)
	require.True(t, strings.HasSuffix(string(b), "}\n"))
	require.Contains(t, string(b), "\n  \"messages\": [\n")
	state, err := p.MarshalState()
	require.NoError(t, err)
	require.Nil(t, golden.Compare(b, state), "a golden matches the state it was made from")
	require.Equal(t, "x.jsonl.transcript-v1.golden.json", golden.FileName("x.jsonl", p))
}
