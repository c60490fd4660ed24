package provider

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/sessionlog/sessionlog/replay"
	"github.com/sessionlog/sessionlog/replay/replaytest/golden"
	"github.com/sessionlog/sessionlog/secrets/redact"
)

// DefaultVolatile lists the request fields a Replayer ignores by default
// (dotted paths from the body's root): what changes from run to run
// without changing what is asked. WithVolatile adds to it.
var defaultVolatile = []string{"metadata.user_id", "user", "prompt_cache_key", "safety_identifier"}

// DefaultVolatile returns the request fields a Replayer ignores by
// default: metadata.user_id, user, prompt_cache_key, safety_identifier.
func DefaultVolatile() []string { return append([]string(nil), defaultVolatile...) }

// ErrDiverged is wrapped by a *DivergenceError.
var ErrDiverged = errors.New("provider: the request differs from the recording")

// ErrNoRecording is returned when a loop makes more model calls than the
// recording holds and no live client takes over.
var ErrNoRecording = errors.New("provider: no recorded response left")

// DivergenceError says where a live request first differs from the
// recorded one it was matched with: the recorded request's seq, the first
// differing JSON path (as messages[3].content[0].text), and both values,
// cut to a readable length.
type DivergenceError struct {
	Seq      int64
	Call     int // which model call of the run, from 0
	Path     string
	Recorded string
	Live     string
	Note     string
}

func (e *DivergenceError) Error() string {
	s := fmt.Sprintf("provider: model call %d differs from the recorded request at seq %d: %s: recorded %s, live %s", e.Call, e.Seq, e.Path, e.Recorded, e.Live)
	if e.Note != "" {
		s += " (" + e.Note + ")"
	}
	return s
}

// Unwrap returns ErrDiverged.
func (e *DivergenceError) Unwrap() error { return ErrDiverged }

// ToolDivergence is a tool result that a live tool gave differently from
// the recording: the loop goes on with the live one.
type ToolDivergence struct {
	Seq      int64  // the recorded request that carried the result
	CallID   string // the tool call's id
	Path     string // where the result stands in the request
	Recorded string
	Live     string
}

func (d ToolDivergence) String() string {
	return fmt.Sprintf("tool call %s (request at seq %d, %s): recorded %s, live %s", d.CallID, d.Seq, d.Path, d.Recorded, d.Live)
}

// Replayer serves a recorded session's model responses back, for a loop
// run offline (in go test, with no model and no network). Each live
// request is matched with the next recorded request of the live branch as
// canonical JSON, volatile fields ignored; a request that differs fails
// the call with a *DivergenceError, never served the next response. Tool
// results the live loop produced are compared apart: one that differs is
// recorded as a ToolDivergence and the run goes on. A Replayer is safe for
// concurrent use.
type Replayer struct {
	cfg replayConfig
	ex  []Exchange

	mu    sync.Mutex
	next  int
	tools []ToolDivergence
}

type replayConfig struct {
	keys         *Keys
	volatile     []string
	toolsFromLog bool
	handover     int64
	live         http.RoundTripper
	red          *redact.Redactor
	ropts        []replay.Option
}

// ReplayOption configures a Replayer.
type ReplayOption func(*replayConfig)

// ReplayKeys opens the recording's sealed originals, so that responses are
// served and requests compared in clear. Without keys both are compared in
// their redacted form and served redacted.
func ReplayKeys(k *Keys) ReplayOption { return func(c *replayConfig) { c.keys = k } }

// WithVolatile adds request fields (dotted paths from the body's root) to
// ignore when matching.
func WithVolatile(paths ...string) ReplayOption {
	return func(c *replayConfig) { c.volatile = append(c.volatile, paths...) }
}

// ToolsFromLog makes ToolResult give the recorded result of every tool
// call, for a loop that takes its tools' results from the log too.
func ToolsFromLog() ReplayOption { return func(c *replayConfig) { c.toolsFromLog = true } }

// HandOverAfter serves only the recorded calls whose request is at or
// before seq (a checkpoint's, say); the calls after go to the live
// transport (RoundTrip) or to the next middleware (Middleware) — another
// model or base URL, recorded into a fork at seq.
func HandOverAfter(seq int64, live http.RoundTripper) ReplayOption {
	return func(c *replayConfig) { c.handover, c.live = seq, live }
}

// ReplayFrom passes options to the replay that reads the recording.
func ReplayFrom(opts ...replay.Option) ReplayOption {
	return func(c *replayConfig) { c.ropts = append(c.ropts, opts...) }
}

// NewReplayer reads the model calls of src's live branch.
func NewReplayer(ctx context.Context, src replay.Source, opts ...ReplayOption) (*Replayer, error) {
	cfg := replayConfig{volatile: DefaultVolatile(), handover: -1, red: redact.New()}
	for _, o := range opts {
		o(&cfg)
	}
	ex, err := Exchanges(ctx, src, -1, cfg.keys, cfg.ropts...)
	if err != nil {
		return nil, err
	}
	if cfg.handover >= 0 {
		n := 0
		for n < len(ex) && ex[n].Request.Seq <= cfg.handover {
			n++
		}
		ex = ex[:n]
	}
	return &Replayer{cfg: cfg, ex: ex}, nil
}

