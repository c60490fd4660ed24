package recorder_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/spf13/afero"
	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/handle/file"
	"github.com/sessionlog/sessionlog/internal/testkit/faultfs"
	"github.com/sessionlog/sessionlog/projection"
	"github.com/sessionlog/sessionlog/recorder"
	"github.com/sessionlog/sessionlog/replay"
)

var errKilled = errors.New("killed")

// crashLoop is an agent loop on the Recorder as docs/format.md §8 ("Resume
// that continues") asks one to be: Resume when it starts, act on the plan,
// record each response whole (Response), an approval right before a call
// that writes runs. Its model answers from the conversation the log holds,
// so a request it is sent is the transcript at that point; its tools count
// their runs in the world, which a crash does not undo.
type crashLoop struct {
	t        *testing.T
	inputs   []string
	runs     map[string]int // tool runs by call id
	requests []string       // the conversation sent at each model call
	points   int            // recorder calls made
	killAt   int            // the recorder call after which the process dies (0: never)
}

// point counts a recorder call that returned, and kills the process at
// killAt.
func (l *crashLoop) point(_ int64, err error) error {
	if err != nil {
		return err
	}
	l.points++
	if l.points == l.killAt {
		return errKilled
	}
	return nil
}

// conversation is what the model is sent: the live transcript, without
// seqs.
func conversation(t *testing.T, h handle.Handle) string {
	tr := projection.NewTranscript()
	_, err := replay.Replay(ctx, h, []projection.Projection{tr})
	require.NoError(t, err)
	var b strings.Builder
	for _, m := range tr.State().Messages {
		m.Seq, m.Partial = 0, false
		j, err := json.Marshal(m)
		require.NoError(t, err)
		b.Write(j)
		b.WriteByte('\n')
	}
	return b.String()
}

// model answers the conversation: the first response of a turn reads and
// writes, the second answers.
func (l *crashLoop) model(h handle.Handle, n int) recorder.Response {
	conv := conversation(l.t, h)
	l.requests = append(l.requests, conv)
	lines := strings.Split(strings.TrimSpace(conv), "\n")
	last := lines[len(lines)-1]
	if strings.Contains(last, `"role":"user"`) {
		return recorder.Response{
			Reasoning: []recorder.Reasoning{{Text: fmt.Sprintf("turn %d: read, then write", n), Signature: "s"}},
			Text:      "Let me look, then change it.",
			Calls: []recorder.Call{
				{ID: fmt.Sprintf("t%d-r", n), Name: "read_file", Args: json.RawMessage(`{"path":"a"}`), Effect: "read"},
				{ID: fmt.Sprintf("t%d-w", n), Name: "write_file", Args: json.RawMessage(`{"path":"a"}`), Effect: "write"},
			},
			Usage:      &recorder.Usage{InputTokens: 100, OutputTokens: 10, CacheWriteTokens: 90, CacheWriteByTTL: map[string]int64{"5m": 90}},
			StopReason: "tool_use",
		}
	}
	return recorder.Response{Text: fmt.Sprintf("Turn %d done.", n), StopReason: "end_turn"}
}

// run is the loop: it resumes, carries an open turn on, then plays the
// turns the log does not hold yet.
func (l *crashLoop) run(h handle.Handle, store *file.Store) error {
	rec, err := recorder.New(ctx, h, recorder.WithClock(clock), recorder.WithCache(store))
	if err != nil {
		return err
	}
	plan, err := rec.Resume(ctx)
	if err != nil {
		return err
	}
	if plan.TurnOpen {
		if err := l.carryOn(rec, h, rec.State().Turns, plan.Run, plan.Answered); err != nil {
			return err
		}
	}
	for n := rec.State().Turns + 1; n <= len(l.inputs); n++ {
		if err := l.point(rec.BeginTurn(ctx, l.inputs[n-1])); err != nil {
			return err
		}
		if err := l.point(rec.UserMessage(ctx, l.inputs[n-1], "")); err != nil {
			return err
		}
		if err := l.carryOn(rec, h, n, nil, false); err != nil {
			return err
		}
	}
	return nil
}

// carryOn runs the calls waiting, then asks the model until it answers,
// and ends turn n.
func (l *crashLoop) carryOn(rec *recorder.Recorder, h handle.Handle, n int, calls []recorder.Call, answered bool) error {
	for !answered {
		if err := l.runCalls(rec, calls); err != nil {
			return err
		}
		if err := l.point(rec.BeginStep(ctx)); err != nil {
			return err
		}
		resp := l.model(h, n)
		if err := l.point(rec.Response(ctx, resp)); err != nil {
			return err
		}
		calls, answered = resp.Calls, len(resp.Calls) == 0
	}
	return l.point(rec.EndTurn(ctx, recorder.Completed, ""))
}

