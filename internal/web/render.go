package web

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/sessionlog/sessionlog/eventlog"
)

// maxShown is how much of one text, argument or result a page shows; the
// rest is cut with a note of the full size (the log keeps it all).
const maxShown = 64 << 10

// item is one event as a page shows it. Every string is escaped by
// html/template when rendered.
type item struct {
	Seq       int64
	Type      string
	Time      string
	Kind      string // user, assistant, reasoning, call, result, usage, checkpoint, rollback, turn, step, other
	Text      string
	Name      string // tool name
	CallID    string
	Args      string
	Result    string
	ResultSeq int64
	Failed    bool // the tool result is an error
	Synthetic bool
	Tokens    string
	Label     string
	To        int64 // a rollback's target
	Chunks    int   // assistant/chunk events folded into this item
	LastSeq   int64 // the last chunk's seq
	Abandoned bool  // in a branch a later rollback abandoned
	Inherited bool  // a fork's event inherited from its parent
}

// turn is the events from one turn/start to the next.
type turn struct {
	Seq       int64 // the turn/start's seq, or the first event's when the page starts mid-turn
	Items     []*item
	In, Out   int64 // tokens spent in the turn, an abandoned branch's too
	Cost      int64
	live      [3]int64 // in, out, cost of the events on the live branch
	Start     int64    // ms
	End       int64    // ms
	Stop      string
	Abandoned bool // every event of the turn is abandoned
	Rollback  bool // the group starts with a rollback (not a turn)
}

// Tokens is the turn's input and output tokens.
func (t *turn) Tokens() int64 { return t.In + t.Out }

// Duration says how long the turn took, from its first event's time to its
// last's.
func (t *turn) Duration() string {
	return (time.Duration(t.End-t.Start) * time.Millisecond).Round(time.Millisecond).String()
}

// branches holds the abandoned ranges of the rollbacks read.
type branches [][2]int64 // [from, to] inclusive

func (b branches) abandoned(seq int64) bool {
	for _, r := range b {
		if seq >= r[0] && seq <= r[1] {
			return true
		}
	}
	return false
}

// eventData is the union of the §8 keys a page shows; a wrong shape
// leaves fields empty and the raw data is shown instead.
type eventData struct {
	Text         json.RawMessage `json:"text"`
	ID           string          `json:"id"`
	Name         string          `json:"name"`
	Args         json.RawMessage `json:"args"`
	Output       json.RawMessage `json:"output"`
	Error        json.RawMessage `json:"error"`
	Synthetic    bool            `json:"synthetic"`
	Decision     string          `json:"decision"`
	InputTokens  int64           `json:"inputTokens"`
	OutputTokens int64           `json:"outputTokens"`
	CachedTokens int64           `json:"cachedTokens"`
	CostMicros   int64           `json:"costMicros"`
	Model        string          `json:"model"`
	Kind         string          `json:"kind"`
	Reason       string          `json:"reason"`
	Label        string          `json:"label"`
	To           *int64          `json:"to"`
	Summary      string          `json:"summary"`
	Key          string          `json:"key"`
}

// rollbackRange returns the seqs a rollback event abandons, ok false for
// any other event or a malformed rollback.
func rollbackRange(e eventlog.Event) (r [2]int64, ok bool) {
	if e.Type != "rollback" {
		return r, false
	}
	var d eventData
	if json.Unmarshal(e.Data, &d) != nil || d.To == nil || *d.To < 0 || *d.To >= e.Seq {
		return r, false
	}
	return [2]int64{*d.To + 1, e.Seq - 1}, true
}

// build groups events into turns; results are attached to their calls
// when both are on the page.
type builder struct {
	turns    []*turn
	calls    map[string]*item
	inherit  int64 // last inherited seq, -1 for none
	branches branches
}

func newBuilder(inherit int64, b branches) *builder {
	return &builder{calls: map[string]*item{}, inherit: inherit, branches: b}
}

func (b *builder) cur(e eventlog.Event) *turn {
	// A rollback closes the group it ends: the branch before it reads as
	// abandoned, and what follows is the live branch again.
	if len(b.turns) == 0 || e.Type == "turn/start" || e.Type == "rollback" {
		b.turns = append(b.turns, &turn{Seq: e.Seq, Start: e.Time, Abandoned: true, Rollback: e.Type == "rollback"})
	}
	return b.turns[len(b.turns)-1]
}

