package recorder_test

import (
	"context"
	"encoding/json"
	"errors"
	"iter"
	"testing"
	"time"

	"github.com/spf13/afero"
	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/checkpoint"
	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/handle/file"
	"github.com/sessionlog/sessionlog/projection"
	"github.com/sessionlog/sessionlog/recorder"
	"github.com/sessionlog/sessionlog/replay"
)

var ctx = context.Background()

func clock() time.Time { return time.UnixMilli(1764450000000) }

func newHandle(t *testing.T) (handle.Handle, *file.Store) {
	t.Helper()
	store := file.New(afero.NewMemMapFs(), "/s")
	h, err := store.Create(ctx)
	require.NoError(t, err)
	t.Cleanup(func() { h.Close() })
	return h, store
}

func mustSeq(t *testing.T) func(int64, error) int64 {
	return func(seq int64, err error) int64 {
		t.Helper()
		require.NoError(t, err)
		return seq
	}
}

// The flush policy follows the loop: durable before the model is called,
// before a tool runs, at a step's end; chunks stay cheap.
func TestFlushPolicy(t *testing.T) {
	h, _ := newHandle(t)
	rec, err := recorder.New(ctx, h, recorder.WithClock(clock))
	require.NoError(t, err)
	seq := mustSeq(t)
	for _, tc := range []struct {
		name    string
		call    func() int64
		durable bool
	}{
		{"turn/start", func() int64 { return seq(rec.BeginTurn(ctx, "hi")) }, false},
		{"user/message", func() int64 { return seq(rec.UserMessage(ctx, "hi", "")) }, false},
		{"step/start: the request is durable before the model is called", func() int64 { return seq(rec.BeginStep(ctx)) }, true},
		{"assistant/chunk", func() int64 { return seq(rec.Chunk(ctx, "He")) }, false},
		{"assistant/chunk again", func() int64 { return seq(rec.Chunk(ctx, "llo")) }, false},
		{"assistant/message", func() int64 { return seq(rec.AssistantMessage(ctx, "Hello", "")) }, false},
		{"tool/call: durable before the tool runs", func() int64 {
			return seq(rec.ToolCall(ctx, recorder.Call{ID: "c1", Name: "read_file", Args: json.RawMessage(`{"path":"a"}`), Effect: "read"}))
		}, true},
		{"tool/approval", func() int64 { return seq(rec.ToolApproval(ctx, "c1", "approved", "user")) }, true},
		{"tool/result", func() int64 { return seq(rec.ToolResult(ctx, recorder.Result{ID: "c1", Output: "package a"})) }, false},
		{"usage", func() int64 { return seq(rec.Usage(ctx, recorder.Usage{InputTokens: 10, OutputTokens: 2, Model: "m"})) }, false},
		{"step/end: the step's results are durable", func() int64 { return seq(rec.EndStep(ctx)) }, true},
	} {
		s := tc.call()
		if tc.durable {
			require.Equal(t, s, h.DurableSeq(), tc.name)
		} else {
			require.Less(t, h.DurableSeq(), s, tc.name)
		}
	}
	st := rec.State()
	require.True(t, st.TurnOpen)
	require.Equal(t, int64(10), st.Usage.InputTokens)
	_, err = rec.Checkpoint(ctx, "mid")
	require.ErrorIs(t, err, recorder.ErrMidTurn)

	end := seq(rec.EndTurn(ctx, recorder.Completed, ""))
	require.GreaterOrEqual(t, h.DurableSeq(), end)
	cps, err := checkpoint.List(ctx, h)
	require.NoError(t, err)
	require.Len(t, cps, 1, "a checkpoint at the turn's end")
	require.Equal(t, end+1, cps[0].Seq)
	require.Equal(t, "agent/v1", cps[0].State.Projection)
	res, err := checkpoint.Verify(ctx, h, projection.NewAgent())
	require.NoError(t, err)
	require.Equal(t, 1, res.Verified, "the recorder's state digest is the one verify recomputes")
}

func TestWithoutAutoCheckpoint(t *testing.T) {
	h, _ := newHandle(t)
	rec, err := recorder.New(ctx, h, recorder.WithoutAutoCheckpoint())
	require.NoError(t, err)
	mustSeq(t)(rec.BeginTurn(ctx, nil))
	mustSeq(t)(rec.EndTurn(ctx, recorder.Completed, ""))
	cps, err := checkpoint.List(ctx, h)
	require.NoError(t, err)
	require.Empty(t, cps)
}

