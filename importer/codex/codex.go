package codex

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"unicode"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/importer"
)

// Name is the --from value and the "source" label.
const Name = "codex"

// New returns the importer of Codex rollouts (rollout-*.jsonl).
func New() importer.Importer {
	return importer.Format{Label: Name, Prefix: "rollout-", Suffix: ".jsonl", SniffFunc: Sniff, ConvertFunc: convert}
}

func convert(ctx context.Context, r io.ReadSeeker, name string, cfg importer.Config, emit importer.Emit) (importer.Session, error) {
	return Convert(ctx, r, name, cfg, emit)
}

// Parse converts one rollout, its events collected in the session (for
// tests and small traces).
func Parse(r io.ReadSeeker, name string) (importer.Session, error) {
	return importer.Parse(context.Background(), New(), r, name, importer.Config{})
}

// itemTypes are the rollout line types (RolloutItem's), in every version.
var itemTypes = []string{
	"session_meta", "response_item", "event_msg", "turn_context", "compacted",
	"inter_agent_communication", "inter_agent_communication_metadata", "token_usage_record",
	"world_state", "retained_context", "security_risk_score", "realtime_item",
}

// responseTypes are the types of a response item (ResponseItem's), which
// the first rollouts wrote bare, one a line.
var responseTypes = []string{
	"message", "reasoning", "function_call", "function_call_output", "custom_tool_call",
	"custom_tool_call_output", "local_shell_call", "web_search_call", "tool_search_call",
	"tool_search_output", "image_generation_call", "compaction", "compaction_summary",
	"context_compaction", "agent_message", "additional_tools", "ghost_snapshot",
}

// Sniff reports whether head starts like a rollout: a line
// {"timestamp","type","payload"} of a rollout line type, or the first
// rollouts' header {"id","timestamp"} with no type.
func Sniff(head []byte) bool {
	m, ok := importer.Head(head)
	if !ok {
		return false
	}
	if _, ok := m["payload"]; ok {
		_, ts := m["timestamp"]
		return ts && slices.Contains(itemTypes, importer.HeadString(m, "type"))
	}
	_, typed := m["type"]
	return !typed && importer.HeadString(m, "id") != "" && importer.HeadString(m, "timestamp") != "" && len(m) <= 4
}

// line is a rollout line: {timestamp, type, payload} (every rollout
// since the first few), or a bare response item, a {"record_type"}
// marker or the {"id","timestamp"} header (the first rollouts').
type line struct {
	Timestamp  string          `json:"timestamp"`
	Type       string          `json:"type"`
	Payload    json.RawMessage `json:"payload"`
	RecordType string          `json:"record_type"`
	ID         string          `json:"id"`
}

