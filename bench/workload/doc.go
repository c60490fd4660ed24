// Package workload generates deterministic synthetic agent sessions: the
// workload every benchmark of the bench module runs on.
//
// A session is a sequence of turns shaped like a coding agent's: a user
// message, then one to MaxSteps model calls (steps), each with reasoning in
// about 30 % of them, a stream of 10–60 text chunks, the assistant message
// they add up to, one to three tool calls each followed by its result (every
// step but the last), and the step's usage. The default shape is about 129
// events and 43 KB of JSONL per turn; 81 % of the events are
// assistant/chunk, and tool/result outputs — 0.5–20 KiB, log-uniform — are
// about 55 % of the bytes. workload_test.go checks those figures.
//
// Generation is deterministic: the same Config gives byte-identical events
// on every platform and Go release (the package has its own PRNG and never
// uses math/rand or a map iteration order). Event data follows the agent
// vocabulary of docs/format.md §8, so the built-in projections fold it.
//
// The package knows nothing of sessionlog: it produces values and JSONL
// lines, and the benchmarks append them. A Generator is not safe for
// concurrent use; Generate and the Event methods are.
package workload
