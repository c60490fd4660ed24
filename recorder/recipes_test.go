package recorder_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"testing"

	"github.com/spf13/afero"
	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/checkpoint"
	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/handle/file"
	"github.com/sessionlog/sessionlog/internal/testkit/faultfs"
	"github.com/sessionlog/sessionlog/recorder"
)

// An agent loop that dies mid-turn and starts again: it finds its session
// by its labels (handle.OpenOrCreate: nothing needs to remember the ID),
// reopens it for writing (the open cuts what the crash tore off), and
// resumes: the turn the crash left open goes on, with the plan Resume
// returns. Here faultfs stands for the disk, so that the example can cut
// the power: only what was flushed survives.
func Example_reopenAfterCrash() {
	ctx := context.Background()
	disk := faultfs.New(afero.NewMemMapFs())
	labels := map[string]string{"agent": "coder", "task": "issue-25"}

	// The first run: a durable response with two calls, then the read's
	// result, not yet flushed.
	h, _, err := file.New(disk, "sessions").OpenOrCreate(ctx, labels)
	if err != nil {
		log.Fatal(err)
	}
	rec, err := recorder.New(ctx, h)
	if err != nil {
		log.Fatal(err)
	}
	rec.BeginTurn(ctx, "fix the failing test")
	rec.UserMessage(ctx, "fix the failing test", "")
	rec.BeginStep(ctx) // durable: now call the model
	rec.Response(ctx, recorder.Response{Text: "Let me run the tests, then fix a.go.", StopReason: "tool_use",
		Calls: []recorder.Call{
			{ID: "c1", Name: "go_test", Effect: "read"},
			{ID: "c2", Name: "write_file", Args: json.RawMessage(`{"path":"a.go"}`), Effect: "write"},
		}}) // durable when it returns, the step ended
	rec.ToolResult(ctx, recorder.Result{ID: "c1", Output: "FAIL"}) // not yet
	fmt.Println("before the crash: last seq", h.Seq(), "· durable up to", rec.DurableSeq())

	// The power goes before write_file is approved (a loop records the
	// approval, durably, right before it runs a call that writes). The
	// next run knows only its labels.
	store := file.New(disk.Crash(faultfs.KeepSynced), "sessions")
	h, created, err := store.OpenOrCreate(ctx, labels) // handle.ReadWrite: the one writer
	if err != nil {
		log.Fatal(err)
	}
	defer h.Close()
	rec, err = recorder.New(ctx, h, recorder.WithCache(store))
	if err != nil {
		log.Fatal(err)
	}
	plan, err := rec.Resume(ctx) // the open turn goes on
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("after: created", created, "· appended", plan.Appended, "· turn open:", plan.TurnOpen, "· input:", string(plan.Input))
	for _, c := range plan.Run {
		// c1 lost its result, and only reads; c2 never started.
		fmt.Println("run:", c.ID, c.Name, c.Effect)
	}
	fmt.Println("then ask the model:", !plan.Answered)
	// Output:
	// before the crash: last seq 7 · durable up to 6
	// after: created false · appended [] · turn open: true · input: "fix the failing test"
	// run: c1 go_test read
	// run: c2 write_file write
	// then ask the model: true
}

// TestTurnLabelCountsLiveTurns: the N of EndTurn's "turn-N" checkpoint is
// the number of turn/start events on the live branch, this one included:
// a turn a rollback abandoned is not counted, a turn a crash interrupted
// is, and a fork counts the turns it inherits.
func TestTurnLabelCountsLiveTurns(t *testing.T) {
	h, store := newHandle(t)
	rec, err := recorder.New(ctx, h, recorder.WithClock(clock))
	require.NoError(t, err)
	labels := func(src checkpoint.Reader) (out []string) {
		t.Helper()
		infos, err := checkpoint.List(ctx, src)
		require.NoError(t, err)
		for _, c := range infos {
			out = append(out, c.Label)
		}
		return out
	}
	turn(t, rec, "one")
	turn(t, rec, "two")
	require.Equal(t, []string{"turn-1", "turn-2"}, labels(h))

	// Back to the end of turn 1: the next turn is the live branch's
	// second again.
	mustSeq(t)(rec.RollbackTo(ctx, "turn-1"))
	turn(t, rec, "two, again")
	require.Equal(t, []string{"turn-1", "turn-2", "turn-2"}, labels(h))
	infos, err := checkpoint.List(ctx, h)
	require.NoError(t, err)
	again := infos[2]
	require.True(t, again.Live)
	require.False(t, infos[1].Live)
	// RollbackTo takes the latest of that label on the live branch.
	rb := mustSeq(t)(rec.RollbackTo(ctx, "turn-2"))
	var to int64
	for e, err := range h.Read(ctx, rb, rb) {
		require.NoError(t, err)
		r, err := eventlog.ParseRollback(e.Data)
		require.NoError(t, err)
		to = r.To
	}
	require.Equal(t, again.Seq, to)

	// A turn a crash left open, closed by CloseTurn, is a turn: the next
	// is the fourth.
	mustSeq(t)(rec.BeginTurn(ctx, nil))
	_, err = rec.CloseTurn(ctx)
	require.NoError(t, err)
	turn(t, rec, "four")
	require.Equal(t, "turn-4", labels(h)[3])

	// A fork at the end of turn 1 counts that turn: its first is turn 2.
	fork, err := rec.Fork(ctx, store, infos[0].Seq)
	require.NoError(t, err)
	defer fork.Close()
	turn(t, fork, "forked")
	require.Equal(t, []string{"turn-1", "turn-2"}, labels(fork.Handle()))
}
