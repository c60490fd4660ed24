package recorder_test

import (
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/checkpoint"
	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/projection"
	"github.com/sessionlog/sessionlog/recorder"
	"github.com/sessionlog/sessionlog/replay"
)

// requireInStep checks the two promises a Recorder makes about its log:
// its State is the state replay of the log gives, and every checkpoint in
// the log verifies with both built-in projections.
func requireInStep(t *testing.T, rec *recorder.Recorder, h recorder.Handle) {
	t.Helper()
	agent := projection.NewAgent()
	_, err := replay.Replay(ctx, h, []projection.Projection{agent})
	require.NoError(t, err)
	require.Equal(t, agent.State(), rec.State(), "the Recorder's state is the replayed state")
	_, err = checkpoint.Verify(ctx, h, projection.NewAgent(), projection.NewTranscript())
	require.NoError(t, err, "every checkpoint verifies")
}

// turn records one whole turn; the Recorder checkpoints at its end.
func turn(t *testing.T, rec *recorder.Recorder, text string) {
	t.Helper()
	seq := mustSeq(t)
	seq(rec.BeginTurn(ctx, nil))
	seq(rec.UserMessage(ctx, text, ""))
	seq(rec.BeginStep(ctx))
	seq(rec.AssistantMessage(ctx, "on it", ""))
	seq(rec.EndStep(ctx))
	seq(rec.EndTurn(ctx, recorder.Completed, ""))
}

// openTurn leaves a turn open with a call that has no result, as a crash
// mid-tool would.
func openTurn(t *testing.T, rec *recorder.Recorder) {
	t.Helper()
	seq := mustSeq(t)
	seq(rec.BeginTurn(ctx, nil))
	seq(rec.BeginStep(ctx))
	seq(rec.ToolCall(ctx, recorder.Call{ID: "c1", Name: "bash", Effect: "write"}))
}

// Whatever is written through the handle beside a Recorder — by Resume, a
// rollback, a plain Append, another Recorder — the Recorder's state and
// the checkpoints it writes stay those of the log (each case failed before
// the Recorder caught up with its handle: its next checkpoint carried a
// state digest verify rejected).
func TestRecorderFollowsForeignWrites(t *testing.T) {
	for _, tc := range []struct {
		name    string
		foreign func(t *testing.T, h handle.Handle, rec *recorder.Recorder)
		check   func(t *testing.T, st projection.AgentState)
	}{{
		name: "recorder.CloseTurn through the handle after New",
		foreign: func(t *testing.T, h handle.Handle, rec *recorder.Recorder) {
			openTurn(t, rec)
			res, err := recorder.CloseTurn(ctx, h, recorder.WithResumeClock(clock))
			require.NoError(t, err)
			require.Len(t, res.Appended, 3)
		},
		check: func(t *testing.T, st projection.AgentState) {
			require.Equal(t, "completed", st.LastStop.Kind)
			require.Empty(t, st.PendingCalls)
		},
	}, {
		// The partial step's rollback makes the Recorder rebuild.
		name: "recorder.Resume through the handle after New",
		foreign: func(t *testing.T, h handle.Handle, rec *recorder.Recorder) {
			openTurn(t, rec)
			res, err := recorder.Resume(ctx, h, recorder.WithResumeClock(clock))
			require.NoError(t, err)
			require.Len(t, res.Appended, 1, "the rollback of the partial step")
			require.True(t, res.TurnOpen)
		},
		check: func(t *testing.T, st projection.AgentState) {
			require.Equal(t, "completed", st.LastStop.Kind)
			require.Empty(t, st.PendingCalls, "the partial step's call is rolled back")
		},
	}, {
		name: "checkpoint.RollbackTo through the handle",
		foreign: func(t *testing.T, h handle.Handle, rec *recorder.Recorder) {
			turn(t, rec, "one")
			turn(t, rec, "two")
			_, err := checkpoint.RollbackTo(ctx, h, "turn-1")
			require.NoError(t, err)
		},
		check: func(t *testing.T, st projection.AgentState) {
			require.Equal(t, 2, st.Turns, "turn two was rolled back; the last turn is the second one")
		},
	}, {
		name: "checkpoint.Rollback to a seq mid-turn",
		foreign: func(t *testing.T, h handle.Handle, rec *recorder.Recorder) {
			turn(t, rec, "one")
			openTurn(t, rec)
			_, err := checkpoint.Rollback(ctx, h, 1)
			require.NoError(t, err)
		},
		// Back inside turn one (open), then the "after" turn: two, not the
		// three the abandoned open turn would make.
		check: func(t *testing.T, st projection.AgentState) { require.Equal(t, 2, st.Turns) },
	}, {
		name: "a plain Append of a state-changing event and a custom type",
		foreign: func(t *testing.T, h handle.Handle, rec *recorder.Recorder) {
			_, err := h.Append(ctx,
				eventlog.Event{Type: "memory/set", Time: 1, Data: json.RawMessage(`{"key":"k","value":1}`)},
				eventlog.Event{Type: "app/custom", Time: 1, Data: json.RawMessage(`{"x":1}`)},
				eventlog.Event{Type: "usage", Time: 1, Data: json.RawMessage(`{"inputTokens":5,"outputTokens":1}`)})
			require.NoError(t, err)
		},
		check: func(t *testing.T, st projection.AgentState) {
			require.Contains(t, st.Memory, "k")
			require.Equal(t, int64(5), st.Usage.InputTokens)
		},
	}, {
		name: "another Recorder on the same handle",
		foreign: func(t *testing.T, h handle.Handle, rec *recorder.Recorder) {
			other, err := recorder.New(ctx, h, recorder.WithClock(clock))
			require.NoError(t, err)
			turn(t, other, "from the other one")
			turn(t, rec, "back")
			turn(t, other, "again")
		},
		check: func(t *testing.T, st projection.AgentState) { require.Equal(t, 4, st.Turns) },
	}, {
		name: "a checkpoint through the handle",
		foreign: func(t *testing.T, h handle.Handle, rec *recorder.Recorder) {
			_, err := checkpoint.Create(ctx, h, checkpoint.WithLabel("by hand"))
			require.NoError(t, err)
		},
		check: func(t *testing.T, st projection.AgentState) { require.Equal(t, 1, st.Turns) },
	}} {
		t.Run(tc.name, func(t *testing.T) {
			h, _ := newHandle(t)
			rec, err := recorder.New(ctx, h, recorder.WithClock(clock))
			require.NoError(t, err)
			tc.foreign(t, h, rec)
			requireInStep(t, rec, h)
			turn(t, rec, "after")
			tc.check(t, rec.State())
			requireInStep(t, rec, h)
			cp, ok, err := checkpoint.Last(ctx, h)
			require.NoError(t, err)
			require.True(t, ok)
			require.NotNil(t, cp.State, "the Recorder's checkpoint carries a state digest")
		})
	}
}

