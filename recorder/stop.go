package recorder

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/projection"
	"github.com/sessionlog/sessionlog/replay"
)

// Stop kinds of turn/end (docs/format.md §8).
const (
	Completed   = "completed"
	Interrupted = "interrupted"
	Cancelled   = "cancelled"
	Failed      = "failed"
	Paused      = "paused"
	Budget      = "budget"
)

// StopKinds lists every stop kind of the vocabulary; each has a verdict.
func StopKinds() []string {
	return []string{Completed, Interrupted, Cancelled, Failed, Paused, Budget}
}

// verdicts is the deny-by-default table: a kind not in it never resumes.
var verdicts = map[string]Verdict{
	Completed:   {true, "the last turn completed: a new turn may start"},
	Interrupted: {true, "the last turn was interrupted: the session may continue with a new turn"},
	Paused:      {true, "the last turn was paused: the session may continue"},
	Cancelled:   {true, "the last turn was cancelled: the session may continue with a new turn"},
	Failed:      {false, "the last turn failed: continuing needs a decision (roll back, or fix the cause)"},
	Budget:      {false, "the last turn ran out of budget: continuing needs a larger budget"},
}

// Verdict says whether a stopped session may continue, and why.
type Verdict struct {
	Resumable bool   `json:"resumable"`
	Reason    string `json:"reason"`
}

// VerdictFor returns the verdict for a stop kind: deny by default, so an
// unknown kind never resumes.
func VerdictFor(kind string) Verdict {
	if v, ok := verdicts[kind]; ok {
		return v
	}
	return Verdict{false, fmt.Sprintf("the last turn stopped with kind %q, which this version does not know: not resumed", kind)}
}

// Stop is how the last turn ended.
type Stop struct {
	Seq    int64  `json:"seq"`
	Kind   string `json:"kind"`
	Reason string `json:"reason,omitempty"`
}

// Checkpoint locates the last checkpoint.
type Checkpoint struct {
	Seq   int64  `json:"seq"`
	Label string `json:"label,omitempty"`
}

// Facts are a session's stop facts.
type Facts struct {
	// OpenTurn is true when, in the state reached by replay (rollbacks
	// applied), the last turn/start has no turn/end after it.
	OpenTurn bool `json:"openTurn"`
	// Stop is the last turn/end, nil before any.
	Stop *Stop `json:"stop"`
	// LastCheckpoint is the last checkpoint event in the log (the last
	// one wins), nil when there is none.
	LastCheckpoint *Checkpoint `json:"lastCheckpoint"`
	// Verdict says whether the session may continue.
	Verdict Verdict `json:"verdict"`
}

// Source is a session's logical log (handle.Handle is one).
type Source interface {
	ID() string
	Read(ctx context.Context, from, to int64) iter.Seq2[eventlog.Event, error]
	Seq() int64
}

// factsWindow is how many events Facts reads at a time from the end.
const factsWindow = 256

