package codex

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/importer"
)

// Name is the --from value and the "source" label.
const Name = "codex"

// New returns the importer of Codex CLI rollouts (rollout-*.jsonl).
func New() importer.Importer {
	return importer.Format{Label: Name, Prefix: "rollout-", Suffix: ".jsonl", ParseFunc: parse}
}

func parse(_ context.Context, r io.Reader, name string, _ importer.Config) (importer.Session, error) {
	return Parse(r, name)
}

// line is a rollout line: {timestamp, type, payload}.
type line struct {
	Timestamp string          `json:"timestamp"`
	Type      string          `json:"type"`
	Payload   json.RawMessage `json:"payload"`
}

// payload is what the converter reads of a payload, whatever its kind.
type payload struct {
	Type string `json:"type"`

	// session_meta
	ID            string          `json:"id"`
	Cwd           string          `json:"cwd"`
	Originator    string          `json:"originator"`
	CLIVersion    string          `json:"cli_version"`
	ModelProvider string          `json:"model_provider"`
	Source        json.RawMessage `json:"source"`
	ForkedFromID  string          `json:"forked_from_id"`

	// turn_context
	Model string `json:"model"`

	// response_item
	Role      string          `json:"role"`
	Content   json.RawMessage `json:"content"`
	Summary   json.RawMessage `json:"summary"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
	Input     json.RawMessage `json:"input"`
	CallID    string          `json:"call_id"`
	Output    json.RawMessage `json:"output"`
	Status    string          `json:"status"`
	Action    json.RawMessage `json:"action"`

	// compacted
	Message *string `json:"message"`

	// event_msg
	Info     *tokenInfo `json:"info"`
	NumTurns *int64     `json:"num_turns"`
	Reason   string     `json:"reason"`
}

type tokenInfo struct {
	Total *tokens `json:"total_token_usage"`
	Last  *tokens `json:"last_token_usage"`
}

type tokens struct {
	Input  int64 `json:"input_tokens"`
	Cached int64 `json:"cached_input_tokens"`
	Output int64 `json:"output_tokens"`
}

// Parse converts one Codex CLI rollout.
func Parse(r io.Reader, name string) (importer.Session, error) {
	p := &parser{s: importer.NewSession(Name, name)}
	torn, err := p.b.Lines(r, eventlog.MaxRowSize, func(n int, raw []byte) error {
		var l line
		if err := json.Unmarshal(raw, &l); err != nil || l.Type == "" || len(l.Payload) == 0 {
			if n == 1 || err == nil {
				return importer.Formatf("not a Codex rollout line {\"timestamp\",\"type\",\"payload\"}")
			}
			return importer.FormatError(err)
		}
		var pl payload
		if len(l.Payload) > 0 && json.Unmarshal(l.Payload, &pl) != nil {
			pl = payload{} // a payload of another shape: kept as the record
		}
		t := int64(-1)
		if ms, ok := importer.ParseTime(l.Timestamp); ok {
			t = ms
			if !p.timeSet {
				p.s.CreatedAt, p.timeSet = ms, true
			}
		}
		p.line(l.Type, pl, t)
		ns := l.Type
		if pl.Type != "" && l.Type != "session_meta" && l.Type != "turn_context" && l.Type != "compacted" {
			ns = l.Type + "/" + pl.Type
		}
		p.b.Keep(importer.Namespace(Name, ns), t)
		return nil
	})
	if err != nil {
		return importer.Session{}, err
	}
	p.s.Torn = torn
	p.s.Records = p.b.Records()
	p.s.Events, err = p.b.Events()
	return p.s, err
}

// parser converts lines, keeping what the next line needs.
type parser struct {
	s       importer.Session
	b       importer.Builder
	timeSet bool
	turn    bool    // a turn/start without its turn/end
	step    bool    // a step/start without its step/end
	starts  []int64 // seqs of the turn/starts on the live branch
	total   *tokens // the last running total of token_count
	model   string  // of the last turn_context
	pending map[string]bool
	calls   int // web searches without a call id so far
}

func (p *parser) line(typ string, pl payload, t int64) {
	switch typ {
	case "session_meta":
		p.meta(pl)
	case "turn_context":
		p.s.SetLabel("model", pl.Model)
		if pl.Model != "" {
			p.model = pl.Model
		}
		p.startTurn(t, true)
	case "response_item":
		p.item(pl, t)
	case "compacted":
		if pl.Message != nil {
			p.closeStep(t)
			p.b.Add("context/compacted", t, importer.Obj{"summary", *pl.Message, "source", p.b.Src()})
		}
	case "event_msg":
		p.event(pl, t)
	}
}

func (p *parser) meta(pl payload) {
	p.s.SetLabel("sourceId", pl.ID)
	p.s.SetLabel("cwd", pl.Cwd)
	p.s.SetLabel("codex.cliVersion", pl.CLIVersion)
	p.s.SetLabel("codex.modelProvider", pl.ModelProvider)
	p.s.SetLabel("codex.originator", pl.Originator)
	var src string
	if json.Unmarshal(pl.Source, &src) == nil {
		p.s.SetLabel("codex.source", src)
	}
	p.s.SetLabel("codex.forkedFromId", pl.ForkedFromID)
	if p.s.Key == "" {
		p.s.Key = pl.ID
	}
	if p.s.ForkOf == "" {
		p.s.ForkOf = pl.ForkedFromID
	}
}

// item converts a response_item: what the model saw and said.
func (p *parser) item(pl payload, t int64) {
	switch pl.Type {
	case "message":
		text := importer.Text(texts(pl.Content))
		switch pl.Role {
		case "assistant":
			p.openStep(t)
			p.b.Add("assistant/message", t, importer.Obj{"text", text, "source", p.b.Src()})
		case "user", "developer", "system":
			p.closeStep(t)
			p.openTurn(t)
			role := any(nil)
			if pl.Role != "user" {
				role = pl.Role
			}
			p.b.Add("user/message", t, importer.Obj{"text", text, "role", role, "source", p.b.Src()})
		}
	case "reasoning":
		p.openStep(t)
		p.b.Add("assistant/reasoning", t, importer.Obj{"text", importer.Text(texts(pl.Summary)), "source", p.b.Src()})
	case "function_call":
		p.call(pl.CallID, pl.Name, importer.Args(pl.Arguments), t)
	case "custom_tool_call":
		p.call(pl.CallID, pl.Name, importer.Obj{"input", text(pl.Input)}, t)
	case "function_call_output", "custom_tool_call_output":
		p.openTurn(t)
		p.b.Add("tool/result", t, importer.Obj{"id", pl.CallID, "output", output(pl.Output), "source", p.b.Src()})
		delete(p.pending, pl.CallID)
	case "web_search_call":
		id := pl.ID
		if id == "" {
			p.calls++
			id = fmt.Sprintf("web_search-%d", p.calls)
		}
		action := json.RawMessage(pl.Action)
		if len(action) == 0 {
			action = json.RawMessage("{}")
		}
		p.call(id, "web_search", action, t)
		p.b.Add("tool/result", t, importer.Obj{"id", id, "output", pl.Status, "source", p.b.Src()})
		delete(p.pending, id)
	}
}

func (p *parser) call(id, name string, args any, t int64) {
	p.openStep(t)
	p.b.Add("tool/call", t, importer.Obj{"id", id, "name", name, "args", args, "source", p.b.Src()})
	if p.pending == nil {
		p.pending = map[string]bool{}
	}
	p.pending[id] = true
}

// event converts an event_msg: what the UI was told.
func (p *parser) event(pl payload, t int64) {
	switch pl.Type {
	case "task_started", "turn_started":
		p.endTurn("interrupted", t, false) // a turn still open was cut off
		p.startTurn(t, true)
	case "task_complete", "turn_complete":
		p.endTurn("completed", t, true)
	case "turn_aborted":
		p.endTurn("interrupted", t, true)
	case "token_count":
		p.usage(pl.Info, t)
	case "thread_rolled_back":
		if pl.NumTurns != nil {
			p.rollback(*pl.NumTurns, t)
		}
	}
}

// usage adds the tokens of one model call: the difference between this
// running total and the last (last_token_usage when the total went back),
// and ends the step of that call.
func (p *parser) usage(info *tokenInfo, t int64) {
	if info == nil || info.Total == nil {
		return
	}
	d := *info.Total
	if prev := p.total; prev != nil {
		d = tokens{Input: d.Input - prev.Input, Cached: d.Cached - prev.Cached, Output: d.Output - prev.Output}
	}
	p.total = info.Total
	if d.Input < 0 || d.Cached < 0 || d.Output < 0 {
		if info.Last == nil {
			p.s.Unmapped["usage out of range"]++
			return
		}
		d = *info.Last
	}
	if d == (tokens{}) {
		return // the same total again: no model call since
	}
	if d.Input < 0 || d.Cached < 0 || d.Output < 0 {
		p.s.Unmapped["usage out of range"]++
		return
	}
	p.openStep(t)
	p.b.Add("usage", t, importer.Obj{
		"inputTokens", d.Input, "outputTokens", d.Output,
		"cachedTokens", importer.OptInt(d.Cached), "model", importer.Opt(p.model),
		"source", p.b.Src(),
	})
	p.closeStep(t)
}

// rollback undoes the last n turns: a rollback to the event before the
// first of them.
func (p *parser) rollback(n int64, t int64) {
	if n <= 0 || len(p.starts) == 0 {
		return
	}
	p.closeStep(t)
	k := max(int64(len(p.starts))-n, 0)
	to := p.starts[k] - 1
	if to < 0 {
		return
	}
	p.b.Add(eventlog.TypeRollback, t, importer.Obj{"to", to, "reason", fmt.Sprintf("codex: thread rolled back %d turns", n)})
	p.starts = p.starts[:k]
	p.turn, p.step = false, false
	p.pending = nil
}

// openTurn starts a turn unless one is open; marked, its turn/start
// carries the current record (a task_started or turn_context line).
func (p *parser) openTurn(t int64) { p.startTurn(t, false) }

func (p *parser) startTurn(t int64, marked bool) {
	if p.turn {
		return
	}
	data := importer.Obj{}
	if marked {
		data = importer.Obj{"source", p.b.Src()}
	}
	p.starts = append(p.starts, p.b.Add("turn/start", t, data))
	p.turn = true
}

func (p *parser) openStep(t int64) {
	p.openTurn(t)
	if !p.step {
		p.b.Add("step/start", t, importer.Obj{})
		p.step = true
	}
}

func (p *parser) closeStep(t int64) {
	if p.step {
		p.b.Add("step/end", t, importer.Obj{})
		p.step = false
	}
}

// endTurn ends the open turn; marked, its turn/end carries the current
// record (a task_complete or turn_aborted line).
func (p *parser) endTurn(kind string, t int64, marked bool) {
	if !p.turn {
		return
	}
	p.closeStep(t)
	data := importer.Obj{"kind", kind}
	if marked {
		data = append(data, "source", p.b.Src())
	}
	p.b.Add("turn/end", t, data)
	p.turn = false
	p.pending = nil
}

// texts are the text parts of a message's content ([{type, text}…]) or of
// a reasoning summary.
func texts(raw json.RawMessage) []string {
	var parts []struct {
		Text *string `json:"text"`
	}
	if json.Unmarshal(raw, &parts) != nil {
		return nil
	}
	var out []string
	for _, part := range parts {
		if part.Text != nil {
			out = append(out, *part.Text)
		}
	}
	return out
}

// text is a JSON string's value, or the JSON itself for another value.
func text(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return strings.TrimSpace(string(raw))
}

// output is a call's output as text: a string, an object's "content"
// (older rollouts: {"content","success"?}), or the JSON.
func output(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var o struct {
		Content *string `json:"content"`
	}
	if json.Unmarshal(raw, &o) == nil && o.Content != nil {
		return *o.Content
	}
	if p := texts(raw); p != nil {
		return strings.Join(p, "\n")
	}
	return strings.TrimSpace(string(raw))
}