// CloseTurn appends, durably, the closers a read-only reader adds in
// memory: the same events, seqs and states.
func TestCloseTurn(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(rec *recorder.Recorder)
		want  []string // types appended, in order
		errs  []string // the synthetic results' error prefixes, in order
	}{
		{"no turn", func(*recorder.Recorder) {}, nil, nil},
		{"closed turn", func(rec *recorder.Recorder) {
			rec.BeginTurn(ctx, nil)
			rec.EndTurn(ctx, recorder.Completed, "")
		}, nil, nil},
		{"open turn, nothing pending", func(rec *recorder.Recorder) {
			rec.BeginTurn(ctx, nil)
			rec.UserMessage(ctx, "hi", "")
		}, []string{"turn/end"}, nil},
		{"open step with a read, a write and an unknown call", func(rec *recorder.Recorder) {
			rec.BeginTurn(ctx, nil)
			rec.BeginStep(ctx)
			rec.ToolCall(ctx, recorder.Call{ID: "r", Name: "read_file", Effect: "read"})
			rec.ToolCall(ctx, recorder.Call{ID: "w", Name: "write_file", Effect: "write"})
			rec.ToolCall(ctx, recorder.Call{ID: "u", Name: "bash"})
			rec.ToolCall(ctx, recorder.Call{ID: "done", Name: "bash"})
			rec.ToolResult(ctx, recorder.Result{ID: "done", Output: "ok"})
		}, []string{"tool/result", "tool/result", "tool/result", "step/end", "turn/end"},
			[]string{"not run or lost", "outcome unknown", "outcome unknown"}},
		{"step closed, turn open", func(rec *recorder.Recorder) {
			rec.BeginTurn(ctx, nil)
			rec.BeginStep(ctx)
			rec.EndStep(ctx)
		}, []string{"turn/end"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, store := newHandle(t)
			rec, err := recorder.New(ctx, h, recorder.WithoutAutoCheckpoint())
			require.NoError(t, err)
			tc.setup(rec)
			require.NoError(t, rec.Flush(ctx))
			before := h.Seq()

			// A read-only reader closes the turn in memory (docs/format.md §8): the
			// same events, the same seqs, the same states as Resume.
			r, err := store.Open(ctx, h.ID(), handle.ReadOnly)
			require.NoError(t, err)
			agent, tr := projection.NewAgent(), projection.NewTranscript()
			_, err = replay.Replay(ctx, r, []projection.Projection{agent, tr})
			require.NoError(t, err)
			require.NoError(t, r.Close())
			inMemory := recorder.CloseInMemory(agent.State(), before+1, []projection.Projection{agent, tr}, clock())
			require.Len(t, inMemory, len(tc.want))
			memAgent, _ := agent.MarshalState()
			memTr, _ := tr.MarshalState()

			res, err := recorder.CloseTurn(ctx, h, recorder.WithResumeCache(store), recorder.WithResumeClock(clock))
			require.NoError(t, err)
			var written []eventlog.Event
			for e, err := range h.Read(ctx, before+1, handle.End) {
				require.NoError(t, err)
				written = append(written, e)
			}
			require.Equal(t, len(written), len(inMemory))
			for i := range written {
				require.Equal(t, written[i].Seq, inMemory[i].Seq)
				require.Equal(t, string(eventlog.Canon(written[i])), string(eventlog.Canon(inMemory[i])))
			}
			agent, tr = projection.NewAgent(), projection.NewTranscript()
			_, err = replay.Replay(ctx, h, []projection.Projection{agent, tr})
			require.NoError(t, err)
			gotAgent, _ := agent.MarshalState()
			gotTr, _ := tr.MarshalState()
			require.JSONEq(t, string(gotAgent), string(memAgent), "the agent state a resume gives")
			require.JSONEq(t, string(gotTr), string(memTr), "the transcript a resume gives")
			require.True(t, res.Verdict.Resumable, res.Verdict.Reason)
			require.Equal(t, before+int64(len(tc.want)), h.Seq())
			require.GreaterOrEqual(t, h.DurableSeq(), h.Seq(), "closers are durable when CloseTurn returns")
			var types, errs []string
			for e, err := range h.Read(ctx, before+1, handle.End) {
				require.NoError(t, err)
				types = append(types, e.Type)
				if e.Type == "tool/result" {
					var d struct {
						Error     string
						Synthetic bool
					}
					require.NoError(t, json.Unmarshal(e.Data, &d))
					require.True(t, d.Synthetic)
					errs = append(errs, d.Error[:len(tc.errs[len(errs)])])
				}
				if e.Type == "turn/end" {
					require.Contains(t, string(e.Data), `"kind":"interrupted"`)
				}
			}
			require.Equal(t, tc.want, types)
			require.Equal(t, tc.errs, errs)

			again, err := recorder.CloseTurn(ctx, h)
			require.NoError(t, err)
			require.Empty(t, again.Appended, "closing twice adds nothing")
			facts, err := recorder.ReadFacts(ctx, h, nil)
			require.NoError(t, err)
			require.False(t, facts.OpenTurn)
		})
	}
}

