// Package swe converts SWE-agent trajectories (.traj files: one JSON
// document) into sessionlog events in the agent vocabulary of docs/format.md §8.
//
// # The source
//
// A trajectory is {"environment","trajectory":[step…],"history":[message…],
// "info",…}. history is the chat the model was sent, in order:
// {"role","content","agent","action"?,"thought"?,"is_demo"?,"message_type"?,
// "tool_calls"?,"tool_call_ids"?}. trajectory holds one entry per executed
// action {"action","observation","response","thought","state",
// "execution_time"?}. info holds "exit_status", "submission" and
// "model_stats" {"instance_cost","tokens_sent","tokens_received",
// "api_calls"}. Nothing in it is timestamped.
//
// The document is never held: Convert reads it three times from its start
// (its outline — the rest of the document and how many entries each array
// has —, then its history, then its trajectory) with an importer.Scanner,
// holding one entry at a time; an entry over the limit is refused as soon
// as it is crossed. The session's identity (Session.ID) is the digest of
// the history entries before the model's first answer: the task as posed.
// SWE-agent saves the whole trajectory after each step, so a later save
// holds an earlier one's entries with more among them and its document
// replaced (Session.Rewrites), which ingest appends as growth.
//
// # The mapping
//
// The history is the conversation; one turn holds the whole run:
//
//   - A system message makes no vocabulary event (its record is kept as
//     swe-agent/history, below).
//   - A message marked is_demo (a demonstration the model was shown, of
//     either role) is text nobody typed: context/message {"text",
//     "kind":"demo","role"}. A user message that answers no call is the
//     task as posed (user/message {"text"}) before the model's first
//     answer, and SWE-agent's own words after it (a format error's
//     template): context/message {"kind":"harness","role":"user"}.
//     turn/start {} comes before the task.
//   - An assistant message (not a demonstration) is one step: step/start
//     {}, assistant/message {"text"} (its thought, else its content), then
//     a tool/call {"id","name","args"} per call: the tool_calls of the
//     function-calling format (args the arguments string parsed), or else
//     one for its action, id "action-<n>" (n counts actions from 1), name
//     the action's first word (the command: edit, open, submit, python…),
//     args {"command": the action}.
//   - A call id used before in the trace (replayed demonstrations reuse
//     them) becomes "<id>~<n>" for its n-th use (or the next n whose id no
//     call has: the trace may use "<id>~<n>" itself), the source's id kept
//     in "source":{"callId"}, so each call has an id of its own and keeps
//     its own result.
//   - A tool message (function calling) → tool/result {"id","output"} for
//     each of its tool_call_ids (the latest call with that id); a user
//     message while calls are without a result (the observation, in the
//     other format) → tool/result of the oldest such call. The step ends (step/end {}) when no call of it is
//     left without a result, before the next assistant message, or at the
//     end.
//   - The last action's observation, which SWE-agent keeps only in
//     trajectory, becomes the result of a call still without one when the
//     number of actions matches the trajectory's steps.
//   - At the end: swe-agent/document (below); usage
//     {"inputTokens","outputTokens","costMicros"?,"model"?} from
//     info.model_stats when it counted any call (tokens_sent,
//     tokens_received, instance_cost × 10⁶; stats with a negative count
//     or a cost out of range make no usage and are counted in
//     Session.Unmapped as "usage out of range"); then turn/end {"kind",
//     "reason"} from info.exit_status: one that names cost, context or a
//     limit (exit_cost, "submitted (exit_context)") → budget, else
//     "submitted…" → completed, any other → failed; the reason is the
//     exit status. Without an exit status the run was cut off: turn/end
//     {"kind":"interrupted"}. Calls still without a result get a synthetic
//     one first: every turn is closed.
//
// # Lossless
//
// The document's records are its history entries, its trajectory entries
// and the document without those two arrays (Records). The first
// vocabulary event made from a history entry carries it as
// "source":{"line","record"} (line: the record's number, from 1, in
// Records' order), the entry's other events "source":{"line"}; an entry
// that makes none (the system prompt) is swe-agent/history with the entry
// as data. Each trajectory entry is swe-agent/trajectory (the last one's
// observation may be carried by its tool/result instead), and the rest of
// the document (environment, info, replay_config…) is swe-agent/document.
//
// The trace has no
// times: createdAt is 0 and event n has time n (ms), so the same file
// always gives the same events; the Session says so (Untimed, Since
// FirstRelease), and ingest places it at the file's modification time. Labels: source "swe-agent", sourceFile,
// sourceId (the file's name without .traj: the instance), model (from
// replay_config.agent.model.name when present), swe-agent.environment,
// swe-agent.exitStatus.
package swe
