package importertest

import (
	"encoding/json"
	"fmt"
	"slices"
)

// The Codex rollouts GenCodex writes, one per seed: as each version and
// originator records a session.
const (
	codexLegacy    = iota // the first rollouts: a header line, then bare response items and state markers
	codexNoTasks          // no task events: a turn_context a turn; prompts as item and event (kind plain)
	codexCLI              // task events; each prompt as a response item, then as an event
	codexDesktop          // task events; prompts as events only
	codexExec             // `codex exec`: the event before the item
	codexPaginated        // turn_started/turn_complete; prompts as item_completed UserMessage events
	codexVariants
)

// GenCodex writes a Codex rollout of one of the variants above, with
// every rollout line type (session_meta, turn_context, response_item,
// event_msg, compacted and the newer ones), response items of every type
// (messages of every role and phase, reasoning, function, custom, local
// shell, web search, image generation and tool search calls and their
// outputs, agent messages, compactions), the event messages the UI
// records beside them, token counts, aborts, compactions and rollbacks,
// and a rollout that ends mid-turn now and then.
func GenCodex(seed uint64) ([]byte, Counts) {
	g := newTrace(seed)
	variant := int(seed % codexVariants)
	thread := fmt.Sprintf("019e%04x-0000-7000-8000-%012x", seed&0xffff, seed)
	line := func(typ string, payload any) {
		if variant == codexLegacy {
			if typ != "response_item" {
				return // the first rollouts recorded response items only
			}
			g.line(payload)
			return
		}
		g.line(obj{"timestamp": g.stamp(), "type": typ, "payload": payload})
	}
	if variant == codexLegacy {
		g.line(obj{"id": thread, "timestamp": g.stamp(), "instructions": nil})
		g.line(obj{"record_type": "state"})
	} else {
		originator := map[int]string{codexDesktop: "Codex Desktop", codexExec: "codex_exec"}[variant]
		if originator == "" {
			originator = "codex_cli_rs"
		}
		line("session_meta", obj{"id": thread, "timestamp": g.stamp(), "cwd": "/w", "originator": originator,
			"cli_version": "0.130.0", "source": "cli", "model_provider": "openai", "base_instructions": obj{"text": "You are Codex."},
			"git": obj{"branch": "main"}})
	}
	msg := func(role string, texts ...string) obj {
		var content []obj
		kind := "input_text"
		if role == "assistant" {
			kind = "output_text"
		}
		for _, t := range texts {
			content = append(content, obj{"type": kind, "text": t})
		}
		return obj{"type": "message", "role": role, "content": content}
	}
	tasks := variant == codexCLI || variant == codexDesktop || variant == codexExec || variant == codexPaginated
	var total [3]int
	tokenCount := func() {
		total[0] += 100 + g.r.IntN(1000)
		total[1] += g.r.IntN(100)
		total[2] += 1 + g.r.IntN(300)
		usage := obj{"input_tokens": total[0], "cached_input_tokens": total[1], "output_tokens": total[2], "reasoning_output_tokens": 0, "total_tokens": total[0] + total[2]}
		line("event_msg", obj{"type": "token_count", "info": obj{"total_token_usage": usage, "last_token_usage": usage, "model_context_window": 258400}, "rate_limits": nil})
	}
	prompt := func() {
		text := g.words()
		if g.chance(0.1) && variant != codexPaginated {
			text = "" // an image alone
		}
		item := msg("user", text)
		shown := text
		if text == "" {
			item = obj{"type": "message", "role": "user", "content": []obj{{"type": "input_image", "image_url": "data:image/png;base64,x"}}}
			shown = "[image]"
		}
		event := obj{"type": "user_message", "message": text, "images": []string{}, "local_images": []string{}, "text_elements": []any{}}
		if text == "" {
			event["images"] = []string{"data:image/png;base64,x"}
		}
		switch variant {
		case codexLegacy:
			line("response_item", item)
		case codexNoTasks:
			event["kind"] = "plain"
			line("response_item", item)
			line("event_msg", event)
		case codexCLI:
			line("response_item", item)
			line("event_msg", event)
		case codexDesktop:
			line("event_msg", event)
		case codexExec:
			line("event_msg", event)
			line("response_item", item)
		case codexPaginated:
			line("response_item", item)
			line("event_msg", obj{"type": "item_completed", "thread_id": thread, "turn_id": "t", "item": obj{"type": "UserMessage", "id": g.id("u"), "content": []obj{{"type": "text", "text": text, "text_elements": []any{}}}}})
		}
		g.want.Prompts = append(g.want.Prompts, shown)
	}
	turns := 1 + g.r.IntN(4)
	for turn := 0; turn < turns; turn++ {
		turnID := g.id("turn-")
		if tasks {
			typ := "task_started"
			if variant == codexPaginated {
				typ = "turn_started"
			}
			line("event_msg", obj{"type": typ, "turn_id": turnID, "model_context_window": 258400})
		}
		if turn == 0 || g.chance(0.2) {
			line("response_item", msg("developer", "<permissions instructions>\nsandbox: workspace-write\n</permissions instructions>"))
			line("response_item", msg("user", "# AGENTS.md instructions for /w\n\n<INSTRUCTIONS>\nbe brief\n</INSTRUCTIONS>", "<environment_context>\n  <cwd>/w</cwd>\n</environment_context>"))
			// Codex's other contextual user fragments, as user items.
			fragments := []string{
				"<user_instructions>\nbe brief\n</user_instructions>", "<skill>\n<name>review</name>\n</skill>",
				"<plugins>\ncalendar\n</plugins>", "<subagents>\n- a1\n</subagents>", "<skills_section>\nreview\n</skills_section>",
				"<js_repl_instructions>\nrepl\n</js_repl_instructions>", "<child_agents_instructions>\nx\n</child_agents_instructions>",
				"<user_shell_command>\n<command>\nls\n</command>\n</user_shell_command>", "<turn_aborted>\nThe user interrupted the previous turn on purpose.\n</turn_aborted>",
				"<subagent_notification>\n{\"agent_id\":\"a1\",\"status\":\"completed\"}\n</subagent_notification>",
			}
			for g.chance(0.4) {
				line("response_item", msg("user", fragments[g.r.IntN(len(fragments))]))
			}
			if variant == codexNoTasks {
				line("event_msg", obj{"type": "user_message", "message": "<user_instructions>be brief</user_instructions>", "kind": "user_instructions"})
			}
		}
		line("turn_context", obj{"turn_id": turnID, "cwd": "/w", "approval_policy": "on-request", "sandbox_policy": obj{"type": "workspace-write"}, "model": "gpt-5.5", "summary": "auto"})
		prompt()
		if g.chance(0.15) {
			line("event_msg", obj{"type": "agent_reasoning", "text": g.words()})
		}
		steps := 1 + g.r.IntN(3)
		aborted := false
		for s := 0; s < steps; s++ {
			if g.chance(0.5) {
				line("response_item", obj{"type": "reasoning", "summary": []obj{{"type": "summary_text", "text": g.words()}}, "content": nil, "encrypted_content": "gAAAA"})
			}
			if g.chance(0.6) {
				text := g.words()
				m := msg("assistant", text)
				m["phase"] = "commentary"
				line("event_msg", obj{"type": "agent_message", "message": text, "phase": "commentary"})
				line("response_item", m)
				g.want.Assistant = append(g.want.Assistant, text)
			}
			for c := g.r.IntN(3); c > 0; c-- {
				call := g.id("call_")
				switch g.r.IntN(7) {
				case 0:
					line("response_item", obj{"type": "function_call", "name": "exec_command", "arguments": `{"cmd":"ls"}`, "call_id": call})
					g.want.Calls++
					if turn == turns-1 && s == steps-1 && g.chance(0.3) {
						aborted = true // no output: the rollout ends mid-turn, or the user aborts
						continue
					}
					line("event_msg", obj{"type": "exec_command_end", "call_id": call, "stdout": "ok", "exit_code": 0})
					out := any("ok")
					if g.chance(0.3) {
						out = obj{"content": "failed", "success": false}
					}
					line("response_item", obj{"type": "function_call_output", "call_id": call, "output": out})
					g.want.Results++
				case 1:
					line("response_item", obj{"type": "custom_tool_call", "status": "completed", "call_id": call, "name": "apply_patch", "input": "*** Begin Patch\n*** End Patch"})
					line("event_msg", obj{"type": "patch_apply_end", "call_id": call, "success": true})
					line("response_item", obj{"type": "custom_tool_call_output", "call_id": call, "output": []obj{{"type": "input_text", "text": "Success"}}})
					g.want.Calls++
					g.want.Results++
				case 2:
					line("response_item", obj{"type": "local_shell_call", "call_id": call, "status": "completed", "action": obj{"type": "exec", "command": []string{"ls"}}})
					line("response_item", obj{"type": "function_call_output", "call_id": call, "output": "a.go"})
					g.want.Calls++
					g.want.Results++
				case 3:
					line("event_msg", obj{"type": "web_search_end", "call_id": call, "query": "go"})
					line("response_item", obj{"type": "web_search_call", "status": "completed", "action": obj{"type": "search", "query": "go"}})
					g.want.Calls++
					g.want.Results++
				case 4:
					line("response_item", obj{"type": "image_generation_call", "id": "ig_" + call, "status": "completed", "revised_prompt": "a cat", "result": "iVBOR"})
					g.want.Calls++
					g.want.Results++
				case 5:
					line("response_item", obj{"type": "tool_search_call", "call_id": call, "status": "completed", "execution": "client", "arguments": obj{"query": "calendar"}})
					line("response_item", obj{"type": "tool_search_output", "call_id": call, "status": "completed", "execution": "client", "tools": []obj{{"name": "calendar.create"}}})
					g.want.Calls++
					g.want.Results++
				default:
					line("response_item", obj{"type": "agent_message", "author": "/root/a", "recipient": "/root", "content": []obj{{"type": "input_text", "text": "sub-agent done"}}})
				}
			}
			if g.chance(0.8) {
				tokenCount()
			}
		}
		if g.chance(0.1) {
			line("compacted", obj{"message": "summary: " + g.words(), "replacement_history": []any{}})
			line("event_msg", obj{"type": "context_compacted"})
		}
		if g.chance(0.1) {
			line("response_item", obj{"type": "ghost_snapshot", "ghost_commit": obj{"id": "c"}})
		}
		if g.chance(0.1) {
			line("world_state", obj{"snapshot": obj{}})
		}
		if g.chance(0.1) {
			line("event_msg", obj{"type": "a_later_event", "what": g.words()}) // unknown: kept
		}
		last := turn == turns-1
		switch {
		case aborted && last && g.chance(0.5):
			return g.bytes(), g.want // the rollout stops mid-turn
		case aborted:
			if tasks {
				line("event_msg", obj{"type": "turn_aborted", "turn_id": turnID, "reason": "interrupted"})
			}
		default:
			text := g.words()
			line("event_msg", obj{"type": "agent_message", "message": text, "phase": "final_answer"})
			m := msg("assistant", text)
			m["phase"] = "final_answer"
			line("response_item", m)
			g.want.Assistant = append(g.want.Assistant, text)
			tokenCount()
			if tasks {
				typ := "task_complete"
				if variant == codexPaginated {
					typ = "turn_complete"
				}
				line("event_msg", obj{"type": typ, "turn_id": turnID, "last_agent_message": text})
			}
		}
		if !last && tasks && g.chance(0.1) {
			line("event_msg", obj{"type": "thread_rolled_back", "num_turns": 1})
		}
	}
	return g.bytes(), g.want
}

