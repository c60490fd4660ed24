package projection_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/projection"
)

// fuzzTypes are the types a fuzzed event may have: the vocabulary, and one
// type outside it.
var fuzzTypes = []string{
	"turn/start", "user/message", "step/start", "assistant/chunk", "assistant/reasoning",
	"assistant/message", "tool/call", "tool/approval", "tool/result", "usage", "step/end",
	"turn/end", "memory/set", "memory/delete", "provider/state", "slot/switch",
	"context/compacted", "plan/set", "custom/event",
}

// fuzzEvents reads a fuzz input as events, one per line: the first byte
// picks the type, the rest is the data (absent when empty). Seqs count up
// from 0 unless the type byte's high bit asks for a repeat of the last.
func fuzzEvents(in []byte) []eventlog.Event {
	var evs []eventlog.Event
	seq := int64(0)
	for line := range bytes.SplitSeq(in, []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		e := eventlog.Event{Seq: seq, Type: fuzzTypes[int(line[0]&0x7f)%len(fuzzTypes)], Time: seq * 7}
		if line[0]&0x80 == 0 {
			seq++
		}
		if len(line) > 1 {
			e.Data = json.RawMessage(line[1:])
		}
		evs = append(evs, e)
	}
	return evs
}

// validData drops the data that is not valid JSON, which no log holds.
func validData(evs []eventlog.Event) []eventlog.Event {
	out := make([]eventlog.Event, len(evs))
	for i, e := range evs {
		if e.Data != nil && !json.Valid(e.Data) {
			e.Data = nil
		}
		out[i] = e
	}
	return out
}

// fuzzLine encodes one event for fuzzEvents.
func fuzzLine(typ, data string) string {
	for i, t := range fuzzTypes {
		if t == typ {
			return string(rune(3*len(fuzzTypes)+i)) + data + "\n" // printable, never a newline
		}
	}
	panic("no fuzz type " + typ)
}

func FuzzProjections(f *testing.F) {
	var all bytes.Buffer
	for _, e := range tricky() {
		typ := e.Type
		if typ == "custom/thing" {
			typ = "custom/event"
		}
		all.WriteString(fuzzLine(typ, string(e.Data)))
	}
	f.Add(all.Bytes())
	f.Add([]byte(fuzzLine("tool/result", `{"id":"x"}`) + fuzzLine("tool/call", `{"id":"x","name":"n","args":1}`) +
		fuzzLine("tool/result", `{"id":"x","output":[1, 2]}`)))
	f.Add([]byte(fuzzLine("usage", `{"inputTokens":1e400,"outputTokens":-1}`) + fuzzLine("turn/end", `{"kind":"\ud800"}`)))
	// A snapshot taken before a result joins its call: the live state's
	// index of results must not leak into it.
	f.Add([]byte(fuzzLine("step/start", `{}`) + fuzzLine("assistant/message", `{"text":"t"}`) +
		fuzzLine("tool/call", `{"id":"a","name":"n","args":{}}`) + fuzzLine("tool/result", `{"id":"a","output":1}`) +
		fuzzLine("tool/call", `{"id":"b","name":"n","args":{}}`) + fuzzLine("tool/result", `{"id":"b","output":2}`)))
	f.Add([]byte(fuzzLine("memory/set", `{"key":"\u003c","value":"<&>\u2028","metadata":null}`)))
	f.Add([]byte(fuzzLine("user/message", "{\"text\":\"\xff\xfe\"}") + fuzzLine("tool/call", "{\"id\":\"a\",\"name\":\"n\",\"args\":\"\xff\"}")))
	// Tool outputs and texts large enough to be left in the log by ApplyAt.
	f.Add([]byte(fuzzLine("tool/call", `{"id":"a","name":"n","args":{}}`) +
		fuzzLine("tool/result", `{"id":"a","output":"`+strings.Repeat("<x>", 400)+`"}`) +
		fuzzLine("tool/result", `{"id":"b","output":[`+strings.Repeat(`"y",`, 300)+`1]}`) +
		fuzzLine("context/compacted", `{"summary":"s"}`) +
		fuzzLine("tool/result", `{"id":"a","output":{"k":"`+strings.Repeat("z", 1100)+`"}}`) +
		fuzzLine("user/message", `{"text":"`+strings.Repeat(`a\n\u00e9<`, 200)+`","slot":"s"}`) +
		fuzzLine("step/start", `{}`) + fuzzLine("assistant/chunk", `{"text":"c"}`) +
		fuzzLine("assistant/message", `{"text":"`+strings.Repeat("plain ", 200)+`"}`)))
	f.Fuzz(func(t *testing.T, in []byte) {
		evs := fuzzEvents(in)
		// Any bytes: no panic, whatever MarshalState then says.
		for _, p := range []projection.Projection{projection.NewAgent(), projection.NewTranscript()} {
			for _, e := range evs {
				p.Apply(e)
			}
			_, _ = p.MarshalState()
		}
		// What a log can hold (its reader and Append refuse anything
		// else): data that is valid JSON. Every property below holds.
		evs = validData(evs)
		half := len(evs) / 2
		for _, newP := range []func() projection.Projection{
			func() projection.Projection { return projection.NewAgent() },
			func() projection.Projection { return projection.NewTranscript() },
			func() projection.Projection { return projection.NewConversation() },
		} {
			whole := newP()
			for _, e := range evs {
				whole.Apply(e)
				if tr, ok := whole.(*projection.Transcript); ok {
					if err := projection.CheckIndexes(tr); err != nil {
						t.Fatalf("transcript after seq %d: %v", e.Seq, err)
					}
				}
			}
			want, err := whole.MarshalState()
			if err != nil {
				t.Fatalf("%s: marshal: %v", whole.Name(), err)
			}
			if !json.Valid(want) {
				t.Fatalf("%s: state is not valid JSON: %s", whole.Name(), want)
			}
			// Borrowed: every event's data in one buffer, scribbled
			// over once Apply returns, as a replay's reader reuses it.
			borrowed := newP()
			if _, ok := borrowed.(projection.Borrower); !ok {
				t.Fatalf("%s is not a Borrower", borrowed.Name())
			}
			var buf []byte
			for _, e := range evs {
				buf = append(buf[:0], e.Data...)
				if e.Data != nil {
					e.Data = buf
				}
				borrowed.Apply(e)
				for i := range buf {
					buf[i] = '#'
				}
			}
			if got, _ := borrowed.MarshalState(); !bytes.Equal(got, want) {
				t.Fatalf("%s: a state applied from borrowed data differs:\n%s\n%s", whole.Name(), want, got)
			}
			// Located: large values may be left in the log, read back.
			if located, ok := newP().(projection.Locator); ok {
				log, at := logOf(evs)
				applyAt(located, evs, bytes.NewReader(log), at)
				if got, _ := located.MarshalState(); !bytes.Equal(got, want) {
					t.Fatalf("%s: a state applied with ApplyAt differs:\n%s\n%s", whole.Name(), want, got)
				}
			}

			round := newP()
			if err := round.UnmarshalState(want); err != nil {
				t.Fatalf("%s: unmarshal: %v\n%s", whole.Name(), err, want)
			}
			if got, _ := round.MarshalState(); !bytes.Equal(got, want) {
				t.Fatalf("%s: round trip differs:\n%s\n%s", whole.Name(), want, got)
			}

			first := newP()
			for _, e := range evs[:half] {
				first.Apply(e)
			}
			snap, err := first.MarshalState()
			if err != nil {
				t.Fatalf("%s: marshal half: %v", whole.Name(), err)
			}
			second := newP()
			if err := second.UnmarshalState(snap); err != nil {
				t.Fatalf("%s: unmarshal half: %v\n%s", whole.Name(), err, snap)
			}
			for _, e := range evs[half:] {
				second.Apply(e)
			}
			if got, _ := second.MarshalState(); !bytes.Equal(got, want) {
				t.Fatalf("%s: split replay differs:\n%s\n%s", whole.Name(), want, got)
			}
			checkSnapshots(t, first, snap, evs[half:], want)
		}
	})
}

