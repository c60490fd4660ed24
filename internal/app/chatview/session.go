package chatview

import (
	"fmt"
	"iter"
	"maps"
	"slices"
	"strings"

	"github.com/sessionlog/sessionlog/eventlog"
)

// Session is what the view of a session is built from besides its events:
// its header, the sessions that branch off it, its last seq and the
// rollbacks that decide what is abandoned. SessionOptions builds the
// Builder's Options from it, the one way logtool show and serve do.
type Session struct {
	// Header is the session's header: a fork's parent marks where its
	// own events start.
	Header eventlog.Header
	// Children are the headers of the sessions forked or spawned from it
	// (Store.Children); any without a parent is left out.
	Children []eventlog.Header
	// Last is the last seq the rollbacks were collected up to: the log's
	// last event (-1 when empty), or the last one read so far.
	Last int64
	// Rollbacks are the rollbacks at or after the first event shown
	// (RollbackOf, Rollbacks): those before it decide nothing shown.
	Rollbacks []Rollback
	// FirstTurn is Options.FirstTurn: the number of the first turn shown,
	// 0 when unknown.
	FirstTurn int
}

// SessionOptions returns the Options of the view of s: its branches, the
// forks and children named where they branch off (with their labels, in
// key order), and, for a fork (not a child), its parent.
func SessionOptions(s Session) Options {
	opts := Options{FirstTurn: s.FirstTurn, Branches: NewBranches(s.Last, s.Rollbacks)}
	if p := s.Header.Parent; p != nil && p.Mode == eventlog.ModeFork {
		opts.Fork = p
	}
	opts.Related = make([]Related, 0, len(s.Children))
	for _, c := range s.Children {
		if c.Parent == nil {
			continue
		}
		opts.Related = append(opts.Related, Related{ID: c.ID, Mode: c.Parent.Mode, Seq: c.Parent.Seq, Call: c.Parent.Call,
			Label: LabelWords(c.Labels)})
	}
	return opts
}

// RollbackOf returns the rollback e records; false when e is no rollback,
// or one whose data does not parse (a writer refuses it).
func RollbackOf(e eventlog.Event) (Rollback, bool) {
	if e.Type != eventlog.TypeRollback {
		return Rollback{}, false
	}
	r, err := eventlog.ParseRollback(e.Data)
	if err != nil {
		return Rollback{}, false
	}
	return Rollback{Seq: e.Seq, To: r.To}, true
}

// Rollbacks collects the rollbacks of events (RollbackOf), stopping at
// the first error.
func Rollbacks(events iter.Seq2[eventlog.Event, error]) ([]Rollback, error) {
	var out []Rollback
	for e, err := range events {
		if err != nil {
			return nil, err
		}
		if r, ok := RollbackOf(e); ok {
			out = append(out, r)
		}
	}
	return out, nil
}

// LabelWords shows labels as k=v pairs in key order, separated by spaces;
// "" for none.
func LabelWords(labels map[string]string) string {
	var b strings.Builder
	for i, k := range slices.Sorted(maps.Keys(labels)) {
		if i > 0 {
			b.WriteString(" ")
		}
		fmt.Fprintf(&b, "%s=%s", k, labels[k])
	}
	return b.String()
}