// payload is what the converter reads of a payload, whatever its kind.
type payload struct {
	Type string `json:"type"`

	// session_meta
	ID            string          `json:"id"`
	Timestamp     string          `json:"timestamp"`
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
	Phase     string          `json:"phase"`
	Content   json.RawMessage `json:"content"`
	Summary   json.RawMessage `json:"summary"`
	Name      string          `json:"name"`
	Namespace string          `json:"namespace"`
	Arguments json.RawMessage `json:"arguments"`
	Input     json.RawMessage `json:"input"`
	CallID    string          `json:"call_id"`
	Output    json.RawMessage `json:"output"`
	Status    string          `json:"status"`
	Action    json.RawMessage `json:"action"`
	Tools     json.RawMessage `json:"tools"`
	Author    string          `json:"author"`
	Recipient string          `json:"recipient"`
	Revised   string          `json:"revised_prompt"`

	// compacted, event_msg user_message and agent messages
	Message *string         `json:"message"`
	Kind    json.RawMessage `json:"kind"`
	Images  []string        `json:"images"`

	// event_msg
	Info     *tokenInfo      `json:"info"`
	NumTurns *int64          `json:"num_turns"`
	Reason   json.RawMessage `json:"reason"`
	Item     *turnItem       `json:"item"`
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

// turnItem is the item of an event_msg item_completed (the newest
// rollouts record the user's messages so).
type turnItem struct {
	Type    string `json:"type"`
	Content []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
}

// Convert converts one rollout, handing its events to emit record by
// record (see the package doc).
func Convert(ctx context.Context, r io.Reader, name string, cfg importer.Config, emit importer.Emit) (importer.Session, error) {
	p := &parser{state: state{s: importer.NewSession(Name, name)}}
	p.b = importer.NewBuilder(cfg, emit)
	p.undo = importer.NewUndo[state](p.b)
	err := p.b.Lines(ctx, r, func(n int, raw []byte) error {
		p.settle(true)
		var l line
		if err := json.Unmarshal(raw, &l); err != nil {
			if p.b.Records() == 1 {
				return importer.Formatf("not a Codex rollout line {\"timestamp\",\"type\",\"payload\"}")
			}
			return importer.FormatError(err)
		}
		ns, err := p.line(l, raw)
		if err != nil {
			return err
		}
		p.b.Keep(importer.Namespace(Name, ns), p.t)
		return nil
	})
	p.settle(false)
	if err != nil {
		return importer.Session{}, err
	}
	p.finish()
	if p.s.Key != "" {
		p.s.ID = p.s.Key
	}
	if err := p.b.Done(&p.s); err != nil {
		return importer.Session{}, err
	}
	return p.s, nil
}

// How a turn was opened: what may close it (see turnContext).
const (
	byTask    = iota + 1 // event_msg task_started: closed by task_complete or turn_aborted
	byContext            // turn_context, in rollouts that record no task events: closed by the next
	byPrompt             // a prompt, in rollouts that record neither
)

// parser converts lines, keeping what the next line needs (its state).
type parser struct {
	b *importer.Builder
	state
	// undo keeps the state as the current line found it: a line the
	// builder drops (a bad record: Drop takes back its events) leaves the
	// state as it was (settle).
	undo   *importer.Undo[state]
	shared bool // the session's maps are the kept state's
}

// state is what the lines converted so far leave for the next: the
// session they tell and the turn, step and calls their events open.
type state struct {
	// s is the session; a line changes its maps through session and
	// unmapped only (see clone).
	s       importer.Session
	t       int64 // time of the current line (-1: none)
	timeSet bool

	turn       int     // how the open turn was opened (by…), 0 when none
	tasks      bool    // the rollout records task events
	step       bool    // a step/start without its step/end
	lastAnswer bool    // the last event of the turn came from the model
	starts     []int64 // seqs of the turn/starts on the live branch
	total      *tokens // the last running total of token_count
	model      string  // of the last turn_context
	pending    importer.Calls
	searches   int // web searches without an id so far

	// lastPrompt is the text of the turn's last prompt and whether it
	// came from a response item (Codex records a prompt twice: as the
	// item the model was sent and as the event the UI was told).
	lastPrompt     string
	lastPromptItem bool
}

// settle runs as each line begins (inRecord) and after the last: if the
// builder dropped the line before (a bad record), the state is put back
// as that line found it; then the state is kept as the next line finds
// it.
func (p *parser) settle(inRecord bool) {
	p.undo.Settle(inRecord, func(state) state { return p.clone() }, func(s state) { p.state = s })
}

// clone returns the state for before, which the line about to begin
// must not change: the pending calls are copied; the session's maps are
// copied when the line first changes them (own), which few lines do.
// starts is shared: it is only appended to, and a rollback clips what it
// keeps (so an append after it does not write over what a copy holds).
func (p *parser) clone() state {
	c := p.state
	p.shared = true
	c.pending = importer.Calls{}
	for _, id := range p.pending.IDs() {
		c.pending.Call(id)
	}
	return c
}

// session returns the session for a change of its labels.
func (p *parser) session() *importer.Session {
	p.own()
	return &p.s
}

// unmapped counts a part of a line no event stands for.
func (p *parser) unmapped(kind string) {
	p.own()
	p.s.Unmapped[kind]++
}

// own gives the session maps of its own, not shared with before.
func (p *parser) own() {
	if p.shared {
		p.s.Labels, p.s.Unmapped = maps.Clone(p.s.Labels), maps.Clone(p.s.Unmapped)
		p.shared = false
	}
}

// line converts one line and returns its type in the codex namespace.
func (p *parser) line(l line, raw []byte) (string, error) {
	t := int64(-1)
	p.t = -1
	stamp := l.Timestamp
	switch {
	case l.Type != "" && len(l.Payload) > 0:
		if !slices.Contains(itemTypes, l.Type) && p.b.Records() == 1 {
			return "", importer.Formatf("not a Codex rollout line: type %q", l.Type)
		}
	case l.RecordType != "":
		p.setTime(stamp, &t)
		return "state", nil
	case l.Type == "" && l.ID != "" && l.Timestamp != "":
		// The first rollouts' header.
		p.setTime(stamp, &t)
		p.meta(payload{ID: l.ID})
		return "session_meta", nil
	case slices.Contains(responseTypes, l.Type):
		// A bare response item (the first rollouts).
		var pl payload
		_ = json.Unmarshal(raw, &pl) // it parsed as a line: an object
		p.setTime(stamp, &t)
		p.item(pl, t)
		return "response_item/" + l.Type, nil
	default:
		if p.b.Records() == 1 {
			return "", importer.Formatf("not a Codex rollout line {\"timestamp\",\"type\",\"payload\"}")
		}
		return "", nil
	}
	var pl payload
	if json.Unmarshal(l.Payload, &pl) != nil {
		pl = payload{} // a payload of another shape: kept as the record
	}
	p.setTime(stamp, &t)
	switch l.Type {
	case "session_meta":
		if pl.Timestamp != "" && !p.timeSet {
			p.setTime(pl.Timestamp, &t)
		}
		p.meta(pl)
	case "turn_context":
		p.session().SetLabel("model", pl.Model)
		if pl.Model != "" {
			p.model = pl.Model
		}
		p.turnContext(t)
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
	switch l.Type {
	case "response_item", "event_msg":
		if pl.Type != "" {
			return l.Type + "/" + pl.Type, nil
		}
	}
	return l.Type, nil
}

// setTime reads a line's timestamp into t; the first one is createdAt.
func (p *parser) setTime(stamp string, t *int64) {
	if ms, ok := importer.ParseTime(stamp); ok {
		*t = ms
		if !p.timeSet {
			p.s.CreatedAt, p.timeSet = ms, true
		}
	}
	p.t = *t
}

func (p *parser) meta(pl payload) {
	s := p.session()
	s.SetLabel("sourceId", pl.ID)
	s.SetLabel("cwd", pl.Cwd)
	s.SetLabel("codex.cliVersion", pl.CLIVersion)
	s.SetLabel("codex.modelProvider", pl.ModelProvider)
	s.SetLabel("codex.originator", pl.Originator)
	var src string
	if json.Unmarshal(pl.Source, &src) == nil {
		s.SetLabel("codex.source", src)
	} else if len(pl.Source) > 0 && string(pl.Source) != "null" {
		if c, err := importer.Marshal(pl.Source); err == nil {
			s.SetLabel("codex.source", strings.ToValidUTF8(string(c), "\uFFFD"))
		}
	}
	s.SetLabel("codex.forkedFromId", pl.ForkedFromID)
	if s.Key == "" {
		s.Key = pl.ID
	}
	if s.ForkOf == "" {
		s.ForkOf = pl.ForkedFromID
	}
}

// contextMarkers are how the texts Codex writes as user input, which
// nobody typed, start (instructions, environment, skills, notifications).
var contextMarkers = []struct{ prefix, kind string }{
	{"<environment_context>", "environment"},
	{"<user_instructions>", "instructions"},
	{"# AGENTS.md instructions", "instructions"},
	{"<INSTRUCTIONS>", "instructions"},
	{"<permissions instructions>", "instructions"},
	{"<developer_instructions>", "instructions"},
	{"<collaboration_mode>", "instructions"},
	{"<skills_instructions>", "instructions"},
	{"<plugins_instructions>", "instructions"},
	{"<recommended_plugins>", "instructions"},
	{"<plugins>", "instructions"},
	{"<subagents>", "instructions"},
	{"<skills_section", "instructions"},
	{"<js_repl_instructions>", "instructions"},
	{"<child_agents_instructions>", "instructions"},
	{"<app-context>", "environment"},
	{"<ide_opened_file>", "environment"},
	{"<skill>", "skill"},
	{"<user_shell_command>", "shell-command"},
	{"<turn_aborted>", "notification"},
	{"<subagent_notification>", "notification"},
	{"<task-notification>", "notification"},
}

// contextKind returns the kind of a user text Codex wrote itself, "" for
// a prompt.
func contextKind(text string) string {
	t := strings.TrimLeft(text, " \t\r\n")
	for _, m := range contextMarkers {
		if strings.HasPrefix(t, m.prefix) {
			return m.kind
		}
	}
	return ""
}

// item converts a response_item: what the model saw and said.
func (p *parser) item(pl payload, t int64) {
	switch pl.Type {
	case "message":
		switch pl.Role {
		case "assistant":
			p.openStep(t)
			p.b.Add("assistant/message", t, importer.Obj{"text", importer.Text(texts(pl.Content)), "phase", importer.Opt(pl.Phase), "source", p.b.Src()})
			p.lastAnswer = true
		case "user":
			for _, text := range texts(pl.Content) {
				p.userText(text, "", true, t)
			}
			for range images(pl.Content) {
				p.userText("[image]", "", true, t)
			}
		default: // developer, system: the harness's instructions
			for _, text := range texts(pl.Content) {
				p.context(text, pl.Role, pl.Role, t)
			}
		}
	case "agent_message":
		// A message from another agent of the thread, to the model.
		p.b.Add(importer.TypeContext, t, importer.Obj{"text", importer.Text(texts(pl.Content)), "kind", "agent-message",
			"from", importer.Opt(pl.Author), "to", importer.Opt(pl.Recipient), "source", p.b.Src()})
	case "reasoning":
		text := importer.Text(texts(pl.Summary))
		if text == "" {
			text = importer.Text(texts(pl.Content))
		}
		p.openStep(t)
		p.b.Add("assistant/reasoning", t, importer.Obj{"text", text, "source", p.b.Src()})
	case "function_call":
		name := pl.Name
		if pl.Namespace != "" {
			name = pl.Namespace + "." + name
		}
		p.call(pl.CallID, name, importer.Args(pl.Arguments), t)
	case "custom_tool_call":
		p.call(pl.CallID, pl.Name, importer.Obj{"input", text(pl.Input)}, t)
	case "local_shell_call":
		p.call(p.callID(pl.CallID, pl.ID, "local_shell"), "local_shell", orEmpty(pl.Action), t)
	case "tool_search_call":
		p.call(p.callID(pl.CallID, pl.ID, "tool_search"), "tool_search", orEmpty(pl.Arguments), t)
	case "function_call_output", "custom_tool_call_output":
		out, failed := output(pl.Output)
		key := "output"
		if failed {
			key = "error"
		}
		p.result(pl.CallID, key, out, t)
	case "tool_search_output":
		p.result(pl.CallID, "output", strings.TrimSpace(string(pl.Tools)), t)
	case "web_search_call":
		id := p.callID("", pl.ID, "web_search")
		p.call(id, "web_search", orEmpty(pl.Action), t)
		p.result(id, "output", pl.Status, t)
	case "image_generation_call":
		id := p.callID("", pl.ID, "image_generation")
		p.call(id, "image_generation", importer.Obj{"revised_prompt", importer.Opt(pl.Revised)}, t)
		p.result(id, "output", pl.Status, t)
	}
}

// callID is a call's id: the call_id, else the item's id, else
// "<name>-<n>".
func (p *parser) callID(callID, id, name string) string {
	switch {
	case callID != "":
		return callID
	case id != "":
		return id
	}
	p.searches++
	return fmt.Sprintf("%s-%d", name, p.searches)
}

func orEmpty(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 || string(raw) == "null" {
		return json.RawMessage("{}")
	}
	return raw
}

// userText converts one text the user role sent: context when Codex wrote
// it (kind, or a marker), else a prompt — unless it repeats the turn's
// last prompt from the other record of it (item and event).
func (p *parser) userText(text, kind string, fromItem bool, t int64) {
	if kind == "" {
		kind = contextKind(text)
	}
	if kind != "" {
		p.context(text, kind, "user", t)
		return
	}
	if p.lastPrompt != "" && p.lastPromptItem != fromItem && squash(p.lastPrompt) == squash(text) {
		p.lastPrompt = "" // the same prompt, recorded again: its record is kept
		return
	}
	if p.turn == 0 || (p.turn == byPrompt && p.lastAnswer) {
		p.endTurn("completed", "", false, t)
		p.startTurn(t, byPrompt, false)
	}
	p.closeStep(t)
	p.b.Add("user/message", t, importer.Obj{"text", text, "source", p.b.Src()})
	p.lastPrompt, p.lastPromptItem, p.lastAnswer = text, fromItem, false
}

// squash is text without white space, to compare the two records of one
// prompt (Codex joins its parts differently in each).
func squash(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsSpace(r) {
			return -1
		}
		return r
	}, s)
}

