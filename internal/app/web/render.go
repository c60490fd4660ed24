package web

import (
	"bytes"
	"encoding/json"
	"fmt"
	"github.com/sessionlog/sessionlog/secrets/redact"
	"net/url"
	"strings"
	"time"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/internal/app/chatview"
)

// maxShown is how much of one text, argument or result a page shows; the
// rest is cut with a note of the full size (the log keeps it all).
const maxShown = 64 << 10

// previewWidth is how many characters of a folded item's content its
// summary line shows.
const previewWidth = 160

// item is one chatview.Block as a page shows it: what to show is the
// Block's (the same folding as logtool show: a run of records of one
// type is one item with its count, a step's chunks one message), how to
// show it is the page's. Every string is escaped by html/template.
type item struct {
	chatview.Block
	Class     string // what it is: the CSS class k-<Class>
	Body      string // the text shown (clipped)
	Preview   string // one line of a folded item's content
	Args      string // a call's arguments, indented
	Size      string // a result's or a record's size in words
	Tokens    string // a usage in words
	Call      int64  // the seq of a result's call on the page, -1 when not on it
	Raw       string // the page of the events it stands for, as stored
	Inherited bool   // a fork's event inherited from its parent
	Held      bool   // still growing: the events to come may add to it
	Mark      bool   // a marker beside its event's own item (no anchor, no seq of its own)
}

// Clock is the item's time of day; its title has the date.
func (it *item) Clock() string { return time.UnixMilli(it.Time).UTC().Format("15:04:05") }

// Stamp is the item's time in full.
func (it *item) Stamp() string { return fmtTime(it.Time) }

// newItem makes the item of blk, in session id (for its links).
func newItem(id string, blk chatview.Block, inherit int64) *item {
	it := &item{Block: blk, Call: -1, Inherited: blk.Seq <= inherit,
		Raw: "/s/" + id + "/events?" + url.Values{"from": {itoa(blk.Seq)}, "to": {itoa(blk.Last)}}.Encode()}
	switch blk.Kind {
	case chatview.KindTurn:
		it.Class, it.Body = "turn", clip(blk.Text)
	case chatview.KindUser:
		it.Class, it.Body = "user", clip(blk.Text)
	case chatview.KindAssistant:
		it.Class, it.Body = "assistant", clip(blk.Text)
	case chatview.KindReasoning:
		it.Class, it.Body, it.Preview = "reasoning", clip(blk.Text), preview(blk.Text)
		it.Size = chatview.Plural(int64(len([]rune(blk.Text))), "character", "")
	case chatview.KindToolCall:
		it.Class, it.Args = "call", pretty(blk.Args)
		it.Preview = preview(chatview.Compact(blk.Args))
	case chatview.KindApproval:
		it.Class = "approval"
	case chatview.KindToolResult:
		it.Class = "result"
		text := blk.Text
		if blk.Error != "" && text != "" {
			text = blk.Error + "\n\n" + text
		} else if blk.Error != "" {
			text = blk.Error
		}
		it.Body, it.Preview = clip(text), preview(text)
		it.Size = lines(text)
	case chatview.KindUsage:
		it.Class, it.Tokens = "usage", blk.Usage.Words()
	case chatview.KindStop:
		it.Class, it.Body = "stop", blk.Text
	case chatview.KindCheckpoint:
		it.Class = "checkpoint"
	case chatview.KindRollback:
		it.Class, it.Body = "rollback", blk.Text
	case chatview.KindBranch:
		it.Class, it.Mark = "branch", true
	case chatview.KindForkPoint:
		it.Class, it.Mark = "forkpoint", true
	case chatview.KindRelated:
		it.Class, it.Mark = "related", true
	case chatview.KindCompacted:
		it.Class, it.Body, it.Preview = "compacted", clip(blk.Text), preview(blk.Text)
	default:
		it.Class = "other"
		data := blk.Data
		if len(data) == 0 {
			data = json.RawMessage("null")
		}
		it.Body, it.Preview, it.Size = pretty(data), preview(chatview.Compact(data)), chatview.Size(int64(len(data)))
	}
	return it
}

// lines says how long a text is: "83 lines, 3.8 KiB".
func lines(s string) string {
	if s == "" {
		return "empty"
	}
	n := int64(strings.Count(strings.TrimRight(s, "\n"), "\n") + 1)
	return chatview.Plural(n, "line", "") + ", " + chatview.Size(int64(len(s)))
}