// Remaining returns how many recorded calls are not served yet.
func (r *Replayer) Remaining() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.ex) - r.next
}

// ToolDivergences returns the tool results that differed so far, one a
// call (where it first differed).
func (r *Replayer) ToolDivergences() []ToolDivergence {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]ToolDivergence(nil), r.tools...)
}

// ToolResult returns the recorded result of tool call id (its input, in
// the provider's shape) under ToolsFromLog; ok is false otherwise, or
// when the recording has none.
func (r *Replayer) ToolResult(id string) (json.RawMessage, bool) {
	if !r.cfg.toolsFromLog {
		return nil, false
	}
	for _, ex := range r.ex {
		for _, in := range ex.Inputs {
			if toolOutputID(in.Content) == id {
				return in.Content, true
			}
		}
		for _, o := range toolOutputs(ex.Request) {
			if o.id == id {
				return o.raw, true
			}
		}
	}
	return nil, false
}

// Middleware returns the Replayer as SDK middleware (the type of
// anthropic-sdk-go's and openai-go's option.Middleware): it answers from
// the recording and never calls next, until the recording is handed over
// (HandOverAfter), when it calls next.
func (r *Replayer) Middleware() func(*http.Request, func(*http.Request) (*http.Response, error)) (*http.Response, error) {
	return func(req *http.Request, next func(*http.Request) (*http.Response, error)) (*http.Response, error) {
		return r.serve(req, next)
	}
}

// RoundTrip answers req from the recording (http.RoundTripper).
func (r *Replayer) RoundTrip(req *http.Request) (*http.Response, error) {
	var next func(*http.Request) (*http.Response, error)
	if r.cfg.live != nil {
		next = r.cfg.live.RoundTrip
	}
	return r.serve(req, next)
}

func (r *Replayer) serve(req *http.Request, next func(*http.Request) (*http.Response, error)) (*http.Response, error) {
	var body []byte
	if req.Body != nil {
		b, err := io.ReadAll(req.Body)
		_ = req.Body.Close()
		if err != nil {
			return nil, err
		}
		body = b
		req.Body = io.NopCloser(bytes.NewReader(b))
	}
	r.mu.Lock()
	if r.next >= len(r.ex) {
		r.mu.Unlock()
		if r.cfg.handover >= 0 && next != nil {
			return next(req)
		}
		return nil, fmt.Errorf("%w: the loop made model call %d, the recording has %d", ErrNoRecording, r.next, len(r.ex))
	}
	call := r.next
	ex := r.ex[call]
	r.mu.Unlock()

	tools, err := r.match(call, ex.Request, body)
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	for _, d := range tools {
		// Later requests carry the same result again, in their history:
		// a call is reported once, where it first differs.
		if !slices.ContainsFunc(r.tools, func(o ToolDivergence) bool { return o.CallID == d.CallID }) {
			r.tools = append(r.tools, d)
		}
	}
	r.next++
	r.mu.Unlock()
	if ex.Response == nil {
		return nil, fmt.Errorf("%w: the request at seq %d has no recorded response", ErrNoRecording, ex.Request.Seq)
	}
	return response(req, ex.Response), nil
}

// response makes the HTTP response a recorded one was.
func response(req *http.Request, rec *Response) *http.Response {
	h := http.Header{}
	for k, v := range rec.Header {
		h.Set(k, v)
	}
	var b []byte
	if rec.Streamed() {
		h.Set("Content-Type", "text/event-stream")
		b = WriteSSE(nil, rec.Stream)
	} else {
		if h.Get("Content-Type") == "" {
			h.Set("Content-Type", "application/json")
		}
		b = rec.Body
		if len(b) > 0 && b[0] == '"' { // a body that was not JSON
			var s string
			if json.Unmarshal(b, &s) == nil {
				b = []byte(s)
			}
		}
	}
	return &http.Response{
		Status: strconv.Itoa(rec.Status) + " " + http.StatusText(rec.Status), StatusCode: rec.Status,
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: h, Body: io.NopCloser(bytes.NewReader(b)), ContentLength: int64(len(b)), Request: req,
	}
}

