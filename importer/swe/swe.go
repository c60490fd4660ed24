package swe

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"strings"

	"github.com/sessionlog/sessionlog/importer"
)

// Name is the --from value and the "source" label.
const Name = "swe-agent"

// New returns the importer of SWE-agent trajectories (*.traj).
func New() importer.Importer {
	return importer.Format{Label: Name, Suffix: ".traj", ParseFunc: parse, RecordsFunc: Records}
}

func parse(_ context.Context, r io.Reader, name string, _ importer.Config) (importer.Session, error) {
	return Parse(r, name)
}

type traj struct {
	Environment  json.RawMessage `json:"environment"`
	Trajectory   []step          `json:"trajectory"`
	History      []message       `json:"history"`
	Info         json.RawMessage `json:"info"`
	ReplayConfig json.RawMessage `json:"replay_config"`
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

// parts are a trajectory's records: its history and trajectory entries,
// and the document without them.
type parts struct {
	history, trajectory []json.RawMessage
	rest                json.RawMessage
}

// split reads a trajectory's records.
func split(data []byte) (parts, error) {
	var doc struct {
		History    []json.RawMessage `json:"history"`
		Trajectory []json.RawMessage `json:"trajectory"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return parts{}, importer.Formatf("not a SWE-agent trajectory (a JSON object with \"history\" and \"trajectory\"): %v", err)
	}
	if doc.History == nil || doc.Trajectory == nil {
		return parts{}, importer.Formatf(`not a SWE-agent trajectory: no "history" or no "trajectory"`)
	}
	rest, err := importer.Without(data, "history", "trajectory")
	if err != nil {
		return parts{}, importer.FormatError(err)
	}
	p := parts{rest: rest}
	for _, h := range doc.History {
		c, err := importer.Marshal(h)
		if err != nil {
			return parts{}, importer.FormatError(err)
		}
		p.history = append(p.history, c)
	}
	for _, h := range doc.Trajectory {
		c, err := importer.Marshal(h)
		if err != nil {
			return parts{}, importer.FormatError(err)
		}
		p.trajectory = append(p.trajectory, c)
	}
	return p, nil
}

// Records returns a trajectory's records in the order an import keeps
// them: each history entry, each trajectory entry, then the document
// without those two arrays (environment, info, replay_config…), each
// compacted.
func Records(data []byte) ([]json.RawMessage, error) {
	p, err := split(data)
	if err != nil {
		return nil, err
	}
	return append(append(p.history, p.trajectory...), p.rest), nil
}

// Parse converts one trajectory.
func Parse(r io.Reader, name string) (importer.Session, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return importer.Session{}, err
	}
	recs, err := split(data)
	if err != nil {
		return importer.Session{}, err
	}
	var t traj
	if err := json.Unmarshal(data, &t); err != nil {
		return importer.Session{}, importer.Formatf("not a SWE-agent trajectory: %v", err)
	}
	s := importer.NewSession(Name, name)
	s.SetLabel("sourceId", strings.TrimSuffix(filepath.Base(name), ".traj"))
	var env string
	if json.Unmarshal(t.Environment, &env) == nil {
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
	if json.Unmarshal(t.ReplayConfig, &rcs) == nil {
		_ = json.Unmarshal([]byte(rcs), &rc) // replay_config is a string of JSON
	} else {
		_ = json.Unmarshal(t.ReplayConfig, &rc)
	}
	s.SetLabel("model", rc.Agent.Model.Name)
	var in info
	if len(t.Info) > 0 {
		if err := json.Unmarshal(t.Info, &in); err != nil {
			return importer.Session{}, importer.Formatf("info: %v", err)
		}
	}
	if in.ExitStatus != nil {
		s.SetLabel("swe-agent.exitStatus", *in.ExitStatus)
	}

	c := &conv{uses: map[string]int{}, alias: map[string]string{}, taken: map[string]bool{}, parts: recs}
	c.history(t)
	if !c.end(t, in, rc.Agent.Model.Name) {
		s.Unmapped["usage out of range"]++
	}
	s.Records = c.b.Records()
	s.Events, err = c.b.Events()
	return s, err
}

// conv converts the history, keeping what the next message needs.
type conv struct {
	b        importer.Builder
	turnOpen bool
	stepOpen bool
	pending  []string          // call ids without a result, oldest first
	actions  int               // calls made so far
	uses     map[string]int    // source call id → calls that used it
	alias    map[string]string // source call id → the id of its latest call
	taken    map[string]bool   // ids of the tool/calls made
	parts    parts             // the records
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

func (c *conv) history(t traj) {
	for i, m := range t.History {
		c.b.Record(i+1, c.parts.history[i])
		c.message(m)
		c.b.Keep(importer.Namespace(Name, "history"), c.b.Next())
	}
	// The last observation is only in the trajectory.
	last := len(t.Trajectory) - 1
	for i := range t.Trajectory {
		c.b.Record(len(t.History)+i+1, c.parts.trajectory[i])
		if i == last && len(c.pending) > 0 && c.actions == len(t.Trajectory) {
			c.result(c.pending[0], t.Trajectory[i].Observation, c.b.Src())
		}
		c.b.Keep(importer.Namespace(Name, "trajectory"), c.b.Next())
	}
}

// message converts one history entry.
func (c *conv) message(m message) {
	content := text(m.Content)
	switch {
	case m.Role == "system":
		// The system prompt: the record alone (swe-agent/history).
	case m.IsDemo:
		c.endStep()
		c.openTurn()
		typ := "user/message"
		if m.Role == "assistant" {
			typ = "assistant/message"
		}
		c.add(typ, importer.Obj{"text", content, "demo", true, "source", c.b.Src()})
	case m.Role == "assistant":
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
	default:
		c.endStep()
		c.openTurn()
		c.add("user/message", importer.Obj{"text", content, "source", c.b.Src()})
	}
}

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
func (c *conv) end(t traj, in info, model string) (usageOK bool) {
	c.endStep()
	c.b.Record(len(t.History)+len(t.Trajectory)+1, c.parts.rest)
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
	if in.ExitStatus == nil || !c.turnOpen {
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