// preview is the first line of s with text, cut to previewWidth.
func preview(s string) string {
	for l := range strings.SplitSeq(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			if r := []rune(l); len(r) > previewWidth {
				return string(r[:previewWidth-1]) + "…"
			}
			return l
		}
	}
	return ""
}

// pretty indents JSON for a folded block; a string is shown as is.
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
	return s[:maxShown] + "\n… (" + chatview.Size(int64(len(s))) + " in all; the seq's link shows the event as stored)"
}

func fmtTime(ms int64) string {
	return time.UnixMilli(ms).UTC().Format("2006-01-02 15:04:05.000")
}

func fmtCost(micros int64) string { return fmt.Sprintf("$%.4f", float64(micros)/1e6) }

func fmtSize(n int64) string { return chatview.Size(n) }

// group is what the session page shows under one heading: a turn (from its
// turn/start to the next), the events after a rollback, or the events
// before the page's first turn/start.
type group struct {
	Seq       int64 // its turn/start's or rollback's seq; the page's first seq otherwise
	Head      *item // the turn/start's item, nil for another group
	Turn      int   // the turn's number, 0 when not known
	Rollback  bool  // the group starts with a rollback
	Begun     bool  // no turn/start: the page starts in a turn begun before it
	Items     []*item
	Held      []*item // items still growing, at the end (the live page's last group)
	In, Out   int64   // tokens spent in the group, an abandoned branch's too
	Cost      int64
	live      [3]int64 // in, out, cost on the live branch
	Start     int64    // ms
	End       int64    // ms
	Stop      string
	Abandoned bool // every event of the group is abandoned
	blocks    int  // blocks it holds, its head among them
}

// Tokens is the group's input and output tokens.
func (g *group) Tokens() int64 { return g.In + g.Out }

// Duration says how long the group took, from its first event's time to
// its last's.
func (g *group) Duration() string {
	return chatview.Duration(time.Duration(g.End-g.Start) * time.Millisecond)
}

// pageBuilder folds events into groups of items through a
// chatview.Builder, so that a page shows what logtool show shows.
type pageBuilder struct {
	id      string
	inherit int64 // the last inherited seq of a fork, -1 for none
	from    int64 // the first seq read
	midLog  bool  // events come before from: the first group may be part of a turn
	groups  []*group
	calls   map[string]int64 // call id → the seq of its item
	cv      *chatview.Builder
	prot    redact.Protection // of the events added
}

func newPageBuilder(id string, opts chatview.Options, inherit, from int64) *pageBuilder {
	p := &pageBuilder{id: id, inherit: inherit, from: from, calls: map[string]int64{}}
	p.cv = chatview.NewBuilder(opts, p.emit)
	return p
}

func (p *pageBuilder) add(e eventlog.Event) { p.cv.Add(e) }

// finish shows what the Builder holds; atEnd says the last event added is
// the log's last.
func (p *pageBuilder) finish(atEnd bool) { p.cv.Finish(atEnd) }

// held puts what the Builder holds back (still growing) in the last
// group's Held, for a page that follows the log.
func (p *pageBuilder) held() {
	blocks := p.cv.Held()
	if len(blocks) == 0 {
		if len(p.groups) > 0 {
			p.last().Held = nil
		}
		return
	}
	g := p.current()
	g.Held = g.Held[:0]
	for _, blk := range blocks {
		it := p.item(blk)
		it.Held = true
		g.Held = append(g.Held, it)
	}
}

func (p *pageBuilder) last() *group { return p.groups[len(p.groups)-1] }

// current is the last group, made when there is none.
func (p *pageBuilder) current() *group {
	if len(p.groups) == 0 {
		p.groups = append(p.groups, &group{Seq: p.from, Begun: p.midLog, Abandoned: true, Start: -1})
	}
	return p.last()
}

func (p *pageBuilder) item(blk chatview.Block) *item {
	it := newItem(p.id, blk, p.inherit)
	if blk.Kind == chatview.KindToolResult {
		if seq, ok := p.calls[blk.CallID]; ok {
			it.Call = seq
		}
	}
	return it
}