// context adds a context/message: text the model was given that nobody
// typed.
func (p *parser) context(text, kind, role string, t int64) {
	p.b.Add(importer.TypeContext, t, importer.Obj{"text", text, "kind", kind, "role", importer.Opt(role), "source", p.b.Src()})
}

func (p *parser) call(id, name string, args any, t int64) {
	p.openStep(t)
	p.b.Add("tool/call", t, importer.Obj{"id", id, "name", name, "args", args, "source", p.b.Src()})
	p.pending.Call(id)
	p.lastAnswer = false
}

func (p *parser) result(id, key, out string, t int64) {
	p.openTurn(t)
	p.b.Add("tool/result", t, importer.Obj{"id", id, key, out, "source", p.b.Src()})
	p.pending.Result(id)
	p.lastAnswer = false
}

// event converts an event_msg: what the UI was told.
func (p *parser) event(pl payload, t int64) {
	switch pl.Type {
	case "task_started", "turn_started":
		p.tasks = true
		if p.turn == byContext && p.b.Next() == p.starts[len(p.starts)-1]+1 {
			p.turn = byTask // the turn its turn_context just opened
			return
		}
		p.endTurn("interrupted", "a new task started", false, t) // a turn still open was cut off
		p.startTurn(t, byTask, true)
	case "task_complete", "turn_complete":
		p.endTurn("completed", "", true, t)
	case "turn_aborted":
		var reason string
		_ = json.Unmarshal(pl.Reason, &reason)
		p.endTurn("interrupted", reason, true, t)
	case "token_count":
		p.usage(pl.Info, t)
	case "thread_rolled_back":
		if pl.NumTurns != nil {
			p.rollback(*pl.NumTurns, t)
		}
	case "user_message":
		if pl.Message == nil {
			return
		}
		var kind string
		_ = json.Unmarshal(pl.Kind, &kind)
		switch kind {
		case "user_instructions":
			kind = "instructions"
		case "environment_context":
			kind = "environment"
		default:
			kind = ""
		}
		text := *pl.Message
		if text == "" && len(pl.Images) > 0 {
			text = "[image]"
		}
		p.userText(text, kind, false, t)
	case "item_completed":
		if pl.Item != nil && pl.Item.Type == "UserMessage" {
			var parts []string
			for _, c := range pl.Item.Content {
				if c.Type == "text" {
					parts = append(parts, c.Text)
				}
			}
			if len(parts) > 0 {
				p.userText(strings.Join(parts, ""), "", false, t)
			}
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
			p.unmapped("usage out of range")
			return
		}
		d = *info.Last
	}
	if d == (tokens{}) {
		return // the same total again: no model call since
	}
	if d.Input < 0 || d.Cached < 0 || d.Output < 0 {
		p.unmapped("usage out of range")
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
	p.starts = slices.Clip(p.starts[:k]) // the next append copies: see clone
	p.turn, p.step, p.lastAnswer = 0, false, false
	p.pending.Clear()
}

// turnContext reads a turn_context: in a rollout that records task
// events it belongs to the open task; in one that does not, it starts the
// next turn.
func (p *parser) turnContext(t int64) {
	switch {
	case p.tasks || p.turn == byTask:
		return
	case p.turn != 0:
		p.endTurn(p.closingKind(), "", false, t)
	}
	p.startTurn(t, byContext, true)
}

// openTurn starts a turn unless one is open.
func (p *parser) openTurn(t int64) {
	if p.turn == 0 {
		p.startTurn(t, byPrompt, false)
	}
}

// startTurn starts a turn opened by how; marked, its turn/start carries
// the current record (a task_started or turn_context line).
func (p *parser) startTurn(t int64, how int, marked bool) {
	if p.turn != 0 {
		return
	}
	data := importer.Obj{}
	if marked {
		data = importer.Obj{"source", p.b.Src()}
	}
	p.starts = append(p.starts, p.b.Add("turn/start", t, data))
	p.turn, p.lastAnswer, p.lastPrompt = how, false, ""
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

// closingKind is how the open turn ends when its end comes now: completed,
// or interrupted when calls are without a result.
func (p *parser) closingKind() string {
	if p.pending.Len() > 0 {
		return "interrupted"
	}
	return "completed"
}

// endTurn ends the open turn: calls without a result get a synthetic one,
// the step ends, and turn/end says kind and reason; marked, it carries the
// current record (a task_complete or turn_aborted line).
func (p *parser) endTurn(kind, reason string, marked bool, t int64) {
	if p.turn == 0 {
		return
	}
	if p.pending.Len() > 0 {
		p.b.Unanswered(&p.pending, t)
		if kind == "completed" {
			kind = "interrupted"
		}
	}
	p.closeStep(t)
	data := importer.Obj{"kind", kind, "reason", importer.Opt(reason)}
	if marked {
		data = append(data, "source", p.b.Src())
	}
	p.b.Add("turn/end", t, data)
	p.turn, p.lastAnswer, p.lastPrompt = 0, false, ""
}

// finish closes the turn the end of the file leaves open: a task that
// never completed is interrupted (the rollout stops mid-turn: its calls
// get synthetic results); a turn of a rollout without task events is
// completed when the model had the last word.
func (p *parser) finish() {
	if p.turn == 0 {
		return
	}
	if p.turn != byTask && p.lastAnswer && p.pending.Len() == 0 {
		p.endTurn("completed", "", false, -1)
		return
	}
	p.endTurn("interrupted", importer.ReasonTraceEnds, false, -1)
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

// images are the image parts of a message's content.
func images(raw json.RawMessage) []string {
	var parts []struct {
		Type string `json:"type"`
	}
	if json.Unmarshal(raw, &parts) != nil {
		return nil
	}
	var out []string
	for _, part := range parts {
		if part.Type == "input_image" {
			out = append(out, part.Type)
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

// output is a call's output as text, and whether it says the call failed:
// a string, an object's "content" (the first rollouts:
// {"content","success"}), the text parts of content items, or the JSON.
func output(raw json.RawMessage) (string, bool) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, false
	}
	var o struct {
		Content *string `json:"content"`
		Success *bool   `json:"success"`
	}
	if json.Unmarshal(raw, &o) == nil && o.Content != nil {
		return *o.Content, o.Success != nil && !*o.Success
	}
	if p := texts(raw); p != nil {
		return strings.Join(p, "\n"), false
	}
	return strings.TrimSpace(string(raw)), false
}
