package chatview

import (
	"cmp"
	"encoding/json"
	"slices"
	"strings"

	"github.com/sessionlog/sessionlog/eventlog"
)

// Options say what a Builder knows beyond the events.
type Options struct {
	// FirstTurn is the number of the first turn/start the Builder will
	// see (turns are counted from 1 in log order, abandoned ones
	// included); 0 when unknown, and turns are then shown unnumbered.
	FirstTurn int
	// Branches says which events a rollback abandoned.
	Branches Branches
	// Fork is the session's parent when the session is a fork: a
	// KindForkPoint block is emitted where its own events start.
	Fork *eventlog.Parent
	// Related are the sessions that branch off at an event of this one.
	Related []Related
}

// Builder folds events, in seq order, into Blocks. Feed it with Add and
// end with Finish. It is not safe for concurrent use.
type Builder struct {
	opts    Options
	emit    func(Block)
	turn    int
	related map[int64][]Related

	prevSeq     int64
	seen        bool
	branchOf    int64 // the rollback whose abandoned branch the last event was on, -1 for none
	inStep      bool
	stepMessage bool // the step has an assistant/message
	chunks      strings.Builder
	chunkAt     eventlog.Event // the first chunk not yet shown
	chunkLast   int64          // the last one's seq
	chunkN      int64          // how many
	hasChunks   bool
	chunkRedact Redactions        // what was redacted in the chunks held
	names       map[string]string // call id → tool name
	lastCall    string            // the call id of the last block, if it was a call (or its approval)
	synthetic   bool              // the turn holds synthetic results
	reasoning   *Block            // a run of reasoning events not yet shown
	others      *Block            // a run of other events of one type not yet shown
}

// NewBuilder returns a Builder that hands each Block to emit.
func NewBuilder(opts Options, emit func(Block)) *Builder {
	b := &Builder{opts: opts, emit: emit, turn: opts.FirstTurn, branchOf: -1,
		related: map[int64][]Related{}, names: map[string]string{}}
	for _, r := range opts.Related {
		b.related[r.Seq] = append(b.related[r.Seq], r)
	}
	return b
}

// block starts a Block of kind for e, marked when e is abandoned.
func (b *Builder) block(kind Kind, e eventlog.Event) Block {
	if kind != KindApproval {
		b.lastCall = ""
	}
	return b.mark(kind, e)
}

// mark is block without its effect on the Builder. A block that shows
// e's data says what was redacted in it; a marker beside e does not.
func (b *Builder) mark(kind Kind, e eventlog.Event) Block {
	blk := Block{Kind: kind, Seq: e.Seq, Last: e.Seq, Time: e.Time}
	if kind != KindBranch && kind != KindRelated {
		blk.Redacted, _ = redactions(e.Data)
	}
	if r, ok := b.opts.Branches.AbandonedBy(e.Seq); ok {
		blk.Abandoned, blk.AbandonedBy = true, r
	}
	return blk
}

// Add folds the next event.
func (b *Builder) Add(e eventlog.Event) {
	if e.Type != "assistant/reasoning" {
		b.flushReasoning()
	}
	if o := b.others; o != nil && o.Type != e.Type {
		b.flushOthers()
	}
	if f := b.opts.Fork; f != nil && f.Mode == eventlog.ModeFork && b.seen && b.prevSeq <= f.Seq && e.Seq > f.Seq {
		b.flushReasoning()
		b.flushOthers()
		b.flushChunks(false)
		b.emit(Block{Kind: KindForkPoint, Seq: e.Seq, Time: e.Time, Session: f.ID, To: f.Seq})
	}
	b.enterBranch(e)
	b.seen, b.prevSeq = true, e.Seq
	b.fold(e)
	for _, r := range b.related[e.Seq] {
		b.flushReasoning()
		b.flushOthers()
		b.flushChunks(false)
		blk := b.block(KindRelated, e)
		blk.Session, blk.Mode, blk.CallID, blk.Label = r.ID, r.Mode, r.Call, r.Label
		b.emit(blk)
	}
}

// enterBranch emits a KindBranch block when e starts an abandoned branch.
func (b *Builder) enterBranch(e eventlog.Event) {
	r, ok := b.opts.Branches.AbandonedBy(e.Seq)
	switch {
	case !ok:
		b.branchOf = -1
	case r.Seq != b.branchOf:
		b.flushReasoning()
		b.flushOthers()
		b.flushChunks(false)
		b.branchOf = r.Seq
		blk := b.block(KindBranch, e)
		blk.Rollback, blk.To = r.Seq, r.To
		b.emit(blk)
	}
}