// The Recorder's own Resume, Rollback, RollbackTo and Fork keep it in step.
func TestRecorderLifecycleMethods(t *testing.T) {
	h, store := newHandle(t)
	rec, err := recorder.New(ctx, h, recorder.WithClock(clock))
	require.NoError(t, err)
	turn(t, rec, "one")
	openTurn(t, rec)

	res, err := rec.Resume(ctx)
	require.NoError(t, err)
	require.Len(t, res.Appended, 1, "the rollback of the partial step")
	require.True(t, res.Verdict.Resumable)
	require.True(t, rec.State().TurnOpen, "the turn goes on")
	require.False(t, rec.State().StepOpen)
	requireInStep(t, rec, h)
	closed, err := rec.CloseTurn(ctx)
	require.NoError(t, err)
	require.Len(t, closed.Appended, 1, "turn/end")
	require.False(t, rec.State().TurnOpen)
	again, err := rec.CloseTurn(ctx)
	require.NoError(t, err)
	require.Empty(t, again.Appended, "a second CloseTurn appends nothing")
	requireInStep(t, rec, h)

	turn(t, rec, "three")
	_, err = rec.RollbackTo(ctx, "turn-1")
	require.NoError(t, err)
	require.Equal(t, 1, rec.State().Turns)
	requireInStep(t, rec, h)
	turn(t, rec, "two again")
	requireInStep(t, rec, h)

	_, err = rec.Rollback(ctx, 0)
	require.NoError(t, err)
	require.Equal(t, 1, rec.State().Turns, "the state right after turn/start of turn one")
	require.True(t, rec.State().TurnOpen)

	at := h.Seq()
	fork, err := rec.Fork(ctx, store, at)
	require.NoError(t, err)
	defer fork.Close()
	require.Equal(t, rec.State(), fork.State(), "a fork at the last seq starts from the same state")
	mustSeq(t)(fork.EndTurn(ctx, recorder.Completed, ""))
	turn(t, fork, "on the fork")
	requireInStep(t, fork, fork.Handle())
	require.Equal(t, 2, fork.State().Turns)
	require.True(t, rec.State().TurnOpen, "the parent is untouched")
}

