package web

import (
	"bytes"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/sessionlog/sessionlog/handle"
)

// handleLive streams the events after seq ?after=S as server-sent events,
// following the log as tail -f does: it reads to the end, waits, reads
// again. Each message is one event rendered as the page renders it (the
// same escaping), its id the seq, so a reconnecting browser goes on from
// Last-Event-ID.
func (s *Server) handleLive(w http.ResponseWriter, r *http.Request, id string) {
	ctx := r.Context()
	after, err := strconv.ParseInt(r.URL.Query().Get("after"), 10, 64)
	if v, e := strconv.ParseInt(r.Header.Get("Last-Event-ID"), 10, 64); e == nil {
		after, err = v, nil
	}
	if err != nil {
		http.Error(w, "after: a seq is needed", http.StatusBadRequest)
		return
	}
	fl, canFlush := w.(http.Flusher)
	if !canFlush {
		http.Error(w, "streaming unsupported", http.StatusInternalServerError)
		return
	}
	h, ok := s.open(w, r, id)
	if !ok {
		return
	}
	defer h.Close()
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
		for e, err := range h.Read(ctx, after+1, handle.End) {
			if err != nil {
				fmt.Fprintf(w, "event: failed\ndata: %s\n\n", oneLine(err.Error()))
				fl.Flush()
				return
			}
			b := newBuilder(-1, nil) // a result shows by itself: its call is already on the page
			b.add(e)
			var buf bytes.Buffer
			if len(b.turns) > 0 && len(b.turns[0].Items) > 0 {
				if err := s.pages.ExecuteTemplate(&buf, "item", b.turns[0].Items[0]); err != nil {
					s.log.Warn("serve: live", "err", err)
					return
				}
			}
			fmt.Fprintf(w, "id: %d\n", e.Seq)
			for line := range strings.SplitSeq(buf.String(), "\n") {
				fmt.Fprintf(w, "data: %s\n", line)
			}
			fmt.Fprint(w, "\n")
			after = e.Seq
		}
		fl.Flush()
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

func oneLine(s string) string { return strings.ReplaceAll(s, "\n", " ") }