// GenDsh writes a dsh session log: the header, then turns of every event
// dsh records — user/message of every source kind (the person's, with
// an rpcId or none, and those producers inject: a plugin's snapshot,
// notice, catalog or instructions, a goal round, a skill invocation or
// catalog, workspace instructions, a session reference, another agent's
// relay, a compaction checkpoint), slash commands (command/run,
// command/done, goal/change), packed and unpacked chunks, messages with
// reasoning and usage, calls and results, approvals — and a log that
// ends mid-turn now and then.
func GenDsh(seed uint64) ([]byte, Counts) {
	g := newTrace(seed)
	g.line(obj{"type": "session", "version": 0, "id": fmt.Sprintf("s-%d", seed), "createdAt": g.now.UnixMilli(), "cwd": "/w"})
	ev := func(typ string, data any) { g.line(obj{"type": typ, "time": g.now.UnixMilli(), "data": data}) }
	message := func(text string, src obj) {
		d := obj{"role": "user", "id": g.id("m-"), "content": []obj{{"type": "text", "text": text}}}
		if src != nil {
			d["source"] = src
		}
		ev("user/message", d)
	}
	// injected writes a message a producer injected: nobody typed it.
	injected := func() {
		sources := []obj{
			{"kind": "plugin", "plugin": "@monotykamary/dsh-system-prompt", "form": "snapshot", "sections": []obj{{"name": "sandbox:policy", "text": g.words()}}},
			{"kind": "plugin", "plugin": "tool-goal", "form": "notice", "summary": "complete: " + g.words()},
			{"kind": "plugin", "plugin": "dsh-tool-skill"},
			{"kind": "plugin", "plugin": "tool-cordis", "form": "instructions"},
			{"kind": "goal", "goalId": "goal-1", "revision": 1, "round": 1 + g.r.IntN(3)},
			{"kind": "skill-invocation", "name": "review", "form": "instructions"},
			{"kind": "skill-catalog", "form": "catalog", "entries": []obj{{"name": "review", "description": g.words()}}},
			{"kind": "agent-instructions", "form": "instructions", "changes": []obj{{"path": "AGENTS.md"}}},
			{"kind": "session-reference", "form": "recall", "version": 1, "references": []obj{{"sessionId": "s-0", "label": "earlier"}}},
			{"kind": "subagent-report", "form": "relay", "senderSessionId": "s-child"},
			{"kind": "subagent-settled", "form": "notice", "summary": "child done", "senderSessionId": "s-child"},
			{"kind": "coordinator", "form": "relay", "senderSessionId": "s-parent"},
			{"kind": "team-message", "teamId": "t", "messageId": "tm", "senderId": "s-peer", "senderName": "peer"},
			{"kind": "a-later-producer"}, // a kind of a later dsh: context all the same
		}
		message("<goal_round>\n"+g.words(), sources[g.r.IntN(len(sources))])
	}
	turns := 1 + g.r.IntN(3)
	for turn := 1; turn <= turns; turn++ {
		g.stamp()
		if g.chance(0.25) {
			// A slash command the person typed: log-only in dsh, their input.
			args := " " + g.words()
			cmd := g.id("cmd-")
			src := obj{"kind": "user"}
			if g.chance(0.3) {
				src = nil // an older dsh wrote no source on a command
			}
			run := obj{"commandId": cmd, "name": "goal", "args": args + "  "}
			if src != nil {
				run["source"] = src
			}
			ev("command/run", run)
			g.want.Prompts = append(g.want.Prompts, "/goal"+args)
			ev("goal/change", obj{"kind": "goal/change", "version": 1, "operation": "create", "goal": obj{"id": "goal-1", "objective": args}})
			ev("command/done", obj{"commandId": cmd, "kind": "success", "text": "Goal created"})
		}
		ev("turn/start", obj{"turn": turn})
		if g.chance(0.3) {
			injected()
		}
		text := g.words()
		switch g.r.IntN(3) {
		case 0:
			message(text, obj{"kind": "user", "rpcId": g.id("rpc-")})
		case 1:
			message(text, obj{"kind": "user"})
		default:
			if g.chance(0.5) {
				message(text, nil) // no source: as no dsh writes, read as the person's
			} else {
				message(text, obj{"kind": "user", "rpcId": g.id("rpc-"), "clientTimeZone": "Asia/Tokyo"})
			}
		}
		g.want.Prompts = append(g.want.Prompts, text)
		for g.chance(0.4) {
			injected()
		}
		if turn == 1 {
			ev("session/title", obj{"title": g.words()})
		}
		ev("request/header", obj{"header": obj{"config": obj{"model": "deepseek-v4"}}})
		steps := 1 + g.r.IntN(3)
		for s := 1; s <= steps; s++ {
			ev("step/start", obj{"turn": turn, "step": s})
			n := 2 + g.r.IntN(4)
			texts := make([]string, n)
			dt := make([]int, n-1)
			for i := range texts {
				texts[i] = g.words()
			}
			g.line(obj{"type": "text-chunks", "time0": g.now.UnixMilli(), "data": obj{"turn": turn, "step": s, "index": 0, "dt": dt, "texts": texts}})
			if g.chance(0.3) {
				g.line(obj{"type": "reasoning-chunks", "time0": g.now.UnixMilli(), "data": obj{"turn": turn, "step": s, "index": 0, "dt": []int{}, "texts": []string{g.words()}}})
			}
			if g.chance(0.2) {
				ev("assistant/chunk", obj{"turn": turn, "step": s, "chunk": obj{"type": "text-delta", "index": 0, "text": g.words()}})
			}
			answer := g.words()
			ev("assistant/message", obj{"message": obj{"content": []obj{{"type": "reasoning", "text": "hm"}, {"type": "text", "text": answer}}, "source": obj{"kind": "model", "model": "deepseek-v4"}},
				"usage": obj{"inputTokens": 10, "outputTokens": 5, "cacheReadTokens": 2}})
			g.want.Assistant = append(g.want.Assistant, answer)
			if g.chance(0.6) {
				call := g.id("call_")
				g.line(obj{"type": "tool-call-chunks", "time0": g.now.UnixMilli(), "data": obj{"turn": turn, "step": s, "index": 1, "dt": []int{1}, "id": call, "name": "sh", "args": []string{`{"cmd":`, `"ls"}`}}})
				ev("tool/call", obj{"callId": call, "name": "sh", "arguments": `{"cmd":"ls"}`})
				g.want.Calls++
				if turn == turns && s == steps && g.chance(0.3) {
					return g.bytes(), g.want // the log ends mid-turn, the call without a result
				}
				ev("tool/result", obj{"message": obj{"source": obj{"kind": "tool", "callId": call}, "content": []obj{{"type": "tool-result", "toolCallId": call, "content": []obj{{"type": "text", "text": "a.go"}}, "isError": g.chance(0.2)}}}})
				g.want.Results++
				ev("tool-workflow/settled", obj{"callId": call}) // one of dsh's own types
			}
			if g.chance(0.2) {
				ev("approval/asked", obj{"callId": "x"})
				ev("approval/decided", obj{"callId": "x", "decision": "approved"})
			}
			ev("step/end", obj{"turn": turn, "step": s})
		}
		if g.chance(0.15) {
			// A compaction: the history replaced by its summary.
			message("Summary: "+g.words(), obj{"kind": "plugin", "plugin": "compact", "compactionId": g.id("c-")})
		}
		if g.chance(0.2) {
			ev("goal/change", obj{"goal": g.words()})
		}
		ev("turn/end", obj{"turn": turn, "reason": obj{"kind": "completed"}})
	}
	return g.bytes(), g.want
}