// Streamed text is never lost: a step the caller only streamed gets its
// chunks' text as its assistant/message, before its first tool call or at
// its end (before, the transcript had an assistant message with no text).
func TestRecorderRecordsStreamedText(t *testing.T) {
	for _, tc := range []struct {
		name string
		step func(t *testing.T, rec *recorder.Recorder)
		want []string // the step's events after step/start: type or type=text
	}{{
		name: "chunks then a tool call",
		step: func(t *testing.T, rec *recorder.Recorder) {
			mustSeq(t)(rec.Chunk(ctx, "Let me "))
			mustSeq(t)(rec.Chunk(ctx, "look"))
			mustSeq(t)(rec.ToolCall(ctx, recorder.Call{ID: "c1", Name: "read_file", Effect: "read"}))
			mustSeq(t)(rec.ToolResult(ctx, recorder.Result{ID: "c1", Output: "package a"}))
		},
		want: []string{"assistant/chunk", "assistant/chunk", "assistant/message=Let me look", "tool/call", "tool/result", "step/end"},
	}, {
		name: "chunks then the step's end",
		step: func(t *testing.T, rec *recorder.Recorder) {
			mustSeq(t)(rec.Chunk(ctx, "Done"))
			mustSeq(t)(rec.Chunk(ctx, "."))
		},
		want: []string{"assistant/chunk", "assistant/chunk", "assistant/message=Done.", "step/end"},
	}, {
		name: "chunks and the caller's own message: nothing added",
		step: func(t *testing.T, rec *recorder.Recorder) {
			mustSeq(t)(rec.Chunk(ctx, "Hi"))
			mustSeq(t)(rec.AssistantMessage(ctx, "Hi!", ""))
			mustSeq(t)(rec.ToolCall(ctx, recorder.Call{ID: "c1", Name: "ls"}))
		},
		want: []string{"assistant/chunk", "assistant/message=Hi!", "tool/call", "step/end"},
	}, {
		name: "chunks after the first call are not a message",
		step: func(t *testing.T, rec *recorder.Recorder) {
			mustSeq(t)(rec.ToolCall(ctx, recorder.Call{ID: "c1", Name: "ls"}))
			mustSeq(t)(rec.Chunk(ctx, "late"))
		},
		want: []string{"tool/call", "assistant/chunk", "step/end"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			h, _ := newHandle(t)
			rec, err := recorder.New(ctx, h, recorder.WithClock(clock))
			require.NoError(t, err)
			mustSeq(t)(rec.BeginTurn(ctx, nil))
			start := mustSeq(t)(rec.BeginStep(ctx))
			tc.step(t, rec)
			mustSeq(t)(rec.EndStep(ctx))
			var got []string
			for e, err := range h.Read(ctx, start+1, handle.End) {
				require.NoError(t, err)
				if e.Type == "assistant/message" {
					var d struct{ Text string }
					require.NoError(t, json.Unmarshal(e.Data, &d))
					got = append(got, e.Type+"="+d.Text)
					continue
				}
				got = append(got, e.Type)
			}
			require.Equal(t, tc.want, got)
			requireInStep(t, rec, h)
		})
	}
}

// A crash mid-stream: the transcript of the log the Recorder left shows
// what the model had said, marked partial.
func TestStreamedTextSurvivesACrash(t *testing.T) {
	h, _ := newHandle(t)
	rec, err := recorder.New(ctx, h, recorder.WithClock(clock))
	require.NoError(t, err)
	mustSeq(t)(rec.BeginTurn(ctx, nil))
	mustSeq(t)(rec.BeginStep(ctx))
	mustSeq(t)(rec.Chunk(ctx, "I was say"))
	mustSeq(t)(rec.Chunk(ctx, "ing"))
	require.NoError(t, rec.Flush(ctx))
	tr := projection.NewTranscript()
	_, err = replay.Replay(ctx, h, []projection.Projection{tr})
	require.NoError(t, err)
	msgs := tr.State().Messages
	require.Len(t, msgs, 1)
	require.Equal(t, "I was saying", msgs[0].Text)
	require.True(t, msgs[0].Partial)
}

// Appenders on other goroutines beside a recording loop: every event lands,
// and the Recorder's checkpoints still verify (its appends are conditional,
// so none pairs a state with a log it was not taken from).
func TestRecorderWithConcurrentAppender(t *testing.T) {
	h, _ := newHandle(t)
	rec, err := recorder.New(ctx, h, recorder.WithClock(clock))
	require.NoError(t, err)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := range 200 {
			_, err := h.Append(ctx, eventlog.Event{Type: "memory/set", Time: 1, Data: json.RawMessage(`{"key":"k","value":` + string(rune('0'+i%10)) + `}`)})
			if err != nil {
				t.Error(err)
				return
			}
		}
	}()
	for range 20 {
		turn(t, rec, "x")
	}
	wg.Wait()
	requireInStep(t, rec, h)
	require.Equal(t, 20, rec.State().Turns)
}

// What the handle stores is redacted (docs/format.md §11), and the
// Recorder's state is built from what is stored, not from what it was
// given: a secret in a memory value, a plan or a provider's state is
// redacted in the state too, and the checkpoint at the turn's end carries
// the state digest verify computes from the log.
func TestRecorderSeesTheRedactedForm(t *testing.T) {
	h, _ := newHandle(t)
	rec, err := recorder.New(ctx, h, recorder.WithClock(clock))
	require.NoError(t, err)
	secret := "ghp_" + strings.Repeat("aB3d", 9) // a GitHub token, built at run time
	seq := mustSeq(t)
	seq(rec.BeginTurn(ctx, nil))
	seq(rec.MemorySet(ctx, "token", secret, nil))
	seq(rec.SetPlan(ctx, map[string]string{"step": "use " + secret}))
	seq(rec.ProviderState(ctx, "p", map[string]string{"auth": secret}))
	seq(rec.EndTurn(ctx, recorder.Completed, ""))
	st, err := json.Marshal(rec.State())
	require.NoError(t, err)
	require.NotContains(t, string(st), secret)
	require.Contains(t, string(st), "[REDACTED:github-token]")
	requireInStep(t, rec, h)
}
