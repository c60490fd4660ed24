package projection_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/projection"
)

// benchTurns builds n turns shaped like the default bench workload session
// (bench/workload): a user message, three steps of streamed chunks and a
// message, reasoning in the first, two tool calls with results of a few
// KiB in every step but the last, usage per step; about 125 events a turn.
// Seqs run on across turns.
func benchTurns(n int) [][]eventlog.Event {
	text := func(words int) string {
		return strings.TrimSpace(strings.Repeat("the quick brown fox jumps over the lazy dog ", words/9+1))
	}
	obj := func(v any) json.RawMessage {
		b, err := json.Marshal(v)
		if err != nil {
			panic(err)
		}
		return b
	}
	var turns [][]eventlog.Event
	seq, now := int64(0), int64(1767225600000)
	for turn := 1; turn <= n; turn++ {
		var evs []eventlog.Event
		add := func(typ string, data json.RawMessage) {
			evs = append(evs, eventlog.Event{Seq: seq, Type: typ, Time: now, Data: data})
			seq++
			now += 37
		}
		add("turn/start", obj(map[string]any{"turn": turn, "id": fmt.Sprintf("turn_%d", turn)}))
		add("user/message", obj(map[string]any{"id": fmt.Sprintf("msg_u%d", turn), "text": text(220)}))
		const steps = 3
		for step := 1; step <= steps; step++ {
			add("step/start", obj(map[string]any{"turn": turn, "step": step, "model": "model-a"}))
			if step == 1 {
				add("assistant/reasoning", obj(map[string]any{"text": text(330)}))
			}
			for range 33 {
				add("assistant/chunk", obj(map[string]any{"text": "fox jumps over "}))
			}
			add("assistant/message", obj(map[string]any{"id": fmt.Sprintf("msg_a%d_%d", turn, step), "text": text(100)}))
			if step < steps {
				for c := range 2 {
					id := fmt.Sprintf("call_%d_%d_%d", turn, step, c)
					add("tool/call", obj(map[string]any{"id": id, "name": "read_file", "args": map[string]any{"path": "internal/x.go", "limit": 200}, "effect": "read"}))
					add("tool/result", obj(map[string]any{"id": id, "output": text(600)}))
				}
			}
			add("usage", obj(map[string]any{"inputTokens": 1000 * turn, "outputTokens": 250, "cachedTokens": 800 * turn, "costMicros": 1234, "model": "model-a"}))
			add("step/end", obj(map[string]any{"step": step, "finish_reason": "tool_use"}))
		}
		add("turn/end", obj(map[string]any{"kind": "completed", "steps": steps}))
		turns = append(turns, evs)
	}
	return turns
}

var benchProjections = []struct {
	name string
	new  func() projection.Projection
}{
	{"agent", func() projection.Projection { return projection.NewAgent() }},
	{"transcript", func() projection.Projection { return projection.NewTranscript() }},
}

// BenchmarkApply applies one synthetic turn per op; the projection grows
// for 64 turns and is then reset, as a replay of a long session would.
func BenchmarkApply(b *testing.B) {
	turns := benchTurns(64)
	size := 0
	for _, e := range turns[0] {
		size += len(e.Data)
	}
	for _, bp := range benchProjections {
		b.Run(bp.name, func(b *testing.B) {
			p := bp.new()
			b.SetBytes(int64(size))
			b.ReportAllocs()
			n, i := 0, 0
			for b.Loop() {
				if i == len(turns) {
					p.Reset()
					i = 0
				}
				for _, e := range turns[i] {
					p.Apply(e)
				}
				n += len(turns[i])
				i++
			}
			b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "events/s")
			b.ReportMetric(float64(len(turns[0])), "events/turn")
		})
	}
}

// BenchmarkMarshalState marshals the state after 64 turns (about 8k
// events): what taking a checkpoint's state digest costs.
func BenchmarkMarshalState(b *testing.B) {
	turns := benchTurns(64)
	for _, bp := range benchProjections {
		b.Run(bp.name, func(b *testing.B) {
			p := bp.new()
			for _, t := range turns {
				apply(p, t)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := p.MarshalState(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
