// Package chatview turns a session's events into the conversation a person
// reads: turns, user and assistant text (streamed chunks joined when a step
// has no assistant/message), folded reasoning, tool calls with their
// arguments and results, usage, stops and resumes, checkpoints, rollbacks
// and the branches they abandoned, and the forks and child sessions that
// start at an event.
//
// It has two halves, so that logtool show and serve's pages show the same
// things: a Builder folds events, in seq order, into Blocks — plain data,
// one a thing a person sees, a run of foreign records of one type and a
// step's streamed chunks one Block each — and Text lays Blocks out for a
// terminal, at a fixed width, with or without ANSI colours (internal/app/web
// lays them out as HTML). Held shows a live view what is still growing.
//
// It knows eventlog.Event and the agent vocabulary (the event types of
// docs/format.md §7 and §8, and the importers' context/message), and the
// redaction record (package redact's, docs/format.md §11): a Block says in
// words what was redacted in its events, and shows their data without the
// record. Nothing else: no files, stores, handles or
// replay. What is live and what a rollback abandoned is computed by Branches
// from the rollbacks the caller collected (RollbackOf); the sessions that
// branch off at an event are given by the caller too. SessionOptions builds
// a session's Options from these and its header, the one way show and
// serve do.
//
// Neither a Builder nor a Text is safe for concurrent use. Nothing here
// panics on any data: data of the wrong shape is shown as the raw event.
package chatview
