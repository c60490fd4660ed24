// Package claude converts Claude Code session transcripts (the JSONL files
// under ~/.claude/projects/<project>/) into sessionlog events in the agent
// vocabulary of docs/format.md §8.
//
// # The source
//
// Each line is a JSON object told apart by "type". "user" and "assistant"
// lines carry an Anthropic Messages API message; Claude Code writes one line
// per content block, so one model response (one message.id) spans several
// assistant lines, and the tool_result blocks of a user line answer the
// tool_use blocks before it. "system" lines mark hooks, turn durations and
// compactions; "progress", "file-history-snapshot" and "queue-operation"
// lines are the UI's bookkeeping. A subagent's transcript lives in
// <session>/subagents/agent-<agentId>.jsonl.
//
// # The mapping
//
// Lines are read in file order (the parentUuid tree is not rebuilt; Claude
// Code appends in time order, a rewound branch stays where it was written).
//
//   - A user line with text (a string, or text blocks) that is neither
//     isMeta nor isCompactSummary is a prompt: it ends the open turn (with
//     turn/end {"kind":"completed"}, or "interrupted" when calls are still
//     without results) once the assistant has answered in it, then
//     turn/start {} and user/message {"text"}. Prompts with no assistant
//     line between them share one turn. An isMeta line is a user/message
//     {"text","meta":true} in the current turn. Text that starts with
//     "[Request interrupted by user" is a user/message that ends the turn
//     with kind "interrupted". Image and document blocks become "[image]"
//     and "[document]" in the text.
//   - An isCompactSummary user line is context/compacted {"summary"}.
//   - A run of assistant lines with one message.id is one step: step/start
//     {} before its first block; step/end {} when the next model response,
//     prompt, compaction or turn end comes, so the step holds the results
//     of its calls as well; usage {"inputTokens","outputTokens",
//     "cachedTokens"?,"cacheWriteTokens"?,"model"} just before step/end,
//     from the run's last line (inputTokens counts cached and
//     cache-creation tokens too, cachedTokens the cache reads; a usage
//     with a negative count, or a sum beyond int64, makes no event and is
//     counted in Session.Unmapped as "usage out of range"). Blocks:
//     thinking → assistant/reasoning {"text","signature"?}; redacted_thinking
//     → assistant/reasoning {"text":"","redacted":true}; text →
//     assistant/message {"text"} (whitespace-only text blocks, a streaming
//     artefact, make none); tool_use and server_tool_use → tool/call
//     {"id","name","args"}; a *_tool_result block → tool/result. An
//     assistant line outside a turn opens one (turn/start {}).
//   - A tool_result block → tool/result {"id","output"} or, with is_error,
//     {"id","error"}: the content string, or its text blocks joined.
//   - system stop_hook_summary and turn_duration end an answered turn
//     (turn/end {"kind":"completed"}); compact_boundary closes the open
//     step.
//   - At the end of the file an answered turn whose calls all have results
//     and whose last event is the assistant's is closed as completed; one
//     that ends with calls without results, or waiting for the model, stays
//     open (`logtool resume` closes it as interrupted).
//   - User and assistant lines whose isSidechain differs from the first
//     one's (older Claude Code wrote a subagent's lines into the main
//     transcript), progress, file-history-snapshot, queue-operation,
//     system and summary lines, and lines of other types make no
//     vocabulary event: each is kept as claude/<type> (below); a
//     "summary" line gives the "title" label.
//   - A file without user or assistant lines is still a transcript when
//     its lines are of the types above (Claude Code leaves files holding
//     only summaries of other sessions): it gives a session without a
//     conversation, of claude/* events only. Otherwise it is not a
//     transcript (ErrFormat).
//   - A line that cannot be read, or whose event the log would refuse (a
//     row beyond eventlog.MaxRowSize once converted), is an ErrFormat
//     error naming the line ("line N: …").
//
// # Lossless
//
// Every line is kept (see the importer package): the first event of the
// vocabulary made from a line carries it as "source":{"line","record"},
// the line's other events "source":{"line"}; a line that makes no such
// event (progress, file-history-snapshot, system, summary, a sidechain
// line, an assistant line of blank text only) is an event claude/<type>
// whose data is the line. Lines are records in file order, so the
// transcript is rebuilt line by line from the session (importer.RecordOf).
//
// Times are the lines' timestamps (Unix ms); an event made at a line
// without one takes the previous event's time. createdAt is the first
// timestamp. Labels: source "claude", sourceFile, sourceId (sessionId),
// cwd, model (the first real model), title, claude.version,
// claude.gitBranch, claude.slug and, for a subagent, claude.agentId.
//
// A tool_result whose line's toolUseResult names an agentId (the Task or
// Agent tool) records a Spawn under that agentId, so the subagent's
// transcript imported in the same unit becomes a child session at that
// tool/call (Session.Key is the file's agentId). A compaction sub-run
// (agent-acompact-*) is named by no tool call: it is imported as a session
// of its own.
package claude
