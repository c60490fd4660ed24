package recorder_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"

	"github.com/spf13/afero"

	"github.com/sessionlog/sessionlog/checkpoint"
	"github.com/sessionlog/sessionlog/handle/file"
	"github.com/sessionlog/sessionlog/projection"
	"github.com/sessionlog/sessionlog/recorder"
	"github.com/sessionlog/sessionlog/replay"
)

// An agent loop's turn recorded with the Recorder's flush policy, then a
// rollback and a fork through the Recorder. The README's recorder snippet
// is this example. Each recording method returns the event's seq and an
// error; the errors are left out here for brevity, and the log is verified
// at the end.
func ExampleRecorder() {
	ctx := context.Background()
	store := file.New(afero.NewMemMapFs(), "sessions")
	h, err := store.Create(ctx)
	if err != nil {
		log.Fatal(err)
	}

	rec, err := recorder.New(ctx, h, recorder.WithCache(store))
	if err != nil {
		log.Fatal(err)
	}
	defer rec.Close()
	if _, err := rec.Resume(ctx); err != nil { // carry on a turn a crash left open
		log.Fatal(err)
	}
	rec.BeginTurn(ctx, nil)
	rec.UserMessage(ctx, "fix the failing test", "")
	rec.BeginStep(ctx)                   // durable: now call the model
	rec.Chunk(ctx, "Let me look")        // cheap: buffered, packed
	rec.Response(ctx, recorder.Response{ // durable, in one flush: now run the calls
		Calls:      []recorder.Call{{ID: "c1", Name: "read_file", Effect: "read"}},
		StopReason: "tool_use",
	})
	rec.ToolResult(ctx, recorder.Result{ID: "c1", Output: "package a"})
	rec.BeginStep(ctx) // durable, the result with it
	rec.Response(ctx, recorder.Response{Text: "Fixed.", StopReason: "end_turn"})
	rec.EndTurn(ctx, recorder.Completed, "") // durable, then a checkpoint "turn-1"

	// A second turn, abandoned: the Recorder rolls back to the checkpoint
	// and its state follows the log.
	rec.BeginTurn(ctx, nil)
	rec.UserMessage(ctx, "now rewrite everything", "")
	rec.RollbackTo(ctx, "turn-1")
	fmt.Println("turns on the live branch:", rec.State().Turns)

	// Branch off: a Recorder on a fork of this session, nothing copied.
	fork, err := rec.Fork(ctx, store, h.Seq())
	if err != nil {
		log.Fatal(err)
	}
	defer fork.Close()
	fork.BeginTurn(ctx, nil)
	fork.UserMessage(ctx, "try another way", "")
	fork.EndTurn(ctx, recorder.Completed, "")
	fmt.Println("turns on the fork:", fork.State().Turns)

	// Every checkpoint the Recorder wrote verifies, and the streamed text
	// became the step's assistant message.
	res, err := checkpoint.Verify(ctx, h, projection.NewAgent(), projection.NewTranscript())
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("checkpoints verified:", res.Verified)
	tr := projection.NewTranscript()
	if _, err := replay.Replay(ctx, h, []projection.Projection{tr}); err != nil {
		log.Fatal(err)
	}
	msg, _ := json.Marshal(tr.State().Messages[1].Text)
	fmt.Println("assistant said:", string(msg))
	// Output:
	// turns on the live branch: 1
	// turns on the fork: 2
	// checkpoints verified: 1
	// assistant said: "Let me look"
}