// Every stop kind of the vocabulary has an explicit verdict; an unknown
// kind never resumes.
func TestVerdicts(t *testing.T) {
	want := map[string]bool{"completed": true, "interrupted": true, "paused": true, "cancelled": true, "failed": false, "budget": false}
	require.Len(t, recorder.StopKinds(), len(want), "a new stop kind needs a verdict here and in the table")
	for _, kind := range recorder.StopKinds() {
		v := recorder.VerdictFor(kind)
		require.Equal(t, want[kind], v.Resumable, kind)
		require.NotContains(t, v.Reason, "does not know", "kind %q has no explicit verdict", kind)
		require.NotEmpty(t, v.Reason)
	}
	for _, kind := range []string{"", "exploded", "COMPLETED"} {
		v := recorder.VerdictFor(kind)
		require.False(t, v.Resumable, kind)
		require.Contains(t, v.Reason, "does not know")
	}
}

func TestFacts(t *testing.T) {
	h, store := newHandle(t)
	rec, err := recorder.New(ctx, h)
	require.NoError(t, err)
	seq := mustSeq(t)
	seq(rec.BeginTurn(ctx, nil))
	seq(rec.EndTurn(ctx, recorder.Failed, "tool crashed")) // + checkpoint
	f, err := recorder.ReadFacts(ctx, h, store)
	require.NoError(t, err)
	require.False(t, f.OpenTurn)
	require.Equal(t, "failed", f.Stop.Kind)
	require.Equal(t, "tool crashed", f.Stop.Reason)
	require.False(t, f.Verdict.Resumable)

	start := seq(rec.BeginTurn(ctx, nil))
	require.NoError(t, rec.Flush(ctx))
	f, err = recorder.ReadFacts(ctx, h, store)
	require.NoError(t, err)
	require.True(t, f.OpenTurn)
	require.True(t, f.Verdict.Resumable)
	require.Equal(t, "failed", f.Stop.Kind, "the stop before the open turn")

	// A rollback to before the open turn closes it: the facts replay.
	_, err = h.Append(ctx, eventlog.Event{Type: "rollback", Data: json.RawMessage(`{"to":` + jsonInt(start-1) + `}`)})
	require.NoError(t, err)
	require.NoError(t, h.Flush(ctx))
	f, err = recorder.ReadFacts(ctx, h, store)
	require.NoError(t, err)
	require.False(t, f.OpenTurn)
	require.Equal(t, "failed", f.Stop.Kind)
}

func jsonInt(v int64) string { b, _ := json.Marshal(v); return string(b) }

