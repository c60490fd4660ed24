package web

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"

	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/ops/inspect"
	"github.com/sessionlog/sessionlog/ops/verify"
	"github.com/sessionlog/sessionlog/projection"
)

// jsonLines holds an /api/ answer: one JSON value a line, as logtool
// prints it for scripts (HTML characters left alone: the answer is for
// scripts, and is served as JSON, never as a page).
type jsonLines struct {
	buf bytes.Buffer
	enc *json.Encoder
}

func newJSONLines() *jsonLines {
	j := &jsonLines{}
	j.enc = json.NewEncoder(&j.buf)
	j.enc.SetEscapeHTML(false)
	return j
}

// add writes v as one line.
func (j *jsonLines) add(v any) error { return j.enc.Encode(v) }

// serveAPI answers with what write prints, as the CLI prints it; a
// failure is a status and a text message, never half an answer.
func (s *Server) serveAPI(w http.ResponseWriter, contentType string, write func(*jsonLines) error) {
	j := newJSONLines()
	if err := write(j); err != nil {
		s.fail(w, err)
		return
	}
	w.Header().Set("Content-Type", contentType)
	w.Write(j.buf.Bytes())
}

const ndjson = "application/x-ndjson"

// handleAPILs answers ls --json: a StatReport a session, the last active
// first (inspect.List). A session that cannot be described fails the
// answer, as it fails ls.
func (s *Server) handleAPILs(w http.ResponseWriter, r *http.Request) {
	s.serveAPI(w, ndjson, func(out *jsonLines) error {
		infos, broken, err := inspect.List(r.Context(), s.store)
		if err != nil {
			return err
		}
		if len(broken) > 0 {
			return errors.Join(broken...)
		}
		for _, info := range infos {
			if err := out.add(inspect.NewStatReport(info)); err != nil {
				return err
			}
		}
		return nil
	})
}

// handleAPITree answers ls --tree --json: a TreeReport a session of the
// store's forest (inspect.Forest).
func (s *Server) handleAPITree(w http.ResponseWriter, r *http.Request) {
	s.serveAPI(w, ndjson, func(out *jsonLines) error {
		rows, broken, err := inspect.Forest(r.Context(), s.store)
		if err != nil {
			return err
		}
		if len(broken) > 0 {
			return errors.Join(broken...)
		}
		for _, row := range rows {
			if err := out.add(row.Report()); err != nil {
				return err
			}
		}
		return nil
	})
}

// handleAPIStat answers stat --json of the session (inspect.Stat).
func (s *Server) handleAPIStat(w http.ResponseWriter, r *http.Request, id string) {
	s.serveAPI(w, "application/json", func(out *jsonLines) error {
		rep, err := inspect.Stat(r.Context(), inspect.InStore(s.store, id))
		if err != nil {
			return err
		}
		return out.add(rep)
	})
}

// handleAPIVerify answers verify --json of the session, with 200 whether
// or not the log is clean: the answer's "ok" says which.
func (s *Server) handleAPIVerify(w http.ResponseWriter, r *http.Request, id string) {
	s.serveAPI(w, "application/json", func(out *jsonLines) error {
		rep, err := s.verify(r.Context(), id)
		if err != nil {
			return err
		}
		return out.add(rep)
	})
}

// handleAPIReplay answers replay --projection P of the session: the state
// a reader is shown (inspect.State: replayed to the last event, an open
// turn no writer holds closed in memory as a resume would close it).
func (s *Server) handleAPIReplay(w http.ResponseWriter, r *http.Request, id string) {
	name := r.URL.Query().Get("projection")
	if name == "" {
		name = "agent"
	}
	if name != "agent" && name != "transcript" {
		http.Error(w, "projection: agent or transcript", http.StatusBadRequest)
		return
	}
	s.serveAPI(w, "application/json", func(out *jsonLines) error {
		p, err := projection.ByName(name)
		if err != nil {
			return err
		}
		l := inspect.InStore(s.store, id)
		src, err := l.Open(r.Context())
		if err != nil {
			return err
		}
		defer src.Close()
		if _, _, err := inspect.State(r.Context(), l, src, p, s.now()); err != nil {
			return err
		}
		if err := projection.WriteState(&out.buf, p); err != nil {
			return err
		}
		out.buf.WriteByte('\n')
		return nil
	})
}

// verify checks the session (verify.Session): a failed check is a report,
// not an error; a session that is not there is.
func (s *Server) verify(ctx context.Context, id string) (verify.Report, error) {
	if _, err := s.store.Stat(ctx, id); errors.Is(err, handle.ErrNotFound) {
		return verify.Report{}, err
	}
	return verify.Session(ctx, s.store, id), nil
}

type verifyPage struct {
	ID  string
	Res verify.Report
}

func (s *Server) handleVerifyPage(w http.ResponseWriter, r *http.Request, id string) {
	res, err := s.verify(r.Context(), id)
	if err != nil {
		s.fail(w, err)
		return
	}
	s.render(w, "verify.html", verifyPage{ID: id, Res: res})
}
