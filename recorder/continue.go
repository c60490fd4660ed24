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

// ResumeResult is what Resume did and the plan the loop carries the open
// turn on with (docs/format.md §8, "Resume that continues"): run the
// calls of Run (as any new call: approval first for one that writes),
// record their results, then, unless Answered, ask the model (BeginStep)
// with the conversation the log holds.
type ResumeResult struct {
	// Appended lists the seqs Resume appended: the rollback of a partial
	// response, the synthetic results, the step/end of an open step.
	Appended []int64 `json:"appended"`
	// Verdict says whether the session may continue now.
	Verdict Verdict `json:"verdict"`
	// TurnOpen: a turn is open and goes on; Turn is the seq of its
	// turn/start (-1 when none) and Input its "input" (absent when none).
	TurnOpen bool            `json:"turnOpen"`
	Turn     int64           `json:"turn"`
	Input    json.RawMessage `json:"input,omitempty"`
	// Redo is the seq of the step/start of a partial response this
	// Resume rolled back, -1 when none: that model call is asked again.
	Redo int64 `json:"redo"`
	// Run lists the calls without a result that certainly never ran, or
	// only read: the loop runs them now, in this order.
	Run []Call `json:"run"`
	// Synthetic lists the calls this Resume gave a synthetic result: a
	// write (or unknown) call approved to run (outcome unknown), or a
	// denied one (not run).
	Synthetic []Call `json:"synthetic"`
	// Answered: the turn's last step ended with a response that called no
	// tool, and no call waits: the model has answered, and the loop
	// decides whether the turn ends (StopReason is that step's).
	Answered   bool   `json:"answered"`
	StopReason string `json:"stopReason,omitempty"`
}

// msgDenied is the error of Resume's synthetic result for a denied call
// (an approved one gets msgUnknown).
const msgDenied = "not run: the call was denied, and the process stopped before its result was recorded"

// ReasonPartial is the reason of the rollback Resume appends for a
// partial response.
const ReasonPartial = "resume: partial response"

// steps is the Recorder's fold of the open turn's steps, what Resume needs
// beyond agent/v1: the open step's start, its calls and whether the loop
// went past its response (one of its calls has an approval or a result),
// and the last ended step. A projection so that replay rebuilds it,
// rollbacks included; private to the Recorder, never in a checkpoint.
type steps struct{ s stepsState }

type stepsState struct {
	// Start is the seq of the open step's step/start, -1 when none.
	Start   int64    `json:"start"`
	Calls   []string `json:"calls,omitempty"`
	Settled bool     `json:"settled,omitempty"`
	// Ended is the open turn's last ended step, nil before one.
	Ended *endedStep `json:"ended,omitempty"`
}

type endedStep struct {
	Calls      int    `json:"calls"`
	StopReason string `json:"stopReason,omitempty"`
}

var _ projection.Projection = (*steps)(nil)

func newSteps() *steps {
	p := &steps{}
	p.Reset()
	return p
}

func (p *steps) Name() string { return "recorder-steps" }
func (p *steps) Version() int { return 1 }
func (p *steps) Reset()       { p.s = stepsState{Start: -1} }

func (p *steps) Apply(e eventlog.Event) {
	switch e.Type {
	case "turn/start", "turn/end":
		p.s = stepsState{Start: -1}
	case "step/start":
		p.s = stepsState{Start: e.Seq, Ended: p.s.Ended}
	case "step/end":
		if p.s.Start < 0 {
			return // no step to end
		}
		var d struct {
			StopReason string `json:"stopReason"`
		}
		json.Unmarshal(eventlog.ExactKeys(e.Data, "stopReason"), &d) // a wrong shape has none
		p.s = stepsState{Start: -1, Ended: &endedStep{Calls: len(p.s.Calls), StopReason: d.StopReason}}
	case "tool/call":
		if id, ok := callID(e); ok && p.s.Start >= 0 {
			p.s.Calls = append(p.s.Calls, id)
		}
	case "tool/approval", "tool/result":
		if id, ok := callID(e); ok && p.s.Start >= 0 && slices.Contains(p.s.Calls, id) {
			p.s.Settled = true
		}
	}
}

