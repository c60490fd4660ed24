package recorder_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/spf13/afero"
	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/handle/file"
	"github.com/sessionlog/sessionlog/internal/testkit/faultfs"
	"github.com/sessionlog/sessionlog/projection"
	"github.com/sessionlog/sessionlog/recorder"
	"github.com/sessionlog/sessionlog/replay"
)

// events reads the log from seq from, as "type data" lines.
func events(t *testing.T, h handle.Handle, from int64) []string {
	t.Helper()
	var out []string
	for e, err := range h.Read(ctx, from, handle.End) {
		require.NoError(t, err)
		out = append(out, e.Type+" "+string(e.Data))
	}
	return out
}

// Response records the whole response and the step's end in one batch
// and one flush: reasoning, the message (the streamed text when it has
// none of its own), every call, the usage with the provider's fields, and
// step/end with the stop reason.
func TestResponse(t *testing.T) {
	for _, tc := range []struct {
		name   string
		chunks []string
		resp   recorder.Response
		want   []string
	}{{
		name: "reasoning, text, two calls, usage",
		resp: recorder.Response{
			Reasoning: []recorder.Reasoning{{Text: "think", Signature: "sig"}, {Text: "more"}},
			Text:      "Let me look.",
			Calls: []recorder.Call{
				{ID: "c1", Name: "read_file", Args: json.RawMessage(`{"path":"a"}`), Effect: "read"},
				{ID: "c2", Name: "bash"},
			},
			Usage: &recorder.Usage{InputTokens: 10, OutputTokens: 5, CachedTokens: 3, CacheWriteTokens: 7,
				CacheWriteByTTL: map[string]int64{"5m": 2, "1h": 5}, ServiceTier: "standard", Model: "m"},
			StopReason: "tool_use",
		},
		want: []string{
			`assistant/reasoning {"signature":"sig","text":"think"}`,
			`assistant/reasoning {"text":"more"}`,
			`assistant/message {"text":"Let me look."}`,
			`tool/call {"args":{"path":"a"},"effect":"read","id":"c1","name":"read_file"}`,
			`tool/call {"args":{},"id":"c2","name":"bash"}`,
			`usage {"inputTokens":10,"outputTokens":5,"cachedTokens":3,"cacheWriteTokens":7,"cacheWriteByTTL":{"1h":5,"5m":2},"serviceTier":"standard","model":"m"}`,
			`step/end {"stopReason":"tool_use"}`,
		},
	}, {
		name:   "streamed text becomes the message",
		chunks: []string{"Hel", "lo"},
		resp:   recorder.Response{StopReason: "end_turn"},
		want: []string{
			`assistant/chunk {"text":"Hel"}`, `assistant/chunk {"text":"lo"}`,
			`assistant/message {"text":"Hello"}`, `step/end {"stopReason":"end_turn"}`,
		},
	}, {
		name:   "the response's own text wins over the chunks",
		chunks: []string{"Hel"},
		resp:   recorder.Response{Text: "Hello!", Slot: "s"},
		want:   []string{`assistant/chunk {"text":"Hel"}`, `assistant/message {"slot":"s","text":"Hello!"}`, `step/end {}`},
	}, {
		name: "calls only",
		resp: recorder.Response{Calls: []recorder.Call{{ID: "c1", Name: "ls"}}},
		want: []string{`tool/call {"args":{},"id":"c1","name":"ls"}`, `step/end {}`},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			h, _ := newHandle(t)
			rec, err := recorder.New(ctx, h, recorder.WithClock(clock))
			require.NoError(t, err)
			mustSeq(t)(rec.BeginTurn(ctx, nil))
			start := mustSeq(t)(rec.BeginStep(ctx))
			for _, c := range tc.chunks {
				mustSeq(t)(rec.Chunk(ctx, c))
			}
			flushed := h.DurableSeq()
			end := mustSeq(t)(rec.Response(ctx, tc.resp))
			require.Equal(t, h.Seq(), end, "it returns the step/end's seq")
			require.Equal(t, end, h.DurableSeq(), "durable when it returns")
			require.Equal(t, start, flushed)
			got := events(t, h, start+1)
			require.Len(t, got, len(tc.want))
			for i := range got {
				wt, wd, _ := cut(tc.want[i])
				gt, gd, _ := cut(got[i])
				require.Equal(t, wt, gt)
				require.JSONEq(t, wd, gd)
			}
			require.False(t, rec.State().StepOpen, "the response ends its step")
			requireInStep(t, rec, h)
		})
	}
}