// checkSnapshots checks a Snapshotter p that holds the state marshalled as
// half: a Snapshot taken now is not changed by applying rest to p, nor by
// restoring it and applying rest again; restored, it marshals as half and
// goes on to want.
func checkSnapshots(t *testing.T, p projection.Projection, half []byte, rest []eventlog.Event, want []byte) {
	t.Helper()
	sn, ok := p.(projection.Snapshotter)
	if !ok {
		return
	}
	snap, size := sn.Snapshot()
	if size < 0 {
		t.Fatalf("%s: snapshot size %d", p.Name(), size)
	}
	for _, e := range rest {
		p.Apply(e) // the live state moves on; the snapshot must not
	}
	for round := range 2 {
		if err := sn.Restore(snap); err != nil {
			t.Fatalf("%s: restore: %v", p.Name(), err)
		}
		if got, _ := p.MarshalState(); !bytes.Equal(got, half) {
			t.Fatalf("%s: restored snapshot differs (round %d):\n%s\n%s", p.Name(), round, half, got)
		}
		if tr, ok := p.(*projection.Transcript); ok {
			if err := projection.CheckIndexes(tr); err != nil {
				t.Fatalf("transcript restored: %v", err)
			}
		}
		for _, e := range rest {
			p.Apply(e)
		}
		if got, _ := p.MarshalState(); !bytes.Equal(got, want) {
			t.Fatalf("%s: replay from a restored snapshot differs (round %d):\n%s\n%s", p.Name(), round, want, got)
		}
	}
	if err := sn.Restore("not a snapshot"); err == nil {
		t.Fatalf("%s: restored a string", p.Name())
	}
}

// TestFuzzLine: the seeds say what they mean.
func TestFuzzLine(t *testing.T) {
	evs := fuzzEvents([]byte(fuzzLine("tool/call", `{"id":"x"}`) + fuzzLine("custom/event", ``)))
	require.Equal(t, []eventlog.Event{
		{Seq: 0, Type: "tool/call", Data: json.RawMessage(`{"id":"x"}`)},
		{Seq: 1, Type: "custom/event", Time: 7},
	}, evs)
}