// GenSWE writes a SWE-agent trajectory, in the tool-calling format or the
// action format: a system prompt, demonstrations, the task, the model's
// steps (thought, action or tool calls) and the observations, the
// trajectory of every step, info with an exit status of each kind (or
// none), and the last observation only in the trajectory now and then.
func GenSWE(seed uint64) ([]byte, Counts) {
	saves, want := GenSWESaves(seed)
	return saves[len(saves)-1], want
}

// GenSWESaves writes the run GenSWE(seed) writes as SWE-agent saves it
// while it runs: the whole trajectory rewritten after each step, holding
// the history and the steps so far and info with the model's stats so far
// but no exit status (the run goes on); the last save is GenSWE's. Counts
// are the last save's.
func GenSWESaves(seed uint64) ([][]byte, Counts) {
	g := newTrace(seed)
	var saves [][]byte
	save := func(doc obj) {
		b, err := json.MarshalIndent(doc, "", "  ")
		if err != nil {
			panic(err)
		}
		saves = append(saves, b)
	}
	calls := g.chance(0.5) // the function-calling format
	var history, trajectory []obj
	history = append(history, obj{"role": "system", "content": "You are an agent.", "agent": "main"})
	if g.chance(0.5) {
		// Demonstrations: shown to the model, typed by nobody, answered
		// by no model.
		history = append(history, obj{"role": "user", "content": g.words(), "agent": "main", "is_demo": true, "message_type": "demonstration"})
		history = append(history, obj{"role": "assistant", "content": g.words(), "agent": "main", "is_demo": true})
	}
	task := "Fix: " + g.words()
	history = append(history, obj{"role": "user", "content": []obj{{"type": "text", "text": task}}, "agent": "main"})
	g.want.Prompts = append(g.want.Prompts, task)
	steps := 1 + g.r.IntN(6)
	lastOnlyInTrajectory := g.chance(0.3)
	for s := 0; s < steps; s++ {
		if s > 0 && g.chance(0.15) {
			// An answer without an action, and SWE-agent's reply to it.
			thought := g.words()
			history = append(history, obj{"role": "assistant", "content": thought, "thought": thought, "agent": "main"})
			g.want.Assistant = append(g.want.Assistant, thought)
			history = append(history, obj{"role": "user", "content": "Your output was not formatted correctly. " + g.words(), "agent": "main"})
		}
		thought := g.words()
		action := "edit " + g.words()
		m := obj{"role": "assistant", "content": "thinking: " + thought, "thought": thought, "action": action, "agent": "main"}
		id := g.id("call_")
		if calls {
			m["tool_calls"] = []obj{{"id": id, "type": "function", "function": obj{"name": "edit", "arguments": `{"path":"a.py"}`}}}
		}
		history = append(history, m)
		g.want.Assistant = append(g.want.Assistant, thought)
		g.want.Calls++
		observation := "edited " + g.words()
		trajectory = append(trajectory, obj{"action": action, "observation": observation, "response": thought, "thought": thought, "state": "{}", "execution_time": 0.5})
		if s == steps-1 && lastOnlyInTrajectory {
			g.want.Results++ // the importer takes it from the trajectory
			break
		}
		if calls {
			history = append(history, obj{"role": "tool", "content": []obj{{"type": "text", "text": observation}}, "agent": "main", "tool_call_ids": []string{id}})
		} else {
			history = append(history, obj{"role": "user", "content": observation, "agent": "main"})
		}
		g.want.Results++
		if s < steps-1 {
			// Saved as the run goes: copies, since the slices grow on.
			save(obj{"environment": "swe_main", "trajectory": slices.Clone(trajectory), "history": slices.Clone(history),
				"info": obj{"model_stats": obj{"instance_cost": 0.1 * float64(s+1), "tokens_sent": 100 * (s + 1), "tokens_received": 10 * (s + 1), "api_calls": s + 1}}})
		}
	}
	doc := obj{"environment": "swe_main", "trajectory": trajectory, "history": history}
	switch g.r.IntN(5) {
	case 0:
		doc["info"] = obj{"exit_status": "submitted", "submission": "diff", "model_stats": obj{"instance_cost": 0.5, "tokens_sent": 1000, "tokens_received": 100, "api_calls": steps}}
	case 1:
		doc["info"] = obj{"exit_status": "exit_cost", "model_stats": obj{"instance_cost": 3.0, "tokens_sent": 9000, "tokens_received": 900, "api_calls": steps}}
	case 2:
		doc["info"] = obj{"exit_status": "early_exit"}
	case 3:
		doc["info"] = obj{} // no exit status: the run was cut off
	default:
		doc["info"] = obj{"exit_status": "submitted (exit_context)"}
		doc["replay_config"] = `{"agent":{"model":{"name":"gpt-4"}}}`
	}
	save(doc)
	return saves, g.want
}
