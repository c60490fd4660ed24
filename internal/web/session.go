package web

import (
	"context"
	"net/http"
	"net/url"
	"strconv"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/handle"
)

// sessionPage is what the session page shows.
type sessionPage struct {
	Info      handle.Info
	Children  []eventlog.Header
	Turns     []*turn
	Bars      []bar
	From, To  int64 // the seqs shown
	First     int64 // the log's first seq
	Older     string
	Newer     string
	Live      bool  // the page shows the last event and follows the log
	In, Out   int64 // usage on the live branch
	Cost      int64
	SpentIn   int64 // usage of every event shown, abandoned branches too
	SpentOut  int64
	SpentCost int64
	Whole     bool // the totals cover the whole log
	Rollbacks int
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

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
	first := info.Header.FirstSeq()
	if info.Header.Parent != nil {
		first = 0
	}
	last := h.Seq()
	to := last
	if b, err := strconv.ParseInt(r.URL.Query().Get("before"), 10, 64); err == nil && b-1 < last {
		to = max(b-1, first-1)
	}
	from := max(to-int64(s.pageEvents)+1, first)
	p := sessionPage{Info: info, From: from, To: to, First: first, Live: to == last, Whole: from == first}
	evs, rb, err := s.window(ctx, h, from, to)
	if err != nil {
		s.fail(w, err)
		return
	}
	inherit := int64(-1)
	if par := info.Header.Parent; par != nil && par.Mode == "fork" {
		inherit = par.Seq
	}
	b := newBuilder(inherit, rb)
	for _, e := range evs {
		b.add(e)
	}
	p.Turns, p.Rollbacks = b.turns, len(rb)
	for _, t := range p.Turns {
		p.In, p.Out, p.Cost = p.In+t.live[0], p.Out+t.live[1], p.Cost+t.live[2]
		p.SpentIn, p.SpentOut, p.SpentCost = p.SpentIn+t.In, p.SpentOut+t.Out, p.SpentCost+t.Cost
	}
	p.Bars = timeline(p.Turns)
	slicesReverse(p.Turns) // last turns first
	if from > first {
		p.Older = "/s/" + id + "?" + url.Values{"before": {itoa(from)}}.Encode()
	}
	if to < last {
		p.Newer = "/s/" + id + "?" + url.Values{"before": {itoa(min(to+1+int64(s.pageEvents), last+1))}}.Encode()
	}
	p.Children = s.children(ctx, id)
	s.render(w, "session.html", p)
}

// window reads events from..to, and the rollbacks from there to the end
// of the log.
func (s *Server) window(ctx context.Context, h handle.Handle, from, to int64) ([]eventlog.Event, branches, error) {
	var evs []eventlog.Event
	var rb branches
	for e, err := range h.Read(ctx, from, handle.End) {
		if err != nil {
			return nil, nil, err
		}
		if r, ok := rollbackRange(e); ok {
			rb = append(rb, r)
		}
		if e.Seq <= to {
			evs = append(evs, e)
		}
	}
	return evs, rb, nil
}

// children lists the sessions forked or spawned from id, from the store's
// header index when it has one.
func (s *Server) children(ctx context.Context, id string) []eventlog.Header {
	if c, ok := s.store.(interface {
		Children(ctx context.Context, id string) ([]eventlog.Header, error)
	}); ok {
		hs, err := c.Children(ctx, id)
		if err != nil {
			s.log.Warn("serve: children", "id", id, "err", err)
		}
		return hs
	}
	infos, err := s.store.List(ctx, handle.WithParentID(id))
	if err != nil {
		s.log.Warn("serve: children", "id", id, "err", err)
	}
	hs := make([]eventlog.Header, len(infos))
	for i, info := range infos {
		hs[i] = info.Header
	}
	return hs
}

func slicesReverse[T any](s []T) {
	for i, j := 0, len(s)-1; i < j; i, j = i+1, j-1 {
		s[i], s[j] = s[j], s[i]
	}
}