// match compares a live request body with the recorded request.
func (r *Replayer) match(call int, rec Request, live []byte) ([]ToolDivergence, error) {
	if r.cfg.keys == nil {
		// The recording is in its redacted form: compare the live
		// request in the same form.
		if out, _, changed := r.cfg.red.Redact(live); changed {
			live = withoutRecord(out)
		}
	}
	lv, err := canonicalTree(live)
	if err != nil {
		return nil, &DivergenceError{Seq: rec.Seq, Call: call, Path: "(root)", Note: "the live request is not JSON: " + err.Error()}
	}
	rv, err := canonicalTree(rec.Body)
	if err != nil {
		return nil, err
	}
	for _, p := range r.cfg.volatile {
		deletePath(lv, p)
		deletePath(rv, p)
	}
	// Tool results are compared apart: a live tool may rightly differ.
	recOut := toolOutputsTree(rec.API, rv)
	liveOut := toolOutputsTree(rec.API, lv)
	var tools []ToolDivergence
	for id, ro := range recOut {
		lo, ok := liveOut[id]
		if !ok {
			continue // the strict comparison below names it
		}
		rb, _ := json.Marshal(ro.m[ro.key])
		lb, _ := json.Marshal(lo.m[lo.key])
		if !bytes.Equal(rb, lb) {
			tools = append(tools, ToolDivergence{Seq: rec.Seq, CallID: id, Path: lo.path, Recorded: cut(string(rb)), Live: cut(string(lb))})
		}
		ro.m[ro.key], lo.m[lo.key] = nil, nil
	}
	rb, _ := json.Marshal(rv)
	lb, _ := json.Marshal(lv)
	if m := golden.Compare(rb, lb); m != nil {
		return nil, &DivergenceError{Seq: rec.Seq, Call: call, Path: m.Path, Recorded: m.Want, Live: m.Got, Note: m.Note}
	}
	return tools, nil
}

// cut shortens s to a readable length, on a rune boundary.
func cut(s string) string {
	const max = 120
	if len(s) <= max {
		return s
	}
	n := max
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// canonicalTree decodes JSON keeping numbers as written.
func canonicalTree(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}

func deletePath(v any, path string) {
	steps := strings.Split(path, ".")
	for i, s := range steps {
		m, ok := v.(map[string]any)
		if !ok {
			return
		}
		if i == len(steps)-1 {
			delete(m, s)
			return
		}
		v = m[s]
	}
}

// toolOut is a tool result in a decoded request body: m[key].
type toolOut struct {
	path string
	m    map[string]any
	key  string
}

// toolOutputsTree finds the tool results of a request body decoded by
// canonicalTree, by call id: Anthropic tool_result blocks' content,
// Responses function_call_output items' output, Chat tool messages'
// content.
func toolOutputsTree(api string, body any) map[string]toolOut {
	out := map[string]toolOut{}
	root, _ := body.(map[string]any)
	switch api {
	case "messages", "chat.completions":
		msgs, _ := root["messages"].([]any)
		for i, m := range msgs {
			mm, _ := m.(map[string]any)
			if api == "chat.completions" {
				if mm["role"] == "tool" {
					id, _ := mm["tool_call_id"].(string)
					out[id] = toolOut{fmt.Sprintf("messages[%d].content", i), mm, "content"}
				}
				continue
			}
			blocks, _ := mm["content"].([]any)
			for j, b := range blocks {
				bm, _ := b.(map[string]any)
				if bm["type"] == "tool_result" {
					id, _ := bm["tool_use_id"].(string)
					out[id] = toolOut{fmt.Sprintf("messages[%d].content[%d].content", i, j), bm, "content"}
				}
			}
		}
	case "responses":
		items, _ := root["input"].([]any)
		for i, it := range items {
			im, _ := it.(map[string]any)
			if im["type"] == "function_call_output" {
				id, _ := im["call_id"].(string)
				out[id] = toolOut{fmt.Sprintf("input[%d].output", i), im, "output"}
			}
		}
	}
	return out
}

// toolOutputs lists a recorded request's tool results, raw, by id.
func toolOutputs(req Request) []struct {
	id  string
	raw json.RawMessage
} {
	var out []struct {
		id  string
		raw json.RawMessage
	}
	c, err := codecNamed(Codecs(), req.Provider, req.API)
	if err != nil {
		return nil
	}
	list, _ := getMember(req.Body, c.ListKey())
	items, _ := elements(list)
	for _, it := range items {
		switch {
		case req.API == "messages":
			content, _ := getMember(it, "content")
			blocks, _ := elements(content)
			for _, b := range blocks {
				if str(b, "type") == "tool_result" {
					out = append(out, struct {
						id  string
						raw json.RawMessage
					}{str(b, "tool_use_id"), b})
				}
			}
		case toolOutputID(it) != "":
			out = append(out, struct {
				id  string
				raw json.RawMessage
			}{toolOutputID(it), it})
		}
	}
	return out
}

// toolOutputID returns the call id of a tool result in any provider's
// shape, or "".
func toolOutputID(content json.RawMessage) string {
	switch {
	case str(content, "type") == "tool_result":
		return str(content, "tool_use_id")
	case str(content, "type") == "function_call_output":
		return str(content, "call_id")
	case str(content, "role") == "tool":
		return str(content, "tool_call_id")
	}
	return ""
}
