package projection_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/projection"
)

// shape writes a message in one short line: role@seq, then its text,
// slot, calls or call id and output.
func shape(m projection.Message) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s@%d", m.Role, m.Seq)
	if m.Text != "" {
		fmt.Fprintf(&b, " %q", m.Text)
	}
	if m.Slot != "" {
		fmt.Fprintf(&b, " slot=%s", m.Slot)
	}
	if m.Partial {
		b.WriteString(" partial")
	}
	for _, r := range m.Reasoning {
		fmt.Fprintf(&b, " think=%q", r.Text)
	}
	if len(m.ToolCalls) > 0 {
		ids := make([]string, len(m.ToolCalls))
		for i, c := range m.ToolCalls {
			ids[i] = c.ID
		}
		fmt.Fprintf(&b, " calls=%s", strings.Join(ids, ","))
	}
	if m.Role == projection.RoleTool {
		fmt.Fprintf(&b, " %s", m.ToolCallID)
		if m.Output != nil {
			fmt.Fprintf(&b, "=%s", m.Output)
		}
		if m.Error != "" {
			fmt.Fprintf(&b, " err=%q", m.Error)
		}
	}
	return b.String()
}

func shapes(s projection.TranscriptState) []string {
	out := make([]string, len(s.Messages))
	for i, m := range s.Messages {
		out[i] = shape(m)
	}
	return out
}

func TestTranscriptIdentity(t *testing.T) {
	tr := projection.NewTranscript()
	require.Equal(t, "transcript/v1", projection.ID(tr))
	require.Equal(t, `{"messages":[],"stepStart":-1}`, marshal(t, tr))
	require.Empty(t, tr.PrefixHashes())
}

