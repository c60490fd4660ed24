// Package ingest is the import operation: it brings files — sessionlog
// logs (an export, say) and the traces of other agents (Claude Code,
// Codex, DeepSeek Harness, SWE-agent) — into a handle.Store, for
// `logtool import` and for any program that embeds sessionlog.
//
// Import takes files and folders (walked recursively), finds each file's
// format by its content unless told it (Detect), and imports every session
// once: a session's identity is the source's own session id, never its
// path, so the same trace met again — at another path, or later — is the
// same session: unchanged, or grown by what the source gained. It reports
// each file (created, appended, unchanged, failed, and why) in a Summary.
//
// All or nothing, whenever the process dies: a session it creates is made
// by Store.CreateFrom (absent or complete, and a retry succeeds); what a
// re-import appends is one batch made durable all at once
// (Store.AppendAll). A source is read while it is imported, never held
// whole: a conversion holds one record at a time and the store writes as
// the events come, so the memory an import needs does not grow with the
// size of the source (but for what JetStream's AppendAll holds: one
// atomic batch).
//
// It stands above handle (stores and sessions) and importer (the
// conversions) and knows nothing of flags, terminals or output: the
// caller (cmd/logtool/import.go) turns the Summary into lines and exit
// codes. An Import is run by one goroutine; its Progress callback is
// called from it.
package ingest
