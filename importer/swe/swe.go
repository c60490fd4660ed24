package swe

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"strings"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/importer"
)

// Name is the --from value and the "source" label.
const Name = "swe-agent"

// FirstRelease is when SWE-agent was first released (2024-04-02, Unix
// ms): no trajectory is older, so a file time before it is not the
// trajectory's (see importer.Session.Untimed).
const FirstRelease int64 = 1712016000000

// New returns the importer of SWE-agent trajectories (*.traj).
func New() importer.Importer {
	return importer.Format{Label: Name, Suffix: ".traj", SniffFunc: Sniff, ConvertFunc: Convert, RecordsFunc: Records}
}

// Sniff reports whether head starts like a trajectory: a JSON object
// whose first keys are a trajectory's (environment, trajectory, history,
// info, replay_config).
func Sniff(head []byte) bool {
	s := importer.NewScanner(bytes.NewReader(head), len(head)+1)
	if c, err := s.Peek(); err != nil || c != '{' {
		return false
	}
	ours, others := 0, 0
	_ = s.Object(func(key string) error {
		switch key {
		case "environment", "trajectory", "history", "info", "replay_config":
			ours++
		default:
			others++
		}
		return s.Skip()
	})
	return ours > 0 && ours >= others
}

type step struct {
	Action      string `json:"action"`
	Observation string `json:"observation"`
}

type message struct {
	Role        string          `json:"role"`
	Content     json.RawMessage `json:"content"`
	Agent       string          `json:"agent"`
	Action      *string         `json:"action"`
	Thought     *string         `json:"thought"`
	IsDemo      bool            `json:"is_demo"`
	ToolCalls   []toolCall      `json:"tool_calls"`
	ToolCallIDs []string        `json:"tool_call_ids"`
}

type toolCall struct {
	ID       string `json:"id"`
	Function struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	} `json:"function"`
}

type info struct {
	ExitStatus *string `json:"exit_status"`
	ModelStats *struct {
		InstanceCost   float64 `json:"instance_cost"`
		TokensSent     int64   `json:"tokens_sent"`
		TokensReceived int64   `json:"tokens_received"`
		APICalls       int64   `json:"api_calls"`
	} `json:"model_stats"`
}

// outline is what a first read of a trajectory finds, holding neither of
// its long arrays: how many entries each has, and the rest of the
// document (environment, info, replay_config…) as one record.
type outline struct {
	history, trajectory int
	rest                json.RawMessage // the document without its two arrays, compacted
	environment, info   json.RawMessage
	replayConfig        json.RawMessage
}

// notTrajectory is the error about a document that is not a trajectory.
func notTrajectory(err error) error {
	return importer.Formatf("not a SWE-agent trajectory (a JSON object with \"history\" and \"trajectory\"): %v", err)
}

// scan reads the outline of the trajectory in src, from its start; sum,
// when set, sees every byte.
func scan(src io.ReadSeeker, limit int, sum func([]byte)) (outline, error) {
	if _, err := src.Seek(0, io.SeekStart); err != nil {
		return outline{}, err
	}
	var r io.Reader = src
	if sum != nil {
		r = io.TeeReader(src, writerFunc(sum))
	}
	s := importer.NewScanner(r, limit)
	var o outline
	var rest bytes.Buffer
	rest.WriteByte('{')
	seenH, seenT := false, false
	if c, err := s.Peek(); err != nil || c != '{' {
		return o, notTrajectory(fmt.Errorf("it does not start with an object"))
	}
	err := s.Object(func(key string) error {
		switch key {
		case "history", "trajectory":
			if c, err := s.Peek(); err == nil && c == 'n' {
				return s.Skip() // null: as if missing
			}
			n := 0
			err := s.Array(func() error {
				n++
				return where(fmt.Sprintf("%s entry %d", key, n), s.Skip())
			})
			if key == "history" {
				o.history, seenH = n, true
			} else {
				o.trajectory, seenT = n, true
			}
			return err
		}
		raw, err := s.Raw()
		if err != nil {
			return where(fmt.Sprintf("%q", key), err)
		}
		v, err := importer.Marshal(raw)
		if err != nil {
			return importer.FormatError(err)
		}
		switch key {
		case "environment":
			o.environment = v
		case "info":
			o.info = v
		case "replay_config":
			o.replayConfig = v
		}
		if rest.Len() > 1 {
			rest.WriteByte(',')
		}
		k, _ := importer.Marshal(key)
		rest.Write(k)
		rest.WriteByte(':')
		rest.Write(v)
		return nil
	})
	if err == nil {
		err = s.End()
	}
	switch {
	case errors.Is(err, importer.ErrTooLarge):
		// A trajectory, with a value no record may hold: say so and where,
		// not that the file is no trajectory.
		return o, err
	case err != nil:
		return o, notTrajectory(err)
	}
	if !seenH || !seenT {
		return o, importer.Formatf(`not a SWE-agent trajectory: no "history" or no "trajectory"`)
	}
	rest.WriteByte('}')
	o.rest = rest.Bytes()
	return o, nil
}

