// Package codex imports Codex rollouts (~/.codex/sessions/…/rollout-*.jsonl)
// into sessionlog events in the agent vocabulary of docs/format.md §8. It
// knows the importer package and eventlog, nothing of stores.
//
// # The source
//
// The rollout format of codex-rs (protocol's RolloutItem), in every
// version. The first rollouts wrote a header {"id","timestamp",
// "instructions"?}, {"record_type":"state"} markers and bare response
// items one a line; every later one writes lines {"timestamp","type",
// "payload"} (an "ordinal" in the newest): session_meta (the thread: id,
// cwd, originator — CLI, Desktop, exec —, CLI version, forked_from_id),
// turn_context (a turn's settings), response_item (what the model saw and
// said: messages of every role, reasoning, function, custom, local shell,
// tool search, web search and image generation calls and their outputs,
// agent messages, compactions), event_msg (what the UI was told: task
// started and complete, aborts, token counts, the user's and the agent's
// messages, command and patch ends, rollbacks, item_completed), compacted
// (a compaction's summary), and the newer inter_agent_communication,
// token_usage_record, world_state…
//
// # The mapping
//
// Every record type, in short (docs/import.md gives what all formats share):
//
//   - Turns follow Codex's own: task_started (turn_started) starts one,
//     ending one still open as interrupted; task_complete (turn_complete)
//     ends it completed, turn_aborted interrupted (its reason). A rollout
//     that records no task events starts a turn at each turn_context; the
//     first rollouts, which record neither, at each prompt after an answer.
//     At the end of the file the open turn is closed: a task never
//     completed is interrupted (synthetic results for its calls), a turn
//     of a rollout without task events is completed when the model had the
//     last word.
//   - A prompt is recorded twice since the enveloped rollouts — the item the
//     model was sent and the event the UI was told (user_message; in the
//     newest, item_completed of a UserMessage) — and once in the others (the
//     item in the first rollouts, the event in Desktop's): each prompt is
//     one user/message {"text"}, from whichever record comes first, the other
//     kept as its record. Text Codex wrote as user input (environment
//     context, AGENTS.md and other instructions, skills, shell commands,
//     notifications: contextMarkers; an event of kind user_instructions or
//     environment_context) and developer or system messages are
//     context/message {"text","kind","role"}.
//   - An assistant message → assistant/message {"text","phase"?};
//     reasoning → assistant/reasoning {"text"} (the summary, else the raw
//     content; encrypted content stays in the record).
//   - function_call → tool/call {"id":call_id,"name","args"} (arguments, a
//     JSON string, parsed when it holds JSON; a namespace prefixes the
//     name); custom_tool_call → {"args":{"input"}}; local_shell_call and
//     tool_search_call → their action or arguments. Their outputs →
//     tool/result {"id","output"}, or "error" for an output {"success":
//     false}. web_search_call and image_generation_call are a tool/call and
//     its tool/result at once (the id is the item's, or <name>-<n>).
//   - A model call is a step: step/start {} before its first output;
//     token_count ends it with usage {"inputTokens","outputTokens",
//     "cachedTokens"?,"model"?}, the change of total_token_usage since the
//     last (last_token_usage when the total went back; a repeat makes none),
//     then step/end {}.
//   - compacted → context/compacted {"summary":message}; thread_rolled_back
//     {num_turns} → rollback {"to","reason"} to the seq before the turn/start
//     of the num_turns-th last turn of the live branch.
//   - session_meta → labels sourceId, cwd, codex.cliVersion,
//     codex.modelProvider, codex.originator, codex.source and
//     codex.forkedFromId; Session.Key and ID are the thread id and
//     Session.ForkOf the forked_from_id, so an import that holds the parent
//     links the fork to it. turn_context gives the model label (the first)
//     and the model of the usage that follows.
//
// # Lossless
//
// Every line is kept (see the importer package): the first vocabulary
// event made from a line carries it as "source":{"line","record"}, the
// line's other events "source":{"line"}; a line that makes none is an
// event codex/<type>[/<payload type>] whose data is the line
// (codex/session_meta, codex/event_msg/token_count, codex/state…).
//
// Times are the lines' timestamps (Unix ms); an event of a line without
// one takes the previous event's time. createdAt is the first timestamp.
package codex
