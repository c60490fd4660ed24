package chatview

import (
	"bytes"
	"cmp"
	"encoding/json"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/eventlog"
)

func TestBranches(t *testing.T) {
	for _, tc := range []struct {
		name      string
		last      int64
		rollbacks []Rollback
		abandoned map[int64]int64 // seq → the rollback that abandoned it
	}{
		{"none", 5, nil, nil},
		{"one", 10, []Rollback{{Seq: 6, To: 2}}, map[int64]int64{3: 6, 4: 6, 5: 6}},
		{"rollback to the event before it abandons nothing", 5, []Rollback{{Seq: 4, To: 3}}, nil},
		// 9→7 is live, so 8 is abandoned; 5→1 is live from 7 on: 2..4.
		{"chained", 10, []Rollback{{Seq: 9, To: 7}, {Seq: 5, To: 1}}, map[int64]int64{8: 9, 2: 5, 3: 5, 4: 5}},
		// 12→3 abandons 4..11, the rollback at 8 among them: it decides nothing.
		{"a rollback on an abandoned branch", 12, []Rollback{{Seq: 8, To: 1}, {Seq: 12, To: 3}},
			map[int64]int64{4: 12, 5: 12, 6: 12, 7: 12, 8: 12, 9: 12, 10: 12, 11: 12}},
		// Into an abandoned branch: 10→5 revives 5, which 6→2 had abandoned.
		{"into an abandoned branch", 11, []Rollback{{Seq: 6, To: 2}, {Seq: 10, To: 5}},
			map[int64]int64{6: 10, 7: 10, 8: 10, 9: 10}},
		{"malformed rollbacks are ignored", 6, []Rollback{{Seq: 3, To: 3}, {Seq: 4, To: -1}}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := NewBranches(tc.last, tc.rollbacks)
			for seq := int64(0); seq <= tc.last; seq++ {
				r, ok := b.AbandonedBy(seq)
				want, abandoned := tc.abandoned[seq]
				require.Equal(t, abandoned, ok, "seq %d", seq)
				if abandoned {
					require.Equal(t, want, r.Seq, "seq %d", seq)
				}
			}
		})
	}
}

func events(t testing.TB, lines ...string) []eventlog.Event {
	t.Helper()
	var out []eventlog.Event
	for i, l := range lines {
		typ, data, _ := strings.Cut(l, " ")
		e := eventlog.Event{Seq: int64(i), Type: typ}
		if data != "" {
			e.Data = json.RawMessage(data)
		}
		out = append(out, e)
	}
	return out
}

func build(evs []eventlog.Event, opts Options, atEnd bool) []Block {
	var out []Block
	b := NewBuilder(opts, func(blk Block) { out = append(out, blk) })
	for _, e := range evs {
		b.Add(e)
	}
	b.Finish(atEnd)
	return out
}

func TestBuilderJoinsChunksOnlyWithoutAMessage(t *testing.T) {
	chunks := events(t,
		`step/start`, `assistant/chunk {"text":"Hel"}`, `assistant/chunk {"text":"lo"}`,
		`tool/call {"id":"c1","name":"ls","args":{}}`, `tool/result {"id":"c1","output":"a"}`, `step/end`)
	blocks := build(chunks, Options{}, true)
	require.Equal(t, KindAssistant, blocks[0].Kind)
	require.Equal(t, "Hello", blocks[0].Text)
	require.True(t, blocks[0].Streamed)
	require.Equal(t, int64(1), blocks[0].Seq, "at the first chunk's seq")
	require.Equal(t, KindToolCall, blocks[1].Kind)
	require.True(t, blocks[2].Adjacent)

	withMessage := events(t, `step/start`, `assistant/chunk {"text":"Hel"}`, `assistant/message {"text":"Hello!"}`, `step/end`)
	blocks = build(withMessage, Options{}, true)
	require.Len(t, blocks, 1)
	require.Equal(t, "Hello!", blocks[0].Text)
	require.False(t, blocks[0].Streamed)

	open := events(t, `step/start`, `assistant/chunk {"text":"cut"}`)
	blocks = build(open, Options{}, true)
	require.True(t, blocks[0].Partial, "a step open at the log's end never ended")
	blocks = build(open, Options{}, false)
	require.False(t, blocks[0].Partial, "the range ends before the log does")
}

