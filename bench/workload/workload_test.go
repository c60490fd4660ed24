package workload

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// shape sums up a workload: what the statistics tests compare with the
// facts the generator is built to match.
type shape struct {
	events, turns, steps int
	bytes                int64          // JSONL, '\n' included
	count                map[string]int // events per type
	size                 map[string]int64
	lineSizes            []int
	outputs              []int // tool/result output lengths
	errors               int   // tool/results with an error
	reasoning            int   // steps with reasoning
}

func measure(t *testing.T, evs []Event) shape {
	t.Helper()
	s := shape{count: map[string]int{}, size: map[string]int64{}}
	var line []byte
	for i := range evs {
		e := &evs[i]
		line = e.AppendJSON(line[:0])
		s.events++
		s.bytes += int64(len(line)) + 1
		s.count[e.Type]++
		s.size[e.Type] += int64(len(line)) + 1
		s.lineSizes = append(s.lineSizes, len(line)+1)
		switch e.Type {
		case "turn/start":
			s.turns++
		case "step/start":
			s.steps++
		case "assistant/reasoning":
			s.reasoning++
		case "tool/result":
			var d struct {
				Output string  `json:"output"`
				Error  *string `json:"error"`
			}
			require.NoError(t, json.Unmarshal(e.Data, &d))
			s.outputs = append(s.outputs, len(d.Output))
			if d.Error != nil {
				s.errors++
			}
		}
	}
	slices.Sort(s.lineSizes)
	return s
}

func quantile(sorted []int, q float64) int { return sorted[int(q*float64(len(sorted)-1))] }

// TestShape checks the default workload against the facts it is built to
// match (the sessions of a coding agent): events and bytes per turn, the
// event mix, the size of each kind of event. It pools three seeds (600
// turns), so that no seed is tuned for and the tolerances can stay tight.
func TestShape(t *testing.T) {
	var evs []Event
	for _, seed := range []uint64{1, 2, 3} {
		evs = append(evs, Generate(Config{Seed: seed, Turns: 200})...)
	}
	s := measure(t, evs)
	frac := func(n, of int64) float64 { return float64(n) / float64(of) }
	tests := []struct {
		name     string
		got      float64
		min, max float64
	}{
		{"events per turn (~125–129)", float64(s.events) / float64(s.turns), 122, 136},
		{"bytes per turn (~43 KB)", float64(s.bytes) / float64(s.turns), 40_000, 46_000},
		{"mean bytes per event (~340)", float64(s.bytes) / float64(s.events), 310, 370},
		{"median bytes per event (~105)", float64(quantile(s.lineSizes, 0.5)), 90, 120},
		{"p99 bytes per event (~7 KB)", float64(quantile(s.lineSizes, 0.99)), 5_500, 8_500},
		{"steps per turn (uniform 1..5)", float64(s.steps) / float64(s.turns), 2.85, 3.15},
		{"assistant/chunk share of events (81 %)", frac(int64(s.count["assistant/chunk"]), int64(s.events)), 0.79, 0.83},
		{"assistant/chunk share of bytes (25 %)", frac(s.size["assistant/chunk"], s.bytes), 0.22, 0.28},
		{"tool/result share of events (3 %)", frac(int64(s.count["tool/result"]), int64(s.events)), 0.025, 0.035},
		{"tool/result share of bytes (55 %)", frac(s.size["tool/result"], s.bytes), 0.52, 0.58},
		{"steps with reasoning (30 %)", frac(int64(s.reasoning), int64(s.steps)), 0.27, 0.33},
		{"tool results with an error (5 %)", frac(int64(s.errors), int64(len(s.outputs))), 0.035, 0.065},
		{"turns with a marker (10 %)", frac(int64(s.count["marker"]), int64(s.turns)), 0.07, 0.13},
		{"user/message median line (~1.3 KB)", medianSize(t, evs, "user/message"), 1_000, 1_500},
		{"assistant/reasoning median line (~2 KB)", medianSize(t, evs, "assistant/reasoning"), 1_600, 2_300},
		{"tool/call median line (~440 B)", medianSize(t, evs, "tool/call"), 350, 500},
		{"tool/result median line (~3.8 KB)", medianSize(t, evs, "tool/result"), 3_000, 4_600},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.GreaterOrEqual(t, tt.got, tt.min)
			require.LessOrEqual(t, tt.got, tt.max)
		})
	}
	require.Equal(t, 600, s.turns)
	require.Equal(t, s.turns, s.count["turn/end"])
	require.Equal(t, s.count["tool/call"], s.count["tool/result"])
}

func medianSize(t *testing.T, evs []Event, typ string) float64 {
	t.Helper()
	var sizes []int
	for i := range evs {
		if evs[i].Type == typ {
			sizes = append(sizes, len(evs[i].AppendJSON(nil))+1)
		}
	}
	require.NotEmpty(t, sizes, typ)
	slices.Sort(sizes)
	return float64(quantile(sizes, 0.5))
}

// TestToolOutputsLogUniform checks that tool/result outputs lie in
// [MinToolOutput, MaxToolOutput] and that their logarithm is uniform: each
// quarter of the log range holds a quarter of the outputs.
func TestToolOutputsLogUniform(t *testing.T) {
	s := measure(t, Generate(Config{Seed: 7, Turns: 1000}))
	require.Greater(t, len(s.outputs), 3000)
	lo, hi := math.Log(DefaultMinToolOutput), math.Log(DefaultMaxToolOutput)
	var quarters [4]int
	for _, n := range s.outputs {
		require.GreaterOrEqual(t, n, DefaultMinToolOutput)
		require.LessOrEqual(t, n, DefaultMaxToolOutput)
		q := int(4 * (math.Log(float64(n)) - lo) / (hi - lo))
		quarters[min(q, 3)]++
	}
	for i, c := range quarters {
		share := float64(c) / float64(len(s.outputs))
		require.InDelta(t, 0.25, share, 0.03, "quarter %d of the log range holds %.3f of the outputs", i, share)
	}
}

