package claude

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"maps"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/spf13/afero"

	"github.com/sessionlog/sessionlog/importer"
)

// Name is the --from value and the "source" label.
const Name = "claude"

// New returns the importer of Claude Code transcripts (*.jsonl), each
// with its subagents.
func New() importer.Importer {
	return importer.Format{Label: Name, Suffix: ".jsonl", SniffFunc: Sniff, ConvertFunc: convert, ChildrenFunc: Subagents}
}

func convert(ctx context.Context, r io.ReadSeeker, name string, cfg importer.Config, emit importer.Emit) (importer.Session, error) {
	return Convert(ctx, r, name, cfg, emit)
}

// Parse converts one transcript, its events collected in the session (for
// tests and small traces).
func Parse(r io.ReadSeeker, name string) (importer.Session, error) {
	return importer.Parse(context.Background(), New(), r, name, importer.Config{})
}

// Subagents lists the subagent transcripts of the session in path:
// <path without .jsonl>/subagents/agent-*.jsonl, sorted.
func Subagents(fsys afero.Fs, path string) ([]string, error) {
	base, ok := strings.CutSuffix(path, ".jsonl")
	if !ok || filepath.Base(filepath.Dir(path)) == "subagents" {
		return nil, nil
	}
	files, err := afero.Glob(fsys, filepath.Join(base, "subagents", "agent-*.jsonl"))
	if err != nil {
		return nil, err
	}
	sort.Strings(files)
	return files, nil
}

// recordTypes are the line types Claude Code writes (the package doc says
// what each becomes). A file whose first line is one of them is a
// transcript (Sniff); a file of these lines only, without a conversation,
// is still one (it is imported as claude/* events).
var recordTypes = []string{
	"user", "assistant", "system", "summary", "progress", "attachment",
	"file-history-snapshot", "queue-operation", "custom-title", "ai-title", "agent-name",
	"last-prompt", "pr-link", "permission-mode", "agent-setting", "bridge-session",
	"worktree-state", "tag", "content-replacement", "speculation-accept",
	"attribution-snapshot", "marble-origami-commit", "marble-origami-snapshot",
}

// Sniff reports whether head starts like a Claude Code transcript: a JSON
// object with a "type" and a field only Claude Code lines have, the type
// one Claude Code writes — or any, beside a sessionId (a type of a later
// version).
func Sniff(head []byte) bool {
	m, ok := importer.Head(head)
	typ := importer.HeadString(m, "type")
	if !ok || typ == "" {
		return false
	}
	if _, payload := m["payload"]; !slices.Contains(recordTypes, typ) && (payload || importer.HeadString(m, "sessionId") == "") {
		return false
	}
	for _, k := range []string{"sessionId", "uuid", "parentUuid", "leafUuid", "messageId", "isSidechain"} {
		if _, ok := m[k]; ok {
			return true
		}
	}
	return false
}

// line is what the converter reads of a transcript line.
type line struct {
	Type                      string          `json:"type"`
	Subtype                   string          `json:"subtype"`
	UUID                      string          `json:"uuid"`
	Timestamp                 string          `json:"timestamp"`
	SessionID                 string          `json:"sessionId"`
	AgentID                   string          `json:"agentId"`
	Cwd                       string          `json:"cwd"`
	Version                   string          `json:"version"`
	GitBranch                 string          `json:"gitBranch"`
	Slug                      string          `json:"slug"`
	IsMeta                    bool            `json:"isMeta"`
	IsSidechain               bool            `json:"isSidechain"`
	IsCompactSummary          bool            `json:"isCompactSummary"`
	IsVisibleInTranscriptOnly bool            `json:"isVisibleInTranscriptOnly"`
	IsAPIErrorMessage         bool            `json:"isApiErrorMessage"`
	Message                   *message        `json:"message"`
	ToolUseResult             json.RawMessage `json:"toolUseResult"`
	Summary                   string          `json:"summary"`
	CustomTitle               string          `json:"customTitle"`
	AITitle                   string          `json:"aiTitle"`
	AgentName                 string          `json:"agentName"`
	Content                   json.RawMessage `json:"content"`
	Attachment                *attachment     `json:"attachment"`
	Origin                    *origin         `json:"origin"`
}