// Facts reads a session's stop facts backward from its tail, without
// replaying the log: the last turn/end, the last turn/start, the last
// checkpoint. Only when a rollback stands between the tail and the last
// turn marker, or between an open turn's turn/start and the turn/end
// before it, does it replay (the agent projection, from the nearest
// stored state when cache is not nil), since the rollback decides which
// turn, or which stop, is the live one.
func ReadFacts(ctx context.Context, src Source, cache replay.Cache) (Facts, error) {
	var f Facts
	var start, end *eventlog.Event
	rolledBack := false
	// Below an open turn's start, the scan also looks for the stop before
	// it (a turn/end, or a rollback that decides the live stop), so that
	// the windows it read are not read again.
	var prior *eventlog.Event
	priorRB, priorFound := false, false
	next := src.Seq() // the highest seq not scanned yet
	for hi := src.Seq(); hi >= 0 && (f.LastCheckpoint == nil || (start == nil && !rolledBack)); hi -= factsWindow {
		win, err := window(ctx, src, hi)
		if err != nil {
			return f, err
		}
		next = max(0, hi-factsWindow+1) - 1
		for i := len(win) - 1; i >= 0; i-- {
			e := win[i]
			if start != nil && !priorFound && e.Seq < start.Seq {
				switch e.Type {
				case eventlog.TypeRollback:
					priorRB, priorFound = true, true
				case "turn/end":
					prior, priorFound = &e, true
				}
			}
			switch e.Type {
			case eventlog.TypeCheckpoint:
				if f.LastCheckpoint == nil {
					cp, _ := eventlog.ParseCheckpoint(e.Data)
					f.LastCheckpoint = &Checkpoint{Seq: e.Seq, Label: cp.Label}
				}
			case eventlog.TypeRollback:
				if start == nil {
					rolledBack = true
				}
			case "turn/start":
				if start == nil && !rolledBack {
					start = &e
				}
			case "turn/end":
				if end == nil && start == nil && !rolledBack {
					end = &e
				}
			}
		}
	}
	if start != nil && end == nil && !rolledBack {
		// The open turn's predecessor: the last turn/end before it, unless
		// a rollback stands between them, which decides the live stop.
		if priorFound {
			end, rolledBack = prior, priorRB
		} else {
			var err error
			if end, rolledBack, err = lastStopBefore(ctx, src, min(start.Seq, next+1)); err != nil {
				return f, err
			}
		}
	}
	if rolledBack {
		agent := projection.NewAgent()
		opts := []replay.Option{}
		if cache != nil {
			opts = append(opts, replay.WithCache(cache))
		}
		if _, err := replay.Replay(ctx, src, []projection.Projection{agent}, opts...); err != nil {
			return f, err
		}
		st := agent.State()
		f.OpenTurn = st.TurnOpen
		if st.LastStop != nil {
			f.Stop = &Stop{Seq: st.LastStop.Seq, Kind: st.LastStop.Kind, Reason: st.LastStop.Reason}
		}
	} else {
		f.OpenTurn = start != nil && (end == nil || end.Seq < start.Seq)
		if end != nil {
			var d struct {
				Kind   string `json:"kind"`
				Reason string `json:"reason"`
			}
			json.Unmarshal(eventlog.ExactKeys(end.Data, "kind", "reason"), &d) // keys are exact, as the projection reads them
			f.Stop = &Stop{Seq: end.Seq, Kind: d.Kind, Reason: d.Reason}
		}
	}
	f.Verdict = verdictOf(f)
	return f, nil
}

// lastStopBefore finds the last turn/end before seq, reading backward;
// rolledBack is true when a rollback comes first.
func lastStopBefore(ctx context.Context, src Source, seq int64) (end *eventlog.Event, rolledBack bool, err error) {
	for hi := seq - 1; hi >= 0; hi -= factsWindow {
		win, err := window(ctx, src, hi)
		if err != nil {
			return nil, false, err
		}
		for i := len(win) - 1; i >= 0; i-- {
			switch win[i].Type {
			case eventlog.TypeRollback:
				return nil, true, nil
			case "turn/end":
				return &win[i], false, nil
			}
		}
	}
	return nil, false, nil
}

// window reads the factsWindow events that end at seq hi.
func window(ctx context.Context, src Source, hi int64) ([]eventlog.Event, error) {
	var win []eventlog.Event
	for e, err := range src.Read(ctx, max(0, hi-factsWindow+1), hi) {
		if err != nil {
			return nil, err
		}
		win = append(win, e)
	}
	return win, nil
}

func verdictOf(f Facts) Verdict {
	switch {
	case f.OpenTurn:
		return Verdict{true, "a turn is open (the process stopped mid-turn): resume closes it as interrupted, then the session may continue"}
	case f.Stop == nil:
		return Verdict{true, "no turn has ended yet: a turn may start"}
	}
	return VerdictFor(f.Stop.Kind)
}