func TestTranscriptEvents(t *testing.T) {
	call := func(id string) eventlog.Event {
		return ev("tool/call", `{"id":"`+id+`","name":"tool_`+id+`","args":{}}`)
	}
	result := func(id, out string) eventlog.Event {
		return ev("tool/result", `{"id":"`+id+`","output":"`+out+`"}`)
	}
	tests := []struct {
		name     string
		events   []eventlog.Event
		want     []string
		degraded []string // reasons
	}{{
		name:   "user and assistant messages, chunks skipped",
		events: numbered(ev("user/message", `{"text":"hi","extra":1}`), ev("assistant/chunk", `{"text":"he"}`), ev("assistant/chunk", `{"text":"llo"}`), ev("assistant/message", `{"text":"hello"}`)),
		want:   []string{`user@0 "hi"`, `assistant@3 "hello"`},
	}, {
		name: "reasoning goes to the next assistant message",
		events: numbered(
			ev("assistant/reasoning", `{"text":"r1","signature":"s"}`),
			ev("user/message", `{"text":"hi"}`),
			ev("assistant/reasoning", `{"text":"r2"}`),
			ev("assistant/message", `{"text":"a"}`),
			ev("assistant/message", `{"text":"b"}`),
		),
		want: []string{`user@1 "hi"`, `assistant@3 "a" think="r1" think="r2"`, `assistant@4 "b"`},
	}, {
		name:   "reasoning goes to an assistant message a call creates",
		events: numbered(ev("step/start", `{}`), ev("assistant/reasoning", `{"text":"r"}`), call("c1"), call("c2")),
		want:   []string{`assistant@2 think="r" calls=c1,c2`},
	}, {
		name: "calls and results of one step stay with their message",
		events: numbered(
			ev("step/start", `{}`), ev("assistant/message", `{"text":"look"}`),
			call("c1"), result("c1", "o1"), call("c2"), result("c2", "o2"),
		),
		want: []string{`assistant@1 "look" calls=c1,c2`, `tool@3 c1="o1"`, `tool@5 c2="o2"`},
	}, {
		name: "parallel calls: results in the order they came",
		events: numbered(
			ev("assistant/message", `{"text":"go"}`), call("c1"), call("c2"), call("c3"),
			result("c2", "o2"), result("c3", "o3"), result("c1", "o1"),
		),
		want: []string{`assistant@0 "go" calls=c1,c2,c3`, `tool@4 c2="o2"`, `tool@5 c3="o3"`, `tool@6 c1="o1"`},
	}, {
		name: "a call in a new step starts a new assistant message",
		events: numbered(
			ev("step/start", `{}`), ev("assistant/message", `{"text":"a"}`), call("c1"), result("c1", "o1"),
			ev("step/start", `{}`), call("c2"),
		),
		want: []string{`assistant@1 "a" calls=c1`, `tool@3 c1="o1"`, `assistant@5 calls=c2`},
	}, {
		name:   "a call after a user message starts a new assistant message",
		events: numbered(ev("assistant/message", `{"text":"a"}`), ev("user/message", `{"text":"u"}`), call("c1")),
		want:   []string{`assistant@0 "a"`, `user@1 "u"`, `assistant@2 calls=c1`},
	}, {
		name: "a late result goes back next to its call",
		events: numbered(
			ev("step/start", `{}`), ev("assistant/message", `{"text":"a"}`), call("c1"), call("c2"), result("c1", "o1"),
			ev("step/start", `{}`), ev("assistant/message", `{"text":"b"}`), call("c3"), result("c3", "o3"),
			result("c2", "o2"),
		),
		want: []string{`assistant@1 "a" calls=c1,c2`, `tool@4 c1="o1"`, `tool@9 c2="o2"`, `assistant@6 "b" calls=c3`, `tool@8 c3="o3"`},
	}, {
		name: "a later result replaces the earlier in place",
		events: numbered(
			ev("assistant/message", `{"text":"a"}`), call("c1"), call("c2"),
			ev("tool/result", `{"id":"c1","error":"lost","synthetic":true}`), result("c2", "o2"),
			ev("user/message", `{"text":"u"}`),
			result("c1", "real"),
		),
		want: []string{`assistant@0 "a" calls=c1,c2`, `tool@6 c1="real"`, `tool@4 c2="o2"`, `user@5 "u"`},
	}, {
		name:     "a result for an unknown call is kept and degraded",
		events:   numbered(ev("user/message", `{"text":"u"}`), result("zz", "o")),
		want:     []string{`user@0 "u"`, `tool@1 zz="o"`},
		degraded: []string{`result for unknown call "zz"`},
	}, {
		name: "a result before its call joins the call's results",
		events: numbered(
			ev("assistant/message", `{"text":"a"}`), call("c1"), result("c2", "early"), call("c2"), result("c1", "o1"),
		),
		want:     []string{`assistant@0 "a" calls=c1,c2`, `tool@2 c2="early"`, `tool@4 c1="o1"`},
		degraded: []string{`result for unknown call "c2"`},
	}, {
		name:     "a call id seen before is degraded",
		events:   numbered(ev("assistant/message", `{"text":"a"}`), call("c1"), result("c1", "o"), call("c1")),
		want:     []string{`assistant@0 "a" calls=c1`, `tool@2 c1="o"`},
		degraded: []string{`duplicate call id "c1"`},
	}, {
		name: "compaction replaces what came before",
		events: numbered(
			ev("user/message", `{"text":"u"}`), ev("assistant/message", `{"text":"a"}`), call("c1"),
			ev("assistant/reasoning", `{"text":"pending"}`),
			ev("context/compacted", `{"summary":"all so far"}`),
			ev("user/message", `{"text":"next"}`), result("c1", "late"), ev("assistant/message", `{"text":"b"}`),
		),
		want:     []string{`summary@4 "all so far"`, `user@5 "next"`, `tool@6 c1="late"`, `assistant@7 "b" think="pending"`},
		degraded: []string{`result for unknown call "c1"`},
	}, {
		name: "streamed text: a step with chunks and no message gets their text at its end",
		events: numbered(
			ev("step/start", `{}`), ev("assistant/chunk", `{"text":"He"}`), ev("assistant/chunk", `{"text":"llo \"you\""}`),
			ev("step/end", `{}`),
		),
		want: []string{`assistant@1 "Hello \"you\""`},
	}, {
		name: "streamed text: the first call makes it final and joins it",
		events: numbered(
			ev("step/start", `{}`), ev("assistant/reasoning", `{"text":"r"}`), ev("assistant/chunk", `{"text":"Let me "}`),
			ev("assistant/chunk", `{"text":"look"}`), call("c1"), ev("assistant/chunk", `{"text":" ignored"}`), call("c2"),
			result("c1", "o1"), ev("step/end", `{}`),
		),
		want: []string{`assistant@2 "Let me look" think="r" calls=c1,c2`, `tool@7 c1="o1"`},
	}, {
		name: "streamed text: a step that never ended stays partial",
		events: numbered(
			ev("user/message", `{"text":"u"}`), ev("step/start", `{}`),
			ev("assistant/chunk", `{"text":"a"}`), ev("assistant/chunk", `{"text":"b"}`),
		),
		want: []string{`user@0 "u"`, `assistant@2 "ab" partial`},
	}, {
		name: "streamed text: a new step leaves the unfinished one partial",
		events: numbered(
			ev("step/start", `{}`), ev("assistant/chunk", `{"text":"cut"}`),
			ev("step/start", `{}`), ev("assistant/chunk", `{"text":"next"}`), ev("step/end", `{}`),
		),
		want: []string{`assistant@1 "cut" partial`, `assistant@3 "next"`},
	}, {
		name: "streamed text: an assistant message replaces the chunks, and takes the reasoning",
		events: numbered(
			ev("step/start", `{}`), ev("assistant/reasoning", `{"text":"r"}`), ev("assistant/chunk", `{"text":"Hel"}`),
			ev("assistant/chunk", `{"text":"lo"}`), ev("assistant/message", `{"text":"Hello"}`),
			ev("assistant/chunk", `{"text":"after"}`), call("c1"), ev("step/end", `{}`),
		),
		want: []string{`assistant@4 "Hello" think="r" calls=c1`},
	}, {
		name: "streamed text: chunks outside a step, and of the wrong shape",
		events: numbered(
			ev("assistant/chunk", `{"text":"outside"}`), ev("step/start", `{}`), ev("assistant/chunk", `{"text":5}`),
			ev("assistant/chunk", `{"text":"in"}`), ev("step/end", `{}`), ev("assistant/chunk", `{"text":"after"}`),
		),
		want:     []string{`assistant@3 "in"`},
		degraded: []string{"text: got number, want string"},
	}, {
		name: "streamed text: a result of an earlier step coming mid-stream",
		events: numbered(
			ev("step/start", `{}`), ev("assistant/message", `{"text":"a"}`), call("c1"), ev("step/end", `{}`),
			ev("step/start", `{}`), ev("assistant/chunk", `{"text":"x"}`), result("c1", "late"),
			ev("assistant/chunk", `{"text":"y"}`), ev("assistant/message", `{"text":"xy!"}`), ev("step/end", `{}`),
		),
		want: []string{`assistant@1 "a" calls=c1`, `tool@6 c1="late"`, `assistant@8 "xy!"`},
	}, {
		name: "slots: the current one unless a message names its own",
		events: numbered(
			ev("user/message", `{"text":"u0"}`),
			ev("slot/switch", `{"slot":"s1"}`),
			ev("user/message", `{"text":"u1"}`),
			ev("assistant/message", `{"text":"a1","slot":"own"}`),
			call("c1"), result("c1", "o"),
			ev("slot/switch", `{"slot":""}`),
			ev("context/compacted", `{"summary":"s"}`),
		),
		want: []string{`summary@7 "s"`},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := transcriptAfter(t, tc.events)
			require.Equal(t, tc.want, shapes(s))
			var reasons []string
			for _, d := range s.Degraded {
				reasons = append(reasons, d.Reason)
			}
			require.Equal(t, tc.degraded, reasons)
		})
	}
}