func TestBuilderTurnsStopsAndRuns(t *testing.T) {
	evs := events(t,
		`turn/start`, `assistant/reasoning {"text":"a "}`, `assistant/reasoning {"text":"b"}`,
		`x/y 1`, `x/y 2`, `tool/result {"id":"c9","error":"lost","synthetic":true}`,
		`turn/end {"kind":"interrupted"}`, `turn/start "bad"`, `turn/end {}`)
	blocks := build(evs, Options{FirstTurn: 4}, true)
	kinds := make([]Kind, len(blocks))
	for i, b := range blocks {
		kinds[i] = b.Kind
	}
	require.Equal(t, []Kind{KindTurn, KindReasoning, KindOther, KindToolResult, KindStop, KindTurn, KindOther, KindStop, KindOther}, kinds)
	require.Equal(t, 4, blocks[0].Turn)
	require.Equal(t, "a b", blocks[1].Text)
	require.Equal(t, int64(2), blocks[2].Count)
	require.True(t, blocks[4].Resumed)
	require.Equal(t, 5, blocks[5].Turn, "a turn/start of the wrong shape is still a turn")
	require.Equal(t, "unknown", blocks[7].Stop)
}

func TestBuilderBranchesAndForks(t *testing.T) {
	evs := events(t, `user/message {"text":"a"}`, `user/message {"text":"b"}`, `user/message {"text":"c"}`, `rollback {"to":0}`, `user/message {"text":"d"}`)
	opts := Options{
		Branches: NewBranches(4, []Rollback{{Seq: 3, To: 0}}),
		Fork:     &eventlog.Parent{ID: "P", Seq: 0, Mode: eventlog.ModeFork},
		Related:  []Related{{ID: "C", Mode: "child", Seq: 4, Call: "k"}},
	}
	blocks := build(evs, opts, true)
	kinds := make([]Kind, len(blocks))
	for i, b := range blocks {
		kinds[i] = b.Kind
	}
	require.Equal(t, []Kind{KindUser, KindForkPoint, KindBranch, KindUser, KindUser, KindRollback, KindUser, KindRelated}, kinds)
	require.True(t, blocks[3].Abandoned && blocks[4].Abandoned)
	require.False(t, blocks[5].Abandoned || blocks[6].Abandoned)
	require.Equal(t, int64(2), blocks[5].Count)

	var out bytes.Buffer
	text := NewText(&out, 80, false)
	for _, b := range blocks {
		require.NoError(t, text.Write(b))
	}
	require.Contains(t, out.String(), "┆ user    b\n")
	require.Contains(t, out.String(), "↶ rollback at seq 3 to seq 0: 2 events abandoned\n")
	require.Contains(t, out.String(), "↳ child session C spawned here by k\n")
}

func TestTextCutsLongOutput(t *testing.T) {
	var out bytes.Buffer
	lines := strings.Repeat("line\n", 20)
	require.NoError(t, NewText(&out, 80, false).Write(Block{Kind: KindToolResult, Seq: 7, Text: lines, CallID: "c", Adjacent: true}))
	got := out.String()
	require.Equal(t, MaxOutputLines+1, strings.Count(got, "\n"), got)
	require.Contains(t, got, "… 12 more lines (59 B): logtool cat --from 7 --to 7")
}

func TestWords(t *testing.T) {
	require.Equal(t, "no events", Plural(0, "event", ""))
	require.Equal(t, "1 event", Plural(1, "event", ""))
	require.Equal(t, "1,234,567 events", Plural(1234567, "event", ""))
	require.Equal(t, "2 replies", Plural(2, "reply", "replies"))
	require.Equal(t, "512 B", Size(512))
	require.Equal(t, "4.0 KiB", Size(4096))
	require.Equal(t, "92 MiB", Size(96251216))
	require.Equal(t, 5, DisplayWidth("做两a\u0301"), "wide runes take two columns, combining marks none")
	require.Equal(t, []string{"做两个四", "五t"}, wrap("做两个四五t", 8))
	require.Equal(t, "a\ufffd[31mb", clean("a\x1b[31mb"), "no escape sequence reaches the terminal")
}