func (b *Builder) fold(e eventlog.Event) {
	switch e.Type {
	case "turn/start":
		b.flushChunks(true)
		b.inStep, b.synthetic = false, false
		var d struct {
			Input json.RawMessage `json:"input"`
		}
		shaped := decode(e.Data, &d, "input")
		blk := b.block(KindTurn, e) // its type alone says what happened
		blk.Turn = b.turn
		if b.turn > 0 {
			b.turn++
		}
		blk.Text = text(d.Input)
		if !shaped {
			blk.Redacted = nil // the raw event below says it
		}
		b.emit(blk)
		if !shaped {
			b.other(e)
		}
	case "assistant/reasoning":
		var d struct {
			Text *string `json:"text"`
		}
		if !decode(e.Data, &d, "text") || d.Text == nil {
			b.flushReasoning()
			b.other(e)
			return
		}
		// A run of reasoning events (streamed deltas) folds into one.
		if r := b.reasoning; r != nil {
			if a, ok := b.opts.Branches.AbandonedBy(e.Seq); ok == r.Abandoned && a == r.AbandonedBy {
				r.Text += *d.Text
				r.Last = e.Seq
				rs, _ := redactions(e.Data)
				r.Redacted = r.Redacted.merge(rs)
				return
			}
			b.flushReasoning()
		}
		blk := b.block(KindReasoning, e)
		blk.Text = *d.Text
		b.reasoning = &blk
	case "user/message", "assistant/message":
		var d struct {
			Text *string `json:"text"`
		}
		if !decode(e.Data, &d, "text") || d.Text == nil {
			b.other(e)
			return
		}
		kind := KindUser
		if e.Type == "assistant/message" {
			kind = KindAssistant
			b.stepMessage = true
			b.dropChunks()
		}
		blk := b.block(kind, e)
		blk.Text = *d.Text
		b.emit(blk)
	case "assistant/chunk":
		var d struct {
			Text *string `json:"text"`
		}
		if !decode(e.Data, &d, "text") || d.Text == nil {
			b.other(e)
			return
		}
		if b.stepMessage {
			return // the step's message says it all
		}
		if !b.hasChunks {
			b.chunkAt, b.hasChunks, b.chunkN = e, true, 0
		}
		b.chunks.WriteString(*d.Text)
		rs, _ := redactions(e.Data)
		b.chunkRedact = b.chunkRedact.merge(rs)
		b.chunkN++
		b.chunkLast = e.Seq
	case "step/start":
		b.flushChunks(true)
		b.inStep, b.stepMessage = true, false
	case "step/end":
		b.flushChunks(false)
		b.inStep, b.stepMessage = false, false
	case "tool/call":
		var d struct {
			ID     *string         `json:"id"`
			Name   *string         `json:"name"`
			Args   json.RawMessage `json:"args"`
			Effect string          `json:"effect"`
		}
		if !decode(e.Data, &d, "id", "name", "args", "effect") || d.ID == nil || d.Name == nil {
			b.other(e)
			return
		}
		b.flushChunks(false)
		b.names[*d.ID] = *d.Name
		blk := b.block(KindToolCall, e)
		blk.CallID, blk.Name, blk.Args, blk.Effect = *d.ID, *d.Name, d.Args, d.Effect
		b.emit(blk)
		b.lastCall = *d.ID
	case "tool/approval":
		var d struct {
			ID       *string `json:"id"`
			Decision *string `json:"decision"`
			By       string  `json:"by"`
		}
		if !decode(e.Data, &d, "id", "decision", "by") || d.ID == nil || d.Decision == nil {
			b.other(e)
			return
		}
		blk := b.block(KindApproval, e)
		blk.CallID, blk.Name, blk.Decision, blk.By = *d.ID, b.names[*d.ID], *d.Decision, d.By
		b.emit(blk)
	case "tool/result":
		var d struct {
			ID        *string         `json:"id"`
			Output    json.RawMessage `json:"output"`
			Error     json.RawMessage `json:"error"`
			Synthetic bool            `json:"synthetic"`
		}
		if !decode(e.Data, &d, "id", "output", "error", "synthetic") || d.ID == nil {
			b.other(e)
			return
		}
		b.flushChunks(false)
		adjacent := b.lastCall == *d.ID
		blk := b.block(KindToolResult, e)
		blk.Adjacent = adjacent
		blk.CallID, blk.Name, blk.Text, blk.Error, blk.Synthetic = *d.ID, b.names[*d.ID], text(d.Output), text(d.Error), d.Synthetic
		b.synthetic = b.synthetic || d.Synthetic
		b.emit(blk)
	case "usage":
		var u Usage
		if !decode(e.Data, &u, "inputTokens", "outputTokens", "cachedTokens", "costMicros", "model") {
			b.other(e)
			return
		}
		blk := b.block(KindUsage, e)
		blk.Usage = u
		b.emit(blk)
	case "turn/end":
		var d struct {
			Kind   *string `json:"kind"`
			Reason string  `json:"reason"`
		}
		shaped := decode(e.Data, &d, "kind", "reason") && d.Kind != nil
		b.flushChunks(true)
		b.inStep = false
		blk := b.block(KindStop, e)
		blk.Stop, blk.Text, blk.Resumed = "unknown", d.Reason, b.synthetic
		if d.Kind != nil {
			blk.Stop = *d.Kind
		}
		if !shaped {
			blk.Redacted = nil // the raw event below says it
		}
		b.emit(blk)
		if !shaped {
			b.other(e)
		}
	case eventlog.TypeCheckpoint:
		c, err := eventlog.ParseCheckpoint(e.Data)
		if err != nil {
			b.other(e)
			return
		}
		blk := b.block(KindCheckpoint, e)
		blk.Label = c.Label
		b.emit(blk)
	case eventlog.TypeRollback:
		r, err := eventlog.ParseRollback(e.Data)
		if err != nil || r.To >= e.Seq {
			b.other(e)
			return
		}
		b.flushChunks(false)
		blk := b.block(KindRollback, e)
		blk.To, blk.Label, blk.Text, blk.Count = r.To, r.Label, r.Reason, e.Seq-r.To-1
		b.emit(blk)
	case "context/compacted":
		var d struct {
			Summary *string `json:"summary"`
		}
		if !decode(e.Data, &d, "summary") || d.Summary == nil {
			b.other(e)
			return
		}
		blk := b.block(KindCompacted, e)
		blk.Text = *d.Summary
		b.emit(blk)
	default:
		b.other(e)
	}
}