func TestTranscriptSlots(t *testing.T) {
	s := transcriptAfter(t, numbered(
		ev("user/message", `{"text":"u0"}`),
		ev("slot/switch", `{"slot":"s1"}`),
		ev("user/message", `{"text":"u1"}`),
		ev("assistant/message", `{"text":"a1","slot":"own"}`),
		ev("tool/call", `{"id":"c1","name":"t","args":{}}`),
		ev("tool/result", `{"id":"c1","output":"o"}`),
	))
	require.Equal(t, "s1", s.CurrentSlot)
	require.Equal(t, []string{`user@0 "u0"`, `user@2 "u1" slot=s1`, `assistant@3 "a1" slot=own calls=c1`, `tool@5 slot=s1 c1="o"`}, shapes(s))
}

func TestTranscriptMessageFields(t *testing.T) {
	s := transcriptAfter(t, numbered(
		ev("assistant/reasoning", `{"text":"r","signature":"sig"}`),
		ev("tool/call", `{"id":"c1","name":"edit","args":{"p": "a"},"effect":"write"}`),
		ev("tool/result", `{"id":"c1","output":null,"error":"boom","synthetic":true}`),
	))
	require.Equal(t, []projection.Message{{
		Seq: 1, Role: "assistant", Reasoning: []projection.Reasoning{{Text: "r", Signature: "sig"}},
		ToolCalls: []projection.ToolCall{{ID: "c1", Name: "edit", Args: json.RawMessage(`{"p": "a"}`), Effect: "write"}},
	}, {
		Seq: 2, Role: "tool", ToolCallID: "c1", Name: "edit", Error: "boom", Synthetic: true,
	}}, s.Messages)
}

