package web

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/ops/follow"
)

// handleLive follows a session for the session page that shows its last
// events (?from=F&after=S: the page shows seqs F..S), as server-sent
// events, with the follower tail -f uses (package follow), so that it goes
// on across what the store does to the log under it (a convert moves it,
// a compaction replaces it). It first folds the page's events again, so
// that it knows what the page shows (its turns, their totals, the
// streamed text and the runs still growing), then sends, after each look
// that found events, one message: the new items in their turn, the page's
// facts and totals, and what is still growing, each rendered by the page's
// own templates (the same escaping). Its id is the last seq, so a
// reconnecting browser goes on from Last-Event-ID. A rollback changes
// what earlier items mean, and a log cut or rewritten under the page what
// it shows: the message then asks the page to reload.
func (s *Server) handleLive(w http.ResponseWriter, r *http.Request, id string) {
	ctx := r.Context()
	q := r.URL.Query()
	from, errF := strconv.ParseInt(q.Get("from"), 10, 64)
	after, errA := strconv.ParseInt(q.Get("after"), 10, 64)
	if v, e := strconv.ParseInt(r.Header.Get("Last-Event-ID"), 10, 64); e == nil {
		after, errA = v, nil
	}
	if errF != nil || errA != nil || from < 0 || after < from-1 {
		http.Error(w, "from and after: the seqs the page shows are needed (from ≥ 0, after ≥ from-1)", http.StatusBadRequest)
		return
	}
	fl, canFlush := w.(http.Flusher)
	if !canFlush {
		http.Error(w, "streaming unsupported", http.StatusInternalServerError)
		return
	}
	info, err := s.store.Stat(ctx, id)
	if err != nil {
		s.fail(w, err)
		return
	}
	var changed bool // the log under the page was cut or rewritten
	f, err := follow.Open(ctx, follow.Session(s.store, id), follow.From(after+1), follow.WithNotes(func(n follow.Note) {
		changed = changed || rewrites(n.Kind)
	}))
	if err != nil {
		s.fail(w, err)
		return
	}
	defer f.Close()
	lv, err := s.newLive(ctx, f.Handle(), info, from, after)
	if err != nil {
		s.fail(w, err)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodHead {
		return // a HEAD has no body to follow
	}
	fmt.Fprint(w, ": following\n\n")
	fl.Flush()
	tick := time.NewTicker(s.followEvery)
	defer tick.Stop()
	for {
		for e, err := range f.Poll(ctx) {
			if err != nil {
				if ctx.Err() == nil {
					fmt.Fprintf(w, "event: failed\ndata: %s\n\n", oneLine(err.Error()))
					fl.Flush()
				}
				return
			}
			lv.add(e)
			after = e.Seq
		}
		if changed {
			lv.changed, lv.reload = true, true
		}
		if lv.changed {
			msg, err := lv.update(ctx)
			if err != nil {
				s.log.Warn("serve: live", "err", err)
				return
			}
			fmt.Fprintf(w, "id: %d\ndata: %s\n\n", after, msg)
			if lv.reload {
				fl.Flush()
				return
			}
		}
		fl.Flush()
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// rewrites reports whether what a follower noticed may have changed
// events the page shows already: the log was cut, rewritten, replaced or
// parts from what was read. (A move, a convert's, keeps the log.)
func rewrites(k follow.NoteKind) bool {
	switch k {
	case follow.Cut, follow.Rewritten, follow.Replaced, follow.Parted:
		return true
	}
	return false
}

func oneLine(s string) string { return strings.ReplaceAll(s, "\n", " ") }

// live is what the live view knows of the page it updates.
type live struct {
	s        *Server
	info     handle.Info
	pr       pageRange
	pb       *pageBuilder
	children []eventlog.Header
	groups   int  // groups the page shows; the last may get more items
	changed  bool // events came since the last update
	reload   bool // a rollback came: earlier items changed meaning
}

// newLive folds the page's events from..after again, as the page did.
func (s *Server) newLive(ctx context.Context, h handle.Handle, info handle.Info, from, after int64) (*live, error) {
	pr := pageRange{first: info.Header.FirstSeq(), from: from, to: after, last: after}
	if info.Header.Parent != nil {
		pr.first = 0
	}
	children := s.children(ctx, info.ID)
	pb, err := s.buildPage(ctx, h, info.Header, children, pr, after)
	if err != nil {
		return nil, err
	}
	lv := &live{s: s, info: info, pr: pr, pb: pb, children: children, groups: len(pb.groups)}
	lv.shown()
	return lv, nil
}

func (l *live) add(e eventlog.Event) {
	l.pb.add(e)
	l.pr.to, l.pr.last = e.Seq, e.Seq
	l.changed = true
	l.reload = l.reload || e.Type == eventlog.TypeRollback
}

// shown forgets the items the page now has: they are never sent again
// (a group keeps its totals for the page's heading and chart).
func (l *live) shown() {
	for _, g := range l.pb.groups {
		g.Items = nil
	}
	l.groups = len(l.pb.groups)
	l.changed = false
}

// liveUpdate is one message of the live view: HTML the page's templates
// rendered.
type liveUpdate struct {
	Reload bool        `json:"reload,omitempty"`
	Facts  string      `json:"facts,omitempty"` // replaces #facts
	Usage  string      `json:"usage,omitempty"` // replaces #usage
	Chart  string      `json:"chart,omitempty"` // replaces #chart
	Pager  string      `json:"pager,omitempty"` // replaces #pager
	Groups []liveGroup `json:"groups,omitempty"`
	Held   string      `json:"held,omitempty"`   // replaces #held, in the section HeldIn
	HeldIn string      `json:"heldIn,omitempty"` // a section's id
}

// liveGroup is what changed in one group: a new one whole (Section, put
// first, as the page shows the last turns first), or an existing one's
// heading and the items to add at its end.
type liveGroup struct {
	ID      string `json:"id"`
	Section string `json:"section,omitempty"`
	Head    string `json:"head,omitempty"`
	Items   string `json:"items,omitempty"`
}

// update renders what changed since the last update as a JSON message.
func (l *live) update(ctx context.Context) ([]byte, error) {
	if l.reload {
		return json.Marshal(liveUpdate{Reload: true})
	}
	if info, err := l.s.store.Stat(ctx, l.info.ID); err == nil {
		l.info = info // the size and count in the heading
	}
	l.pb.held()
	p := l.s.page(l.info, l.pb, l.pr)
	p.Children = l.children
	var u liveUpdate
	var err error
	exec := func(name string, data any) string {
		var buf bytes.Buffer
		if err == nil {
			err = l.s.pages.ExecuteTemplate(&buf, name, data)
		}
		return buf.String()
	}
	u.Facts, u.Usage, u.Chart, u.Pager = exec("facts", p), exec("usage", p), exec("chart", p), exec("pager", p)
	if len(l.pb.groups) == 0 { // events that show nothing (yet)
		l.shown()
		return json.Marshal(u)
	}
	last := l.pb.last()
	held := last.Held
	last.Held = nil // sent on its own: it is replaced, not added to
	for i, g := range l.pb.groups {
		switch {
		case i < l.groups-1:
			continue
		case i == l.groups-1:
			lg := liveGroup{ID: "turn-" + itoa(g.Seq), Head: exec("grouphead", g)}
			for _, it := range g.Items {
				lg.Items += exec("item", it)
			}
			u.Groups = append(u.Groups, lg)
		default:
			u.Groups = append(u.Groups, liveGroup{ID: "turn-" + itoa(g.Seq), Section: exec("group", g)})
		}
	}
	last.Held = held
	if len(held) > 0 {
		u.Held, u.HeldIn = exec("held", last), "turn-"+itoa(last.Seq)
	}
	if err != nil {
		return nil, err
	}
	l.shown()
	return json.Marshal(u)
}
