// Package projection folds events into state: deterministically, one
// event at a time. It knows eventlog.Event and nothing else — no files, no
// handles, no replay, no checkpoints. Replaying a log into a projection,
// applying rollbacks (which restore an earlier state with UnmarshalState,
// or with Restore for a Snapshotter)
// and checking checkpoint state digests live in package replay.
//
// # Contract
//
// A Projection has a name and a version (ID gives "agent/v1"), folds
// events with Apply, returns to its empty state with Reset, and writes and
// reads its state as JSON with MarshalState and UnmarshalState.
// StateDigest is the sha256 of the marshalled state, what a checkpoint
// records. Apply is deterministic: the same events give the same state,
// byte for byte once marshalled; marshalling, unmarshalling into a fresh
// projection and applying the rest of the events gives the same bytes as
// applying every event to one projection. Apply never panics, whatever
// the data. The built-in projections are Borrowers: Apply copies what it
// keeps, so a replay may lend them data its reader reuses. The transcript
// and conversation are also Locators: given where an event's data lies in
// the log (ApplyAt), they keep the place of a large tool output or message
// text there instead of a copy, and read it back when the state is written.
//
// # The built-in projections
//
// Agent ("agent/v1") tracks where an agent loop stands: turns and steps
// and whether one is open, tool calls without a result, how the last turn
// stopped, token usage, memory, provider state, slot, plan, compaction.
// Transcript ("transcript/v1") holds the messages a model would be sent:
// user and assistant messages with reasoning and tool calls, tool results
// next to their calls, compaction summaries, and a chained prefix hash per
// message for prompt-cache reuse. Conversation ("conversation/v1") is the
// transcript that keeps what compactions drop: every message of the live
// branch, each compaction's summary where it stands, for people to read.
// They are registered by name (Names, ByName: what logtool replay
// --projection and serve take), and Verifiable gives those whose state
// digests a verify checks.
//
// Both understand the agent vocabulary of docs/format.md §8, each the types it
// needs, and ignore keys they do not know. A type outside the vocabulary,
// and a type a projection does not read, is carried past untouched. A
// known type whose data has the wrong shape — not an object, a listed key
// with the wrong JSON type, a required key missing — is recorded in the
// state's Degraded list with its seq and a reason, and otherwise changes
// nothing; only the lifecycle types (turn/start, step/start, step/end,
// turn/end) still take effect, since their type alone says what happened.
// Absent or null data reads as an empty object, and an optional key that
// is null as absent.
//
// # State
//
// A state is an exported struct (AgentState, TranscriptState) returned by
// State, read-only. MarshalState is json.Marshal of it: slices in event
// order, maps with sorted keys, integers only, so the bytes are the same
// on every platform. UnmarshalState replaces the whole state and rebuilds
// the private indexes a projection keeps to avoid quadratic work (a tool
// result finds its call through a map, not a scan).
//
// A projection with a large state may implement Snapshotter: a copy of its
// state in memory, far cheaper than a marshal and unmarshal, which replay
// keeps for rollbacks. Transcript does; Agent's state is small.
//
// A projection is not safe for concurrent use.
package projection
