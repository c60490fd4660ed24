package importertest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/projection"
	"github.com/sessionlog/sessionlog/replay"
)

// Counts are what a conversation holds that an import must keep: the
// user's prompts and the model's texts (each as the import's text would
// be: a record's text parts joined with blank lines, "[image]" for an
// image), and how many tool calls and results.
type Counts struct {
	Prompts   []string
	Assistant []string
	Calls     int
	Results   int
}

// SessionCounts counts what events hold: the text of every user/message
// and assistant/message, every tool/call, and every tool/result that is
// not synthetic (a closer the import added, not the source's).
func SessionCounts(events []eventlog.Event) Counts {
	var c Counts
	for _, e := range events {
		var d struct {
			Text      *string `json:"text"`
			Synthetic bool    `json:"synthetic"`
		}
		_ = json.Unmarshal(e.Data, &d)
		switch e.Type {
		case "user/message":
			if d.Text != nil {
				c.Prompts = append(c.Prompts, *d.Text)
			}
		case "assistant/message":
			if d.Text != nil {
				c.Assistant = append(c.Assistant, *d.Text)
			}
		case "tool/call":
			c.Calls++
		case "tool/result":
			if !d.Synthetic {
				c.Results++
			}
		}
	}
	return c
}

// CheckCounts fails t unless got (a session's) holds what want (the
// source's) does: the same prompts and assistant texts, in order, as many
// calls and results.
func CheckCounts(t testing.TB, want, got Counts, what string) {
	t.Helper()
	require.Equal(t, want.Prompts, got.Prompts, "%s: the user's prompts (and nothing else) as user/message", what)
	require.Equal(t, want.Assistant, got.Assistant, "%s: the model's texts as assistant/message", what)
	require.Equal(t, want.Calls, got.Calls, "%s: tool calls", what)
	require.Equal(t, want.Results, got.Results, "%s: tool results", what)
}

// CheckClosed fails t unless, replayed (rollbacks applied), the events
// leave no turn or step open and no call without a result: every turn of
// an import is closed.
func CheckClosed(t testing.TB, events []eventlog.Event) {
	t.Helper()
	ag := projection.NewAgent()
	_, err := replay.Replay(context.Background(), sliceSource(events), []projection.Projection{ag})
	require.NoError(t, err)
	st := ag.State()
	require.False(t, st.TurnOpen, "no turn left open")
	require.False(t, st.StepOpen, "no step left open")
	require.Empty(t, st.PendingCalls, "no call without a result")
}

// sliceSource is a replay.Source over events held in memory.
type sliceSource []eventlog.Event

func (s sliceSource) ID() string { return "" }
func (s sliceSource) Seq() int64 { return int64(len(s)) - 1 }
func (s sliceSource) Read(_ context.Context, from, to int64) iter.Seq2[eventlog.Event, error] {
	return func(yield func(eventlog.Event, error) bool) {
		for _, e := range s {
			if e.Seq >= from && e.Seq <= to && !yield(e, nil) {
				return
			}
		}
	}
}

// SourceCounts counts what the trace src of format holds, by a plain
// reading of the format's records that shares nothing with its importer:
// the test's own idea of a prompt, a text, a call and a result.
func SourceCounts(format string, src []byte) (Counts, error) {
	switch format {
	case "claude":
		return claudeCounts(src)
	case "codex":
		return codexCounts(src)
	case "dsh":
		return dshCounts(src)
	case "swe-agent":
		return sweCounts(src)
	}
	return Counts{}, fmt.Errorf("no count for format %q", format)
}

// eachLine calls fn with every line of src that is a JSON object.
func eachLine(src []byte, fn func(map[string]json.RawMessage)) error {
	sc := bufio.NewScanner(bytes.NewReader(src))
	sc.Buffer(nil, eventlog.MaxRowSize+1)
	for sc.Scan() {
		var m map[string]json.RawMessage
		if json.Unmarshal(sc.Bytes(), &m) == nil && m != nil {
			fn(m)
		}
	}
	return sc.Err()
}

func str(raw json.RawMessage) string {
	var s string
	_ = json.Unmarshal(raw, &s)
	return s
}

func flag(raw json.RawMessage) bool {
	var b bool
	_ = json.Unmarshal(raw, &b)
	return b
}