// TestTurnStructure checks what the benchmarks and the projections rely on:
// contiguous seqs, times that never go back, compact JSON objects, every
// turn opened and closed, every call answered right after it, and each
// step's message equal to its chunks joined.
func TestTurnStructure(t *testing.T) {
	evs := Generate(Config{Seed: 1, Turns: 50})
	var chunks strings.Builder
	var openCall string
	for i, e := range evs {
		require.Equal(t, int64(i), e.Seq)
		if i > 0 {
			require.GreaterOrEqual(t, e.Time, evs[i-1].Time, "seq %d", i)
			require.GreaterOrEqual(t, e.Turn, evs[i-1].Turn, "seq %d", i)
		}
		require.True(t, json.Valid(e.Data), "seq %d", i)
		var compact bytes.Buffer
		require.NoError(t, json.Compact(&compact, e.Data))
		require.Equal(t, compact.String(), string(e.Data), "seq %d: data is compact", i)
		require.Equal(t, byte('{'), e.Data[0], "seq %d: data is an object", i)
		require.Contains(t, Types, e.Type)

		var d struct{ ID, Text string }
		require.NoError(t, json.Unmarshal(e.Data, &d))
		switch e.Type {
		case "step/start":
			chunks.Reset()
		case "assistant/chunk":
			chunks.WriteString(d.Text)
		case "assistant/message":
			require.Equal(t, chunks.String(), d.Text, "seq %d: the message is its chunks joined", i)
		case "tool/call":
			require.Empty(t, openCall, "seq %d", i)
			openCall = d.ID
		case "tool/result":
			require.Equal(t, openCall, d.ID, "seq %d: a result follows its call", i)
			openCall = ""
		}
		first, last := i == 0 || evs[i-1].Turn != e.Turn, i == len(evs)-1 || evs[i+1].Turn != e.Turn
		if first {
			require.Equal(t, "turn/start", e.Type, "seq %d", i)
		}
		if last {
			require.Contains(t, []string{"turn/end", "marker"}, e.Type, "seq %d", i)
		}
	}
	require.Equal(t, 50, evs[len(evs)-1].Turn)
}

// TestDeterministic pins the bytes of a small workload: a change to the
// generator changes every benchmark's input and must be made on purpose
// (update the sum, then the figures in docs/performance.md).
func TestDeterministic(t *testing.T) {
	sum := func(cfg Config) string {
		var b bytes.Buffer
		require.NoError(t, WriteJSONL(&b, Generate(cfg)))
		h := sha256.Sum256(b.Bytes())
		return hex.EncodeToString(h[:])
	}
	require.Equal(t, sum(Config{Seed: 1, Turns: 20}), sum(Config{Seed: 1, Turns: 20}))
	require.NotEqual(t, sum(Config{Seed: 1, Turns: 20}), sum(Config{Seed: 2, Turns: 20}))
	require.Equal(t, "47063b41a1d0aa604e1c305523de5b00617a01504b2475bc83d4f68a2a06a1ed", sum(Config{Seed: 1, Turns: 20}))

	// Turn by turn gives the same events as Generate.
	g := New(Config{Seed: 1, Turns: 20})
	var byTurn []Event
	for !g.Done() {
		byTurn = append(byTurn, g.NextTurn()...)
	}
	require.Nil(t, g.NextTurn())
	require.Equal(t, Generate(Config{Seed: 1, Turns: 20}), byTurn)

	// More turns extend the same session: the bench module's 2,000-turn
	// workload starts with its 200-turn one.
	require.Equal(t, byTurn, Generate(Config{Seed: 1, Turns: 30})[:len(byTurn)])
}

func TestAppendJSON(t *testing.T) {
	e := Event{Seq: 3, Type: "user/message", Time: 5, Data: json.RawMessage(`{"text":"a\"<b>\n"}`)}
	require.Equal(t, `{"seq":3,"type":"user/message","time":5,"data":{"text":"a\"<b>\n"}}`, string(e.AppendJSON(nil)))
	require.Equal(t, `{"seq":0,"type":"x","time":0,"data":null}`, string((&Event{Type: "x"}).AppendJSON(nil)))
	require.Equal(t, `"q\"\\\n\t\u0001<&>"`, string(appendString(nil, "q\"\\\n\t\x01<&>")))
}

func TestRepeat(t *testing.T) {
	evs := Generate(Config{Seed: 1, Turns: 3})
	var one bytes.Buffer
	require.NoError(t, WriteJSONL(&one, evs))
	size := int64(one.Len())
	tests := []struct {
		name   string
		target int64
		passes int
	}{
		{"a target within one pass takes one pass", size / 2, 1},
		{"exactly one pass", size, 1},
		{"just past one pass takes two", size + 1, 2},
		{"three passes", 3 * size, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := Repeat(evs, tt.target)
			require.Len(t, out, tt.passes*len(evs))
			for i := 1; i < len(out); i++ {
				require.GreaterOrEqual(t, out[i].Time, out[i-1].Time, "times never go back")
				require.GreaterOrEqual(t, out[i].Turn, out[i-1].Turn, "turns never go back")
			}
			last := out[len(out)-1]
			require.Equal(t, tt.passes*evs[len(evs)-1].Turn, last.Turn)
			require.Equal(t, evs[len(evs)-1].Data, last.Data, "each pass is the same events")
		})
	}
	require.Empty(t, Repeat(nil, 10))
}