// FuzzText checks that no event, whatever its data, panics the Builder or
// makes Text write a line wider than its width or an escape sequence.
func FuzzText(f *testing.F) {
	for _, s := range []string{`{"text":"hi"}`, `{"id":"c","name":"n","args":{"a":1}}`, `{"to":0}`, `"x"`, `[{"text":"a"}]`, `{"kind":null}`, `{"inputTokens":1,"outputTokens":2}`, "{\"text\":\"\x1b]0;t\x07\"}"} {
		for _, typ := range []string{"user/message", "assistant/chunk", "assistant/reasoning", "tool/call", "tool/result", "rollback", "turn/end", "usage", "turn/start", "checkpoint", "x"} {
			f.Add(typ, []byte(s), uint8(40))
		}
	}
	f.Fuzz(func(t *testing.T, typ string, data []byte, width uint8) {
		w := max(int(width), 40)
		evs := []eventlog.Event{{Seq: 0, Type: "step/start"}, {Seq: 1, Type: typ, Data: data}, {Seq: 2, Type: typ, Data: data}, {Seq: 3, Type: "rollback", Data: json.RawMessage(`{"to":0}`)}}
		var out bytes.Buffer
		text := NewText(&out, w, true)
		b := NewBuilder(Options{Branches: NewBranches(3, []Rollback{{Seq: 3, To: 0}})}, func(blk Block) { text.Write(blk) })
		for _, e := range evs {
			b.Add(e)
		}
		b.Finish(true)
		plain := stripANSI(out.String())
		for l := range strings.Lines(plain) {
			require.LessOrEqual(t, DisplayWidth(strings.TrimSuffix(l, "\n")), w, "%q", l)
			require.NotContains(t, l, "\x1b")
		}
	})
}

// stripANSI removes the styles Text writes (ESC [ digits ; m).
func stripANSI(s string) string {
	var b strings.Builder
	for {
		i := strings.Index(s, "\x1b[")
		if i < 0 {
			return b.String() + s
		}
		b.WriteString(s[:i])
		j := strings.IndexByte(s[i:], 'm')
		if j < 0 || strings.Trim(s[i+2:i+j], "0123456789;") != "" {
			return b.String() + s[i:] // not ours: left for the check to find
		}
		s = s[i+j+1:]
	}
}

func TestTextNoTrailingBlanks(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, NewText(&out, 80, false).Write(Block{Kind: KindToolResult, Text: "a\n\nb", CallID: "c", Adjacent: true}))
	require.Equal(t, "result  a\n\n        b\n", out.String())
}

func TestBuilderRunsSayTheirLastSeq(t *testing.T) {
	evs := events(t,
		`step/start`, `assistant/chunk {"text":"Hel"}`, `assistant/chunk {"text":"lo"}`, `x/y 1`, `x/y 2`, `x/y 3`,
		`assistant/reasoning {"text":"a"}`, `assistant/reasoning {"text":"b"}`, `step/end`, `user/message {"text":"u"}`)
	blocks := build(evs, Options{}, true)
	require.Len(t, blocks, 4)
	other, reasoning, streamed, user := blocks[0], blocks[1], blocks[2], blocks[3]
	require.Equal(t, []int64{3, 5, 3}, []int64{other.Seq, other.Last, other.Count})
	require.Equal(t, []int64{6, 7}, []int64{reasoning.Seq, reasoning.Last})
	require.Equal(t, []int64{1, 2, 2}, []int64{streamed.Seq, streamed.Last, streamed.Count})
	require.Equal(t, "Hello", streamed.Text)
	require.Equal(t, user.Seq, user.Last, "a block of one event")
}

// TestHeldIsWhatFinishWouldShow: after any prefix of a log, Held returns
// exactly the blocks Finish(true) would then show, and calling it changes
// nothing the Builder shows later.
func TestHeldIsWhatFinishWouldShow(t *testing.T) {
	kinds := []string{`step/start`, `step/end`, `turn/start`, `turn/end {"kind":"completed"}`,
		`assistant/chunk {"text":"c"}`, `assistant/reasoning {"text":"r"}`, `assistant/message {"text":"m"}`,
		`tool/call {"id":"k","name":"n","args":{}}`, `tool/result {"id":"k","output":"o"}`, `x/y 1`, `x/z 2`, `user/message {"text":"u"}`}
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 200 {
		var lines []string
		for range 30 {
			lines = append(lines, kinds[rng.IntN(len(kinds))])
		}
		evs := events(t, lines...)
		var probed []Block
		withHeld := NewBuilder(Options{}, func(blk Block) { probed = append(probed, blk) })
		for i, e := range evs {
			withHeld.Add(e)
			held := withHeld.Held()
			var shown []Block
			fresh := NewBuilder(Options{}, func(blk Block) { shown = append(shown, blk) })
			for _, e := range evs[:i+1] {
				fresh.Add(e)
			}
			before := len(shown)
			fresh.Finish(true)
			finished := shown[before:]
			slices.SortStableFunc(finished, func(x, y Block) int { return cmp.Compare(x.Seq, y.Seq) })
			if len(finished) == 0 {
				finished = nil
			}
			require.Equal(t, finished, held, "round %d, after seq %d", round, i)
		}
		withHeld.Finish(true)
		require.Equal(t, build(evs, Options{}, true), probed, "round %d: Held changed what the Builder shows", round)
	}
}