// callID reads the "id" of a tool event, with exact keys as the
// projections read it.
func callID(e eventlog.Event) (string, bool) {
	var d struct {
		ID *string `json:"id"`
	}
	if json.Unmarshal(eventlog.ExactKeys(e.Data, "id"), &d) != nil || d.ID == nil {
		return "", false
	}
	return *d.ID, true
}

func (p *steps) MarshalState() ([]byte, error) {
	b, err := json.Marshal(&p.s)
	if err != nil {
		return nil, fmt.Errorf("recorder steps: marshal state: %w", err)
	}
	return b, nil
}

func (p *steps) UnmarshalState(data []byte) error {
	var s stepsState
	if err := json.Unmarshal(data, &s); err != nil {
		return fmt.Errorf("recorder steps: unmarshal state: %w", err)
	}
	p.s = s
	return nil
}

// resumer is Resume over a log: state gives the states after its last
// event, add appends what build makes of them (none when it makes none)
// and returns the events with their seqs.
type resumer struct {
	src   Source
	state func() (projection.AgentState, stepsState, error)
	add   func(build func(projection.AgentState, stepsState) ([]eventlog.Event, error)) ([]eventlog.Event, error)
	now   func() time.Time
}

// run rolls back a partial response, gives the calls that may have run a
// synthetic result, ends an open step and returns the plan (without its
// verdict). The caller flushes.
func (rs resumer) run(ctx context.Context) (ResumeResult, error) {
	res := ResumeResult{Appended: []int64{}, Turn: -1, Redo: -1, Run: []Call{}, Synthetic: []Call{}}
	st, ss, err := rs.state()
	if err != nil || !st.TurnOpen {
		return res, err
	}
	if st.StepOpen && ss.Start >= 0 && !ss.Settled {
		// A partial response: the step is asked again from its start.
		evs, err := rs.add(func(st projection.AgentState, ss stepsState) ([]eventlog.Event, error) {
			if !st.TurnOpen || !st.StepOpen || ss.Start < 0 || ss.Settled {
				return nil, nil
			}
			raw, err := json.Marshal(eventlog.RollbackData{To: ss.Start - 1, Reason: ReasonPartial})
			res.Redo = ss.Start
			return []eventlog.Event{{Type: eventlog.TypeRollback, Time: rs.now().UnixMilli(), Data: raw}}, err
		})
		if err != nil {
			return res, err
		}
		for _, e := range evs {
			res.Appended = append(res.Appended, e.Seq)
		}
	}
	var run, synthetic []projection.PendingCall
	evs, err := rs.add(func(st projection.AgentState, _ stepsState) ([]eventlog.Event, error) {
		run, synthetic = nil, nil
		if !st.TurnOpen {
			return nil, nil
		}
		ms := rs.now().UnixMilli()
		var out []eventlog.Event
		ids := slices.SortedFunc(maps.Keys(st.PendingCalls), func(a, b string) int {
			return cmp.Compare(st.PendingCalls[a].Seq, st.PendingCalls[b].Seq)
		})
		for _, id := range ids {
			c := st.PendingCalls[id]
			var msg string
			switch {
			case c.Effect == "read":
			case c.Approval == projection.ApprovalDenied:
				msg = msgDenied
			case c.Approval == projection.ApprovalApproved:
				msg = msgUnknown
			}
			if msg == "" {
				run = append(run, c)
				continue
			}
			synthetic = append(synthetic, c)
			data, err := json.Marshal(struct {
				ID        string `json:"id"`
				Error     string `json:"error"`
				Synthetic bool   `json:"synthetic"`
			}{id, msg, true})
			if err != nil {
				return nil, err
			}
			out = append(out, eventlog.Event{Type: "tool/result", Time: ms, Data: data})
		}
		if st.StepOpen {
			out = append(out, eventlog.Event{Type: "step/end", Time: ms, Data: json.RawMessage(`{}`)})
		}
		return out, nil
	})
	if err != nil {
		return res, err
	}
	for _, e := range evs {
		res.Appended = append(res.Appended, e.Seq)
	}
	st, ss, err = rs.state()
	if err != nil || !st.TurnOpen {
		return res, err
	}
	res.TurnOpen, res.Turn = true, st.CurrentTurnStart
	if res.Input, err = rs.input(ctx, st.CurrentTurnStart); err != nil {
		return res, err
	}
	for _, list := range []struct {
		calls []projection.PendingCall
		to    *[]Call
	}{{run, &res.Run}, {synthetic, &res.Synthetic}} {
		for _, c := range list.calls {
			call, err := rs.call(ctx, c.Seq)
			if err != nil {
				return res, err
			}
			*list.to = append(*list.to, call)
		}
	}
	if ss.Ended != nil && !st.StepOpen && len(st.PendingCalls) == 0 {
		res.Answered, res.StopReason = ss.Ended.Calls == 0, ss.Ended.StopReason
	}
	return res, nil
}