// where names the part of the document an over-limit value is in.
func where(part string, err error) error {
	var tl *tooLarge
	if !errors.Is(err, importer.ErrTooLarge) || errors.As(err, &tl) {
		return err
	}
	return &tooLarge{part: part, err: err}
}

// tooLarge is a value over the limit in part of the document (`history
// entry 3`, `"info"`): a format error.
type tooLarge struct {
	part string
	err  error
}

func (e *tooLarge) Error() string { return e.part + ": " + e.err.Error() }
func (e *tooLarge) Unwrap() error { return e.err }

type writerFunc func([]byte)

func (f writerFunc) Write(p []byte) (int, error) { f(p); return len(p), nil }

// entries calls fn with each entry (compacted) of the array key of the
// trajectory in src, read from its start.
func entries(src io.ReadSeeker, limit int, key string, fn func(i int, raw json.RawMessage) error) error {
	if _, err := src.Seek(0, io.SeekStart); err != nil {
		return err
	}
	s := importer.NewScanner(src, limit)
	return s.Object(func(k string) error {
		if k != key {
			return s.Skip()
		}
		if c, err := s.Peek(); err == nil && c == 'n' {
			return s.Skip()
		}
		i := 0
		return s.Array(func() error {
			raw, err := s.Raw()
			if err != nil {
				return err
			}
			c, err := importer.Marshal(raw)
			if err != nil {
				return importer.FormatError(err)
			}
			i++
			return fn(i, c)
		})
	})
}

// Records calls fn with a trajectory's records in the order an import
// keeps them: each history entry, each trajectory entry, then the
// document without those two arrays (environment, info, replay_config…),
// each compacted.
func Records(src io.ReadSeeker, fn func(json.RawMessage) error) error {
	o, err := scan(src, eventlog.MaxRowSize, nil)
	if err != nil {
		return err
	}
	for _, key := range []string{"history", "trajectory"} {
		if err := entries(src, eventlog.MaxRowSize, key, func(_ int, raw json.RawMessage) error { return fn(raw) }); err != nil {
			return err
		}
	}
	return fn(o.rest)
}

// Parse converts one trajectory, its events collected in the session (for
// tests and small traces).
func Parse(r io.ReadSeeker, name string) (importer.Session, error) {
	return importer.Parse(context.Background(), New(), r, name, importer.Config{})
}