// origin is where newer Claude Code says a user line or a queued command
// came from: {"kind":"human"} for what a person typed (OriginHuman).
type origin struct {
	Kind string `json:"kind"`
}

// kind is the origin's kind, "" when the line has none.
func (o *origin) kind() string {
	if o == nil {
		return ""
	}
	return o.Kind
}

type message struct {
	ID      string          `json:"id"`
	Model   string          `json:"model"`
	Content json.RawMessage `json:"content"`
	Usage   *usage          `json:"usage"`
}

type usage struct {
	InputTokens   int64 `json:"input_tokens"`
	OutputTokens  int64 `json:"output_tokens"`
	CacheCreation int64 `json:"cache_creation_input_tokens"`
	CacheRead     int64 `json:"cache_read_input_tokens"`
}

type attachment struct {
	Type        string          `json:"type"`
	Prompt      json.RawMessage `json:"prompt"`
	IsMeta      bool            `json:"isMeta"`
	CommandMode string          `json:"commandMode"`
	Origin      *origin         `json:"origin"`
}

// block is one content block of a message.
type block struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	Thinking  string          `json:"thinking"`
	Signature string          `json:"signature"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
	IsError   bool            `json:"is_error"`
}

// synthetic is the model name Claude Code gives messages it made itself
// (an API error, "No response requested.").
const synthetic = "<synthetic>"

// Convert converts one Claude Code transcript, handing its events to emit
// record by record (see the package doc).
func Convert(ctx context.Context, r io.Reader, name string, cfg importer.Config, emit importer.Emit) (importer.Session, error) {
	p := &parser{s: importer.NewSession(Name, name), calls: map[string]int64{}}
	p.b = importer.NewBuilder(cfg, emit)
	p.undo = importer.NewUndo[parserState](p.b)
	seen := false
	err := p.b.Lines(ctx, r, func(n int, raw []byte) error {
		p.settle(true)
		var l line
		err := json.Unmarshal(raw, &l)
		switch {
		case err != nil && !seen:
			return importer.Formatf("not a Claude Code transcript line: %v", err)
		case err != nil:
			return importer.FormatError(err)
		case l.Type == "" && !seen:
			return importer.Formatf("not a Claude Code transcript line (no \"type\")")
		case l.Type == "":
			return importer.Formatf("no \"type\"")
		}
		seen = true
		if err := p.line(l); err != nil {
			return err
		}
		p.b.Keep(importer.Namespace(Name, l.Type), p.t)
		return nil
	})
	p.settle(false)
	if err != nil {
		return importer.Session{}, err
	}
	if !p.messages {
		// Claude Code leaves files of bookkeeping lines only (summaries of
		// other sessions, say): a transcript without a conversation.
		for _, typ := range slices.Sorted(maps.Keys(p.other)) {
			if !slices.Contains(recordTypes, typ) {
				return importer.Session{}, importer.Formatf("no user or assistant line, and lines of type %q: not a Claude Code transcript", typ)
			}
		}
		if len(p.other) == 0 {
			return importer.Session{}, importer.Formatf("no user or assistant line: not a Claude Code transcript")
		}
	}
	p.finish()
	p.labels()
	if err := p.b.Done(&p.s); err != nil {
		return importer.Session{}, err
	}
	return p.s, nil
}

// parser converts lines, keeping what the next line needs.
type parser struct {
	s importer.Session
	b *importer.Builder
	t int64 // time of the current line (-1: none)

	messages   bool           // a user or assistant line was seen
	other      map[string]int // lines of other types, by type
	sidechain  bool           // isSidechain of the first user or assistant line
	timeSet    bool           // createdAt is set
	turnOpen   bool           // a turn/start without its turn/end
	lastAnswer bool           // the last event of the turn came from a model response
	step       string         // message.id of the open step, "" when none
	// turnAt and stepAt are the seqs of the open turn's turn/start and
	// the open step's step/start.
	turnAt, stepAt int64
	stepUsage      *usage
	stepModel      string
	pending        importer.Calls   // calls of the turn without a result
	calls          map[string]int64 // call id → seq of its tool/call

	// undo keeps the parser's state as the current record found it: a
	// record the builder drops (a bad record: Drop takes back its events,
	// a step/end as much as a step/start) leaves the state as it was, its
	// labels, titles and identity included (settle).
	undo *importer.Undo[parserState]

	sessionID, agentID                 string
	customTitle, aiTitle, summaryTitle string
}

func (p *parser) line(l line) error {
	t := int64(-1)
	defer func() { p.t = t }()
	if ms, ok := importer.ParseTime(l.Timestamp); ok {
		t = ms
		if !p.timeSet {
			p.s.CreatedAt, p.timeSet = ms, true
		}
	}
	if p.sessionID == "" {
		p.sessionID = l.SessionID
	}
	switch l.Type {
	case "user", "assistant":
		if l.Message == nil {
			p.s.Unmapped[l.Type+" without message"]++
			return nil
		}
		if !p.messages {
			p.messages, p.sidechain = true, l.IsSidechain
		} else if l.IsSidechain != p.sidechain {
			// Older Claude Code wrote a subagent's lines into the main
			// transcript, marked isSidechain: not this conversation.
			p.s.Unmapped["sidechain "+l.Type]++
			return nil
		}
		p.envelope(l)
		if l.Type == "user" {
			return p.user(l, t)
		}
		return p.assistant(l, t)
	}
	if p.other == nil {
		p.other = map[string]int{}
	}
	p.other[l.Type]++
	switch l.Type {
	case "system":
		p.system(l, t)
	case "attachment":
		p.attachment(l, t)
	case "summary":
		if p.summaryTitle == "" {
			p.summaryTitle = l.Summary
		}
	case "custom-title":
		p.customTitle = l.CustomTitle
	case "ai-title":
		p.aiTitle = l.AITitle
	case "agent-name":
		p.s.Labels["claude.agentName"] = l.AgentName
		if l.AgentName == "" {
			delete(p.s.Labels, "claude.agentName")
		}
	default:
		p.s.Unmapped[l.Type]++
	}
	return nil
}

// envelope takes the labels a user or assistant line tells.
func (p *parser) envelope(l line) {
	p.s.SetLabel("sourceId", l.SessionID)
	p.s.SetLabel("cwd", l.Cwd)
	p.s.SetLabel("claude.version", l.Version)
	p.s.SetLabel("claude.gitBranch", l.GitBranch)
	p.s.SetLabel("claude.slug", l.Slug)
	if l.AgentID != "" && p.s.Key == "" {
		p.s.Key, p.agentID = l.AgentID, l.AgentID
		p.s.SetLabel("claude.agentId", l.AgentID)
	}
	if l.Type == "assistant" && l.Message.Model != synthetic {
		p.s.SetLabel("model", l.Message.Model)
	}
}

// labels sets what only the whole file tells: the title (the user's own,
// else Claude Code's, else the first summary) and the session's identity.
func (p *parser) labels() {
	for _, t := range []string{p.customTitle, p.aiTitle, p.summaryTitle} {
		if t != "" {
			p.s.Labels["title"] = t
			break
		}
	}
	if p.sessionID != "" {
		p.s.ID = p.sessionID
		if p.agentID != "" {
			p.s.ID += "/agent-" + p.agentID
		}
	}
}

// blocks reads a message's content: a string is one text block.
func blocks(content json.RawMessage) ([]block, error) {
	var s string
	if json.Unmarshal(content, &s) == nil {
		return []block{{Type: "text", Text: s}}, nil
	}
	var bs []block
	if err := json.Unmarshal(content, &bs); err != nil {
		return nil, importer.Formatf("message content is neither a string nor an array of blocks")
	}
	return bs, nil
}

func (p *parser) user(l line, t int64) error {
	bs, err := blocks(l.Message.Content)
	if err != nil {
		return err
	}
	var texts []string
	results := 0
	for _, b := range bs {
		switch b.Type {
		case "tool_result":
			p.toolResult(l, t, b, results == 0)
			results++
		case "text":
			texts = append(texts, b.Text)
		case "image", "document":
			texts = append(texts, "["+b.Type+"]")
		default:
			p.s.Unmapped["user block "+b.Type]++
		}
	}
	if len(texts) == 0 {
		return nil
	}
	text := importer.Text(texts)
	kind := Kind(l.IsMeta, l.IsCompactSummary, l.IsVisibleInTranscriptOnly, l.Origin.kind(), text)
	if kind == KindPrompt && strings.HasPrefix(p.agentID, compactionAgent) && l.Origin.kind() == "" {
		kind = KindCompaction // Claude Code asks its compaction sub-run for the summary
	}
	switch kind {
	case KindCompactSummary:
		p.closeStep()
		p.b.Add("context/compacted", t, importer.Obj{"summary", text, "source", p.b.Src()})
		p.lastAnswer = false
	case KindInterrupt:
		if p.turnOpen {
			p.endTurn("interrupted", text, true, t)
			return nil
		}
		p.context(kind, text, t)
	case KindPrompt:
		if results == 0 {
			p.newTurn(t)
		} else {
			p.openTurn(t) // typed while the tools ran: said within the turn
		}
		p.b.Add("user/message", t, importer.Obj{"text", text, "source", p.b.Src()})
		p.lastAnswer = false
	case KindTaskNotification, KindCompaction, l.Origin.kind():
		// A background task's end, a message Claude Code delivered from
		// elsewhere (another session), or its instruction to a compaction
		// sub-run makes Claude Code run the model on it: a turn of its
		// own, which no one typed.
		p.newTurn(t)
		p.context(kind, text, t)
	default:
		p.context(kind, text, t)
	}
	return nil
}

// context adds a context/message of the current line.
func (p *parser) context(kind, text string, t int64) {
	p.b.Add(importer.TypeContext, t, importer.Obj{"text", text, "kind", kind, "source", p.b.Src()})
}

// attachment reads an attachment line: a prompt queued while the model
// was answering is a user/message; what Claude Code queued itself (a
// task notification delivered mid-turn, another session's message) is
// context/message in the turn; every other attachment is context kept as
// claude/attachment.
func (p *parser) attachment(l line, t int64) {
	a := l.Attachment
	if a == nil || a.Type != "queued_command" || a.IsMeta || l.IsMeta {
		return
	}
	kind := queuedKind(a)
	bs, err := blocks(a.Prompt)
	if err != nil {
		return
	}
	var texts []string
	for _, b := range bs {
		switch b.Type {
		case "text":
			texts = append(texts, b.Text)
		case "image", "document":
			texts = append(texts, "["+b.Type+"]")
		}
	}
	if len(texts) == 0 {
		return
	}
	if kind != KindPrompt {
		p.context(kind, importer.Text(texts), t)
		return
	}
	p.openTurn(t)
	p.b.Add("user/message", t, importer.Obj{"text", importer.Text(texts), "queued", true, "source", p.b.Src()})
	p.lastAnswer = false
}

// queuedKind is the kind of a queued command: KindPrompt when a person
// typed it — its origin says "human", or, without an origin (older
// Claude Code), its commandMode is a prompt's or a ! command's — else
// its origin's kind or its commandMode ("task-notification").
func queuedKind(a *attachment) string {
	switch o := a.Origin.kind(); {
	case o == OriginHuman:
		return KindPrompt
	case o != "":
		return o
	}
	switch a.CommandMode {
	case "", "prompt", "bash":
		return KindPrompt
	}
	return a.CommandMode
}

func (p *parser) toolResult(l line, t int64, b block, first bool) {
	p.openTurn(t)
	out := resultText(b.Content)
	key := "output"
	if b.IsError {
		key = "error"
	}
	p.b.Add("tool/result", t, importer.Obj{"id", b.ToolUseID, key, out, "source", p.b.Src()})
	p.pending.Result(b.ToolUseID)
	p.lastAnswer = false
	if !first {
		return
	}
	// The Task (Agent) tool's result names the subagent it ran.
	var r struct {
		AgentID string `json:"agentId"`
	}
	if json.Unmarshal(l.ToolUseResult, &r) == nil && r.AgentID != "" {
		if seq, ok := p.calls[b.ToolUseID]; ok {
			p.s.Spawns[r.AgentID] = importer.Spawn{Seq: seq, Call: b.ToolUseID}
		}
	}
}

// resultText is a tool result's content as text: the string, or the text
// blocks joined ("[image]" for an image).
func resultText(content json.RawMessage) string {
	if len(bytes.TrimSpace(content)) == 0 || string(content) == "null" {
		return ""
	}
	var s string
	if json.Unmarshal(content, &s) == nil {
		return s
	}
	var bs []block
	if json.Unmarshal(content, &bs) != nil {
		return string(content)
	}
	var texts []string
	for _, b := range bs {
		switch b.Type {
		case "text":
			texts = append(texts, b.Text)
		default:
			texts = append(texts, "["+b.Type+"]")
		}
	}
	return strings.Join(texts, "\n")
}

func (p *parser) assistant(l line, t int64) error {
	bs, err := blocks(l.Message.Content)
	if err != nil {
		return err
	}
	if l.Message.Model == synthetic || l.IsAPIErrorMessage {
		// Claude Code's own words (an API error, "No response
		// requested."): not the model's.
		kind := KindSynthetic
		if l.IsAPIErrorMessage {
			kind = KindAPIError
		}
		for _, b := range bs {
			if b.Type == "text" && strings.TrimSpace(b.Text) != "" {
				p.context(kind, b.Text, t)
			}
		}
		return nil
	}
	p.openTurn(t)
	id := l.Message.ID
	if id == "" {
		id = "uuid:" + l.UUID
	}
	if id != p.step {
		p.closeStep()
		p.stepAt = p.b.Add("step/start", t, importer.Obj{})
		p.step = id
	}
	if l.Message.Usage != nil {
		p.stepUsage = l.Message.Usage
	}
	p.stepModel = l.Message.Model
	for _, b := range bs {
		switch b.Type {
		case "thinking":
			p.b.Add("assistant/reasoning", t, importer.Obj{"text", b.Thinking, "signature", importer.Opt(b.Signature), "source", p.b.Src()})
		case "redacted_thinking":
			p.b.Add("assistant/reasoning", t, importer.Obj{"text", "", "redacted", true, "source", p.b.Src()})
		case "text":
			if strings.TrimSpace(b.Text) == "" {
				p.s.Unmapped["blank text block"]++
				continue
			}
			p.b.Add("assistant/message", t, importer.Obj{"text", b.Text, "source", p.b.Src()})
		case "tool_use", "server_tool_use", "mcp_tool_use":
			args := b.Input
			if len(bytes.TrimSpace(args)) == 0 {
				args = json.RawMessage("{}")
			}
			p.calls[b.ID] = p.b.Add("tool/call", t, importer.Obj{"id", b.ID, "name", b.Name, "args", args, "source", p.b.Src()})
			p.pending.Call(b.ID)
		default:
			if strings.HasSuffix(b.Type, "_tool_result") {
				p.b.Add("tool/result", t, importer.Obj{"id", b.ToolUseID, "output", b.Content, "source", p.b.Src()})
				p.pending.Result(b.ToolUseID)
				continue
			}
			p.s.Unmapped["assistant block "+b.Type]++
		}
	}
	p.lastAnswer = true
	return nil
}

// system reads a system line: a turn's duration ends it, and so does the
// Stop hooks' summary of an answered turn; a compaction boundary closes
// the open step; text a system line carries is context. The line itself
// is kept as claude/system.
func (p *parser) system(l line, t int64) {
	switch l.Subtype {
	case "turn_duration":
		if p.turnOpen {
			p.endTurn(p.closingKind(), "", false, t)
		}
	case "stop_hook_summary":
		if p.turnOpen && p.lastAnswer && p.pending.Len() == 0 {
			p.endTurn("completed", "", false, t)
		}
	case "compact_boundary", "microcompact_boundary":
		p.closeStep()
	}
	var text string
	if json.Unmarshal(l.Content, &text) == nil && strings.TrimSpace(text) != "" {
		kind := "system"
		if l.Subtype != "" {
			kind += ":" + l.Subtype
		}
		p.context(kind, text, t)
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

// newTurn ends the open turn (see closingKind) and starts one.
func (p *parser) newTurn(t int64) {
	if p.turnOpen {
		p.endTurn(p.closingKind(), "", false, -1)
	}
	p.openTurn(t)
}

// openTurn starts a turn unless one is open.
func (p *parser) openTurn(t int64) {
	if !p.turnOpen {
		p.turnAt = p.b.Add("turn/start", t, importer.Obj{})
		p.turnOpen, p.lastAnswer = true, false
	}
}

// turnState is what of the parser a record's events open and close.
type turnState struct {
	turnOpen, lastAnswer bool
	step                 string
	turnAt, stepAt       int64
	stepUsage            *usage
	stepModel            string
	pending              []string
}

func (p *parser) state() turnState {
	return turnState{p.turnOpen, p.lastAnswer, p.step, p.turnAt, p.stepAt, p.stepUsage, p.stepModel, p.pending.IDs()}
}

// parserState is what a record can change of the parser beside its
// events: the turn and step, and what the session says of itself (its
// labels, titles, identity, time and the counts of what it did not map).
type parserState struct {
	turn                               turnState
	messages, sidechain, timeSet       bool
	createdAt                          int64
	key, sessionID, agentID            string
	customTitle, aiTitle, summaryTitle string
	labels                             map[string]string
	unmapped, other                    map[string]int
}

func (p *parser) save() parserState {
	return parserState{p.state(), p.messages, p.sidechain, p.timeSet, p.s.CreatedAt, p.s.Key, p.sessionID, p.agentID,
		p.customTitle, p.aiTitle, p.summaryTitle, maps.Clone(p.s.Labels), maps.Clone(p.s.Unmapped), maps.Clone(p.other)}
}

func (p *parser) restore(ps parserState) {
	st := ps.turn
	p.turnOpen, p.lastAnswer, p.step, p.turnAt, p.stepAt = st.turnOpen, st.lastAnswer, st.step, st.turnAt, st.stepAt
	p.stepUsage, p.stepModel = st.stepUsage, st.stepModel
	p.pending.Clear()
	for _, id := range st.pending {
		p.pending.Call(id)
	}
	p.messages, p.sidechain, p.timeSet, p.s.CreatedAt, p.s.Key = ps.messages, ps.sidechain, ps.timeSet, ps.createdAt, ps.key
	p.sessionID, p.agentID = ps.sessionID, ps.agentID
	p.customTitle, p.aiTitle, p.summaryTitle = ps.customTitle, ps.aiTitle, ps.summaryTitle
	p.s.Labels, p.s.Unmapped, p.other = ps.labels, ps.unmapped, ps.other
}

// settle runs as each record begins (inRecord) and after the last: the
// state a dropped record changed is put back, and the calls it made are
// forgotten (importer.Undo).
func (p *parser) settle(inRecord bool) {
	p.undo.Settle(inRecord, func(parserState) parserState { return p.save() }, func(ps parserState) {
		p.restore(ps)
		for id, seq := range p.calls {
			if seq >= p.b.Next() {
				delete(p.calls, id)
			}
		}
	})
}

// closeStep ends the open step, its usage first.
func (p *parser) closeStep() {
	if p.step == "" {
		return
	}
	if u := p.stepUsage; u != nil {
		in, ok := importer.Tokens(u.InputTokens, u.CacheCreation, u.CacheRead)
		if ok && u.OutputTokens >= 0 {
			p.b.Add("usage", -1, importer.Obj{
				"inputTokens", in,
				"outputTokens", u.OutputTokens,
				"cachedTokens", importer.OptInt(u.CacheRead),
				"cacheWriteTokens", importer.OptInt(u.CacheCreation),
				"model", importer.Opt(p.stepModel),
			})
		} else {
			p.s.Unmapped["usage out of range"]++
		}
	}
	p.b.Add("step/end", -1, importer.Obj{})
	p.step, p.stepUsage, p.stepModel = "", nil, ""
}

// endTurn closes the open step and turn: calls still without a result get
// a synthetic one first, and the turn/end, at time t (-1: the time of the
// event before), says reason (when set) and carries the current line
// when asked (the interruption marker it is).
func (p *parser) endTurn(kind, reason string, carry bool, t int64) {
	if p.pending.Len() > 0 {
		p.b.Unanswered(&p.pending, -1)
	}
	p.closeStep()
	if p.turnOpen {
		data := importer.Obj{"kind", kind, "reason", importer.Opt(reason)}
		if carry {
			data = append(data, "source", p.b.Src())
		}
		p.b.Add("turn/end", t, data)
	}
	p.turnOpen, p.lastAnswer = false, false
}

// finish closes what the end of the file leaves open: every turn is
// closed, completed when the model had the last word, else interrupted
// (the trace stops mid-turn: its calls get synthetic results).
func (p *parser) finish() {
	if !p.turnOpen {
		p.closeStep()
		return
	}
	if p.lastAnswer && p.pending.Len() == 0 {
		p.endTurn("completed", "", false, -1)
		return
	}
	p.endTurn("interrupted", importer.ReasonTraceEnds, false, -1)
}
