// Package tracestest finds the real third-party agent traces (Claude Code,
// Codex CLI, dsh, SWE-agent) that tests import and replay.
//
// The traces are not part of the repository: they sit in a folder named
// shared/traces beside the clone, which a developer's or CI's machine has and
// a user's fresh clone does not. A test that needs them calls Dir: where the
// folder is absent the test is skipped with a one-line reason, unless the
// environment sets SESSIONLOG_TRACES=require (as .ci/run does), in which case
// it fails, so that CI cannot silently stop checking the real traces.
//
// It knows nothing of any trace format or of the store; it only locates files.
package tracestest
