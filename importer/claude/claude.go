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

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/importer"
)

// Name is the --from value and the "source" label.
const Name = "claude"

// New returns the importer of Claude Code transcripts (*.jsonl), each
// with its subagents.
func New() importer.Importer {
	return importer.Format{Label: Name, Suffix: ".jsonl", ParseFunc: parse, ChildrenFunc: Subagents}
}

func parse(_ context.Context, r io.Reader, name string, _ importer.Config) (importer.Session, error) {
	return Parse(r, name)
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

// line is what the converter reads of a transcript line.
type line struct {
	Type             string          `json:"type"`
	Subtype          string          `json:"subtype"`
	UUID             string          `json:"uuid"`
	Timestamp        string          `json:"timestamp"`
	SessionID        string          `json:"sessionId"`
	AgentID          string          `json:"agentId"`
	Cwd              string          `json:"cwd"`
	Version          string          `json:"version"`
	GitBranch        string          `json:"gitBranch"`
	Slug             string          `json:"slug"`
	IsMeta           bool            `json:"isMeta"`
	IsSidechain      bool            `json:"isSidechain"`
	IsCompactSummary bool            `json:"isCompactSummary"`
	Message          *message        `json:"message"`
	ToolUseResult    json.RawMessage `json:"toolUseResult"`
	Summary          string          `json:"summary"`
	Content          json.RawMessage `json:"content"`
	Level            string          `json:"level"`
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

const interruptPrefix = "[Request interrupted by user"

// Parse converts one Claude Code transcript.
func Parse(r io.Reader, name string) (importer.Session, error) {
	p := &parser{s: importer.NewSession(Name, name), pending: map[string]bool{}, calls: map[string]int64{}}
	seen := false
	torn, err := p.b.Lines(r, eventlog.MaxRowSize, func(n int, raw []byte) error {
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
	if err != nil {
		return importer.Session{}, err
	}
	p.s.Torn = torn
	if !p.messages {
		// Claude Code leaves files of bookkeeping lines only (summaries of
		// other sessions, say): a transcript without a conversation.
		for _, typ := range slices.Sorted(maps.Keys(p.s.Unmapped)) {
			if !slices.Contains(bookkeeping, typ) {
				return importer.Session{}, importer.Formatf("no user or assistant line, and lines of type %q: not a Claude Code transcript", typ)
			}
		}
		if !p.known {
			return importer.Session{}, importer.Formatf("no user or assistant line: not a Claude Code transcript")
		}
	}
	p.finish()
	p.s.Records = p.b.Records()
	p.s.Events, err = p.b.Events()
	return p.s, err
}

// parser converts lines, keeping what the next line needs.
type parser struct {
	s importer.Session
	b importer.Builder
	t int64 // time of the current line (-1: none)

	messages   bool   // a user or assistant line was seen
	known      bool   // a line of a type Claude Code writes was seen
	sidechain  bool   // isSidechain of the first user or assistant line
	timeSet    bool   // createdAt is set
	turnOpen   bool   // a turn/start without its turn/end
	answered   bool   // the open turn has assistant lines
	step       string // message.id of the open step, "" when none
	stepUsage  *usage
	stepModel  string
	lastAnswer bool             // the last event came from an assistant line
	pending    map[string]bool  // call ids without a result
	calls      map[string]int64 // call id → seq of its tool/call
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
		p.labels(l)
		if l.Type == "user" {
			return p.user(l, t)
		}
		return p.assistant(l, t)
	case "system":
		p.system(l, t)
	case "summary":
		p.s.SetLabel("title", l.Summary)
	default:
		p.s.Unmapped[l.Type]++
	}
	if slices.Contains(bookkeeping, l.Type) || l.Type == "system" || l.Type == "summary" {
		p.known = true
	}
	return nil
}

// bookkeeping are the line types of the UI's bookkeeping, dropped.
var bookkeeping = []string{"progress", "file-history-snapshot", "queue-operation"}

func (p *parser) labels(l line) {
	p.s.SetLabel("sourceId", l.SessionID)
	p.s.SetLabel("cwd", l.Cwd)
	p.s.SetLabel("claude.version", l.Version)
	p.s.SetLabel("claude.gitBranch", l.GitBranch)
	p.s.SetLabel("claude.slug", l.Slug)
	if l.AgentID != "" && p.s.Key == "" {
		p.s.Key = l.AgentID
		p.s.SetLabel("claude.agentId", l.AgentID)
	}
	if l.Type == "assistant" && l.Message.Model != synthetic {
		p.s.SetLabel("model", l.Message.Model)
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
	switch {
	case l.IsCompactSummary:
		p.closeStep()
		p.b.Add("context/compacted", t, importer.Obj{"summary", text, "source", p.b.Src()})
		p.lastAnswer = false
	case l.IsMeta:
		p.openTurn(t)
		p.b.Add("user/message", t, importer.Obj{"text", text, "meta", true, "source", p.b.Src()})
	case strings.HasPrefix(text, interruptPrefix):
		p.openTurn(t)
		p.b.Add("user/message", t, importer.Obj{"text", text, "source", p.b.Src()})
		p.endTurn("interrupted", t)
	case results > 0:
		// Text beside tool results: said to the model within the turn.
		p.openTurn(t)
		p.b.Add("user/message", t, importer.Obj{"text", text, "source", p.b.Src()})
		p.lastAnswer = false
	default:
		if p.turnOpen && p.answered {
			kind := "completed"
			if len(p.pending) > 0 {
				kind = "interrupted"
			}
			p.endTurn(kind, -1)
		}
		p.openTurn(t)
		p.b.Add("user/message", t, importer.Obj{"text", text, "source", p.b.Src()})
		p.lastAnswer = false
	}
	return nil
}

func (p *parser) toolResult(l line, t int64, b block, first bool) {
	p.openTurn(t)
	out := resultText(b.Content)
	key := "output"
	if b.IsError {
		key = "error"
	}
	data := importer.Obj{"id", b.ToolUseID, key, out, "source", p.b.Src()}
	p.b.Add("tool/result", t, data)
	delete(p.pending, b.ToolUseID)
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
	p.openTurn(t)
	p.answered = true
	id := l.Message.ID
	if id == "" {
		id = "uuid:" + l.UUID
	}
	if id != p.step {
		p.closeStep()
		p.b.Add("step/start", t, importer.Obj{})
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
		case "tool_use", "server_tool_use":
			args := b.Input
			if len(bytes.TrimSpace(args)) == 0 {
				args = json.RawMessage("{}")
			}
			p.calls[b.ID] = p.b.Add("tool/call", t, importer.Obj{"id", b.ID, "name", b.Name, "args", args, "source", p.b.Src()})
			p.pending[b.ID] = true
		default:
			if strings.HasSuffix(b.Type, "_tool_result") {
				p.b.Add("tool/result", t, importer.Obj{"id", b.ToolUseID, "output", b.Content, "source", p.b.Src()})
				delete(p.pending, b.ToolUseID)
				continue
			}
			p.s.Unmapped["assistant block "+b.Type]++
			continue
		}
	}
	p.lastAnswer = true
	return nil
}

// system reads a system line: hooks and turn durations end an answered
// turn; the line itself is kept as claude/system (compaction boundaries
// among them).
func (p *parser) system(l line, t int64) {
	switch l.Subtype {
	case "stop_hook_summary", "turn_duration":
		if p.turnOpen && p.answered && len(p.pending) == 0 {
			p.endTurn("completed", t)
		}
	case "compact_boundary":
		p.closeStep()
	}
}

// openTurn starts a turn unless one is open.
func (p *parser) openTurn(t int64) {
	if !p.turnOpen {
		p.b.Add("turn/start", t, importer.Obj{})
		p.turnOpen, p.answered = true, false
	}
}

// closeStep ends the open step, its usage first.
func (p *parser) closeStep() {
	if p.step == "" {
		return
	}
	if u := p.stepUsage; u != nil && p.stepModel != synthetic {
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

// endTurn closes the open step and turn, the turn/end at time t (-1: the
// time of the event before).
func (p *parser) endTurn(kind string, t int64) {
	p.closeStep()
	if p.turnOpen {
		p.b.Add("turn/end", t, importer.Obj{"kind", kind})
	}
	p.turnOpen, p.answered, p.lastAnswer = false, false, false
}

// finish closes what the end of the file closes (see the package doc).
func (p *parser) finish() {
	if p.turnOpen && p.answered && p.lastAnswer && len(p.pending) == 0 {
		p.endTurn("completed", -1)
		return
	}
	p.closeStep()
}
