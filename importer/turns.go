package importer

import "slices"

// TypeContext is the one event type the importers write beside the agent
// vocabulary: text that went into the model's context but that nobody
// typed as a prompt — instructions, environment, skill bodies, hook and
// local-command output, notifications — {"text","kind","role"?}, kind
// naming what it is in the format's own words. It is never a
// user/message, so a transcript holds only what the user typed, and it
// stays visible: projections carry it past, and a reader shows it.
const TypeContext = "context/message"

// Reasons of the closers a conversion adds where a trace ends mid-turn.
const (
	// ReasonTraceEnds is the turn/end reason of a turn the trace leaves
	// open (the agent was still working, or stopped without a word).
	ReasonTraceEnds = "the trace ends mid-turn"
	// MsgNoResult is the error of a synthetic result: a call the trace
	// holds no result for.
	MsgNoResult = "no result in the trace: it ends before this call's result was recorded"
)

// Calls are the tool calls of an open turn that have no result yet, in
// call order.
type Calls struct{ ids []string }

// Call adds a call without a result.
func (c *Calls) Call(id string) {
	if !slices.Contains(c.ids, id) {
		c.ids = append(c.ids, id)
	}
}

// Result takes the call id off: it has its result.
func (c *Calls) Result(id string) {
	if i := slices.Index(c.ids, id); i >= 0 {
		c.ids = slices.Delete(c.ids, i, i+1)
	}
}

// IDs are the calls without a result, in call order.
func (c *Calls) IDs() []string { return slices.Clone(c.ids) }

// Len is how many calls have no result.
func (c *Calls) Len() int { return len(c.ids) }

// Clear forgets every call.
func (c *Calls) Clear() { c.ids = c.ids[:0] }

// Unanswered adds, at time t (-1: the previous event's), a synthetic
// tool/result {"id","error","synthetic":true} for every call of c in call
// order, as `logtool resume` would (docs/format.md §8), and clears c.
func (b *Builder) Unanswered(c *Calls, t int64) {
	for _, id := range c.ids {
		b.Add("tool/result", t, Obj{"id", id, "error", MsgNoResult, "synthetic", true})
	}
	c.Clear()
}
