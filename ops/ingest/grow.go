package ingest

import (
	"bytes"
	"context"
	"encoding/json"
	"iter"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/importer"
	"github.com/sessionlog/sessionlog/secrets/redact"
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
// seqs moved to follow the session's (tail). A source rewritten whole as
// it grows (importer.Session.Rewrites: a SWE-agent trajectory, whose
// history grows before its steps) grew too when the view's records after
// the part in common, but the one each save replaces, are among the new
// import's after it, in their order: the rollback then undoes them, and
// the tail holds them again where the new save has them; it is an earlier
// save when the new import's records are among the view's.

// growth is how a session imported before relates to a new import of its
// source.
type growth struct {
	same bool // the session holds the new import's records already
	// older: same, and the session holds more records (an earlier copy of
	// a source that grew since)
	older bool
	grew  bool // the source grew: append tail
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
// source (see above), redacted by red (nil: not redacted); rewrites is
// the source's importer.Session.Rewrites. It reads old twice (its import
// rollbacks, then its view beside events; a source rewritten whole reads
// both once or twice more, past the part in common) and holds neither.
// The view's events are redacted by red too before they are compared:
// redacting is idempotent, so a session imported with red compares as it
// is stored, and one imported without redaction (or with fewer
// detectors) is still the same source. A source whose records are all in
// the part in common (or, rewritten whole, among the view's) is the same:
// an earlier copy of a source that grew since; the session holds it, and
// more.
func compare(ctx context.Context, format, rewrites string, old handle.Handle, events iter.Seq2[eventlog.Event, error], red *redact.Redactor) (growth, error) {
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
			if !g.view.alive(e.Seq) {
				continue
			}
			if red != nil {
				e.Data, _ = red.Data(e.Data)
			}
			if !yield(e, nil) {
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
		if !okA || !okB || !sameEvent(a, b) {
			break
		}
		g.common++
		g.lastTime = b.Time
	}
	viewRest := okA
	var records, viewMore bool
	if rewrites == "" {
		// The view's events after those in common must carry no record
		// (they are closers), else the session holds more than the source
		// (an earlier copy of it) or another source.
		for okA && !viewMore {
			_, viewMore = importer.RecordOf(format, a)
			a, errA, okA = nextOld()
			if errA != nil {
				return growth{}, errA
			}
		}
		for okB {
			if _, ok := importer.RecordOf(format, b); ok {
				records = true
			}
			b, errB, okB = nextNew()
			if errB != nil {
				return growth{}, errB
			}
		}
	} else {
		// A source rewritten whole: the parts after those in common are
		// read again, side by side. The source grew when the view's
		// records there (less the one each save replaces) are among the new
		// import's, in order; it is an earlier save when the new import's
		// are among the view's.
		stopOld()
		stopNew()
		var grew bool
		var err error
		if grew, records, err = inOrder(format, rewrites, skip(view, g.common), skip(events, g.common)); err != nil {
			return growth{}, err
		}
		if !grew {
			earlier, _, err := inOrder(format, rewrites, skip(events, g.common), skip(view, g.common))
			if err != nil || !earlier {
				return growth{}, err // another source
			}
			records, viewMore = false, true
		}
	}
	view0 := g.view
	within := func(seq int64) int64 { return view0.at(seq) } // a seq of the part in common
	if !records {
		// Every record of the source is in the part in common: the session
		// holds it (and, with viewMore, what the source gained since this
		// copy of it was taken).
		g.same, g.older, g.moved = true, viewMore, within
		return g, nil
	}
	if viewMore {
		return growth{}, nil // records on both sides: another source
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

// skip is events without its first n.
func skip(events iter.Seq2[eventlog.Event, error], n int64) iter.Seq2[eventlog.Event, error] {
	return func(yield func(eventlog.Event, error) bool) {
		var i int64
		for e, err := range events {
			if err != nil {
				yield(eventlog.Event{}, err)
				return
			}
			if i++; i > n && !yield(e, nil) {
				return
			}
		}
	}
}

// inOrder reports whether the records small's events carry (but those of
// event type rewrites) are among the records big's carry, in their order,
// each looked for from where the one before it was found; and whether big
// carries any record. It holds one event of each.
func inOrder(format, rewrites string, small, big iter.Seq2[eventlog.Event, error]) (ok, bigRecords bool, err error) {
	next, stop := iter.Pull2(big)
	defer stop()
	nextRecord := func() (json.RawMessage, bool, error) {
		for {
			e, err, more := next()
			if err != nil || !more {
				return nil, false, err
			}
			if r, ok := importer.RecordOf(format, e); ok {
				bigRecords = true
				return r, true, nil
			}
		}
	}
	for e, err := range small {
		if err != nil {
			return false, false, err
		}
		want, ok := importer.RecordOf(format, e)
		if !ok || e.Type == rewrites {
			continue
		}
		for found := false; !found; {
			r, more, err := nextRecord()
			if err != nil || !more {
				return false, bigRecords, err
			}
			found = bytes.Equal(r, want)
		}
	}
	for {
		_, more, err := nextRecord()
		if err != nil || !more {
			return true, bigRecords, err
		}
	}
}
