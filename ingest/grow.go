package ingest

import (
	"bytes"
	"context"
	"encoding/json"
	"iter"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/importer"
	"github.com/sessionlog/sessionlog/redact"
)

// GrowLabel labels the rollbacks a re-import appends to a grown session.
const GrowLabel = "import"

// A session imported before stands for the events of its imports: its
// log, less what each of its grown imports' rollbacks (label "import")
// undid — the closers the end of the source had been given then (the
// open step's usage and step/end, a turn ended at the last answer, the
// synthetic results of calls still running). That view is compared with
// a new import of the source, event by event (compare): when it holds the
// new import's records and nothing else differs, the session is the same;
// when its records are the first of the new import's, differing only
// after them in events that carry no record, the source grew, and the
// session gets, in one batch, a rollback to the last event in common
// (when the old import had closed anything) and the new events, their
// seqs moved to follow the session's (tail).

// growth is how a session imported before relates to a new import of its
// source.
type growth struct {
	same bool // the session holds the new import's records already
	grew bool // the source grew: append tail
	// common is how many events the view and the new import share; next
	// the session's next seq; rollback whether tail starts with one (to
	// the view's last event in common, at time lastTime).
	common, next int64
	rollback     bool
	lastTime     int64
	view         liveSeqs
	// moved maps a seq of the new import to the session's (same or grew).
	moved func(int64) int64
}

// liveSeqs are the seqs of a session's log that its view keeps: all but
// the dead ranges (sorted, disjoint, inclusive) its import rollbacks undid.
type liveSeqs struct{ dead [][2]int64 }

// at is the seq of the i-th event of the view.
func (l liveSeqs) at(i int64) int64 {
	s := i
	for _, d := range l.dead {
		if d[0] > s {
			break
		}
		s += d[1] - d[0] + 1
	}
	return s
}

func (l liveSeqs) alive(seq int64) bool {
	for _, d := range l.dead {
		if seq >= d[0] && seq <= d[1] {
			return false
		}
	}
	return true
}

// undo marks (to, seq] dead: an import rollback at seq to to.
func (l *liveSeqs) undo(to, seq int64) {
	lo, hi := to+1, seq
	var out [][2]int64
	for _, d := range l.dead {
		if d[1] < lo-1 || d[0] > hi+1 {
			out = append(out, d)
			continue
		}
		lo, hi = min(lo, d[0]), max(hi, d[1])
	}
	out = append(out, [2]int64{lo, hi})
	for i := len(out) - 1; i > 0 && out[i][0] < out[i-1][0]; i-- {
		out[i], out[i-1] = out[i-1], out[i]
	}
	l.dead = out
}

// importRollback reports whether e is a rollback a re-import appended, and
// where to.
func importRollback(e eventlog.Event) (to int64, ok bool) {
	if e.Type != eventlog.TypeRollback {
		return 0, false
	}
	var d struct {
		To    int64  `json:"to"`
		Label string `json:"label"`
	}
	if json.Unmarshal(e.Data, &d) != nil || d.Label != GrowLabel {
		return 0, false
	}
	return d.To, true
}

// sameEvent reports whether a and b are the same event but for the seq.
func sameEvent(a, b eventlog.Event) bool {
	return a.Type == b.Type && a.Time == b.Time && bytes.Equal(a.Data, b.Data)
}

// compare compares the session old with events, a new import of its
// source (see above), redacted by red (nil: not redacted). It reads old
// twice (its import rollbacks, then its view beside events) and holds
// neither. The session's events are redacted by red too before they are
// compared: redacting is idempotent, so a session imported with red
// compares as it is stored, and one imported without redaction (or with
// fewer detectors) is still the same source.
func compare(ctx context.Context, format string, old handle.Handle, events iter.Seq2[eventlog.Event, error], red *redact.Redactor) (growth, error) {
	var g growth
	last := old.Seq()
	g.next = last + 1
	for e, err := range old.Read(ctx, 0, handle.End) {
		if err != nil {
			return growth{}, err
		}
		if to, ok := importRollback(e); ok {
			g.view.undo(to, e.Seq)
		}
	}
	view := func(yield func(eventlog.Event, error) bool) {
		for e, err := range old.Read(ctx, 0, handle.End) {
			if err != nil {
				yield(eventlog.Event{}, err)
				return
			}
			if g.view.alive(e.Seq) && !yield(e, nil) {
				return
			}
		}
	}
	nextOld, stopOld := iter.Pull2(iter.Seq2[eventlog.Event, error](view))
	defer stopOld()
	nextNew, stopNew := iter.Pull2(events)
	defer stopNew()
	var a, b eventlog.Event
	var errA, errB error
	okA, okB := true, true
	for {
		a, errA, okA = nextOld()
		b, errB, okB = nextNew()
		if errA != nil {
			return growth{}, errA
		}
		if errB != nil {
			return growth{}, errB
		}
		if okA && red != nil {
			a.Data, _ = red.Data(a.Data)
		}
		if !okA || !okB || !sameEvent(a, b) {
			break
		}
		g.common++
		g.lastTime = b.Time
	}
	// The view's events after those in common must carry no record (they
	// are closers), else the session holds another source.
	viewRest := okA
	for okA {
		if _, ok := importer.RecordOf(format, a); ok {
			return growth{}, nil
		}
		a, errA, okA = nextOld()
		if errA != nil {
			return growth{}, errA
		}
	}
	records := false
	for okB {
		if _, ok := importer.RecordOf(format, b); ok {
			records = true
		}
		b, errB, okB = nextNew()
		if errB != nil {
			return growth{}, errB
		}
	}
	view0 := g.view
	within := func(seq int64) int64 { return view0.at(seq) } // a seq of the part in common
	if !records {
		g.same, g.moved = true, within
		return g, nil
	}
	if viewRest {
		if g.common == 0 {
			return growth{}, nil // nothing in common to roll back to
		}
		g.rollback = true
	}
	base := g.next - g.common
	if g.rollback {
		base++
	}
	common := g.common
	g.grew = true
	g.moved = func(seq int64) int64 {
		if seq < common {
			return within(seq)
		}
		return seq + base
	}
	return g, nil
}

// tail yields what a grown session gets: the rollback (when needed) and
// the events of the new import after those in common, moved.
func (g growth) tail(events iter.Seq2[eventlog.Event, error]) iter.Seq2[eventlog.Event, error] {
	return func(yield func(eventlog.Event, error) bool) {
		if g.rollback {
			data, _ := importer.Marshal(importer.Obj{"to", g.view.at(g.common - 1), "label", GrowLabel,
				"reason", "import: the source grew; what its end had closed is undone"})
			if !yield(eventlog.Event{Seq: g.next, Type: eventlog.TypeRollback, Time: g.lastTime, Data: data}, nil) {
				return
			}
		}
		for e, err := range events {
			if err != nil {
				yield(eventlog.Event{}, err)
				return
			}
			if e.Seq < g.common {
				continue
			}
			e.Seq = g.moved(e.Seq)
			if e.Type == eventlog.TypeRollback {
				e.Data = movedRollback(e.Data, g.moved)
			}
			if !yield(e, nil) {
				return
			}
		}
	}
}

// movedRollback is a rollback's data with its "to" moved.
func movedRollback(data json.RawMessage, moved func(int64) int64) json.RawMessage {
	var d map[string]json.RawMessage
	var to int64
	if json.Unmarshal(data, &d) != nil || json.Unmarshal(d["to"], &to) != nil {
		return data
	}
	d["to"], _ = json.Marshal(moved(to))
	out, err := json.Marshal(d)
	if err != nil {
		return data
	}
	return out
}
