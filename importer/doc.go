// Package importer turns the session traces of other agents (Claude Code,
// Codex, DeepSeek Harness, SWE-agent) into events of sessionlog's agent
// vocabulary (docs/format.md §8), for package ingest (`logtool import`) and
// for any Go program that embeds sessionlog.
//
// One Importer per format lives in a sub-package (claude, codex, dsh,
// swe); a Registry finds them by name and by content (Sniff), and
// importer/formats holds the built-in ones. This package holds what they
// share: the Session a conversion finds out, the Builder that makes its
// events, the line reader (Lines) and the document Scanner they read with.
//
// A conversion streams: it hands each source record's events to an Emit as
// soon as the record is read, and holds one record at a time whatever the
// length of the trace; a record over the limit (Config.Limit) is refused as
// soon as the limit is crossed. It is deterministic: the same bytes give
// the same events and Session. Every turn it opens is closed (a trace that
// ends mid-turn gets the closers `logtool resume` would append), and text
// nobody typed is TypeContext, never user/message.
//
// An import is lossless: every source record is kept in the session
// (records.go says how), and Importer.Records and RecordOf give the source
// back record by record. Damage is reported, never fatal to what precedes
// it (lines.go): a JSONL trace is cut before its first bad line
// (Session.Partial) or, with SkipBad, goes past each (Session.Skipped), and
// a torn last line is left out (Session.Torn); a file not of the format is
// refused whole.
//
// It knows eventlog (events, the limits of a row) and nothing of stores,
// files on disk or the CLI: where the events go is the caller's.
package importer