func TestTranscriptSession(t *testing.T) {
	s := transcriptAfter(t, session())
	require.Equal(t, []string{
		`summary@25 "Fixed the bug in a.go." slot=fast`,
		`assistant@29 slot=fast think="run the tests" calls=c3,c4`,
		`tool@33 slot=fast c4="a.go:2"`,
	}, shapes(s))
	require.Equal(t, int64(27), s.StepStart)
	require.Empty(t, s.Degraded)
	require.Empty(t, s.PendingReasoning)
}

func TestTranscriptPrefixHashes(t *testing.T) {
	evs := numbered(
		ev("user/message", `{"text":"hi <there>"}`),
		ev("assistant/message", `{"text":"hello"}`),
		ev("tool/call", `{"id":"c1","name":"t","args":{"a": 1}}`),
		ev("tool/result", `{"id":"c1","output":"o"}`),
		ev("user/message", `{"text":"more"}`),
	)
	tr := projection.NewTranscript()
	earlier := []string{}
	for i, e := range evs {
		tr.Apply(e)
		hs := tr.PrefixHashes()
		require.Len(t, hs, len(tr.State().Messages))
		// A call joins message 1 and so changes its hash; every other
		// event only appends.
		if e.Type != "tool/call" {
			require.Equal(t, earlier, hs[:len(earlier):len(earlier)], "after event %d", i)
		} else {
			require.Equal(t, earlier[:1], hs[:1])
			require.NotEqual(t, earlier[1], hs[1])
		}
		require.Equal(t, hs[len(hs)-1], tr.State().PrefixHash)
		earlier = hs
	}

	// The chain, by hand.
	msgs := tr.State().Messages
	var h []byte
	for i, m := range msgs {
		b, err := json.Marshal(m)
		require.NoError(t, err)
		sum := sha256.Sum256(append(h, b...))
		h = sum[:]
		require.Equal(t, "sha256:"+hex.EncodeToString(h), earlier[i])
	}

	// Two transcripts that part ways share the hashes of their common
	// prefix and no more.
	other := projection.NewTranscript()
	apply(other, evs[:4])
	other.Apply(eventlog.Event{Seq: 4, Type: "user/message", Data: json.RawMessage(`{"text":"else"}`)})
	oh := other.PrefixHashes()
	require.Equal(t, earlier[:3], oh[:3])
	require.NotEqual(t, earlier[3], oh[3])

	// Replacing a result changes its hash and every later one.
	tr.Apply(eventlog.Event{Seq: 5, Type: "tool/result", Data: json.RawMessage(`{"id":"c1","output":"new"}`)})
	hs := tr.PrefixHashes()
	require.Equal(t, earlier[:2], hs[:2])
	require.NotEqual(t, earlier[2], hs[2])
	require.NotEqual(t, earlier[3], hs[3])
}

func TestTranscriptUnmarshalChecksPrefixHash(t *testing.T) {
	tr := projection.NewTranscript()
	apply(tr, numbered(ev("user/message", `{"text":"hi"}`)))
	b := marshal(t, tr)
	bad := strings.Replace(b, `"hi"`, `"ho"`, 1)
	u := projection.NewTranscript()
	require.ErrorContains(t, u.UnmarshalState([]byte(bad)), "prefix hash")
	require.Equal(t, `{"messages":[],"stepStart":-1}`, marshal(t, u), "a failed unmarshal changes nothing")
	require.Error(t, u.UnmarshalState([]byte(`{"messages":5}`)))
	require.NoError(t, u.UnmarshalState([]byte(b)))
	require.Equal(t, b, marshal(t, u))
}

// A snapshot's size counts the texts it keeps alive, not only the list it
// copies: after a compaction the live state drops them and the snapshot
// alone holds them, so the replay engine's memory limit must see them.
func TestTranscriptSnapshotSizeCountsTexts(t *testing.T) {
	tr := projection.NewTranscript()
	big := strings.Repeat("x", 1<<20)
	tr.Apply(eventlog.Event{Seq: 0, Type: "user/message", Data: json.RawMessage(`{"text":"` + big + `"}`)})
	_, size := tr.Snapshot()
	require.GreaterOrEqual(t, size, 1<<20)
	tr.Apply(eventlog.Event{Seq: 1, Type: "context/compacted", Data: json.RawMessage(`{"summary":"s"}`)})
	_, small := tr.Snapshot()
	require.Less(t, small, 1<<10, "the compacted state holds only the summary")
}

