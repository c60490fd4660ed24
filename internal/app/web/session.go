package web

import (
	"context"
	"net/http"
	"net/url"
	"slices"
	"strconv"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/internal/app/chatview"
)

// sessionPage is what the session page shows.
type sessionPage struct {
	Info      handle.Info
	Children  []eventlog.Header
	Groups    []*group // last first
	Chart     chart
	From, To  int64 // the seqs shown
	Older     string
	Newer     string
	Follow    string // the live view's URL, when the page shows the last event
	In, Out   int64  // usage on the live branch
	Cost      int64
	SpentIn   int64 // usage of every event shown, abandoned branches too
	SpentOut  int64
	SpentCost int64
	Whole     bool // the totals cover the whole log
	Rollbacks int
	// Secrets says what keeps the session's secrets out of its file
	// (over the events shown; docs/format.md §11), "" for nothing.
	Secrets string
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// pageRange is the seqs a session page shows: from..to of a log whose
// first seq is first (0 for a fork: it shows its inherited events too)
// and last is last.
type pageRange struct{ first, from, to, last int64 }

// handleSession shows a session's last events (?before=S: the page of
// events before seq S), grouped into turns. It reads from the start of the
// page to the end of the log, and no further back: a rollback after the
// page marks the branch it abandons on it.
func (s *Server) handleSession(w http.ResponseWriter, r *http.Request, id string) {
	ctx := r.Context()
	info, err := s.store.Stat(ctx, id)
	if err != nil {
		s.fail(w, err)
		return
	}
	h, ok := s.open(w, r, id)
	if !ok {
		return
	}
	defer h.Close()
	pr := pageRange{first: info.Header.FirstSeq(), last: h.Seq()}
	if info.Header.Parent != nil {
		pr.first = 0
	}
	pr.to = pr.last
	if b, err := strconv.ParseInt(r.URL.Query().Get("before"), 10, 64); err == nil && b-1 < pr.last {
		pr.to = max(b-1, pr.first-1)
	}
	pr.from = max(pr.to-int64(s.pageEvents)+1, pr.first)
	children := s.children(ctx, id)
	pb, err := s.buildPage(ctx, h, info.Header, children, pr, handle.End)
	if err != nil {
		s.fail(w, err)
		return
	}
	if pr.to == pr.last {
		pb.held() // the live view goes on from here
	} else {
		pb.finish(false)
	}
	p := s.page(info, pb, pr)
	p.Children = children
	s.render(w, "session.html", p)
}

// buildPage folds the events pr.from..pr.to of h into a pageBuilder, the
// rollbacks up to seq rollbacksTo deciding which are abandoned.
func (s *Server) buildPage(ctx context.Context, h handle.Handle, hdr eventlog.Header, children []eventlog.Header, pr pageRange, rollbacksTo int64) (*pageBuilder, error) {
	evs, rollbacks, last, err := s.window(ctx, h, pr.from, pr.to, rollbacksTo)
	if err != nil {
		return nil, err
	}
	view := chatview.Session{Header: hdr, Children: children, Last: last, Rollbacks: rollbacks}
	if pr.from == pr.first {
		view.FirstTurn = 1 // counting the turns before the page would read the log from its start
	}
	opts := chatview.SessionOptions(view)
	inherit := int64(-1)
	if opts.Fork != nil {
		inherit = opts.Fork.Seq
	}
	pb := newPageBuilder(hdr.ID, opts, inherit, pr.from)
	pb.midLog = pr.from > pr.first
	for _, e := range evs {
		pb.prot.Count(e.Data)
		pb.add(e)
	}
	return pb, nil
}

// page is what a session page shows of pb.
func (s *Server) page(info handle.Info, pb *pageBuilder, pr pageRange) sessionPage {
	id := info.ID
	p := sessionPage{Info: info, From: pr.from, To: pr.to, Whole: pr.from == pr.first}
	if prot := pb.prot; info.Sealed || prot.Redacted > 0 {
		prot.Sealed = info.Sealed
		p.Secrets = prot.String()
	}
	p.Groups = slices.Clone(pb.groups)
	for _, g := range p.Groups {
		p.In, p.Out, p.Cost = p.In+g.live[0], p.Out+g.live[1], p.Cost+g.live[2]
		p.SpentIn, p.SpentOut, p.SpentCost = p.SpentIn+g.In, p.SpentOut+g.Out, p.SpentCost+g.Cost
		if g.Rollback {
			p.Rollbacks++
		}
	}
	p.Chart = timeline(p.Groups)
	slices.Reverse(p.Groups) // last turns first
	if pr.from > pr.first {
		p.Older = "/s/" + id + "?" + url.Values{"before": {itoa(pr.from)}}.Encode()
	}
	if pr.to < pr.last {
		p.Newer = "/s/" + id + "?" + url.Values{"before": {itoa(min(pr.to+1+int64(s.pageEvents), pr.last+1))}}.Encode()
	} else {
		p.Follow = "/s/" + id + "/live?" + url.Values{"from": {itoa(pr.from)}, "after": {itoa(pr.to)}}.Encode()
	}
	return p
}

// window reads the events from..to, and the rollbacks from there to seq
// rollbacksTo; last is the last seq read.
func (s *Server) window(ctx context.Context, h handle.Handle, from, to, rollbacksTo int64) ([]eventlog.Event, []chatview.Rollback, int64, error) {
	var evs []eventlog.Event
	var rb []chatview.Rollback
	last := from - 1
	for e, err := range h.Read(ctx, from, max(to, rollbacksTo)) {
		if err != nil {
			return nil, nil, 0, err
		}
		last = e.Seq
		if r, ok := chatview.RollbackOf(e); ok {
			rb = append(rb, r)
		}
		if e.Seq <= to {
			evs = append(evs, e)
		}
	}
	return evs, rb, last, nil
}

// children lists the sessions forked or spawned from id (the store's
// Children).
func (s *Server) children(ctx context.Context, id string) []eventlog.Header {
	hs, err := s.store.Children(ctx, id)
	if err != nil {
		s.log.Warn("serve: children", "id", id, "err", err)
	}
	return hs
}