func (p *pageBuilder) emit(blk chatview.Block) {
	if blk.Kind == chatview.KindTurn || blk.Kind == chatview.KindRollback {
		// A rollback closes the group it ends: the branch before it reads
		// as abandoned, and what follows is the live branch again.
		p.groups = append(p.groups, &group{Seq: blk.Seq, Turn: blk.Turn, Rollback: blk.Kind == chatview.KindRollback,
			Abandoned: true, Start: -1})
	}
	g := p.current()
	it := p.item(blk)
	g.blocks++
	if g.Start < 0 {
		g.Start = blk.Time
	}
	g.End = max(g.End, blk.Time)
	if !blk.Abandoned {
		g.Abandoned = false
	}
	switch blk.Kind {
	case chatview.KindTurn:
		g.Head = it
		if blk.Text == "" {
			return // its heading says it all
		}
	case chatview.KindToolCall:
		p.calls[blk.CallID] = blk.Seq
	case chatview.KindUsage:
		u := blk.Usage
		g.In, g.Out, g.Cost = g.In+u.InputTokens, g.Out+u.OutputTokens, g.Cost+u.CostMicros
		if !blk.Abandoned {
			g.live[0] += u.InputTokens
			g.live[1] += u.OutputTokens
			g.live[2] += u.CostMicros
		}
	case chatview.KindStop:
		g.Stop = blk.Stop
	}
	g.Items = append(g.Items, it)
}

// flatten lists the items of groups, each turn's head first (for the
// diff, which has no headings).
func flatten(gs []*group) []*item {
	var out []*item
	for _, g := range gs {
		if g.Head != nil && g.Head.Body == "" {
			out = append(out, g.Head)
		}
		out = append(out, g.Items...)
		out = append(out, g.Held...)
	}
	return out
}

// bar is one turn in the timeline chart.
type bar struct {
	X, Y, W, H int
	Seq        int64
	Title      string
	Abandoned  bool
}

// chart is the timeline: a bar a turn and the legend that says what the
// bars measure.
type chart struct {
	Bars     []bar
	ByTokens bool  // bar heights are tokens (otherwise durations)
	Most     int64 // the tallest bar's tokens or milliseconds
	Grey     bool  // some bar is an abandoned turn
	Width    int   // of the drawing
}

// MostWords says what the tallest bar stands for.
func (c chart) MostWords() string {
	if c.ByTokens {
		return chatview.Plural(c.Most, "token", "")
	}
	return chatview.Duration(time.Duration(c.Most) * time.Millisecond)
}

// Chart dimensions: bars are at most maxBarWidth wide, so that a page of
// two turns does not show two slabs.
const (
	chartWidth  = 600
	chartHeight = 60
	maxBarWidth = 24
	// minChartWidth keeps a chart of one bar wide enough to read as one.
	minChartWidth = 120
)

// timeline draws one bar a turn, its height the turn's tokens (the
// duration when no turn has usage); the events before a page's first
// turn/start are a turn begun before the page, unless the page starts
// the log. A rollback's group is no turn and gets no bar.
func timeline(groups []*group) chart {
	var turns []*group
	for _, g := range groups {
		if g.Head != nil || g.Begun {
			turns = append(turns, g)
		}
	}
	var c chart
	if len(turns) == 0 {
		return c
	}
	for _, t := range turns {
		c.ByTokens = c.ByTokens || t.Tokens() > 0
	}
	val := func(t *group) int64 {
		if c.ByTokens {
			return t.Tokens()
		}
		return max(t.End-t.Start, 0)
	}
	for _, t := range turns {
		c.Most = max(c.Most, val(t))
		c.Grey = c.Grey || t.Abandoned
	}
	w := min(max(chartWidth/len(turns), 1), maxBarWidth)
	c.Width = max(w*len(turns), minChartWidth)
	c.Bars = make([]bar, 0, len(turns))
	for i, t := range turns {
		h := 1
		if c.Most > 0 {
			h = max(int(val(t)*(chartHeight-2)/c.Most), 1)
		}
		name := "turn at seq " + itoa(t.Seq)
		switch {
		case t.Head == nil:
			name = "a turn begun before the page, from seq " + itoa(t.Seq)
		case t.Turn > 0:
			name = fmt.Sprintf("turn %d (seq %d)", t.Turn, t.Seq)
		}
		c.Bars = append(c.Bars, bar{X: i * w, Y: chartHeight - h, W: max(w-1, 1), H: h, Seq: t.Seq, Abandoned: t.Abandoned,
			Title: fmt.Sprintf("%s: %s, %s", name, t.Duration(), chatview.Plural(t.Tokens(), "token", ""))})
	}
	return c
}
