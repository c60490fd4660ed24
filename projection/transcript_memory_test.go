package projection_test

import (
	"bytes"
	"runtime"
	"strings"
	"testing"
	"unsafe"
	"weak"

	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/projection"
)

// bigText is a text too large for the tiny allocator, whose blocks hold
// several objects: each text and output the transcript keeps is an
// allocation of its own.
var bigText = strings.Repeat("x", 512)

// The transcript holds the messages a model would be sent and nothing it
// replaced: once an event replaces a message (a compaction, a later result
// for the same call, an assistant message for the streamed text), the
// replaced message's text or output is garbage. Each case applies before,
// takes weak pointers to the texts and outputs of the messages state holds
// at indexes gone (to be released) and kept (still held), applies after,
// then collects: the gone ones must be freed, the kept ones not (which
// shows the weak pointers do see the transcript's memory).
func TestTranscriptReleasesReplacedMessages(t *testing.T) {
	text := func(s string) string { return `{"text":"` + s + `"}` }
	cases := []struct {
		name         string
		before       []eventlog.Event
		gone, kept   []int
		after        []eventlog.Event
		wantMessages int
	}{
		{
			name: "compaction",
			before: []eventlog.Event{
				ev("user/message", text("u1"+bigText)),
				ev("step/start", `{}`),
				ev("assistant/message", text("a1"+bigText)),
				ev("tool/call", `{"id":"c1","name":"read","args":{}}`),
				ev("tool/result", `{"id":"c1","output":"o1`+bigText+`"}`),
				ev("step/end", `{}`),
			},
			gone:         []int{0, 1, 2},
			after:        []eventlog.Event{ev("context/compacted", `{"summary":"s`+bigText+`"}`)},
			wantMessages: 1,
		},
		{
			name: "a later result for the same call",
			before: []eventlog.Event{
				ev("user/message", text("u1"+bigText)),
				ev("step/start", `{}`),
				ev("tool/call", `{"id":"c1","name":"read","args":{}}`),
				ev("tool/result", `{"id":"c1","output":"first`+bigText+`"}`),
			},
			gone:         []int{2},
			kept:         []int{0},
			after:        []eventlog.Event{ev("tool/result", `{"id":"c1","output":"second`+bigText+`"}`)},
			wantMessages: 3,
		},
		{
			name: "an assistant message for the streamed text",
			before: []eventlog.Event{
				ev("user/message", text("u1"+bigText)),
				ev("step/start", `{}`),
				ev("assistant/chunk", text("streamed"+bigText)),
				ev("assistant/chunk", text("more"+bigText)),
			},
			gone:         []int{1},
			kept:         []int{0},
			after:        []eventlog.Event{ev("assistant/message", text("whole"+bigText))},
			wantMessages: 2,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tr := projection.NewTranscript()
			evs := numbered(append(append([]eventlog.Event(nil), tc.before...), tc.after...)...)
			applyFresh(tr, evs[:len(tc.before)])
			gone, kept := heldBy(t, tr, tc.gone), heldBy(t, tr, tc.kept)
			applyFresh(tr, evs[len(tc.before):])
			require.Len(t, tr.State().Messages, tc.wantMessages)
			runtime.GC()
			for i, w := range gone {
				require.Nil(t, w.Value(), "the memory of replaced message %d is still held", tc.gone[i])
			}
			for i, w := range kept {
				require.NotNil(t, w.Value(), "the memory of message %d was freed though the transcript holds it", tc.kept[i])
			}
			runtime.KeepAlive(tr)
		})
	}
}

// applyFresh applies each event with a copy of its data, as a log's reader
// hands it out, and keeps none of the copies: what stays alive is what the
// transcript holds.
func applyFresh(p projection.Projection, evs []eventlog.Event) {
	for _, e := range evs {
		e.Data = bytes.Clone(e.Data)
		p.Apply(e)
	}
}

// heldBy returns weak pointers to the bytes of the text or output of the
// messages at the given indexes of the transcript's state.
func heldBy(t *testing.T, tr *projection.Transcript, at []int) []weak.Pointer[byte] {
	t.Helper()
	msgs := tr.State().Messages
	var out []weak.Pointer[byte]
	for _, i := range at {
		m := msgs[i]
		switch {
		case len(m.Output) > 0:
			out = append(out, weak.Make(&m.Output[0]))
		case len(m.Text) > len(bigText):
			out = append(out, weak.Make(unsafe.StringData(m.Text)))
		default:
			t.Fatalf("message %d holds no large text or output: %+v", i, m)
		}
	}
	return out
}