func (l *crashLoop) runCalls(rec *recorder.Recorder, calls []recorder.Call) error {
	for _, c := range calls {
		if c.Effect != "read" {
			if err := l.point(rec.ToolApproval(ctx, c.ID, "approved", "policy")); err != nil {
				return err
			}
		}
		l.runs[c.ID]++
		if err := l.point(rec.ToolResult(ctx, recorder.Result{ID: c.ID, Output: "ran " + c.ID})); err != nil {
			return err
		}
	}
	return nil
}

// Kill the loop after every recorder call, by a power cut (only what was
// flushed survives) or a process kill (what was written survives), and
// start it again: it finishes every turn; a call that writes runs at most
// once, and a write that may have run without its result recorded is the
// only difference to the run that never crashed, where it gets a
// synthetic result that says so. Otherwise the final conversation, and
// every request the model is sent (a request asked again after a partial
// response counted once), are the uncrashed run's.
func TestLoopKilledAtEveryRecorderPoint(t *testing.T) {
	inputs := []string{"fix a", "and b"}
	fresh := func() (*faultfs.FS, *file.Store, string) {
		disk := faultfs.New(afero.NewMemMapFs())
		store := file.New(disk, "/s")
		h, err := store.Create(ctx)
		require.NoError(t, err)
		require.NoError(t, h.Close())
		return disk, store, h.ID()
	}
	disk, store, id := fresh()
	_ = disk
	clean := &crashLoop{t: t, inputs: inputs, runs: map[string]int{}}
	h, err := store.Open(ctx, id, handle.ReadWrite)
	require.NoError(t, err)
	require.NoError(t, clean.run(h, store))
	want := conversation(t, h)
	require.NoError(t, h.Close())
	require.Contains(t, want, "Turn 2 done.")

	for _, mode := range []faultfs.CrashMode{faultfs.KeepSynced, faultfs.KeepAll} {
		for killAt := 1; killAt <= clean.points; killAt++ {
			t.Run(fmt.Sprintf("%T/after call %d", mode, killAt), func(t *testing.T) {
				disk, store, id := fresh()
				l := &crashLoop{t: t, inputs: inputs, runs: map[string]int{}, killAt: killAt}
				h, err := store.Open(ctx, id, handle.ReadWrite)
				require.NoError(t, err)
				require.ErrorIs(t, l.run(h, store), errKilled)
				crashed := disk.Crash(mode)
				h.Close()

				store = file.New(crashed, "/s")
				h, err = store.Open(ctx, id, handle.ReadWrite)
				require.NoError(t, err)
				defer h.Close()
				l.killAt = 0
				require.NoError(t, l.run(h, store), "the restarted loop finishes")

				agent := projection.NewAgent()
				_, err = replay.Replay(ctx, h, []projection.Projection{agent})
				require.NoError(t, err)
				st := agent.State()
				require.Equal(t, len(inputs), st.Turns, "every turn, and no other")
				require.False(t, st.TurnOpen)
				require.Equal(t, recorder.Completed, st.LastStop.Kind)
				require.Empty(t, st.PendingCalls)

				got := conversation(t, h)
				for id, n := range l.runs {
					require.LessOrEqual(t, n, 1+boolInt(strings.HasSuffix(id, "-r")), "%s ran %d times", id, n)
					if strings.HasSuffix(id, "-w") {
						require.LessOrEqual(t, n, 1, "a write runs at most once: %s", id)
					}
				}
				if !strings.Contains(got, `"synthetic":true`) {
					require.Equal(t, want, got, "the conversation is the uncrashed run's")
					var dedup []string
					for _, r := range l.requests {
						if len(dedup) == 0 || dedup[len(dedup)-1] != r {
							dedup = append(dedup, r)
						}
					}
					require.Equal(t, clean.requests, dedup, "the model is sent what it is sent without a crash")
					return
				}
				// A write approved and maybe run: its result says the
				// outcome is unknown, and it is not run again.
				require.Contains(t, got, "outcome unknown")
				require.Equal(t, strings.Count(want, "\n"), strings.Count(got, "\n"), "the same messages, one result synthetic")
			})
		}
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
