// Package recorder is what an agent loop embeds: typed methods for the
// agent vocabulary (docs/format.md §8) with a flush policy that follows the loop's
// meaning (the request is durable before the model is called, a tool call
// before the tool runs or approval is asked, a step's results at its end),
// a checkpoint at every turn boundary, and the resume of a turn that a
// crash left open.
//
// (From ExampleRecorder; each method returns the event's seq and an error.)
//
//	rec, err := recorder.New(ctx, h, recorder.WithCache(store))
//	...
//	if _, err := rec.Resume(ctx); err != nil { // close a turn a crash left open
//	...
//	rec.BeginTurn(ctx, nil)
//	rec.UserMessage(ctx, "fix the failing test", "")
//	rec.BeginStep(ctx)                                                            // durable: now call the model
//	rec.Chunk(ctx, "Let me look")                                                 // cheap: buffered, packed
//	rec.ToolCall(ctx, recorder.Call{ID: "c1", Name: "read_file", Effect: "read"}) // durable: now run it
//	rec.ToolResult(ctx, recorder.Result{ID: "c1", Output: "package a"})
//	rec.EndStep(ctx)                         // durable
//	rec.EndTurn(ctx, recorder.Completed, "") // durable, then a checkpoint "turn-1"
//	...
//	rec.RollbackTo(ctx, "turn-1")
//	...
//	fork, err := rec.Fork(ctx, store, h.Seq())
//
// The Recorder stays in step with its log whoever writes through the
// handle: before it records, checkpoints or answers State it applies
// whatever else was appended since the last event it applied (a rollback
// makes it rebuild by replay), and its own appends are conditional on the
// seq it expects, so every checkpoint it writes carries the state replay
// of the log gives (docs/design.md, "The Recorder and its log"). A step
// whose text was only streamed (Chunk, no AssistantMessage) gets that text
// recorded as its assistant/message before its first tool call or its end
// (docs/format.md §8, "Streamed text").
//
// Each recording method's doc says whether it is durable when it returns;
// DurableSeq says how far the log is. EndTurn's checkpoint is labelled
// "turn-N", N the turns of the live branch so far (see EndTurn). A loop
// finds its session again after a crash with handle.OpenOrCreate (by its
// labels, no ID stored), reopens it for writing and calls Resume
// (Example_reopenAfterCrash).
//
// Stop facts (Facts) say how a session stopped and whether it may go on,
// deny by default: every answer carries its reason in words.
//
// The package builds on handle, checkpoint, replay and projection; it knows
// nothing of files.
package recorder
