package importertest

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"
)

// The generators write traces of a format with records of every type its
// definition has — the types no real trace at hand holds too —
// in random orders and shapes, and say what they wrote: the Counts an
// import of the trace must keep. A property test converts many of them
// and compares (each importer's package doc says what each record type becomes).

// Gen is a generator: the trace of seed, and what it holds.
type Gen func(seed uint64) ([]byte, Counts)

// Generators are the generator of each format, by name.
func Generators() map[string]Gen {
	return map[string]Gen{"claude": GenClaude, "codex": GenCodex, "dsh": GenDsh, "swe-agent": GenSWE}
}

// trace collects the lines of a generated trace.
type trace struct {
	r     *rand.Rand
	lines []string
	now   time.Time
	n     int // ids so far
	want  Counts
}

func newTrace(seed uint64) *trace {
	return &trace{r: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), now: time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)}
}

// chance is true with probability p.
func (g *trace) chance(p float64) bool { return g.r.Float64() < p }

// id returns a new id with prefix.
func (g *trace) id(prefix string) string {
	g.n++
	return fmt.Sprintf("%s%04d", prefix, g.n)
}

// stamp advances the clock and returns its RFC 3339 time.
func (g *trace) stamp() string {
	g.now = g.now.Add(time.Duration(1+g.r.IntN(3000)) * time.Millisecond)
	return g.now.Format("2006-01-02T15:04:05.000Z")
}

// line appends v as a JSON line.
func (g *trace) line(v any) {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // the generators marshal maps of plain values
	}
	g.lines = append(g.lines, string(b))
}

func (g *trace) bytes() []byte { return []byte(strings.Join(g.lines, "\n") + "\n") }

// words is some text, a few words of it, sometimes with characters JSON
// and HTML escape.
func (g *trace) words() string {
	vocab := []string{"fix", "the", "parser", "<b>", "tests", "a&b", "naïve", "日本", "go", "run", "\"quoted\"", "line\nbreak", "tab\tbed"}
	n := 1 + g.r.IntN(6)
	out := make([]string, n)
	for i := range out {
		out[i] = vocab[g.r.IntN(len(vocab))]
	}
	return strings.Join(out, " ")
}

type obj = map[string]any

