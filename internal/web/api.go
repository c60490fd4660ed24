package web

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
)

// serveAPI answers with what write prints, as the CLI prints it; a
// failure is a status and a text message, never half an answer.
func (s *Server) serveAPI(w http.ResponseWriter, contentType string, write func(io.Writer) error) {
	var buf bytes.Buffer
	if err := write(&buf); err != nil {
		s.fail(w, err)
		return
	}
	w.Header().Set("Content-Type", contentType)
	w.Write(buf.Bytes())
}

const ndjson = "application/x-ndjson"

func (s *Server) handleAPILs(w http.ResponseWriter, r *http.Request) {
	s.serveAPI(w, ndjson, func(out io.Writer) error { return s.api.Ls(r.Context(), out) })
}

func (s *Server) handleAPITree(w http.ResponseWriter, r *http.Request) {
	s.serveAPI(w, ndjson, func(out io.Writer) error { return s.api.Tree(r.Context(), out) })
}

func (s *Server) handleAPIStat(w http.ResponseWriter, r *http.Request, id string) {
	s.serveAPI(w, "application/json", func(out io.Writer) error { return s.api.Stat(r.Context(), id, out) })
}

// handleAPIVerify answers verify --json of the session, with 200 whether
// or not the log is clean: the answer's "ok" says which.
func (s *Server) handleAPIVerify(w http.ResponseWriter, r *http.Request, id string) {
	res, err := s.verify(r.Context(), id)
	if err != nil {
		s.fail(w, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(res.raw)
}

func (s *Server) handleAPIReplay(w http.ResponseWriter, r *http.Request, id string) {
	p := r.URL.Query().Get("projection")
	if p == "" {
		p = "agent"
	}
	if p != "agent" && p != "transcript" {
		http.Error(w, "projection: agent or transcript", http.StatusBadRequest)
		return
	}
	s.serveAPI(w, "application/json", func(out io.Writer) error { return s.api.Replay(r.Context(), id, p, out) })
}

// verifyResult is verify --json's line, read back for the page.
type verifyResult struct {
	Path        string `json:"path"`
	OK          bool   `json:"ok"`
	Events      int64  `json:"events"`
	Checkpoints int64  `json:"checkpoints"`
	Unchecked   int64  `json:"unchecked"`
	Torn        *struct {
		Offset int64 `json:"offset"`
		Bytes  int64 `json:"bytes"`
	} `json:"torn"`
	Error *struct {
		Kind    string `json:"kind"`
		Seq     *int64 `json:"seq"`
		Offset  *int64 `json:"offset"`
		Message string `json:"message"`
	} `json:"error"`
	raw []byte
}

// verify runs the API's verify: a failed check is a result, not an error
// (the CLI's exit status 1 is not a failure of the request).
func (s *Server) verify(ctx context.Context, id string) (verifyResult, error) {
	var buf bytes.Buffer
	err := s.api.Verify(ctx, id, &buf)
	var res verifyResult
	if jerr := json.Unmarshal(buf.Bytes(), &res); jerr != nil {
		if err == nil {
			err = jerr
		}
		return res, err
	}
	res.raw = buf.Bytes()
	return res, nil
}

type verifyPage struct {
	ID  string
	Res verifyResult
}

func (s *Server) handleVerifyPage(w http.ResponseWriter, r *http.Request, id string) {
	res, err := s.verify(r.Context(), id)
	if err != nil {
		s.fail(w, err)
		return
	}
	s.render(w, "verify.html", verifyPage{ID: id, Res: res})
}