// event reads the event at seq.
func (rs resumer) event(ctx context.Context, seq int64) (eventlog.Event, error) {
	for e, err := range rs.src.Read(ctx, seq, seq) {
		return e, err
	}
	return eventlog.Event{}, fmt.Errorf("recorder: resume: event %d is not in the log", seq)
}

// input returns the "input" of the turn/start at seq.
func (rs resumer) input(ctx context.Context, seq int64) (json.RawMessage, error) {
	e, err := rs.event(ctx, seq)
	if err != nil {
		return nil, err
	}
	var d struct {
		Input json.RawMessage `json:"input"`
	}
	json.Unmarshal(eventlog.ExactKeys(e.Data, "input"), &d) // as the log holds it; none when absent
	return d.Input, nil
}

// call returns the tool/call at seq.
func (rs resumer) call(ctx context.Context, seq int64) (Call, error) {
	e, err := rs.event(ctx, seq)
	if err != nil {
		return Call{}, err
	}
	var c Call
	if err := json.Unmarshal(eventlog.ExactKeys(e.Data, "id", "name", "args", "effect"), &c); err != nil {
		return Call{}, fmt.Errorf("recorder: resume: the tool/call at seq %d: %w", seq, err)
	}
	return c, nil
}

// Resume carries on a turn that a crash left open (docs/format.md §8,
// "Resume that continues"), through the write handle, and returns the
// plan the loop goes on with; the turn stays open. A step whose response
// is partial (the step has no step/end, and none of its calls has an
// approval or a result) is rolled back to the event before its
// step/start, reason ReasonPartial: every projection forgets it and the
// loop asks the model again (Redo). Of the calls without a result, one
// that only reads, and a write (or unknown) one without an approval,
// which therefore never started (the policy: a loop records an approval,
// durably, right before it runs a call that writes), are to be run
// (Run); an approved one gets a synthetic result whose error says its
// outcome is unknown, a denied one that it did not run (Synthetic). A
// step still open is ended. All of it is durable when Resume returns.
//
// Call it once, when the loop starts and before it records: an open step
// is taken for one a crash cut. A second Resume appends nothing and
// returns the same plan, but for Redo. Without an open turn it appends
// nothing and TurnOpen is false.
func Resume(ctx context.Context, w Writer, opts ...ResumeOption) (ResumeResult, error) {
	rc := resumeConfig{now: time.Now}
	for _, o := range opts {
		o(&rc)
	}
	state := func() (projection.AgentState, stepsState, int64, error) {
		agent, st := projection.NewAgent(), newSteps()
		last := w.Seq()
		ropts := []replay.Option{replay.UpTo(last)}
		if rc.cache != nil {
			ropts = append(ropts, replay.WithCache(rc.cache))
		}
		if _, err := replay.Replay(ctx, w, []projection.Projection{agent, st}, ropts...); err != nil {
			return projection.AgentState{}, stepsState{}, 0, fmt.Errorf("recorder: resume: %w", err)
		}
		return agent.State(), st.s, last, nil
	}
	rs := resumer{src: w, now: rc.now,
		state: func() (projection.AgentState, stepsState, error) {
			st, ss, _, err := state()
			return st, ss, err
		},
		add: func(build func(projection.AgentState, stepsState) ([]eventlog.Event, error)) ([]eventlog.Event, error) {
			st, ss, last, err := state()
			if err != nil {
				return nil, err
			}
			evs, err := build(st, ss)
			if err != nil || len(evs) == 0 {
				return nil, err
			}
			end, err := w.AppendAt(ctx, last+1, evs...)
			if err != nil {
				return nil, fmt.Errorf("recorder: resume: %w", err)
			}
			for i := range evs {
				evs[i].Seq = end - int64(len(evs)-1-i)
			}
			return evs, nil
		},
	}
	return finishResume(ctx, w, rc.cache, rs)
}

