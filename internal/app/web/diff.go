package web

import (
	"bytes"
	"context"
	"iter"
	"net/http"
	"strconv"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/internal/app/chatview"
)

// diffSide is one session of a diff from where the two part.
type diffSide struct {
	ID    string
	Start int64
	Items []*item
	More  bool
}

type diffPage struct {
	A, B   diffSide
	Same   int64 // events the two have in common from their starts
	Parts  int64 // the seq of A where they part, -1 when they never do
	Fork   string
	Equal  bool
	Window int
}

// diffShown is how many events of each side the diff shows after the
// parting point.
const diffShown = 60

// handleDiff compares two sessions (?a=ID&b=ID), or two points of them
// (&as=S&bs=S, a session with itself too): it walks both from their starts
// in step while the events are equal (type, time and data bytes) and shows
// what each did from where they part. A fork and its parent share events
// 0..at by construction, so the walk starts past the fork point.
func (s *Server) handleDiff(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	a, b := q.Get("a"), q.Get("b")
	if !eventlog.ValidID(a) || !eventlog.ValidID(b) {
		// Names of sessions (the start of an ID, a label query): the same
		// diff with their IDs.
		for _, side := range []string{"a", "b"} {
			if name := q.Get(side); !eventlog.ValidID(name) {
				id, ok := s.resolve(w, r, name)
				if !ok {
					return
				}
				q.Set(side, id)
			}
		}
		redirect(w, r, "/diff", q.Encode())
		return
	}
	as, errA := seqParam(q.Get("as"))
	bs, errB := seqParam(q.Get("bs"))
	if errA != nil || errB != nil {
		http.Error(w, "as and bs must be seqs (integers ≥ 0)", http.StatusBadRequest)
		return
	}
	ctx := r.Context()
	ha, ok := s.open(w, r, a)
	if !ok {
		return
	}
	defer ha.Close()
	hb, ok := s.open(w, r, b)
	if !ok {
		return
	}
	defer hb.Close()
	p := diffPage{A: diffSide{ID: a, Start: as}, B: diffSide{ID: b, Start: bs}, Parts: -1, Window: diffShown}
	if as == bs { // the same seqs on both sides: a shared fork prefix can be skipped
		if skip, how := sharedPrefix(ha.Header(), hb.Header()); skip >= as {
			p.Fork, p.Same = how, skip-as+1
			p.A.Start, p.B.Start = skip+1, skip+1
		}
	}
	same, parts, err := walkEqual(ctx, ha, hb, p.A.Start, p.B.Start)
	if err != nil {
		s.fail(w, err)
		return
	}
	p.Same += same
	p.A.Start, p.B.Start = p.A.Start+same, p.B.Start+same
	p.Parts = parts
	p.Equal = parts < 0
	if p.A.Items, p.A.More, err = s.sideItems(ctx, ha, p.A.Start); err == nil {
		p.B.Items, p.B.More, err = s.sideItems(ctx, hb, p.B.Start)
	}
	if err != nil {
		s.fail(w, err)
		return
	}
	s.render(w, "diff.html", p)
}

func seqParam(v string) (int64, error) {
	if v == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err == nil && n < 0 {
		err = strconv.ErrRange
	}
	return n, err
}

// sharedPrefix returns the last seq two sessions share by lineage (one a
// fork of the other, or both forks of one parent), -1 when none is known.
func sharedPrefix(a, b eventlog.Header) (int64, string) {
	pa, pb := a.Parent, b.Parent
	switch {
	case pb != nil && pb.Mode == "fork" && pb.ID == a.ID:
		return pb.Seq, b.ID + " is a fork of " + a.ID + " at seq " + itoa(pb.Seq)
	case pa != nil && pa.Mode == "fork" && pa.ID == b.ID:
		return pa.Seq, a.ID + " is a fork of " + b.ID + " at seq " + itoa(pa.Seq)
	case pa != nil && pb != nil && pa.Mode == "fork" && pb.Mode == "fork" && pa.ID == pb.ID:
		return min(pa.Seq, pb.Seq), "both fork " + pa.ID + " (at seqs " + itoa(pa.Seq) + " and " + itoa(pb.Seq) + ")"
	}
	return -1, ""
}

// walkEqual reads a from as and b from bs in step and counts the equal
// events; parts is a's seq of the first difference (an event that one
// side has and the other has not counts), -1 when both end together.
func walkEqual(ctx context.Context, a, b handle.Handle, as, bs int64) (same, parts int64, err error) {
	na, stopA := iter.Pull2(a.Read(ctx, as, handle.End))
	defer stopA()
	nb, stopB := iter.Pull2(b.Read(ctx, bs, handle.End))
	defer stopB()
	for {
		ea, errA, okA := na()
		eb, errB, okB := nb()
		switch {
		case errA != nil:
			return 0, 0, errA
		case errB != nil:
			return 0, 0, errB
		case !okA && !okB:
			return same, -1, nil
		case okA != okB:
			return same, as + same, nil
		case ea.Type != eb.Type || ea.Time != eb.Time || !bytes.Equal(ea.Data, eb.Data):
			return same, ea.Seq, nil
		}
		same++
	}
}

// sideItems renders up to diffShown events of h from seq from as the
// session page does (records folded, streamed text joined), the branches
// that later rollbacks abandon marked.
func (s *Server) sideItems(ctx context.Context, h handle.Handle, from int64) ([]*item, bool, error) {
	to := from + diffShown - 1
	evs, rb, last, err := s.window(ctx, h, from, to, handle.End)
	if err != nil {
		return nil, false, err
	}
	pb := newPageBuilder(h.ID(), chatview.SessionOptions(chatview.Session{Last: last, Rollbacks: rb}), -1, from)
	for _, e := range evs {
		pb.add(e)
	}
	pb.finish(last <= to)
	return flatten(pb.groups), last > to, nil
}