func cut(s string) (string, string, bool) { return strings.Cut(s, " ") }

// One flush per response: a crash that tears the batch anywhere leaves a
// step without its end, which Resume rolls back and asks again; the whole
// batch is a complete response, whose calls are to be run.
func TestResponseTornAtEveryEvent(t *testing.T) {
	resp := recorder.Response{
		Reasoning:  []recorder.Reasoning{{Text: "think"}},
		Text:       "two calls",
		Calls:      []recorder.Call{{ID: "r", Name: "read_file", Effect: "read"}, {ID: "w", Name: "write_file", Effect: "write"}},
		Usage:      &recorder.Usage{InputTokens: 1, OutputTokens: 1},
		StopReason: "tool_use",
	}
	// The batch as a Recorder writes it.
	h, _ := newHandle(t)
	rec, err := recorder.New(ctx, h, recorder.WithClock(clock))
	require.NoError(t, err)
	mustSeq(t)(rec.BeginTurn(ctx, "q"))
	mustSeq(t)(rec.UserMessage(ctx, "q", ""))
	start := mustSeq(t)(rec.BeginStep(ctx))
	mustSeq(t)(rec.Response(ctx, resp))
	var batch []eventlog.Event
	for e, err := range h.Read(ctx, start+1, handle.End) {
		require.NoError(t, err)
		e.Seq = 0
		batch = append(batch, e)
	}
	require.Len(t, batch, 6)

	for keep := 0; keep <= len(batch); keep++ {
		t.Run(fmt.Sprintf("keep %d of %d", keep, len(batch)), func(t *testing.T) {
			h, _ := newHandle(t)
			rec, err := recorder.New(ctx, h, recorder.WithClock(clock))
			require.NoError(t, err)
			mustSeq(t)(rec.BeginTurn(ctx, "q"))
			mustSeq(t)(rec.UserMessage(ctx, "q", ""))
			start := mustSeq(t)(rec.BeginStep(ctx))
			if keep > 0 {
				mustSeq(t)(h.Append(ctx, batch[:keep]...))
				require.NoError(t, h.Flush(ctx))
			}
			rec, err = recorder.New(ctx, h, recorder.WithClock(clock))
			require.NoError(t, err)
			plan, err := rec.Resume(ctx)
			require.NoError(t, err)
			require.True(t, plan.TurnOpen)
			require.Equal(t, json.RawMessage(`"q"`), plan.Input)
			st := rec.State()
			require.True(t, st.TurnOpen)
			require.False(t, st.StepOpen)
			if keep < len(batch) {
				require.Equal(t, start, plan.Redo, "a partial response is asked again")
				require.Len(t, plan.Appended, 1)
				require.Empty(t, plan.Run)
				require.Empty(t, st.PendingCalls, "the partial calls are forgotten")
				tr := projection.NewTranscript()
				_, err := replay.Replay(ctx, h, []projection.Projection{tr})
				require.NoError(t, err)
				require.Len(t, tr.State().Messages, 1, "only the user's message is left")
				require.Equal(t, 0, st.Steps, "the step/start is rolled back too: the state before it")
				return
			}
			require.Equal(t, int64(-1), plan.Redo)
			require.Empty(t, plan.Appended)
			require.Equal(t, []string{"r", "w"}, []string{plan.Run[0].ID, plan.Run[1].ID}, "a read, and a write never started")
			require.Equal(t, "write_file", plan.Run[1].Name)
		})
	}
}

