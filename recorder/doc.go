// Package recorder is what an agent loop embeds: typed methods for the
// agent vocabulary of SPEC §8 with a flush policy that follows the loop's
// meaning (the request is durable before the model is called, a tool call
// before the tool runs or approval is asked, a step's results at its end),
// a checkpoint at every turn boundary, and the resume of a turn that a
// crash left open.
//
//	rec, err := recorder.New(ctx, h)           // h: a write handle
//	if res, err := recorder.Resume(ctx, h); …  // close a crashed turn first
//	rec.BeginTurn(ctx, nil)
//	rec.UserMessage(ctx, "fix the test")
//	rec.BeginStep(ctx)                          // durable: now call the model
//	rec.Chunk(ctx, "Let me look")               // cheap: buffered, packed
//	rec.ToolCall(ctx, recorder.Call{ID: "c1", Name: "read_file", Effect: "read"}) // durable: now run it
//	rec.ToolResult(ctx, recorder.Result{ID: "c1", Output: out})
//	rec.EndStep(ctx)                            // durable
//	rec.EndTurn(ctx, recorder.Completed, "")    // durable, then a checkpoint
//
// Stop facts (Facts) say how a session stopped and whether it may go on,
// deny by default: every answer carries its reason in words.
//
// The package builds on handle, checkpoint, replay and projection; it knows
// nothing of files.
package recorder
