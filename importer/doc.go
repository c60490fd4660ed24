// Package importer turns the session traces of other agents (Claude Code,
// Codex CLI, DeepSeek Harness, SWE-agent) into sessionlog sessions, for
// `logtool import --from FORMAT` and for any Go program that embeds
// sessionlog.
//
// One Importer per format lives in a sub-package (claude, codex, dsh,
// swe); a Registry finds them by name, and importer/formats holds the
// built-in ones. This package holds what they share: the converted
// Session, an event Builder that writes the agent vocabulary of
// docs/format.md §8, and the walk that turns a FILE or DIR argument into
// units of files imported together (a transcript and its subagents).
//
// An import is lossless: every source record is kept in the session, and
// Importer.Records and RecordOf give the source back record by record
// (records.go says how). Damage is reported, never fatal to what precedes
// it: Convert cuts a JSONL trace before its first bad line (Session.Partial)
// or, with SkipBad, goes past each (Session.Skipped), and leaves a torn last
// line out (Session.Torn); a file not of the format is refused whole.
//
// An importer reads the whole trace and returns every event in memory,
// seqs from 0, each one the log takes as it is. It is deterministic: the
// same bytes give the same events, labels and createdAt (the caller's
// store gives each imported session its ID). It knows eventlog (events,
// the limits of a row) and nothing of stores, files on disk or the CLI:
// writing the sessions is the caller's (cmd/logtool/import.go).
package importer