func (b *builder) add(e eventlog.Event) {
	t := b.cur(e)
	t.End = e.Time
	it := &item{Seq: e.Seq, Type: e.Type, Time: fmtTime(e.Time), Kind: "other",
		Abandoned: b.branches.abandoned(e.Seq), Inherited: e.Seq <= b.inherit}
	if !it.Abandoned {
		t.Abandoned = false
	}
	var d eventData
	shaped := len(e.Data) == 0 || json.Unmarshal(e.Data, &d) == nil
	switch {
	case !shaped:
		it.Text = clip(string(e.Data))
	case e.Type == "turn/start" || e.Type == "step/start" || e.Type == "step/end":
		it.Kind = "step"
	case e.Type == "turn/end":
		it.Kind = "turn"
		it.Text = d.Kind
		if d.Reason != "" {
			it.Text += ": " + d.Reason
		}
		t.Stop = d.Kind
	case e.Type == "assistant/chunk" && b.foldChunk(t, it, d):
		return // folded into the chunks before it
	case e.Type == "user/message" || e.Type == "assistant/message" || e.Type == "assistant/reasoning" || e.Type == "assistant/chunk":
		it.Kind = map[string]string{"user/message": "user", "assistant/message": "assistant",
			"assistant/reasoning": "reasoning", "assistant/chunk": "chunk"}[e.Type]
		it.Text = textOf(d.Text)
		if it.Kind == "chunk" {
			it.Chunks, it.LastSeq = 1, e.Seq
		}
	case e.Type == "tool/call":
		it.Kind = "call"
		it.Name, it.CallID, it.Args = d.Name, d.ID, pretty(d.Args)
		b.calls[d.ID] = it
	case e.Type == "tool/result":
		res, failed := pretty(d.Output), len(d.Error) > 0 && string(d.Error) != "null"
		if failed {
			res = pretty(d.Error)
		}
		if c := b.calls[d.ID]; c != nil && d.ID != "" {
			c.Result, c.ResultSeq, c.Failed, c.Synthetic = res, e.Seq, failed, d.Synthetic
			return // shown with its call
		}
		it.Kind = "result"
		it.CallID, it.Result, it.Failed, it.Synthetic = d.ID, res, failed, d.Synthetic
	case e.Type == "tool/approval":
		it.Text = d.ID + " " + d.Decision
	case e.Type == "usage":
		it.Kind = "usage"
		it.Tokens = fmt.Sprintf("in %d · out %d", d.InputTokens, d.OutputTokens)
		if d.CachedTokens > 0 {
			it.Tokens += fmt.Sprintf(" · cached %d", d.CachedTokens)
		}
		if d.CostMicros > 0 {
			it.Tokens += " · " + fmtCost(d.CostMicros)
		}
		if d.Model != "" {
			it.Tokens += " · " + d.Model
		}
		t.In += d.InputTokens
		t.Out += d.OutputTokens
		t.Cost += d.CostMicros
		if !it.Abandoned {
			t.live[0] += d.InputTokens
			t.live[1] += d.OutputTokens
			t.live[2] += d.CostMicros
		}
	case e.Type == "checkpoint":
		it.Kind, it.Label = "checkpoint", d.Label
	case e.Type == "rollback":
		it.Kind, it.Label, it.Text = "rollback", d.Label, d.Reason
		if d.To != nil {
			it.To = *d.To
		}
	case e.Type == "context/compacted":
		it.Text = clip(d.Summary)
	default:
		it.Text = clip(string(e.Data))
	}
	t.Items = append(t.Items, it)
}

// foldChunk adds a streamed chunk to the chunks just before it in the
// turn (same branch), so a stream of hundreds of deltas is one item; it
// reports whether it did.
func (b *builder) foldChunk(t *turn, it *item, d eventData) bool {
	if len(t.Items) == 0 {
		return false
	}
	prev := t.Items[len(t.Items)-1]
	if prev.Kind != "chunk" || prev.Abandoned != it.Abandoned || prev.Inherited != it.Inherited {
		return false
	}
	if len(prev.Text) <= maxShown {
		prev.Text = clip(prev.Text + textOf(d.Text))
	}
	prev.Chunks++
	prev.LastSeq = it.Seq
	return true
}

// textOf returns a text key's string, or its raw JSON when it is not one
// (wrong shape, docs/format.md §8: shown, never trusted).
func textOf(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return clip(s)
	}
	return clip(string(raw))
}

// pretty indents JSON for a collapsible block; a string is shown as is.
func pretty(raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return clip(s)
	}
	var buf bytes.Buffer
	if json.Indent(&buf, raw, "", "  ") != nil {
		return clip(string(raw))
	}
	return clip(buf.String())
}

func clip(s string) string {
	if len(s) <= maxShown {
		return s
	}
	return s[:maxShown] + "\n… (" + strconv.Itoa(len(s)) + " bytes; logtool cat shows all)"
}

func fmtTime(ms int64) string {
	return time.UnixMilli(ms).UTC().Format("2006-01-02 15:04:05.000")
}

func fmtCost(micros int64) string { return fmt.Sprintf("$%.4f", float64(micros)/1e6) }

func fmtSize(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

// bar is one turn in the timeline chart.
type bar struct {
	X, Y, W, H int
	Seq        int64
	Title      string
	Abandoned  bool
}

// timeline draws one bar a turn, its height the turn's tokens (the
// duration when no turn has usage), in a 600×60 box. A rollback's group
// is no turn and gets no bar.
func timeline(groups []*turn) []bar {
	var turns []*turn
	for _, t := range groups {
		if !t.Rollback {
			turns = append(turns, t)
		}
	}
	if len(turns) == 0 {
		return nil
	}
	var most int64
	byTokens := false
	for _, t := range turns {
		if t.Tokens() > 0 {
			byTokens = true
		}
	}
	val := func(t *turn) int64 {
		if byTokens {
			return t.Tokens()
		}
		return max(t.End-t.Start, 0)
	}
	for _, t := range turns {
		most = max(most, val(t))
	}
	w := max(600/len(turns), 1)
	out := make([]bar, 0, len(turns))
	for i, t := range turns {
		h := 1
		if most > 0 {
			h = max(int(val(t)*58/most), 1)
		}
		out = append(out, bar{X: i * w, Y: 60 - h, W: max(w-1, 1), H: h, Seq: t.Seq, Abandoned: t.Abandoned,
			Title: fmt.Sprintf("turn at seq %d: %s, %d tokens", t.Seq, t.Duration(), t.Tokens())})
	}
	return out
}