// A rollback between an open turn and the turn/end before it decides the
// stop before the open turn: the facts are those of a replay, not of the
// last turn/end in the file.
func TestFactsRollbackBeforeOpenTurn(t *testing.T) {
	ev := func(typ, data string) eventlog.Event {
		return eventlog.Event{Type: typ, Time: clock().UnixMilli(), Data: json.RawMessage(data)}
	}
	start, end := ev("turn/start", `{}`), func(kind string) eventlog.Event { return ev("turn/end", `{"kind":"`+kind+`"}`) }
	rollback := func(to int64) eventlog.Event { return ev("rollback", `{"to":`+jsonInt(to)+`}`) }
	for _, tc := range []struct {
		name string
		log  []eventlog.Event
		stop *recorder.Stop
	}{
		{"the only stop is undone", []eventlog.Event{start, end(recorder.Failed), rollback(0), start}, nil},
		{"the stop before the undone one", []eventlog.Event{start, end(recorder.Completed), start, end(recorder.Failed), rollback(1), start},
			&recorder.Stop{Seq: 1, Kind: recorder.Completed}},
		{"a rollback before the stop changes nothing", []eventlog.Event{start, rollback(0), end(recorder.Failed), start},
			&recorder.Stop{Seq: 2, Kind: recorder.Failed}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, store := newHandle(t)
			_, err := h.Append(ctx, tc.log...)
			require.NoError(t, err)
			for _, cache := range []replay.Cache{nil, store} {
				f, err := recorder.ReadFacts(ctx, h, cache)
				require.NoError(t, err)
				require.True(t, f.OpenTurn)
				require.True(t, f.Verdict.Resumable)
				require.Equal(t, tc.stop, f.Stop)
			}
		})
	}
}

// failingBelow is a Source whose reads of events before seq below fail.
type failingBelow struct {
	recorder.Source
	below int64
}

var errBroken = errors.New("broken read")

func (s failingBelow) Read(ctx context.Context, from, to int64) iter.Seq2[eventlog.Event, error] {
	if from < s.below {
		return func(yield func(eventlog.Event, error) bool) { yield(eventlog.Event{}, errBroken) }
	}
	return s.Source.Read(ctx, from, to)
}

// A read that fails while ReadFacts looks for the stop before an open
// turn fails it: it does not report that there is no stop.
func TestFactsReadError(t *testing.T) {
	h, _ := newHandle(t)
	evs := []eventlog.Event{{Type: "turn/start"}, {Type: "turn/end", Data: json.RawMessage(`{"kind":"failed"}`)}}
	for range 300 {
		evs = append(evs, eventlog.Event{Type: "assistant/chunk", Data: json.RawMessage(`{"text":"."}`)})
	}
	start, err := h.Append(ctx, append(evs, eventlog.Event{Type: "turn/start"})...)
	require.NoError(t, err)
	_, err = checkpoint.Create(ctx, h, checkpoint.WithClock(clock))
	require.NoError(t, err)
	f, err := recorder.ReadFacts(ctx, h, nil)
	require.NoError(t, err)
	require.True(t, f.OpenTurn)
	require.Equal(t, &recorder.Stop{Seq: 1, Kind: recorder.Failed}, f.Stop)

	// The facts' first window holds the checkpoint and the open turn; the
	// stop before it is two windows back.
	_, err = recorder.ReadFacts(ctx, failingBelow{Source: h, below: start - 256}, nil)
	require.ErrorIs(t, err, errBroken)
}

// countingSource counts the events ReadFacts reads.
type countingSource struct {
	recorder.Source
	read *int
}

func (s countingSource) Read(ctx context.Context, from, to int64) iter.Seq2[eventlog.Event, error] {
	return func(yield func(eventlog.Event, error) bool) {
		for e, err := range s.Source.Read(ctx, from, to) {
			*s.read++
			if !yield(e, err) {
				return
			}
		}
	}
}

// The stop before an open turn is found in the windows the scan already
// read: no event is read twice. Regression: it was looked for again from
// the turn's start.
func TestFactsReadEachEventOnce(t *testing.T) {
	h, _ := newHandle(t)
	rec, err := recorder.New(ctx, h, recorder.WithoutAutoCheckpoint())
	require.NoError(t, err)
	seq := mustSeq(t)
	seq(rec.BeginTurn(ctx, nil))
	seq(rec.EndTurn(ctx, recorder.Completed, ""))
	seq(rec.BeginTurn(ctx, nil))
	for range 600 { // more than two windows
		seq(rec.UserMessage(ctx, "more", ""))
	}
	require.NoError(t, rec.Flush(ctx))
	read := 0
	facts, err := recorder.ReadFacts(ctx, countingSource{h, &read}, nil)
	require.NoError(t, err)
	require.True(t, facts.OpenTurn)
	require.NotNil(t, facts.Stop)
	require.Equal(t, "completed", facts.Stop.Kind)
	require.Equal(t, int(h.Seq())+1, read, "every event read once")
}