// A step's streamed text that no one read is dropped by the step's
// assistant/message, and its buffer serves the next step's stream; one
// that was read (State, a Snapshot) is never written again, however many
// streams follow. Each case reads the state (or not) mid-stream, finishes
// the step with a message, streams the next step, and checks the texts
// read then and the final state against a transcript fed the same events
// one at a time with every state read.
func TestTranscriptStreamBufferReuse(t *testing.T) {
	step := func(chunk, msg string) []eventlog.Event {
		return []eventlog.Event{
			ev("step/start", `{}`),
			ev("assistant/chunk", `{"text":"`+chunk+`"}`),
			ev("assistant/chunk", `{"text":"`+chunk+`"}`),
			ev("assistant/message", `{"text":"`+msg+`"}`),
			ev("step/end", `{}`),
		}
	}
	reads := []struct {
		name string
		read func(*projection.Transcript) []string
	}{
		{"unread", nil},
		{"State", func(tr *projection.Transcript) []string {
			var texts []string
			for _, m := range tr.State().Messages {
				texts = append(texts, m.Text)
			}
			return texts
		}},
		{"Snapshot", func(tr *projection.Transcript) []string {
			snap, _ := tr.Snapshot()
			u := projection.NewTranscript()
			require.NoError(t, u.Restore(snap))
			var texts []string
			for _, m := range u.State().Messages {
				texts = append(texts, m.Text)
			}
			return texts
		}},
	}
	for _, rd := range reads {
		t.Run(rd.name, func(t *testing.T) {
			evs := numbered(slices.Concat(step("aaaa", "whole one"), step("bbbb", "whole two"), step("cccc", "whole three"))...)
			tr := projection.NewTranscript()
			var shown [][]string
			for i, e := range evs {
				tr.Apply(e)
				if rd.read != nil && e.Type == "assistant/chunk" && evs[i+1].Type == "assistant/message" {
					shown = append(shown, rd.read(tr))
				}
			}
			want := projection.NewTranscript()
			for _, e := range evs {
				want.Apply(e)
				want.State()
			}
			require.Equal(t, want.State(), tr.State())
			require.NoError(t, projection.CheckIndexes(tr))
			for k, texts := range shown {
				// Read after the k-th step's second chunk: the earlier
				// steps' messages, then that step's streamed text.
				for j := range k {
					require.Equal(t, want.State().Messages[j].Text, texts[j])
				}
				require.Equal(t, strings.Repeat(string(rune('a'+k)), 8), texts[k])
			}
		})
	}
}

// The steps of a stream no one reads allocate no text buffer each: the
// buffer of a stream its step's assistant/message dropped is the next
// one's. A step streamed then sent whole allocates as much as one sent
// whole only.
func TestTranscriptStreamReusesBuffer(t *testing.T) {
	allocs := func(streamed bool) float64 {
		evs := []eventlog.Event{ev("step/start", `{}`)}
		for range 8 {
			if streamed {
				evs = append(evs, ev("assistant/chunk", `{"text":"some streamed words "}`))
			}
		}
		evs = append(evs, ev("assistant/message", `{"text":"the whole text"}`), ev("step/end", `{}`))
		tr := projection.NewTranscript()
		seq := int64(0)
		step := func() {
			for _, e := range evs {
				e.Seq = seq
				tr.Apply(e)
				seq++
			}
		}
		step()
		n := testing.AllocsPerRun(1000, step)
		require.Len(t, tr.State().Messages, 1002)
		return n
	}
	require.Equal(t, allocs(false), allocs(true))
}

// Writing a transcript's state hashes every message not hashed yet with as
// many allocations for 1,000 messages as for 10: none per message.
func TestTranscriptWriteStateAllocsPerMessage(t *testing.T) {
	allocs := func(n int) float64 {
		tr := projection.NewTranscript()
		for i := range n {
			tr.Apply(eventlog.Event{Seq: int64(i), Type: "user/message", Data: json.RawMessage(`{"text":"hello"}`)})
		}
		snap, _ := tr.Snapshot() // before any hash: each run hashes them all
		return testing.AllocsPerRun(20, func() {
			require.NoError(t, tr.Restore(snap))
			require.NoError(t, tr.WriteState(io.Discard))
		})
	}
	require.Equal(t, allocs(10), allocs(1000))
}
