package web

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"strings"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/internal/app/chatview"
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
// smuggled through it. Any other name of a session (the start of its ID,
// a label query k=v: handle.Resolve, which builds no path from it) is
// answered with a redirect to the same URL with the ID (see resolve).
func (s *Server) withID(h func(http.ResponseWriter, *http.Request, string)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		name := r.PathValue("id")
		if eventlog.ValidID(name) {
			h(w, r, name)
			return
		}
		id, ok := s.resolve(w, r, name)
		if !ok {
			return
		}
		segs := strings.Split(r.URL.EscapedPath(), "/")
		for i, seg := range segs {
			if v, err := url.PathUnescape(seg); err == nil && v == name {
				segs[i] = id
				break
			}
		}
		u := *r.URL
		u.Path, u.RawPath = "", ""
		redirect(w, r, strings.Join(segs, "/"), u.RawQuery)
	}
}

// resolve finds the session that name names (handle.Resolve), or answers
// the request: 400 for what is no name, 404 when no session answers to
// it, and when several do, the session list of them (300 Multiple
// Choices) for a page, a text of their IDs (409) for /api/.
func (s *Server) resolve(w http.ResponseWriter, r *http.Request, name string) (string, bool) {
	info, err := s.store.Resolve(r.Context(), name)
	var amb *handle.AmbiguousError
	switch {
	case err == nil:
		return info.ID, true
	case errors.As(err, &amb) && strings.HasPrefix(r.URL.Path, "/api/"):
		var ids []string
		for _, c := range amb.Candidates {
			ids = append(ids, c.ID)
		}
		http.Error(w, fmt.Sprintf("%q names %d sessions: %s", name, len(ids), strings.Join(ids, " ")), http.StatusConflict)
	case errors.As(err, &amb):
		page := listPage{Q: name, Matched: len(amb.Candidates), Total: len(amb.Candidates)}
		for _, c := range amb.Candidates {
			page.Rows = append(page.Rows, listRow{Info: c, Parent: describeParent(c.Header.Parent)})
		}
		var buf bytes.Buffer
		if err := s.pages.ExecuteTemplate(&buf, "list.html", page); err != nil {
			s.fail(w, err)
			return "", false
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.WriteHeader(http.StatusMultipleChoices)
		w.Write(buf.Bytes())
	case errors.Is(err, handle.ErrInvalidID):
		http.Error(w, "not a session name: a session ID (26 Crockford base32 characters), the start of one, or a label query k=v", http.StatusBadRequest)
	default:
		s.fail(w, err)
	}
	return "", false
}

// redirect sends the browser to path?query on this server (302).
func redirect(w http.ResponseWriter, r *http.Request, path, query string) {
	if query != "" {
		path += "?" + query
	}
	http.Redirect(w, r, path, http.StatusFound)
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