// Convert converts one trajectory, reading it three times from its start
// (its outline, its history, its trajectory) and holding one entry at a
// time, and hands the events to emit entry by entry.
func Convert(ctx context.Context, src io.ReadSeeker, name string, cfg importer.Config, emit importer.Emit) (importer.Session, error) {
	b := importer.NewBuilder(cfg, emit)
	limit := cfg.Limit()
	o, err := scan(src, limit, b.Read)
	if err != nil {
		return importer.Session{}, err
	}
	s := importer.NewSession(Name, name)
	s.Untimed, s.Since = true, FirstRelease
	s.Rewrites = importer.Namespace(Name, "document") // SWE-agent saves the whole trajectory after each step
	s.SetLabel("sourceId", strings.TrimSuffix(filepath.Base(name), ".traj"))
	var env string
	if json.Unmarshal(o.environment, &env) == nil {
		s.SetLabel("swe-agent.environment", env)
	}
	var rc struct {
		Agent struct {
			Model struct {
				Name string `json:"name"`
			} `json:"model"`
		} `json:"agent"`
	}
	var rcs string
	if json.Unmarshal(o.replayConfig, &rcs) == nil {
		_ = json.Unmarshal([]byte(rcs), &rc) // replay_config is a string of JSON
	} else {
		_ = json.Unmarshal(o.replayConfig, &rc)
	}
	s.SetLabel("model", rc.Agent.Model.Name)
	var in info
	if len(o.info) > 0 && string(o.info) != "null" {
		if err := json.Unmarshal(o.info, &in); err != nil {
			return importer.Session{}, importer.Formatf("info: %v", err)
		}
	}
	if in.ExitStatus != nil {
		s.SetLabel("swe-agent.exitStatus", *in.ExitStatus)
	}

	c := &conv{b: b, uses: map[string]int{}, alias: map[string]string{}, taken: map[string]bool{}}
	// Identity: the task as posed, the records before the model's first
	// answer (a trace has no id of its own).
	id := sha256.New()
	answered := false
	err = entries(src, limit, "history", func(i int, raw json.RawMessage) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		var m message
		if err := json.Unmarshal(raw, &m); err != nil {
			return importer.Formatf("history entry %d: %v", i, err)
		}
		if m.Role == "assistant" && !m.IsDemo {
			answered = true
		}
		if !answered {
			id.Write(raw)
		}
		b.Record(i, raw)
		c.message(m)
		b.Keep(importer.Namespace(Name, "history"), b.Next())
		return b.Flush()
	})
	if err != nil {
		return importer.Session{}, err
	}
	err = entries(src, limit, "trajectory", func(i int, raw json.RawMessage) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		b.Record(o.history+i, raw)
		if i == o.trajectory && len(c.pending) > 0 && c.actions == o.trajectory {
			// The last observation is only in the trajectory.
			var st step
			if json.Unmarshal(raw, &st) == nil {
				c.result(c.pending[0], st.Observation, b.Src())
			}
		}
		b.Keep(importer.Namespace(Name, "trajectory"), b.Next())
		return b.Flush()
	})
	if err != nil {
		return importer.Session{}, err
	}
	if !c.end(o, in, rc.Agent.Model.Name) {
		s.Unmapped["usage out of range"]++
	}
	s.ID = "sha256:" + hex.EncodeToString(id.Sum(nil))
	if err := b.Done(&s); err != nil {
		return importer.Session{}, err
	}
	return s, nil
}

// conv converts the history, keeping what the next message needs.
type conv struct {
	b        *importer.Builder
	turnOpen bool
	stepOpen bool
	pending  []string          // call ids without a result, oldest first
	actions  int               // calls made so far
	uses     map[string]int    // source call id → calls that used it
	alias    map[string]string // source call id → the id of its latest call
	taken    map[string]bool   // ids of the tool/calls made
	answered bool              // the model has answered (not in a demonstration)
}

// add adds an event at the next time: the trace has none.
func (c *conv) add(typ string, data any) int64 { return c.b.Add(typ, c.b.Next(), data) }

func text(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	// Content as parts [{"type":"text","text"}…].
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &parts) == nil {
		var texts []string
		for _, p := range parts {
			if p.Type == "text" {
				texts = append(texts, p.Text)
			}
		}
		return strings.Join(texts, "\n")
	}
	if len(raw) == 0 {
		return ""
	}
	return string(raw)
}

func (c *conv) openTurn() {
	if !c.turnOpen {
		c.add("turn/start", importer.Obj{})
		c.turnOpen = true
	}
}

func (c *conv) endStep() {
	if c.stepOpen {
		c.add("step/end", importer.Obj{})
		c.stepOpen = false
	}
}

// message converts one history entry.
func (c *conv) message(m message) {
	content := text(m.Content)
	switch {
	case m.Role == "system":
		// The system prompt: the record alone (swe-agent/history).
	case m.IsDemo:
		// A demonstration the model was shown: nobody typed it, and the
		// model did not answer it.
		c.endStep()
		c.add(importer.TypeContext, importer.Obj{"text", content, "kind", KindDemo, "role", m.Role, "source", c.b.Src()})
	case m.Role == "assistant":
		c.answered = true
		c.endStep()
		c.openTurn()
		c.add("step/start", importer.Obj{})
		c.stepOpen = true
		msg := content
		if m.Thought != nil && *m.Thought != "" {
			msg = *m.Thought
		}
		c.add("assistant/message", importer.Obj{"text", msg, "source", c.b.Src()})
		switch {
		case len(m.ToolCalls) > 0:
			for _, tc := range m.ToolCalls {
				c.actions++
				c.call(tc.ID, tc.Function.Name, importer.Args(tc.Function.Arguments), c.b.Src())
			}
		case m.Action != nil && strings.TrimSpace(*m.Action) != "":
			c.actions++
			action := strings.TrimSpace(*m.Action)
			name := strings.Fields(action)[0]
			c.call(fmt.Sprintf("action-%d", c.actions), name, importer.Obj{"command", action}, c.b.Src())
		}
	case m.Role == "tool" && len(m.ToolCallIDs) > 0:
		for _, id := range m.ToolCallIDs {
			if a, ok := c.alias[id]; ok {
				id = a
			}
			c.result(id, content, c.b.Src())
		}
	case len(c.pending) > 0 && (m.Role == "user" || m.Role == "tool"):
		c.result(c.pending[0], content, c.b.Src())
	case c.answered:
		// Once the model has answered, the user role is SWE-agent's own
		// templates (a format error, a limit): text nobody typed.
		c.endStep()
		c.openTurn()
		c.add(importer.TypeContext, importer.Obj{"text", content, "kind", KindHarness, "role", m.Role, "source", c.b.Src()})
	default:
		// The task as posed, before the model's first answer.
		c.endStep()
		c.openTurn()
		c.add("user/message", importer.Obj{"text", content, "source", c.b.Src()})
	}
}