type part struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	ID        string          `json:"id"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
}

// parts reads message content: a string is one text part.
func parts(raw json.RawMessage) []part {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return []part{{Type: "text", Text: s}}
	}
	var ps []part
	_ = json.Unmarshal(raw, &ps)
	return ps
}

// claudeWrappers start the user-line texts Claude Code writes itself.
var claudeWrappers = []string{
	"<local-command-stdout>", "<local-command-stderr>", "<local-command-caveat>", "<bash-stdout>",
	"<bash-stderr>", "<task-notification>", "<system-reminder>", "<user-prompt-submit-hook>",
	"[Request interrupted by user",
}

func claudeCounts(src []byte) (Counts, error) {
	var c Counts
	first, side := true, false
	err := eachLine(src, func(m map[string]json.RawMessage) {
		typ := str(m["type"])
		if typ == "attachment" {
			var a struct {
				Type        string          `json:"type"`
				Prompt      json.RawMessage `json:"prompt"`
				IsMeta      bool            `json:"isMeta"`
				CommandMode string          `json:"commandMode"`
				Origin      json.RawMessage `json:"origin"`
			}
			_ = json.Unmarshal(m["attachment"], &a)
			// A queued command a person typed: its origin says human, or,
			// without one, its mode is a prompt's (or a ! command's).
			typed := originKind(a.Origin) == "human" ||
				(len(a.Origin) == 0 && (a.CommandMode == "" || a.CommandMode == "prompt" || a.CommandMode == "bash"))
			if a.Type == "queued_command" && typed && !a.IsMeta && !flag(m["isMeta"]) {
				if text := claudeText(parts(a.Prompt)); text != "" {
					c.Prompts = append(c.Prompts, text)
				}
			}
			return
		}
		var msg struct {
			Model   string          `json:"model"`
			Content json.RawMessage `json:"content"`
		}
		if (typ != "user" && typ != "assistant") || json.Unmarshal(m["message"], &msg) != nil || string(m["message"]) == "null" || len(m["message"]) == 0 {
			return
		}
		if first {
			first, side = false, flag(m["isSidechain"])
		} else if flag(m["isSidechain"]) != side {
			return // another conversation's line
		}
		ps := parts(msg.Content)
		if typ == "user" {
			for _, p := range ps {
				if p.Type == "tool_result" {
					c.Results++
				}
			}
			text := claudeText(ps)
			if text == "" || flag(m["isMeta"]) || flag(m["isCompactSummary"]) || flag(m["isVisibleInTranscriptOnly"]) {
				return
			}
			if o, ok := m["origin"]; ok {
				// A newer Claude Code says who: only "human" is a person.
				if originKind(o) == "human" {
					c.Prompts = append(c.Prompts, text)
				}
				return
			}
			// An older one says nothing: the wrappers it puts around its
			// own text tell, and a compaction sub-run's (agentId
			// acompact-…) prompt is Claude Code's instruction.
			if strings.HasPrefix(str(m["agentId"]), "acompact-") {
				return
			}
			trimmed := strings.TrimLeft(text, " \t\r\n")
			for _, w := range claudeWrappers {
				if strings.HasPrefix(trimmed, w) {
					return
				}
			}
			c.Prompts = append(c.Prompts, text)
			return
		}
		if msg.Model == "<synthetic>" || flag(m["isApiErrorMessage"]) {
			return
		}
		for _, p := range ps {
			switch {
			case p.Type == "text" && strings.TrimSpace(p.Text) != "":
				c.Assistant = append(c.Assistant, p.Text)
			case p.Type == "tool_use" || p.Type == "server_tool_use" || p.Type == "mcp_tool_use":
				c.Calls++
			case strings.HasSuffix(p.Type, "_tool_result"):
				c.Results++
			}
		}
	})
	return c, err
}

// originKind is the kind of a Claude Code origin {"kind"}.
func originKind(raw json.RawMessage) string {
	var o struct {
		Kind string `json:"kind"`
	}
	_ = json.Unmarshal(raw, &o)
	return o.Kind
}

// claudeText is the text of a user message's parts: text parts joined
// with blank lines, "[image]" and "[document]" for those.
func claudeText(ps []part) string {
	var texts []string
	for _, p := range ps {
		switch p.Type {
		case "text":
			texts = append(texts, p.Text)
		case "image", "document":
			texts = append(texts, "["+p.Type+"]")
		}
	}
	return strings.Join(texts, "\n\n")
}

// codexWrappers start the user texts Codex writes itself (its contextual
// user fragments: environment, instructions, skills, plugins, a shell
// command's output, an abort's or a subagent's notice): Codex's own test,
// in a rollout that records no user_message events, of what is not
// user intent.
var codexWrappers = []string{
	"<environment_context>", "<user_instructions>", "# AGENTS.md instructions", "<INSTRUCTIONS>",
	"<permissions instructions>", "<developer_instructions>", "<collaboration_mode>",
	"<skills_instructions>", "<plugins_instructions>", "<recommended_plugins>", "<app-context>",
	"<ide_opened_file>", "<skill>", "<user_shell_command>", "<turn_aborted>",
	"<subagent_notification>", "<task-notification>", "<plugins>", "<subagents>",
	"<skills_section", "<js_repl_instructions>", "<child_agents_instructions>",
}

func codexWritten(text string) bool {
	t := strings.TrimLeft(text, " \t\r\n")
	for _, w := range codexWrappers {
		if strings.HasPrefix(t, w) {
			return true
		}
	}
	return false
}

func codexCounts(src []byte) (Counts, error) {
	var c Counts
	var itemPrompts, eventPrompts []string
	events := false // the rollout records prompts as events
	err := eachLine(src, func(m map[string]json.RawMessage) {
		typ := str(m["type"])
		pl := m["payload"]
		if len(pl) == 0 {
			if typ == "" {
				return // the first rollouts' header or a state marker
			}
			typ, pl = "response_item", mustJSON(m)
		}
		var p struct {
			Type    string          `json:"type"`
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
			Message *string         `json:"message"`
			Kind    string          `json:"kind"`
			Images  []string        `json:"images"`
			CallID  string          `json:"call_id"`
			ID      string          `json:"id"`
			Item    *struct {
				Type    string `json:"type"`
				Content []part `json:"content"`
			} `json:"item"`
		}
		if json.Unmarshal(pl, &p) != nil {
			return
		}
		switch typ {
		case "event_msg":
			switch {
			case p.Type == "user_message" && p.Message != nil:
				// Codex records a user_message event for what the user
				// sent (the first versions also for its own instructions
				// and environment, kind saying which): by its own word a
				// prompt, whatever its text.
				events = true
				text := *p.Message
				if text == "" && len(p.Images) > 0 {
					text = "[image]"
				}
				if p.Kind == "" || p.Kind == "plain" {
					eventPrompts = append(eventPrompts, text)
				}
			case p.Type == "item_completed" && p.Item != nil && p.Item.Type == "UserMessage":
				var b strings.Builder
				for _, cp := range p.Item.Content {
					if cp.Type == "text" {
						b.WriteString(cp.Text)
					}
				}
				if b.Len() > 0 {
					events = true
					eventPrompts = append(eventPrompts, b.String())
				}
			}
		case "response_item":
			switch p.Type {
			case "message":
				ps := parts(p.Content)
				switch p.Role {
				case "assistant":
					var texts []string
					for _, cp := range ps {
						if cp.Type == "output_text" || cp.Type == "input_text" || cp.Type == "text" {
							texts = append(texts, cp.Text)
						}
					}
					c.Assistant = append(c.Assistant, strings.Join(texts, "\n\n"))
				case "user":
					for _, cp := range ps {
						switch {
						case cp.Type == "input_image":
							itemPrompts = append(itemPrompts, "[image]")
						case cp.Type == "input_text" && !codexWritten(cp.Text):
							itemPrompts = append(itemPrompts, cp.Text)
						}
					}
				}
			case "function_call", "custom_tool_call", "local_shell_call", "tool_search_call":
				c.Calls++
			case "function_call_output", "custom_tool_call_output", "tool_search_output":
				c.Results++
			case "web_search_call", "image_generation_call":
				c.Calls++
				c.Results++
			}
		}
	})
	c.Prompts = itemPrompts
	if events {
		c.Prompts = eventPrompts
	}
	return c, err
}

func mustJSON(m map[string]json.RawMessage) json.RawMessage {
	b, _ := json.Marshal(m)
	return b
}

// dshCounts counts a dsh log by dsh's own word on who produced each
// message (data.source.kind, dsh's MessageSource): a user/message is a
// prompt only when its source kind is "user" (or it has no source), and a
// slash command (command/run, whose source dsh defines as "a human-typed
// line") is one too, as "/<name><args>". Every other kind — a plugin's,
// a goal's, another agent's — is context a producer injected.
func dshCounts(src []byte) (Counts, error) {
	var c Counts
	header := true
	err := eachLine(src, func(m map[string]json.RawMessage) {
		if header {
			header = false
			return
		}
		var d struct {
			Text    *string `json:"text"`
			Content []part  `json:"content"`
			Message *struct {
				Content []part `json:"content"`
			} `json:"message"`
			Source *struct {
				Kind *string `json:"kind"`
			} `json:"source"`
			Name *string `json:"name"`
			Args string  `json:"args"`
		}
		_ = json.Unmarshal(m["data"], &d)
		join := func(ps []part) string {
			var b strings.Builder
			for _, p := range ps {
				if p.Type == "text" {
					b.WriteString(p.Text)
				}
			}
			return b.String()
		}
		typed := d.Source == nil || d.Source.Kind == nil || *d.Source.Kind == "user"
		switch str(m["type"]) {
		case "user/message":
			switch {
			case !typed:
			case d.Content != nil:
				c.Prompts = append(c.Prompts, join(d.Content))
			case d.Text != nil:
				c.Prompts = append(c.Prompts, *d.Text)
			}
		case "command/run":
			if typed && d.Name != nil {
				c.Prompts = append(c.Prompts, "/"+*d.Name+strings.TrimRight(d.Args, " \t\r\n"))
			}
		case "assistant/message":
			switch {
			case d.Message != nil:
				c.Assistant = append(c.Assistant, join(d.Message.Content))
			case d.Text != nil:
				c.Assistant = append(c.Assistant, *d.Text)
			}
		case "tool/call":
			c.Calls++
		case "tool/result":
			c.Results++
		}
	})
	return c, err
}

// sweCounts counts a trajectory by SWE-agent's own roles: the system
// prompt and the demonstrations (is_demo) are nobody's words; the task is
// the user messages before the model's first answer; after it, the user
// role is SWE-agent's own (observations, templates).
func sweCounts(src []byte) (Counts, error) {
	var doc struct {
		History []struct {
			Role        string          `json:"role"`
			Content     json.RawMessage `json:"content"`
			Thought     *string         `json:"thought"`
			Action      *string         `json:"action"`
			IsDemo      bool            `json:"is_demo"`
			ToolCalls   []any           `json:"tool_calls"`
			ToolCallIDs []string        `json:"tool_call_ids"`
		} `json:"history"`
		Trajectory []json.RawMessage `json:"trajectory"`
	}
	if err := json.Unmarshal(src, &doc); err != nil {
		return Counts{}, err
	}
	var c Counts
	awaiting := 0 // calls of the model without a result
	text := func(raw json.RawMessage) string {
		var s string
		if json.Unmarshal(raw, &s) == nil {
			return s
		}
		var texts []string
		for _, p := range parts(raw) {
			if p.Type == "text" {
				texts = append(texts, p.Text)
			}
		}
		return strings.Join(texts, "\n")
	}
	answered := false // the model answered: the user role is SWE-agent's templates
	for _, h := range doc.History {
		switch {
		case h.Role == "system", h.IsDemo: // the setting and the demonstrations: nobody typed them
		case h.Role == "assistant":
			answered = true
			msg := text(h.Content)
			if h.Thought != nil && *h.Thought != "" {
				msg = *h.Thought
			}
			c.Assistant = append(c.Assistant, msg)
			switch {
			case len(h.ToolCalls) > 0:
				c.Calls += len(h.ToolCalls)
				awaiting += len(h.ToolCalls)
			case h.Action != nil && strings.TrimSpace(*h.Action) != "":
				c.Calls++
				awaiting++
			}
		case h.Role == "tool" && len(h.ToolCallIDs) > 0:
			c.Results += len(h.ToolCallIDs)
			awaiting = max(awaiting-len(h.ToolCallIDs), 0)
		case awaiting > 0 && (h.Role == "user" || h.Role == "tool"):
			c.Results++
			awaiting--
		case !answered:
			c.Prompts = append(c.Prompts, text(h.Content)) // the task as posed
		}
	}
	if awaiting > 0 && c.Calls == len(doc.Trajectory) && len(doc.Trajectory) > 0 {
		c.Results++ // the last observation, kept only in the trajectory
	}
	return c, nil
}