// finishResume runs rs, flushes what it appended and adds the verdict.
func finishResume(ctx context.Context, w Writer, cache replay.Cache, rs resumer) (ResumeResult, error) {
	res, err := rs.run(ctx)
	if err != nil {
		return res, err
	}
	if len(res.Appended) > 0 {
		if err := w.Flush(ctx); err != nil {
			return res, fmt.Errorf("recorder: resume: %w", err)
		}
	}
	facts, err := ReadFacts(ctx, w, cache)
	if err != nil {
		return res, err
	}
	res.Verdict = facts.Verdict
	return res, nil
}

// Resume carries on a turn that a crash left open, durably, as the
// package's Resume does, and returns the plan the loop goes on with; the
// Recorder's state then includes what it appended. Call it once, when the
// loop starts. Durable when it returns.
func (r *Recorder) Resume(ctx context.Context) (ResumeResult, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	rs := resumer{src: r.h, now: r.cfg.now,
		state: func() (projection.AgentState, stepsState, error) {
			err := r.catchUp(ctx)
			return r.agent.State(), r.steps.s, err
		},
		add: func(build func(projection.AgentState, stepsState) ([]eventlog.Event, error)) ([]eventlog.Event, error) {
			_, evs, err := r.appendLocked(ctx, func() ([]eventlog.Event, error) { return build(r.agent.State(), r.steps.s) })
			if err != nil {
				return nil, fmt.Errorf("recorder: resume: %w", err)
			}
			return evs, nil
		},
	}
	return finishResume(ctx, r.h, r.cfg.cache, rs)
}

// CloseTurn closes an open turn as interrupted, durably, as the package's
// CloseTurn does: the loop gives the turn up. The Recorder's state then
// includes the closers. A second CloseTurn appends nothing. Durable when
// it returns.
func (r *Recorder) CloseTurn(ctx context.Context) (CloseResult, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	res := CloseResult{Appended: []int64{}}
	_, evs, err := r.appendLocked(ctx, func() ([]eventlog.Event, error) {
		return Closers(r.agent.State(), r.cfg.now()), nil
	})
	if err != nil {
		return res, fmt.Errorf("recorder: close turn: %w", err)
	}
	if len(evs) > 0 {
		if err := r.h.Flush(ctx); err != nil {
			return res, fmt.Errorf("recorder: close turn: %w", err)
		}
	}
	for _, e := range evs {
		res.Appended = append(res.Appended, e.Seq)
	}
	facts, err := ReadFacts(ctx, r.h, r.cfg.cache)
	if err != nil {
		return res, err
	}
	res.Verdict = facts.Verdict
	return res, nil
}
