package recorder

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/projection"
	"github.com/sessionlog/sessionlog/replay"
)

// Writer is what Resume needs of a write handle (handle.Handle is one).
type Writer interface {
	Source
	AppendAt(ctx context.Context, expected int64, events ...eventlog.Event) (int64, error)
	Flush(ctx context.Context) error
}

// Messages of the synthetic results, by the call's declared effect.
const (
	msgReadLost = "not run or lost: the process stopped before this call's result was recorded; it only reads, so it is safe to retry"
	msgUnknown  = "outcome unknown: the process stopped before this call's result was recorded; it may have run and changed something, so check before retrying"
)

// Closers returns the events that close an open turn (docs/format.md §8): a
// synthetic tool/result for every call without a result (in call order),
// a step/end if a step is open, and turn/end {"kind":"interrupted"}. None
// when no turn is open. Their seqs are 0: Append assigns them; a reader
// applies them in memory with CloseInMemory.
func Closers(st projection.AgentState, now time.Time) []eventlog.Event {
	if !st.TurnOpen {
		return nil
	}
	ms := now.UnixMilli()
	var out []eventlog.Event
	ids := slices.SortedFunc(maps.Keys(st.PendingCalls), func(a, b string) int {
		return cmp.Compare(st.PendingCalls[a].Seq, st.PendingCalls[b].Seq)
	})
	for _, id := range ids {
		msg := msgUnknown
		if st.PendingCalls[id].Effect == "read" {
			msg = msgReadLost
		}
		data, _ := json.Marshal(struct {
			ID        string `json:"id"`
			Error     string `json:"error"`
			Synthetic bool   `json:"synthetic"`
		}{id, msg, true})
		out = append(out, eventlog.Event{Type: "tool/result", Time: ms, Data: data})
	}
	if st.StepOpen {
		out = append(out, eventlog.Event{Type: "step/end", Time: ms, Data: json.RawMessage(`{}`)})
	}
	out = append(out, eventlog.Event{Type: "turn/end", Time: ms,
		Data: json.RawMessage(`{"kind":"interrupted","reason":"the process stopped mid-turn; closed on resume"}`)})
	return out
}

// CloseInMemory is what a read-only reader does with an open turn
// (docs/format.md §8: it adds the same closers in memory only): it applies to ps the
// closers of st (the agent/v1 state after the log's last event, seq
// next-1), with the seqs and data Resume would append them with, and
// returns them. ps must hold the state after that same event. Nothing is
// written. Only for a session no writer holds: a live writer's open turn
// is a turn in progress, not an interrupted one.
func CloseInMemory(st projection.AgentState, next int64, ps []projection.Projection, now time.Time) []eventlog.Event {
	evs := Closers(st, now)
	for i := range evs {
		evs[i].Seq = next + int64(i)
		for _, p := range ps {
			p.Apply(evs[i])
		}
	}
	return evs
}

// ResumeOption configures Resume.
type ResumeOption func(*resumeConfig)

type resumeConfig struct {
	cache replay.Cache
	now   func() time.Time
}

// WithResumeCache lets Resume start its replay from a stored state.
func WithResumeCache(c replay.Cache) ResumeOption { return func(rc *resumeConfig) { rc.cache = c } }

// WithResumeClock sets the clock for the closers' times.
func WithResumeClock(now func() time.Time) ResumeOption {
	return func(rc *resumeConfig) { rc.now = now }
}

// CloseResult says what CloseTurn did.
type CloseResult struct {
	// Appended lists the seqs of the closers appended (none when no turn
	// was open).
	Appended []int64 `json:"appended"`
	// Verdict says whether the session may continue now.
	Verdict Verdict `json:"verdict"`
}

// CloseTurn closes an open turn as interrupted, durably, through the
// write handle: it appends the Closers, the closers a reader adds when the
// writer is gone, and flushes before returning. It is what a program that
// will not carry the turn on does (logtool resume); a loop that goes on
// calls Resume instead. A second CloseTurn appends nothing.
func CloseTurn(ctx context.Context, w Writer, opts ...ResumeOption) (CloseResult, error) {
	rc := resumeConfig{now: time.Now}
	for _, o := range opts {
		o(&rc)
	}
	agent := projection.NewAgent()
	ropts := []replay.Option{}
	if rc.cache != nil {
		ropts = append(ropts, replay.WithCache(rc.cache))
	}
	if _, err := replay.Replay(ctx, w, []projection.Projection{agent}, ropts...); err != nil {
		return CloseResult{}, fmt.Errorf("recorder: close turn: %w", err)
	}
	closers := Closers(agent.State(), rc.now())
	res := CloseResult{Appended: []int64{}}
	if len(closers) > 0 {
		last, err := w.AppendAt(ctx, w.Seq()+1, closers...)
		if err != nil {
			return res, fmt.Errorf("recorder: close turn: %w", err)
		}
		if err := w.Flush(ctx); err != nil {
			return res, fmt.Errorf("recorder: close turn: %w", err)
		}
		for i := range closers {
			res.Appended = append(res.Appended, last-int64(len(closers)-1-i))
		}
	}
	facts, err := ReadFacts(ctx, w, rc.cache)
	if err != nil {
		return res, err
	}
	res.Verdict = facts.Verdict
	return res, nil
}
