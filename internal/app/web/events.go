package web

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/url"
)

// maxRawEvents is how many events the page of events as stored shows at
// once.
const maxRawEvents = 100

// rawEvent is one event as stored, for the events page.
type rawEvent struct {
	Seq  int64
	Type string
	Time string
	Data string // indented
	Back string // the session page that ends with it
}

type eventsPage struct {
	ID       string
	From, To int64 // asked for
	Events   []rawEvent
	Next     string // the page of the events after these, "" for none
}

// handleEvents shows the events ?from=S&to=S of a session as they are
// stored (what logtool cat --json prints, indented): where an item of the
// session page leads, one event or a folded run.
func (s *Server) handleEvents(w http.ResponseWriter, r *http.Request, id string) {
	q := r.URL.Query()
	from, errF := seqParam(q.Get("from"))
	to, errT := seqParam(q.Get("to"))
	if q.Get("to") == "" {
		to = from
	}
	if errF != nil || errT != nil || to < from {
		http.Error(w, "from and to must be seqs (integers ≥ 0, from ≤ to)", http.StatusBadRequest)
		return
	}
	h, ok := s.open(w, r, id)
	if !ok {
		return
	}
	defer h.Close()
	p := eventsPage{ID: id, From: from, To: to}
	for e, err := range h.Read(r.Context(), from, to) {
		if err != nil {
			s.fail(w, err)
			return
		}
		if len(p.Events) == maxRawEvents {
			p.Next = "/s/" + id + "/events?" + url.Values{"from": {itoa(e.Seq)}, "to": {itoa(to)}}.Encode()
			break
		}
		p.Events = append(p.Events, rawEvent{Seq: e.Seq, Type: e.Type, Time: fmtTime(e.Time), Data: indented(e.Data),
			Back: "/s/" + id + "?" + url.Values{"before": {itoa(e.Seq + 1)}}.Encode() + "#seq-" + itoa(e.Seq)})
	}
	if len(p.Events) == 0 {
		http.Error(w, "no events in seqs "+itoa(from)+" to "+itoa(to)+" (the log ends at "+itoa(h.Seq())+")", http.StatusNotFound)
		return
	}
	s.render(w, "events.html", p)
}

// indented is data as stored, indented ("null" when absent).
func indented(data json.RawMessage) string {
	if len(data) == 0 {
		return "null"
	}
	var buf bytes.Buffer
	if json.Indent(&buf, data, "", "  ") != nil {
		return clip(string(data))
	}
	return clip(buf.String())
}
