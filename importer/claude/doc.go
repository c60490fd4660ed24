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
// Every record type, in short (docs/import.md gives what all formats share):
//
//   - A user line's text is classified by its flags, its origin (newer
//     Claude Code writes origin {"kind"}: "human" for a person) and, with
//     no origin, the way it starts (Kind): only what the user typed — a
//     prompt, a /command, a ! command — is a user/message. It ends the open turn (completed, or interrupted
//     with calls still unanswered, which get synthetic results) and starts
//     one; text beside tool results, and a prompt queued while the model
//     answered (attachment queued_command), is a user/message within the
//     turn, but one Claude Code queued itself (commandMode
//     "task-notification", an origin other than "human") is context in the
//     turn. isMeta, isVisibleInTranscriptOnly, local-command and bash
//     output, system reminders and hook output are context/message {"text",
//     "kind"}; a task notification, or a line of another origin (a peer
//     session's message), starts a turn of its own as context — Claude
//     Code runs the model on it as on a prompt, though nobody typed it; an
//     interruption marker ends the turn, interrupted, its text the reason;
//     an isCompactSummary line is context/compacted {"summary"}.
//   - A run of assistant lines with one message.id is one step: step/start
//     {} before its first block; step/end {} when the next model response,
//     prompt, compaction or turn end comes, so the step holds the results of
//     its calls as well; usage {"inputTokens","outputTokens","cachedTokens"?,
//     "cacheWriteTokens"?,"model"} just before step/end, from the run's last
//     line (inputTokens counts cached and cache-creation tokens too; a usage
//     with a negative count, or a sum beyond int64, makes no event and is
//     counted in Session.Unmapped). Blocks: thinking and redacted_thinking →
//     assistant/reasoning; text → assistant/message (whitespace-only blocks
//     make none); tool_use, server_tool_use and mcp_tool_use → tool/call;
//     *_tool_result → tool/result. A <synthetic> or isApiErrorMessage line is
//     Claude Code's own words: context/message.
//   - tool_result → tool/result {"id","output"} or, with is_error,
//     {"id","error"}.
//   - system turn_duration ends the turn; stop_hook_summary ends a turn the
//     model had the last word in; compact_boundary closes the open step; a
//     system line's text is context/message {"kind":"system:<subtype>"}.
//   - At the end of the file the open turn is closed: completed when the
//     model had the last word and no call waits, else interrupted (reason
//     "the trace ends mid-turn", synthetic results for its calls).
//   - User and assistant lines whose isSidechain differs from the first
//     one's (older Claude Code wrote a subagent's lines into the main
//     transcript), and every other line type, make no vocabulary event:
//     each is kept as claude/<type> (below). summary, custom-title and
//     ai-title lines give the "title" label (the user's title first).
//   - A file without user or assistant lines is still a transcript when
//     its lines are of Claude Code's types (Claude Code leaves files holding
//     only summaries of other sessions): a session of claude/* events only.
//     Otherwise it is not a transcript (ErrFormat).
//   - A line that cannot be read, or whose event the log would refuse (a
//     row beyond eventlog.MaxRowSize once converted), is a bad line (see
//     the importer package).
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
// claude.gitBranch, claude.slug, claude.agentName and, for a subagent,
// claude.agentId. The session's identity (Session.ID) is its sessionId,
// a subagent's with "/agent-<agentId>".
//
// A tool_result whose line's toolUseResult names an agentId (the Task or
// Agent tool) records a Spawn under that agentId, so the subagent's
// transcript imported in the same unit becomes a child session at that
// tool/call (Session.Key is the file's agentId). A compaction sub-run
// (agent-acompact-*) is named by no tool call: it is imported as a session
// of its own, its prompt Claude Code's instruction (context/message of kind
// compaction, a turn of its own); a subagent's prompt is its parent
// agent's task, the child session's user/message.
package claude