// Kinds of the context/message of a history entry nobody typed.
const (
	KindDemo    = "demo"    // is_demo: a demonstration the model was shown
	KindHarness = "harness" // a user message after the model's first answer that answers no call
)

// call adds a tool/call. A call id the trace used before (replayed
// demonstrations reuse them) gets "~<n>" appended for its n-th use (or the
// next n that gives an id no call has), so every call keeps its own
// result; the source's id stays in "source":{"callId"}.
func (c *conv) call(id, name string, args any, src importer.Obj) {
	orig := id
	c.uses[orig]++
	if c.taken[id] {
		n := max(c.uses[orig], 2)
		for id = fmt.Sprintf("%s~%d", orig, n); c.taken[id]; id = fmt.Sprintf("%s~%d", orig, n) {
			n++
		}
		c.uses[orig] = n
		src = append(src, "callId", orig)
	}
	c.taken[id] = true
	c.alias[orig] = id
	c.add("tool/call", importer.Obj{"id", id, "name", name, "args", args, "source", src})
	c.pending = append(c.pending, id)
}

func (c *conv) result(id, output string, src importer.Obj) {
	c.openTurn()
	c.add("tool/result", importer.Obj{"id", id, "output", output, "source", src})
	for i, p := range c.pending {
		if p == id {
			c.pending = append(c.pending[:i], c.pending[i+1:]...)
			break
		}
	}
	if len(c.pending) == 0 {
		c.endStep()
	}
}

// end closes the run; usageOK is false when info.model_stats counted calls
// with numbers out of range (negative, or a cost beyond int64 micros): no
// usage is made of them.
func (c *conv) end(o outline, in info, model string) (usageOK bool) {
	c.endStep()
	c.b.Record(o.history+o.trajectory+1, o.rest)
	c.b.Keep(importer.Namespace(Name, "document"), c.b.Next())
	usageOK = true
	if ms := in.ModelStats; ms != nil && (ms.APICalls > 0 || ms.TokensSent > 0 || ms.TokensReceived > 0) {
		micros := math.Round(ms.InstanceCost * 1e6)
		_, tokensOK := importer.Tokens(ms.TokensSent, ms.TokensReceived)
		usageOK = tokensOK && micros >= 0 && micros < math.MaxInt64
		if usageOK {
			c.add("usage", importer.Obj{
				"inputTokens", ms.TokensSent,
				"outputTokens", ms.TokensReceived,
				"costMicros", importer.OptInt(int64(micros)),
				"model", importer.Opt(model),
			})
		}
	}
	if !c.turnOpen {
		return usageOK
	}
	for _, id := range c.pending {
		// Calls the trace holds no result for: closed as resume would.
		c.add("tool/result", importer.Obj{"id", id, "error", importer.MsgNoResult, "synthetic", true})
	}
	c.pending = nil
	if in.ExitStatus == nil {
		c.add("turn/end", importer.Obj{"kind", "interrupted", "reason", importer.ReasonTraceEnds})
		return usageOK
	}
	status := *in.ExitStatus
	kind := "failed"
	switch low := strings.ToLower(status); {
	case strings.Contains(low, "cost"), strings.Contains(low, "context"), strings.Contains(low, "limit"):
		kind = "budget"
	case strings.HasPrefix(low, "submitted"):
		kind = "completed"
	}
	c.add("turn/end", importer.Obj{"kind", kind, "reason", importer.Opt(status)})
	return usageOK
}
