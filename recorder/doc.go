// Package recorder is what an agent loop embeds: typed methods for the
// agent vocabulary (docs/format.md §8) with a flush policy that follows the loop's
// meaning (the request is durable before the model is called, a tool call
// before the tool runs or approval is asked, a step's results at its end),
// a checkpoint at every turn boundary, and the resume of a turn that a
// crash left open, which carries the turn on.
//
// (From ExampleRecorder; each method returns the event's seq and an error.)
//
//	rec, err := recorder.New(ctx, h, recorder.WithCache(store))
//	...
//	if _, err := rec.Resume(ctx); err != nil { // carry on a turn a crash left open
//	...
//	rec.BeginTurn(ctx, nil)
//	rec.UserMessage(ctx, "fix the failing test", "")
//	rec.BeginStep(ctx)                   // durable: now call the model
//	rec.Chunk(ctx, "Let me look")        // cheap: buffered, packed
//	rec.Response(ctx, recorder.Response{ // durable, in one flush: now run the calls
//		Calls:      []recorder.Call{{ID: "c1", Name: "read_file", Effect: "read"}},
//		StopReason: "tool_use",
//	})
//	rec.ToolResult(ctx, recorder.Result{ID: "c1", Output: "package a"})
//	rec.BeginStep(ctx) // durable, the result with it
//	rec.Response(ctx, recorder.Response{Text: "Fixed.", StopReason: "end_turn"})
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
// Response records a model response whole (reasoning, message, every
// tool call, usage) and ends its step with the stop reason, in one batch
// and one flush: a crash leaves all of it or a step without its end.
//
// Each recording method's doc says whether it is durable when it returns;
// DurableSeq says how far the log is. EndTurn's checkpoint is labelled
// "turn-N", N the turns of the live branch so far (see EndTurn). A loop
// finds its session again after a crash with handle.OpenOrCreate (by its
// labels, no ID stored), reopens it for writing and calls Resume
// (Example_reopenAfterCrash), which carries the open turn on
// (docs/format.md §8, "Resume" and "Write policy"): it rolls back a step
// whose response is partial, so the model is asked again, gives a write
// call that was approved and may have run a synthetic result (outcome
// unknown), and returns the plan: the calls to run (those that only read,
// and those that never started), then whether to ask the model. The loop
// records an approval (ToolApproval, durable) right before it runs a call
// that writes: that is how Resume knows a call never started. CloseTurn
// closes a turn as interrupted instead, with the Closers a reader shows
// (CloseInMemory) when the writer is gone.
//
// Stop facts (Facts) say how a session stopped and whether it may go on,
// deny by default: every answer carries its reason in words.
//
// The package builds on handle, checkpoint, replay and projection; it knows
// nothing of files.
package recorder
