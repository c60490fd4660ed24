package projection_test

import (
	"bytes"
	"strings"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/projection"
)

// kept is one piece of a state: its bytes, and which event it came from.
type kept struct {
	what string
	b    []byte
	seq  int64
}

// within reports whether b lies inside data's array.
func within(b, data []byte) bool {
	if len(b) == 0 || len(data) == 0 {
		return false
	}
	p, lo := uintptr(unsafe.Pointer(unsafe.SliceData(b))), uintptr(unsafe.Pointer(unsafe.SliceData(data)))
	return p >= lo && p+uintptr(len(b)) <= lo+uintptr(len(data))
}

func strBytes(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }

// The built-in projections are Borrowers: they keep no byte of the data
// they are given (a replay lends them data its reader reuses for the
// next event), so every text and raw value they keep, large and small, is
// a copy. (FuzzProjections checks the states against data scribbled over
// after each Apply.)
func TestBuiltinsKeepNoByteOfData(t *testing.T) {
	long := strings.Repeat("y", 300)
	evs := numbered(
		ev("user/message", `{"text":"`+long+`"}`),
		ev("user/message", `{"text":"short","slot":"`+long+`"}`),
		ev("step/start", `{}`),
		ev("assistant/message", `{"text":"calling `+long+`"}`),
		ev("tool/call", `{"id":"c1","name":"read","args":{"path":"`+long+`"},"effect":"read"}`),
		ev("tool/call", `{"id":"c2","name":"read","args":{"path":"b.go"},"purpose":"`+long+`"}`),
		ev("tool/result", `{"id":"c1","output":{"lines":["`+long+`"]}}`),
		ev("tool/result", `{"id":"c2","output":"ok","note":"`+long+`"}`),
		ev("memory/set", `{"key":"k","value":{"v":"`+long+`"},"metadata":{"m":2}}`),
		ev("memory/set", `{"key":"k2","value":1,"metadata":{"m":"`+long+`"}}`),
		ev("provider/state", `{"provider":"p","state":{"cursor":"`+long+`"}}`),
		ev("plan/set", `{"plan":["step one","`+long+`"]}`),
		ev("context/compacted", `{"summary":"`+long+`"}`),
		ev("user/message", `{"text":"after"}`),
	)
	for i := range evs {
		evs[i].Data = bytes.Clone(evs[i].Data) // fresh, as a log's reader hands it out
	}
	conv := projection.NewConversation()
	agent := projection.NewAgent()
	for _, p := range []projection.Projection{conv, agent, projection.NewTranscript()} {
		_, ok := p.(projection.Borrower)
		require.True(t, ok, "%s is a Borrower", projection.ID(p))
	}
	apply(conv, evs)
	apply(agent, evs)

	var pieces []kept
	for _, m := range conv.State().Messages {
		pieces = append(pieces, kept{"text", strBytes(m.Text), m.Seq}, kept{"output", m.Output, m.Seq}, kept{"slot", strBytes(m.Slot), m.Seq})
		for _, c := range m.ToolCalls {
			pieces = append(pieces, kept{"args of " + c.ID, c.Args, -1}, kept{"id", strBytes(c.ID), -1})
		}
	}
	st := agent.State()
	for k, m := range st.Memory {
		pieces = append(pieces, kept{"value of " + k, m.Value, m.UpdatedSeq}, kept{"metadata of " + k, m.Metadata, m.UpdatedSeq})
	}
	for p, s := range st.Providers {
		pieces = append(pieces, kept{"state of " + p, s, -1})
	}
	pieces = append(pieces, kept{"plan", st.Plan, -1})

	nonEmpty := 0
	for _, p := range pieces {
		if len(p.b) > 0 {
			nonEmpty++
		}
		for _, e := range evs {
			require.False(t, within(p.b, e.Data), "%s (%d bytes) points into event %d's data", p.what, len(p.b), e.Seq)
		}
	}
	require.GreaterOrEqual(t, nonEmpty, 12, "the texts, outputs, args and values were all looked at")
}