// GenClaude writes a Claude Code transcript: prompts (text, blocks with
// images, slash commands, ! commands, prompts queued mid-turn), Claude
// Code's own user lines (isMeta, local-command output with ANSI colours,
// bash output, system reminders, hook output, task notifications,
// interruptions, compaction summaries), assistant lines (thinking,
// redacted thinking, text, blank text, tool_use, server tools and their
// results, MCP tool use, <synthetic> and API-error lines), tool results
// (strings, blocks, errors, toolUseResult), system lines of every
// subtype, and every bookkeeping type; a subagent transcript now and
// then, a trace that ends mid-turn now and then.
func GenClaude(seed uint64) ([]byte, Counts) {
	g := newTrace(seed)
	sid := fmt.Sprintf("%08x-0000-4000-8000-%012x", seed&0xffffffff, seed)
	side := g.chance(0.15)              // a subagent's transcript
	compaction := side && g.chance(0.3) // the sub-run that writes a compaction's summary
	agent := ""
	switch {
	case compaction:
		agent = fmt.Sprintf("acompact-%06x", seed&0xffffff)
	case side:
		agent = fmt.Sprintf("a%06x", seed&0xffffff)
	}
	parent := ""
	// A newer Claude Code says where a user line came from (origin
	// {"kind"}: human, task-notification, peer); an older one does not.
	newer := g.chance(0.5)
	origin := func(kind string, extra obj) obj {
		if !newer {
			return extra
		}
		out := obj{"origin": obj{"kind": kind}}
		for k, v := range extra {
			out[k] = v
		}
		return out
	}
	env := func(typ string) obj {
		u := g.id("uuid-")
		m := obj{"parentUuid": parent, "isSidechain": side, "userType": "external", "cwd": "/work/app",
			"sessionId": sid, "version": "2.1.77", "gitBranch": "main", "type": typ, "uuid": u, "timestamp": g.stamp()}
		if agent != "" {
			m["agentId"] = agent
		}
		parent = u
		return m
	}
	user := func(content any, extra obj) {
		m := env("user")
		m["message"] = obj{"role": "user", "content": content}
		for k, v := range extra {
			m[k] = v
		}
		g.line(m)
	}
	assistant := func(msgID string, model string, blocks []obj, extra obj) {
		m := env("assistant")
		m["requestId"] = "req_" + msgID
		m["message"] = obj{"model": model, "id": msgID, "type": "message", "role": "assistant", "content": blocks,
			"stop_reason": nil, "stop_sequence": nil,
			"usage": obj{"input_tokens": 3 + g.r.IntN(100), "output_tokens": 1 + g.r.IntN(500),
				"cache_read_input_tokens": g.r.IntN(9000), "cache_creation_input_tokens": g.r.IntN(300)}}
		for k, v := range extra {
			m[k] = v
		}
		g.line(m)
	}
	bookkeeping := func() {
		switch g.r.IntN(14) {
		case 0:
			g.line(obj{"type": "file-history-snapshot", "messageId": g.id("m"), "snapshot": obj{"messageId": "m", "trackedFileBackups": obj{}, "timestamp": g.stamp()}, "isSnapshotUpdate": false})
		case 1:
			m := env("progress")
			m["data"] = obj{"type": "hook_progress", "hookEvent": "PostToolUse", "hookName": "PostToolUse:Edit", "command": "fmt"}
			m["toolUseID"] = "toolu_x"
			g.line(m)
		case 2:
			m := env("progress")
			m["data"] = obj{"type": "bash_progress", "output": "ok", "fullOutput": "ok", "elapsedTimeSeconds": 1, "totalLines": 1}
			g.line(m)
		case 3:
			g.line(obj{"type": "queue-operation", "operation": "enqueue", "timestamp": g.stamp(), "sessionId": sid, "content": g.words()})
		case 4:
			g.line(obj{"type": "summary", "summary": g.words(), "leafUuid": parent})
		case 5:
			g.line(obj{"type": "custom-title", "customTitle": g.words(), "sessionId": sid})
		case 6:
			g.line(obj{"type": "ai-title", "aiTitle": g.words(), "sessionId": sid})
		case 7:
			g.line(obj{"type": "agent-name", "agentName": "helper", "sessionId": sid})
		case 8:
			g.line(obj{"type": "last-prompt", "lastPrompt": g.words(), "sessionId": sid})
		case 9:
			g.line(obj{"type": "pr-link", "sessionId": sid, "prNumber": 7, "prUrl": "https://example.com/pr/7", "prRepository": "o/r", "timestamp": g.stamp()})
		case 10:
			g.line(obj{"type": "permission-mode", "permissionMode": "plan", "sessionId": sid})
		case 11:
			m := env("attachment")
			m["attachment"] = obj{"type": "hook_success", "hookName": "SessionStart", "hookEvent": "SessionStart", "content": g.words()}
			g.line(m)
		case 12:
			g.line(obj{"type": "worktree-state", "sessionId": sid, "worktreeSession": obj{"originalCwd": "/w"}})
		default:
			g.line(obj{"type": "x-record-of-a-later-version", "sessionId": sid, "what": g.words()}) // unknown: kept
		}
	}
	system := func(subtype string, extra obj) {
		m := env("system")
		m["subtype"] = subtype
		m["level"] = "info"
		for k, v := range extra {
			m[k] = v
		}
		g.line(m)
	}
	prompt := func() {
		switch g.r.IntN(6) {
		case 0:
			text := g.words()
			user([]obj{{"type": "text", "text": text}, {"type": "image", "source": obj{"type": "base64", "media_type": "image/png", "data": "iVBOR"}}}, origin("human", nil))
			g.want.Prompts = append(g.want.Prompts, text+"\n\n[image]")
		case 1:
			a, b := g.words(), g.words()
			user([]obj{{"type": "text", "text": a}, {"type": "text", "text": b}}, origin("human", nil))
			g.want.Prompts = append(g.want.Prompts, a+"\n\n"+b)
		case 2:
			text := "<command-name>/review</command-name>\n<command-message>review</command-message>\n<command-args>" + g.words() + "</command-args>"
			user(text, origin("human", nil))
			g.want.Prompts = append(g.want.Prompts, text)
			user([]obj{{"type": "text", "text": "Review the change: " + g.words()}}, obj{"isMeta": true}) // the command's body
		case 3:
			text := "<bash-input>ls -la</bash-input>"
			user(text, origin("human", nil))
			g.want.Prompts = append(g.want.Prompts, text)
			user("<bash-stdout>total 0</bash-stdout><bash-stderr></bash-stderr>", nil)
		default:
			text := g.words()
			user(text, origin("human", obj{"thinkingMetadata": obj{"level": "high"}, "todos": []any{}, "permissionMode": "default"}))
			g.want.Prompts = append(g.want.Prompts, text)
		}
	}
	context := func() {
		switch g.r.IntN(5) {
		case 0:
			user("<local-command-caveat>Caveat: The messages below were generated by the user while running local commands.</local-command-caveat>", obj{"isMeta": true})
			user("<command-name>/model</command-name>\n<command-message>model</command-message>\n<command-args></command-args>", origin("human", nil))
			g.want.Prompts = append(g.want.Prompts, "<command-name>/model</command-name>\n<command-message>model</command-message>\n<command-args></command-args>")
			user("<local-command-stdout>Set model to \x1b[1mopus\x1b[22m</local-command-stdout>", nil)
		case 1:
			user("<system-reminder>\nThe file changed on disk.\n</system-reminder>", nil)
		case 2:
			user([]obj{{"type": "text", "text": "<system-reminder>skills: " + g.words() + "</system-reminder>"}}, obj{"isMeta": true})
		case 3:
			user("<user-prompt-submit-hook>checked</user-prompt-submit-hook>", nil)
		default:
			system("local_command", obj{"content": "<local-command-stdout>done</local-command-stdout>"})
		}
	}
	turns := 1 + g.r.IntN(5)
	if compaction {
		turns = 1 // one instruction, one summary
	}
	switch {
	case compaction:
		// Claude Code's instruction, nobody's prompt.
		user("Your task is to create a detailed summary of the conversation so far: "+g.words(), nil)
	case side:
		text := "Explore: " + g.words()
		user(text, nil) // the parent agent's task: the subagent's prompt
		g.want.Prompts = append(g.want.Prompts, text)
	}
	midTurn := false
	for turn := 0; turn < turns; turn++ {
		if g.chance(0.3) {
			bookkeeping()
		}
		if g.chance(0.3) {
			context()
		}
		if !side || turn > 0 {
			switch {
			case turn > 0 && g.chance(0.15):
				// A background task ended: Claude Code runs the model on it.
				user("<task-notification>\n<task-id>b1</task-id>\n<status>completed</status>\n</task-notification>", origin("task-notification", nil))
			case newer && turn > 0 && g.chance(0.1):
				// Another session's message: a turn nobody here typed.
				user("<cross-session-message from=\"s2\">"+g.words()+"</cross-session-message>", origin("peer", nil))
			default:
				prompt()
			}
		}
		steps := 1 + g.r.IntN(3)
		interrupted := false
		for s := 0; s < steps && !interrupted; s++ {
			msg := g.id("msg_")
			if g.chance(0.4) {
				assistant(msg, "claude-opus-4-6", []obj{{"type": "thinking", "thinking": g.words(), "signature": "sig"}}, nil)
			}
			if g.chance(0.1) {
				assistant(msg, "claude-opus-4-6", []obj{{"type": "redacted_thinking", "data": "xx"}}, nil)
			}
			if g.chance(0.15) {
				assistant(msg, "claude-opus-4-6", []obj{{"type": "text", "text": "\n\n"}}, nil) // a blank block: no text
			}
			if g.chance(0.6) {
				text := g.words()
				assistant(msg, "claude-opus-4-6", []obj{{"type": "text", "text": text}}, nil)
				g.want.Assistant = append(g.want.Assistant, text)
			}
			if g.chance(0.15) {
				ws := g.id("srvtoolu_")
				assistant(msg, "claude-opus-4-6", []obj{
					{"type": "server_tool_use", "id": ws, "name": "web_search", "input": obj{"query": g.words()}},
					{"type": "web_search_tool_result", "tool_use_id": ws, "content": []any{}},
				}, nil)
				g.want.Calls++
				g.want.Results++
			}
			if g.chance(0.1) {
				mc := g.id("mcptoolu_")
				assistant(msg, "claude-opus-4-6", []obj{{"type": "mcp_tool_use", "id": mc, "name": "search", "server_name": "docs", "input": obj{}}}, nil)
				g.want.Calls++
				user([]obj{{"type": "tool_result", "tool_use_id": mc, "content": "found"}}, nil)
				g.want.Results++
			}
			if g.chance(0.6) {
				n := 1 + g.r.IntN(2)
				var calls []string
				var blocks []obj
				for i := 0; i < n; i++ {
					id := g.id("toolu_")
					calls = append(calls, id)
					blocks = append(blocks, obj{"type": "tool_use", "id": id, "name": []string{"Bash", "Read", "Edit", "Task"}[g.r.IntN(4)], "input": obj{"command": g.words()}})
				}
				assistant(msg, "claude-opus-4-6", blocks, nil)
				g.want.Calls += n
				if g.chance(0.3) {
					bookkeeping()
				}
				if turn == turns-1 && s == steps-1 && g.chance(0.25) {
					midTurn = true // the trace stops before the results
					break
				}
				for i, id := range calls {
					var content any = "ok: " + g.words()
					if g.chance(0.3) {
						content = []obj{{"type": "text", "text": g.words()}, {"type": "image", "source": obj{"type": "base64", "media_type": "image/png", "data": "x"}}}
					}
					blocks := []obj{{"type": "tool_result", "tool_use_id": id, "content": content, "is_error": g.chance(0.2)}}
					if i == len(calls)-1 && g.chance(0.1) {
						blocks = append(blocks, obj{"type": "text", "text": "[Request interrupted by user for tool use]"})
						interrupted = true
					}
					user(blocks, obj{"toolUseResult": obj{"stdout": "ok", "agentId": agent}, "sourceToolAssistantUUID": parent})
					g.want.Results++
				}
				if g.chance(0.1) {
					m := env("attachment")
					text := g.words()
					m["attachment"] = origin("human", obj{"type": "queued_command", "prompt": text, "commandMode": "prompt"})
					g.line(m)
					g.want.Prompts = append(g.want.Prompts, text)
				}
				if g.chance(0.1) {
					// Queued by Claude Code itself, mid-turn: nobody typed it.
					m := env("attachment")
					m["attachment"] = origin("task-notification", obj{"type": "queued_command", "prompt": "<task-notification>\n<status>completed</status>\n</task-notification>", "commandMode": "task-notification"})
					g.line(m)
				}
				if newer && g.chance(0.1) {
					m := env("attachment")
					m["attachment"] = obj{"type": "queued_command", "prompt": "from another session: " + g.words(), "commandMode": "prompt", "origin": obj{"kind": "peer"}}
					g.line(m)
				}
			}
		}
		if midTurn {
			break
		}
		switch {
		case interrupted:
		case g.chance(0.1):
			user([]obj{{"type": "text", "text": "[Request interrupted by user]"}}, nil)
		case g.chance(0.1):
			assistant(g.id("msg_"), "<synthetic>", []obj{{"type": "text", "text": "API Error: 529 overloaded"}}, obj{"isApiErrorMessage": true})
		default:
			text := g.words()
			assistant(g.id("msg_"), "claude-opus-4-6", []obj{{"type": "text", "text": text}}, nil)
			g.want.Assistant = append(g.want.Assistant, text)
			system("stop_hook_summary", obj{"hookCount": 1, "hookInfos": []any{}, "hookErrors": []any{}, "preventedContinuation": false, "stopReason": "", "hasOutput": false})
			if g.chance(0.7) {
				system("turn_duration", obj{"durationMs": 1200, "isMeta": false})
			}
		}
		if g.chance(0.1) {
			system("compact_boundary", obj{"content": "Conversation compacted", "compactMetadata": obj{"trigger": "auto", "preTokens": 150000}})
			user("This session is being continued from a previous conversation: "+g.words(), obj{"isCompactSummary": true, "isVisibleInTranscriptOnly": true})
		}
		if g.chance(0.05) {
			system("api_error", obj{"content": "Request failed", "level": "error", "retryInMs": 500, "retryAttempt": 1, "maxRetries": 10})
		}
	}
	if g.chance(0.3) {
		bookkeeping()
	}
	return g.bytes(), g.want
}
