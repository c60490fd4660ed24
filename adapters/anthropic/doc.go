// Package anthropic connects anthropic-sdk-go (v2) to sessionlog's
// provider records: Record switches recording on when the client is built
// (every Messages call, streamed or not, goes through the
// provider.Session's middleware), and Rebuild turns the recorded
// conversation, at any seq of the live branch, back into the SDK's own
// anthropic.MessageNewParams, with what a tool loop must still do before
// sending it: the tool calls without a result to run, whether the last
// request must be asked again, whether the turn is done. Current is
// Rebuild at the head of a Session, so that one loop both runs a fresh
// session and resumes a crashed one (see the package Example and
// examples/anthropic-agent); RecordResult records a tool's result as soon
// as the tool has run.
//
// A rebuilt request equals, as canonical JSON, what a loop that never
// crashed sends next: its messages are the last request's, then the
// response turned into the assistant message by the SDK's own
// Message.ToParam (a stream folded through Message.Accumulate first, as a
// live loop does), then the recorded tool results (RecordResult) as the
// next user message. Every content block the SDK defines keeps its order
// and its fields, because the SDK's own types carry them.
//
// Resume policy for a tool call without a result: a Read call is run
// again; a Write call that never started (no provider.Session.BeginTool
// mark) is run; a Write call that started may have had its effect, so it
// is not run again and gets OutcomeUnknownResult, an is_error tool_result
// saying so (the same words as the recorder's synthetic result,
// docs/format.md §8 "Resume").
//
// This package knows the SDK's types and the provider package; it knows
// nothing of stores, files or the log's encoding. It lives in a module of
// its own so that sessionlog's module does not require the SDK.
package anthropic
