package web

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"html/template"
	"net/http"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/internal/chatview"
)

func parsePages() (*template.Template, error) {
	return template.New("").Funcs(template.FuncMap{
		"size": fmtSize,
		"time": fmtTime,
		"cost": fmtCost,
		"mode": describeParent,
		"num":  chatview.Thousands,
		"plural": func(n any, one string) string {
			switch n := n.(type) {
			case int:
				return chatview.Plural(int64(n), one, "")
			case int64:
				return chatview.Plural(n, one, "")
			}
			return fmt.Sprint(n, " ", one)
		},
	}).ParseFS(assets, "assets/*.html")
}

// describeParent says how a session came from its parent: fork@S or
// child@S.
func describeParent(p *eventlog.Parent) string {
	if p == nil {
		return ""
	}
	return p.Mode + "@" + itoa(p.Seq)
}

// withID validates the {id} of a route before anything reads the store:
// a session ID is 26 Crockford base32 characters, so no path can be
// smuggled through it.
func (s *Server) withID(h func(http.ResponseWriter, *http.Request, string)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		id := r.PathValue("id")
		if !eventlog.ValidID(id) {
			http.Error(w, "not a session ID (26 upper-case Crockford base32 characters)", http.StatusBadRequest)
			return
		}
		h(w, r, id)
	}
}

// render executes a page into a buffer first, so a failure mid-page is a
// clean 500 and not half a page.
func (s *Server) render(w http.ResponseWriter, name string, data any) {
	var buf bytes.Buffer
	if err := s.pages.ExecuteTemplate(&buf, name, data); err != nil {
		s.fail(w, err)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Write(buf.Bytes())
}

// fail answers an error with the status it deserves; the message is text,
// never HTML.
func (s *Server) fail(w http.ResponseWriter, err error) {
	code := http.StatusInternalServerError
	var ce *eventlog.CorruptError
	switch {
	case errors.Is(err, handle.ErrNotFound):
		code = http.StatusNotFound
	case errors.As(err, &ce), errors.Is(err, handle.ErrLineage):
		code = http.StatusUnprocessableEntity
	case errors.Is(err, context.Canceled):
		return
	}
	s.log.Warn("serve: request failed", "err", err, "status", code)
	http.Error(w, err.Error(), code)
}

// open opens session id read-only (the only mode the server uses), or
// answers the request with the error.
func (s *Server) open(w http.ResponseWriter, r *http.Request, id string) (handle.Handle, bool) {
	h, err := s.store.Open(r.Context(), id, handle.ReadOnly)
	if err != nil {
		s.fail(w, err)
		return nil, false
	}
	return h, true
}