// other shows e as it is stored; a run of events of one type is one
// block, counting them.
func (b *Builder) other(e eventlog.Event) {
	if o := b.others; o != nil {
		if a, ok := b.opts.Branches.AbandonedBy(e.Seq); o.Type == e.Type && ok == o.Abandoned && a == o.AbandonedBy {
			o.Count++
			o.Last = e.Seq
			rs, _ := redactions(e.Data)
			o.Redacted = o.Redacted.merge(rs)
			return
		}
		b.flushOthers()
	}
	blk := b.block(KindOther, e)
	blk.Type, blk.Count = e.Type, 1
	_, blk.Data = redactions(e.Data)
	b.others = &blk
}

// flushOthers shows the run of other events held, if any.
func (b *Builder) flushOthers() {
	if o := b.others; o != nil {
		b.others = nil
		b.emit(*o)
	}
}

// Finish shows what is still held (a step's chunks). atEnd says the last
// event added is the log's last: a step still open there never ended, and
// its streamed text is marked partial.
func (b *Builder) Finish(atEnd bool) {
	b.flushReasoning()
	b.flushOthers()
	b.flushChunks(atEnd && b.inStep)
}

// flushReasoning shows the run of reasoning held, if any.
func (b *Builder) flushReasoning() {
	if r := b.reasoning; r != nil {
		b.reasoning = nil
		b.emit(*r)
	}
}

// flushChunks shows the step's joined chunks, if any, as its message.
func (b *Builder) flushChunks(partial bool) {
	if !b.hasChunks {
		return
	}
	b.lastCall = ""
	blk := b.streamed(partial)
	b.dropChunks()
	b.emit(blk)
}

// streamed is the step's joined chunks as a Block.
func (b *Builder) streamed(partial bool) Block {
	blk := b.mark(KindAssistant, b.chunkAt)
	blk.Text, blk.Streamed, blk.Partial = b.chunks.String(), true, partial
	blk.Count, blk.Last = b.chunkN, b.chunkLast
	blk.Redacted = slices.Clone(b.chunkRedact)
	return blk
}

// Held returns the Blocks the Builder holds back because the events to
// come may still add to them — a run of reasoning or of other events, a
// step's streamed text — as Finish(true) would show them, in seq order,
// without showing them: the Builder goes on as if Held was not called. A
// live view shows them as they grow, and replaces them when they are
// shown (handed to emit) or grow again.
func (b *Builder) Held() []Block {
	var out []Block
	if b.hasChunks {
		out = append(out, b.streamed(b.inStep))
	}
	for _, r := range []*Block{b.reasoning, b.others} {
		if r != nil {
			out = append(out, *r)
		}
	}
	slices.SortStableFunc(out, func(x, y Block) int { return cmp.Compare(x.Seq, y.Seq) })
	return out
}

func (b *Builder) dropChunks() {
	b.chunks.Reset()
	b.hasChunks = false
	b.chunkRedact = nil
}

// decode reads data (absent or null: an empty object) into v with exact
// keys, reporting whether it was an object of the right shape.
func decode(data json.RawMessage, v any, keys ...string) bool {
	if len(data) == 0 || string(data) == "null" {
		return true
	}
	if data[0] != '{' {
		return false
	}
	return json.Unmarshal(eventlog.ExactKeys(data, keys...), v) == nil
}

// text shows a JSON value as text: a string as itself, an array of
// content parts ({"text"} objects) as their texts, anything else as
// compact JSON; "" for absent or null.
func text(v json.RawMessage) string {
	if len(v) == 0 || string(v) == "null" {
		return ""
	}
	var s string
	if json.Unmarshal(v, &s) == nil {
		return s
	}
	var parts []struct {
		Text *string `json:"text"`
	}
	if json.Unmarshal(v, &parts) == nil && len(parts) > 0 {
		texts := make([]string, 0, len(parts))
		for _, p := range parts {
			if p.Text == nil {
				return string(v)
			}
			texts = append(texts, *p.Text)
		}
		return strings.Join(texts, "\n")
	}
	return string(v)
}
