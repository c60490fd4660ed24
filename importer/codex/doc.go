// Package codex imports Codex CLI rollouts (~/.codex/sessions/…/rollout-*.jsonl)
// into sessionlog events in the agent vocabulary of docs/format.md §8. It
// knows the importer package and eventlog, nothing of stores.
//
// # The source
//
// Each line is {"timestamp","type","payload"}. session_meta (the first
// line) names the thread, its cwd, CLI version and model provider, and
// forked_from_id for a fork; turn_context holds a turn's settings (model,
// policies); response_item is what the model saw and said (payload.type
// message, reasoning, function_call, function_call_output,
// custom_tool_call(_output), web_search_call…); event_msg is what the UI
// was told (task_started, task_complete, token_count, user_message,
// agent_message, exec_command_end, thread_rolled_back…); compacted holds
// a compaction's summary.
//
// # The mapping
//
//   - session_meta → labels sourceId (id), cwd, codex.cliVersion,
//     codex.modelProvider, codex.originator, codex.source (when a string)
//     and codex.forkedFromId; Session.Key is the id and Session.ForkOf the
//     forked_from_id, so an import that holds the parent links the fork to
//     it. turn_context gives the model label (the first) and the model of
//     the usage that follows.
//   - event_msg task_started (turn_started) → turn/start {}, ending a turn
//     still open as interrupted; turn_context opens a turn when none is
//     open (rollouts without task_started); task_complete (turn_complete)
//     → turn/end {"kind":"completed"}; turn_aborted → {"kind":"interrupted"}.
//     A turn left open at the end of the file stays open for `logtool
//     resume`.
//   - response_item message: role assistant → assistant/message {"text"};
//     user, developer and system → user/message {"text","role"?} (role
//     given when it is not user); the text is the content's text parts
//     joined with blank lines.
//   - reasoning → assistant/reasoning {"text"}: the summary's texts joined
//     (encrypted content stays in the record).
//   - function_call → tool/call {"id":call_id,"name","args"}: arguments is
//     a JSON string in the source; when it holds JSON, args is that JSON,
//     else the string. custom_tool_call → tool/call {"args":{"input"}}.
//     function_call_output and custom_tool_call_output → tool/result
//     {"id","output"} (a string, or an object's "content").
//   - web_search_call → tool/call {"id","name":"web_search","args":action}
//     and its tool/result {"id","output":status} (the id is the item's, or
//     web_search-<n>).
//   - A model call is a step: step/start {} before its first output
//     (reasoning, message, call); event_msg token_count ends it with usage
//     {"inputTokens","outputTokens","cachedTokens"?,"model"?} then
//     step/end {}. The counts are the change of total_token_usage since
//     the last token_count (the per-call delta, not the running total;
//     last_token_usage when the total went back); a token_count that
//     changes nothing makes no usage. Codex counts cached input inside
//     input_tokens, as §8 does.
//   - compacted → context/compacted {"summary":message}.
//   - event_msg thread_rolled_back {num_turns} → rollback {"to","reason"}:
//     to is the seq before the turn/start of the num_turns-th last turn of
//     the live branch (all of them when there are fewer), so replay drops
//     exactly those turns.
//   - Every other line (event_msg user_message, agent_message,
//     exec_command_end…, and what a later Codex adds) makes no vocabulary
//     event.
//
// # Lossless
//
// Every line is kept (see the importer package): the first vocabulary
// event made from a line carries it as "source":{"line","record"}, the
// line's other events "source":{"line"}; a line that makes none is an
// event codex/<type>[/<payload type>] whose data is the line
// (codex/session_meta, codex/event_msg/token_count…).
//
// Times are the lines' timestamps (Unix ms); an event of a line without
// one takes the previous event's time. createdAt is the first timestamp.
// A line that cannot be read, or whose event the log would refuse, is an
// importer.RecordError naming the line; a torn last line (no newline,
// not JSON) is left out and reported as Session.Torn.
package codex
