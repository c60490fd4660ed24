package recorder

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"

	"github.com/sessionlog/sessionlog/eventlog"
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

// Facts are a session's stop facts.
type Facts struct {
	// OpenTurn is true when, in the state reached by replay (rollbacks
	// applied), the last turn/start has no turn/end after it.
	OpenTurn bool `json:"openTurn"`
	// Stop is the last turn/end of that state, nil before any.
	Stop *Stop `json:"stop"`
	// Verdict says whether the session may continue.
	Verdict Verdict `json:"verdict"`
}

// Source is a session's logical log (handle.Handle and file.TailReader
// are ones).
type Source interface {
	ID() string
	Read(ctx context.Context, from, to int64) iter.Seq2[eventlog.Event, error]
	Seq() int64
}

// factsWindow is how many events ReadFacts reads at a time.
const factsWindow = 256

// ReadFacts reads a session's stop facts from the end of its log, without
// replaying it. The facts are those of the live branch: walking back from
// the last event, a rollback sends the walk on from its target (the state
// after a rollback to S is the state after S), so the events it abandoned
// are passed over. The walk ends at the last turn/end of the live branch
// (with the last turn/start, if one comes after it: an open turn), so it
// reads the last turn and, for an open turn, the turn before it; a session
// without a turn/end is read back to its start.
//
// With a cache (the store), a walk that read more than a few windows
// leaves the facts it found in a derived record (factsKey), and a later
// walk that reaches the same event — unchanged, by its canonical bytes —
// takes them from there: what the walk reads is then bounded by what was
// appended since. Any Source works (a handle, or a file.TailReader, which
// reads the tail without checking the rest of the log).
func ReadFacts(ctx context.Context, src Source, cache replay.Cache) (Facts, error) {
	rec, haveRec := loadFactsRecord(ctx, src, cache)
	var f Facts
	marker := false // the last marker (turn/start or turn/end) of the live branch is found
	var tail *eventlog.Event
	windows := 0
	pos := src.Seq() // the live branch continues at pos and below
walk:
	for pos >= 0 {
		lo := max(0, pos-factsWindow+1)
		win, err := window(ctx, src, lo, pos)
		if err != nil {
			return f, err
		}
		windows++
		if tail == nil && len(win) > 0 {
			tail = &win[len(win)-1]
		}
		for i := len(win) - 1; i >= 0; i-- {
			e := win[i]
			if haveRec && e.Seq == rec.Seq && rec.matches(e) {
				// The facts of the live branch up to this event are the
				// record's.
				if !marker {
					f.OpenTurn, marker = rec.OpenTurn, rec.Marker
				}
				if f.Stop == nil {
					f.Stop = rec.Stop
				}
				break walk
			}
			switch e.Type {
			case eventlog.TypeRollback:
				r, err := eventlog.ParseReserved(e)
				if err != nil {
					return f, err
				}
				pos = r.Rollback.To // the walk goes on from the state it returns to
				continue walk
			case "turn/start":
				if !marker {
					f.OpenTurn, marker = true, true
				}
			case "turn/end":
				marker = true
				f.Stop = stopOf(e)
				break walk
			}
		}
		pos = lo - 1
	}
	f.Verdict = verdictOf(f)
	if cache != nil && tail != nil && windows > factsRecordAfter && !(haveRec && rec.Seq == tail.Seq) {
		saveFactsRecord(ctx, src.ID(), cache, *tail, f, marker)
	}
	return f, nil
}

// stopOf reads a turn/end's kind and reason, with exact keys, as the
// agent projection reads them.
func stopOf(e eventlog.Event) *Stop {
	var d struct {
		Kind   string `json:"kind"`
		Reason string `json:"reason"`
	}
	json.Unmarshal(eventlog.ExactKeys(e.Data, "kind", "reason"), &d)
	return &Stop{Seq: e.Seq, Kind: d.Kind, Reason: d.Reason}
}

// window reads the events lo..hi.
func window(ctx context.Context, src Source, lo, hi int64) ([]eventlog.Event, error) {
	win := make([]eventlog.Event, 0, hi-lo+1)
	for e, err := range src.Read(ctx, lo, hi) {
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
		return Verdict{true, "a turn is open: its writer is at work, or stopped mid-turn; a writer that resumes carries it on, logtool resume closes it as interrupted"}
	case f.Stop == nil:
		return Verdict{true, "no turn has ended yet: a turn may start"}
	}
	return VerdictFor(f.Stop.Kind)
}