// All of a response's calls become durable with one fsync, where a
// ToolCall each costs one: a crash between two of them lost the later.
func TestResponseIsOneFlush(t *testing.T) {
	disk := faultfs.New(afero.NewMemMapFs())
	h, err := file.New(disk, "/s").Create(ctx)
	require.NoError(t, err)
	defer h.Close()
	rec, err := recorder.New(ctx, h, recorder.WithClock(clock))
	require.NoError(t, err)
	mustSeq(t)(rec.BeginTurn(ctx, nil))
	mustSeq(t)(rec.BeginStep(ctx))
	calls := []recorder.Call{{ID: "a", Name: "x"}, {ID: "b", Name: "x"}, {ID: "c", Name: "x"}}
	before := disk.SyncCount()
	mustSeq(t)(rec.Response(ctx, recorder.Response{Text: "three", Calls: calls}))
	require.Equal(t, before+1, disk.SyncCount(), "one flush for the whole response")

	mustSeq(t)(rec.BeginStep(ctx))
	before = disk.SyncCount()
	for i := range calls {
		calls[i].ID += "2"
		mustSeq(t)(rec.ToolCall(ctx, calls[i]))
	}
	require.Equal(t, before+len(calls), disk.SyncCount(), "ToolCall flushes each call")
}

// Resume carries the open turn on: a partial response is rolled back and
// asked again, a call that only reads or never started is to be run, an
// approved write gets a synthetic result (outcome unknown), a denied one
// that it did not run; the turn stays open. The package's Resume and the
// Recorder's do the same.
func TestResumeContinues(t *testing.T) {
	read := recorder.Call{ID: "r", Name: "read_file", Effect: "read"}
	write := recorder.Call{ID: "w", Name: "write_file", Effect: "write"}
	unknown := recorder.Call{ID: "u", Name: "bash"}
	denied := recorder.Call{ID: "d", Name: "rm", Effect: "write"}
	done := recorder.Call{ID: "ok", Name: "ls", Effect: "read"}
	for _, tc := range []struct {
		name      string
		setup     func(t *testing.T, rec *recorder.Recorder)
		open      bool
		appended  []string // types appended, in order
		redo      bool     // the step/start rolled back is the last one
		run       []string
		synthetic []string // ids, in call order
		errs      []string // their errors' prefixes
		answered  bool
		stop      string
	}{{
		name:  "no turn",
		setup: func(*testing.T, *recorder.Recorder) {},
	}, {
		name: "closed turn",
		setup: func(t *testing.T, rec *recorder.Recorder) {
			turn(t, rec, "one")
		},
	}, {
		name: "open turn before its first step",
		setup: func(t *testing.T, rec *recorder.Recorder) {
			mustSeq(t)(rec.BeginTurn(ctx, "q"))
			mustSeq(t)(rec.UserMessage(ctx, "q", ""))
			require.NoError(t, rec.Flush(ctx))
		},
		open: true,
	}, {
		name: "a step with only chunks: partial",
		setup: func(t *testing.T, rec *recorder.Recorder) {
			mustSeq(t)(rec.BeginTurn(ctx, "q"))
			mustSeq(t)(rec.BeginStep(ctx))
			mustSeq(t)(rec.Reasoning(ctx, "hm", "sig"))
			mustSeq(t)(rec.Chunk(ctx, "I was say"))
			require.NoError(t, rec.Flush(ctx))
		},
		open: true, appended: []string{"rollback"}, redo: true,
	}, {
		name: "a step with nothing after its start: partial",
		setup: func(t *testing.T, rec *recorder.Recorder) {
			mustSeq(t)(rec.BeginTurn(ctx, "q"))
			mustSeq(t)(rec.BeginStep(ctx))
		},
		open: true, appended: []string{"rollback"}, redo: true,
	}, {
		name: "a complete response: each call by the policy",
		setup: func(t *testing.T, rec *recorder.Recorder) {
			mustSeq(t)(rec.BeginTurn(ctx, "q"))
			mustSeq(t)(rec.BeginStep(ctx))
			mustSeq(t)(rec.Response(ctx, recorder.Response{Calls: []recorder.Call{done, read, write, unknown, denied}}))
			mustSeq(t)(rec.ToolResult(ctx, recorder.Result{ID: "ok", Output: "a"}))
			mustSeq(t)(rec.ToolApproval(ctx, "u", "approved", "user"))
			mustSeq(t)(rec.ToolApproval(ctx, "d", "denied", "user"))
		},
		open: true, appended: []string{"tool/result", "tool/result"},
		run: []string{"r", "w"}, synthetic: []string{"u", "d"}, errs: []string{"outcome unknown", "not run: the call was denied"},
	}, {
		name: "an approved write started: outcome unknown",
		setup: func(t *testing.T, rec *recorder.Recorder) {
			mustSeq(t)(rec.BeginTurn(ctx, "q"))
			mustSeq(t)(rec.BeginStep(ctx))
			mustSeq(t)(rec.Response(ctx, recorder.Response{Calls: []recorder.Call{write}}))
			mustSeq(t)(rec.ToolApproval(ctx, "w", "approved", ""))
		},
		open: true, appended: []string{"tool/result"}, synthetic: []string{"w"}, errs: []string{"outcome unknown"},
	}, {
		name: "calls recorded one by one, one of them settled: the step is ended",
		setup: func(t *testing.T, rec *recorder.Recorder) {
			mustSeq(t)(rec.BeginTurn(ctx, "q"))
			mustSeq(t)(rec.BeginStep(ctx))
			mustSeq(t)(rec.AssistantMessage(ctx, "two", ""))
			mustSeq(t)(rec.ToolCall(ctx, read))
			mustSeq(t)(rec.ToolResult(ctx, recorder.Result{ID: "r", Output: "a"}))
			mustSeq(t)(rec.ToolCall(ctx, write))
		},
		open: true, appended: []string{"step/end"}, run: []string{"w"},
	}, {
		name: "calls recorded one by one, none settled: partial",
		setup: func(t *testing.T, rec *recorder.Recorder) {
			mustSeq(t)(rec.BeginTurn(ctx, "q"))
			mustSeq(t)(rec.BeginStep(ctx))
			mustSeq(t)(rec.AssistantMessage(ctx, "two", ""))
			mustSeq(t)(rec.ToolCall(ctx, read))
			mustSeq(t)(rec.ToolCall(ctx, write))
		},
		open: true, appended: []string{"rollback"}, redo: true,
	}, {
		name: "answered, the turn not ended",
		setup: func(t *testing.T, rec *recorder.Recorder) {
			mustSeq(t)(rec.BeginTurn(ctx, "q"))
			mustSeq(t)(rec.BeginStep(ctx))
			mustSeq(t)(rec.Response(ctx, recorder.Response{Calls: []recorder.Call{read}, StopReason: "tool_use"}))
			mustSeq(t)(rec.ToolResult(ctx, recorder.Result{ID: "r", Output: "a"}))
			mustSeq(t)(rec.BeginStep(ctx))
			mustSeq(t)(rec.Response(ctx, recorder.Response{Text: "done", StopReason: "end_turn"}))
		},
		open: true, answered: true, stop: "end_turn",
	}, {
		name: "a partial step after a rollback: back to the rollback's state",
		setup: func(t *testing.T, rec *recorder.Recorder) {
			mustSeq(t)(rec.BeginTurn(ctx, "q"))
			mustSeq(t)(rec.UserMessage(ctx, "q", ""))
			mustSeq(t)(rec.BeginStep(ctx))
			mustSeq(t)(rec.Response(ctx, recorder.Response{Calls: []recorder.Call{read}}))
			mustSeq(t)(rec.Rollback(ctx, 1))
			mustSeq(t)(rec.BeginStep(ctx))
			mustSeq(t)(rec.Chunk(ctx, "again"))
		},
		open: true, appended: []string{"rollback"}, redo: true,
	}} {
		for _, pkg := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/package %t", tc.name, pkg), func(t *testing.T) {
				h, store := newHandle(t)
				rec, err := recorder.New(ctx, h, recorder.WithClock(clock), recorder.WithoutAutoCheckpoint())
				require.NoError(t, err)
				tc.setup(t, rec)
				before, lastStart := h.Seq(), int64(-1)
				for e, err := range h.Read(ctx, 0, handle.End) {
					require.NoError(t, err)
					if e.Type == "step/start" {
						lastStart = e.Seq
					}
				}
				// A new process resumes.
				rec, err = recorder.New(ctx, h, recorder.WithClock(clock), recorder.WithCache(store))
				require.NoError(t, err)
				resume := rec.Resume
				if pkg {
					resume = func(ctx context.Context) (recorder.ResumeResult, error) {
						return recorder.Resume(ctx, h, recorder.WithResumeClock(clock), recorder.WithResumeCache(store))
					}
				}
				plan, err := resume(ctx)
				require.NoError(t, err)
				require.Equal(t, h.Seq(), h.DurableSeq(), "durable when Resume returns")
				require.True(t, plan.Verdict.Resumable, plan.Verdict.Reason)

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
					if e.Type == "rollback" {
						r, err := eventlog.ParseRollback(e.Data)
						require.NoError(t, err)
						require.Equal(t, lastStart-1, r.To, "back to the event before the step/start")
						require.Equal(t, recorder.ReasonPartial, r.Reason)
					}
				}
				require.Equal(t, tc.appended, types)
				require.Equal(t, tc.errs, errs)
				require.Len(t, plan.Appended, len(tc.appended))
				wantRedo := int64(-1)
				if tc.redo {
					wantRedo = lastStart
				}
				require.Equal(t, wantRedo, plan.Redo)
				ids := func(cs []recorder.Call) (out []string) {
					for _, c := range cs {
						out = append(out, c.ID)
					}
					return out
				}
				require.Equal(t, tc.run, ids(plan.Run))
				require.Equal(t, tc.synthetic, ids(plan.Synthetic))
				require.Equal(t, tc.answered, plan.Answered)
				require.Equal(t, tc.stop, plan.StopReason)

				require.Equal(t, tc.open, plan.TurnOpen)
				st := rec.State()
				require.Equal(t, tc.open, st.TurnOpen, "the turn stays open")
				require.False(t, st.StepOpen, "no step is left open")
				if tc.open {
					require.Equal(t, st.CurrentTurnStart, plan.Turn)
					require.JSONEq(t, `"q"`, string(plan.Input))
					require.Len(t, st.PendingCalls, len(tc.run), "the calls to run are the calls waiting")
				} else {
					require.Equal(t, int64(-1), plan.Turn)
				}
				requireInStep(t, rec, h)

				again, err := rec.Resume(ctx)
				require.NoError(t, err)
				require.Empty(t, again.Appended, "a second Resume appends nothing")
				require.Equal(t, plan.Run, again.Run)
				require.Equal(t, tc.open, again.TurnOpen)
			})
		}
	}
}

// A fork made through the Recorder has the labels WithForkLabels gives,
// and only that fork: the fork's own forks have none unless asked.
func TestForkLabels(t *testing.T) {
	h, store := newHandle(t)
	rec, err := recorder.New(ctx, h, recorder.WithClock(clock))
	require.NoError(t, err)
	turn(t, rec, "one")
	labels := map[string]string{"agent": "coder", "task": "t1"}
	fork, err := rec.Fork(ctx, store, h.Seq(), recorder.WithForkLabels(labels))
	require.NoError(t, err)
	defer fork.Close()
	require.Equal(t, labels, fork.Handle().(handle.Handle).Header().Labels)
	inner, err := fork.Fork(ctx, store, fork.Handle().(handle.Handle).Seq())
	require.NoError(t, err)
	defer inner.Close()
	require.Empty(t, inner.Handle().(handle.Handle).Header().Labels)
	plain, err := rec.Fork(ctx, store, h.Seq())
	require.NoError(t, err)
	defer plain.Close()
	require.Empty(t, plain.Handle().(handle.Handle).Header().Labels)
}
