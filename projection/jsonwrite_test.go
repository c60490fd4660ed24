package projection

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// jsonSeeds are strings and raw values that reach every branch of the
// hand-written encoder: HTML characters, U+2028 and U+2029, control
// bytes, invalid UTF-8, escapes, space inside and outside strings.
var jsonSeeds = []string{
	``, `plain`, `a "quoted" \ back`, "tab\tnl\ncr\rbs\bff\f\x00\x1f\x7f",
	`<b>&amp;</b>`, "line\u2028para\u2029", "\xe2\x80", "\xe2\x80\xa8x", "bad \xff\xfe utf8 \xc3",
	"é ü 日本 🙂", strings.Repeat("long text with spaces ", 20) + "<&>",
	`{"a":1}`, ` { "a" : [ 1 , "x y" , {"<":">"} ] } `, `"str\"ing \u003c \\"`, `[]`, `null`, `true`,
	`"\u2028"`, "\"raw \xe2\x80\xa9 sep\"", `123.5e-3`, "{\n\t\"k\":\r\n\"v\"}",
}

// requireSameAsMarshal checks the hand-written encoder against json.Marshal
// on a string s, on raw when it is valid JSON, and on a whole transcript
// state built from both.
func requireSameAsMarshal(t *testing.T, s, raw string) {
	want, err := json.Marshal(s)
	require.NoError(t, err)
	require.Equal(t, string(want), string(appendString(nil, s)), "string %q", s)
	var r json.RawMessage
	if json.Valid([]byte(raw)) {
		r = json.RawMessage(raw)
		want, err := json.Marshal(r)
		require.NoError(t, err)
		got, err := appendRaw(nil, r)
		require.NoError(t, err)
		require.Equal(t, string(want), string(got), "raw %q", raw)
	}
	tr := NewTranscript()
	tr.s = TranscriptState{
		Messages: []Message{
			{Seq: 1, Role: RoleUser, Text: s, Slot: s},
			{Seq: 2, Role: RoleAssistant, Text: s, Reasoning: []Reasoning{{Text: s, Signature: s}, {Text: ""}},
				ToolCalls: []ToolCall{{ID: s, Name: s, Args: r, Effect: s}, {ID: "c", Name: "n", Args: json.RawMessage(`{}`)}}, Partial: s != ""},
			{Seq: 3, Role: RoleTool, ToolCallID: s, Name: s, Output: r, Error: s, Synthetic: s == ""},
			{Seq: -4, Role: s},
		},
		CurrentSlot:      s,
		PendingReasoning: []Reasoning{{Text: s}},
		StepStart:        -1, StepOpen: s != "",
		Degraded: []Degraded{{Seq: 7, Type: s, Reason: s}},
	}
	tr.reindex()
	got, err := tr.MarshalState()
	require.NoError(t, err)
	want, err = json.Marshal(&tr.s) // PrefixHash set by MarshalState
	require.NoError(t, err)
	require.Equal(t, string(want), string(got))
	var chain [sha256.Size]byte
	for i, m := range tr.s.Messages {
		b, err := json.Marshal(&m)
		require.NoError(t, err)
		h := sha256.New()
		if i > 0 {
			h.Write(chain[:])
		}
		h.Write(b)
		h.Sum(chain[:0])
		require.Equal(t, hashString(chain), tr.PrefixHashes()[i], "prefix hash %d", i)
	}
}

// FuzzStateJSONMatchesMarshal holds the transcript's hand-written state
// encoder to json.Marshal: strings of any bytes, raw values that are valid
// JSON (every raw value a projection keeps is a piece of data a reader
// validated), and a whole state made of them, with its prefix hashes.
func FuzzStateJSONMatchesMarshal(f *testing.F) {
	for _, a := range jsonSeeds {
		for _, b := range jsonSeeds {
			f.Add(a, b)
		}
	}
	f.Fuzz(requireSameAsMarshal)
}

// WriteState writes what MarshalState returns, for a state larger than
// the chunk it writes at a time, and so does projection.WriteState for a
// projection that is not a StateWriter.
func TestWriteStateIsMarshalState(t *testing.T) {
	tr := NewTranscript()
	for i := range 400 {
		tr.s.Messages = append(tr.s.Messages, Message{Seq: int64(i), Role: RoleTool, ToolCallID: "c",
			Output: json.RawMessage(`"` + strings.Repeat("output <x> ", 100) + `"`)})
	}
	tr.reindex()
	want, err := tr.MarshalState()
	require.NoError(t, err)
	require.Greater(t, len(want), 4*stateChunk)
	for _, p := range []Projection{tr, NewAgent()} {
		want, err := p.MarshalState()
		require.NoError(t, err)
		var w bytes.Buffer
		require.NoError(t, WriteState(&w, p))
		require.Equal(t, string(want), w.String())
	}
}
