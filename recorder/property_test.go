package recorder_test

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/spf13/afero"
	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/checkpoint"
	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/handle/file"
	"github.com/sessionlog/sessionlog/internal/testkit/faultfs"
	"github.com/sessionlog/sessionlog/internal/testkit/sweep"
	"github.com/sessionlog/sessionlog/projection"
	"github.com/sessionlog/sessionlog/recorder"
	"github.com/sessionlog/sessionlog/replay"
)

var (
	propSeqs = flag.Int("recorder.seqs", 0, "how many random sequences TestRecorderProperty runs (default 15; 2000 under SESSIONLOG_SWEEPS=full)")
	propSeed = flag.Uint64("recorder.seed", 0, "run only the sequence of this seed (as a failure names it)")
)

// TestRecorderProperty runs random sequences of what an embedding program
// does through the public API — the Recorder's methods, Resume, checkpoint
// Create/Rollback/RollbackTo, plain Appends, Fork, Close and reopen, power
// cuts — and checks after every step that the Recorder's State is the
// state replay of its log gives, and at the end that every session of the
// store verifies with both built-in projections. A failure names its seed:
// rerun it alone with -recorder.seed=N. Seeds 1 to 15 run by default,
// 1 to 2000 under SESSIONLOG_SWEEPS=full (internal/testkit/sweep).
func TestRecorderProperty(t *testing.T) {
	n := *propSeqs
	if n == 0 {
		n = sweep.Size(15, 2000, 2000)
	}
	seeds := make([]uint64, 0, n)
	if *propSeed != 0 {
		seeds = append(seeds, *propSeed)
	} else {
		for i := range n {
			seeds = append(seeds, uint64(i+1))
		}
	}
	for _, seed := range seeds {
		w := newWorld(t, seed)
		for step := range 40 {
			op := w.step()
			if t.Failed() {
				t.Fatalf("seed %d, step %d (%s); ops so far:\n%s", seed, step, op, strings.Join(w.log, "\n"))
			}
			w.requireInStep(op)
		}
		w.verifyAll()
		w.rec.Close()
		if t.Failed() {
			t.Fatalf("seed %d; ops:\n%s", seed, strings.Join(w.log, "\n"))
		}
	}
}

// world is one sequence's store, the session being recorded and what has
// been done to it.
type world struct {
	t     *testing.T
	rng   *rand.Rand
	fs    *faultfs.FS
	store *file.Store
	ids   []string // every session created
	rec   *recorder.Recorder
	h     handle.Handle
	calls int
	log   []string
}

func newWorld(t *testing.T, seed uint64) *world {
	w := &world{t: t, rng: rand.New(rand.NewPCG(seed, 0x5e551)), fs: faultfs.New(afero.NewMemMapFs())}
	w.store = file.New(w.fs, "/s")
	h, err := w.store.Create(ctx)
	require.NoError(t, err)
	w.ids = append(w.ids, h.ID())
	w.attach(h)
	return w
}

// attach makes h the handle recorded through, with a new Recorder on it.
func (w *world) attach(h handle.Handle) {
	rec, err := recorder.New(ctx, h, recorder.WithClock(clock), recorder.WithCache(w.store))
	require.NoError(w.t, err)
	w.h, w.rec = h, rec
}

func (w *world) ok(err error, allowed ...error) {
	w.t.Helper()
	for _, a := range allowed {
		if errors.Is(err, a) {
			return
		}
	}
	require.NoError(w.t, err)
}

func (w *world) seq(_ int64, err error) { w.t.Helper(); w.ok(err) }

// step does one random thing and returns its name.
func (w *world) step() string {
	st := w.rec.State()
	r := w.rng.IntN(100)
	var op string
	switch {
	case r < 55:
		op = w.vocabulary(st)
	case r < 60:
		op = "rec.Checkpoint"
		_, err := w.rec.Checkpoint(ctx, w.label())
		w.ok(err, recorder.ErrMidTurn)
	case r < 63:
		op = "recorder.Resume(h)"
		_, err := recorder.Resume(ctx, w.h, recorder.WithResumeClock(clock))
		w.ok(err)
	case r < 65:
		op = "rec.Resume"
		plan, err := w.rec.Resume(ctx)
		w.ok(err)
		if st := w.rec.State(); st.TurnOpen {
			require.False(w.t, st.StepOpen, "Resume leaves no step open")
			require.Len(w.t, plan.Run, len(st.PendingCalls), "the calls to run are the calls waiting")
		}
	case r < 66:
		if w.rng.IntN(2) == 0 {
			op = "rec.CloseTurn"
			_, err := w.rec.CloseTurn(ctx)
			w.ok(err)
		} else {
			op = "recorder.CloseTurn(h)"
			_, err := recorder.CloseTurn(ctx, w.h, recorder.WithResumeClock(clock))
			w.ok(err)
		}
	case r < 69:
		op = "checkpoint.Create(h)"
		_, err := checkpoint.Create(ctx, w.h, checkpoint.WithLabel(w.label()), checkpoint.WithClock(clock))
		w.ok(err)
	case r < 73:
		first := w.h.Header().FirstSeq()
		if w.h.Seq() <= first {
			return "nothing to roll back"
		}
		to := first + w.rng.Int64N(w.h.Seq()-first)
		if w.rng.IntN(2) == 0 {
			op = fmt.Sprintf("checkpoint.Rollback(h, %d)", to)
			_, err := checkpoint.Rollback(ctx, w.h, to, checkpoint.WithClock(clock))
			w.ok(err)
		} else {
			op = fmt.Sprintf("rec.Rollback(%d)", to)
			_, err := w.rec.Rollback(ctx, to, checkpoint.WithClock(clock))
			w.ok(err)
		}
	case r < 77:
		label := w.label()
		if w.rng.IntN(2) == 0 {
			op = "checkpoint.RollbackTo(h, " + label + ")"
			_, err := checkpoint.RollbackTo(ctx, w.h, label, checkpoint.WithClock(clock))
			w.ok(err, checkpoint.ErrNoCheckpoint)
		} else {
			op = "rec.RollbackTo(" + label + ")"
			_, err := w.rec.RollbackTo(ctx, label, checkpoint.WithClock(clock))
			w.ok(err, checkpoint.ErrNoCheckpoint)
		}
	case r < 84:
		op = "h.Append"
		w.seq(w.h.Append(ctx, w.foreign()...))
	case r < 88:
		first := w.h.Header().FirstSeq()
		at := w.h.Seq()
		if at >= first && w.rng.IntN(2) == 0 {
			at = first + w.rng.Int64N(at-first+1)
		}
		if at < 0 {
			return "nothing to fork"
		}
		op = fmt.Sprintf("rec.Fork(%d)", at)
		fork, err := w.rec.Fork(ctx, w.store, at)
		w.ok(err)
		w.ok(w.rec.Close())
		w.ids = append(w.ids, fork.Handle().ID())
		w.rec, w.h = fork, fork.Handle().(handle.Handle)
	case r < 92:
		op = "Close and reopen"
		w.ok(w.rec.Close())
		h, err := w.store.Open(ctx, w.h.ID(), handle.ReadWrite)
		w.ok(err)
		w.attach(h)
	default:
		op = w.crash()
	}
	w.log = append(w.log, op)
	return op
}

// vocabulary records one event of the agent vocabulary through the
// Recorder, mostly in an order a loop would use.
func (w *world) vocabulary(st projection.AgentState) string {
	switch {
	case !st.TurnOpen && w.rng.IntN(4) > 0:
		w.seq(w.rec.BeginTurn(ctx, nil))
		return "BeginTurn"
	case st.TurnOpen && !st.StepOpen && w.rng.IntN(3) == 0:
		kinds := recorder.StopKinds()
		w.seq(w.rec.EndTurn(ctx, kinds[w.rng.IntN(len(kinds))], ""))
		return "EndTurn"
	case st.TurnOpen && !st.StepOpen:
		for id := range st.PendingCalls { // a Response's calls run after its step
			if w.rng.IntN(2) == 0 {
				w.seq(w.rec.ToolResult(ctx, recorder.Result{ID: id, Output: "ran"}))
				return "ToolResult after the step"
			}
		}
		if w.rng.IntN(2) == 0 {
			w.seq(w.rec.UserMessage(ctx, "do it", ""))
			return "UserMessage"
		}
		w.seq(w.rec.BeginStep(ctx))
		return "BeginStep"
	case st.StepOpen:
		switch w.rng.IntN(10) {
		case 9:
			var calls []recorder.Call
			for range w.rng.IntN(3) {
				w.calls++
				calls = append(calls, recorder.Call{ID: fmt.Sprintf("c%d", w.calls), Name: "bash", Effect: []string{"read", "write", ""}[w.rng.IntN(3)]})
			}
			w.seq(w.rec.Response(ctx, recorder.Response{Text: []string{"", "answer"}[w.rng.IntN(2)], Calls: calls,
				Usage: &recorder.Usage{InputTokens: 4, OutputTokens: 2, CacheWriteTokens: 1}, StopReason: "tool_use"}))
			return "Response"
		case 0, 1, 2:
			w.seq(w.rec.Chunk(ctx, fmt.Sprintf("w%d ", w.rng.IntN(100))))
			return "Chunk"
		case 3:
			w.seq(w.rec.AssistantMessage(ctx, "said", ""))
			return "AssistantMessage"
		case 4:
			w.calls++
			effect := []string{"read", "write", ""}[w.rng.IntN(3)]
			w.seq(w.rec.ToolCall(ctx, recorder.Call{ID: fmt.Sprintf("c%d", w.calls), Name: "bash", Effect: effect}))
			return "ToolCall"
		case 5:
			for id, c := range st.PendingCalls {
				if c.Effect != "read" && c.Approval == "" && w.rng.IntN(2) == 0 {
					w.seq(w.rec.ToolApproval(ctx, id, "approved", ""))
					return "ToolApproval"
				}
				w.seq(w.rec.ToolResult(ctx, recorder.Result{ID: id, Output: "ok"}))
				return "ToolResult"
			}
			w.seq(w.rec.Reasoning(ctx, "hmm", ""))
			return "Reasoning"
		case 6:
			w.seq(w.rec.Usage(ctx, recorder.Usage{InputTokens: 10, OutputTokens: 3, Model: "m"}))
			return "Usage"
		default:
			w.seq(w.rec.EndStep(ctx))
			return "EndStep"
		}
	}
	switch w.rng.IntN(3) {
	case 0:
		w.seq(w.rec.MemorySet(ctx, fmt.Sprintf("k%d", w.rng.IntN(3)), w.rng.IntN(10), nil))
		return "MemorySet"
	case 1:
		w.seq(w.rec.Compacted(ctx, "so far"))
		return "Compacted"
	}
	w.seq(w.rec.SetPlan(ctx, []string{"a", "b"}))
	return "SetPlan"
}

// foreign is a batch a program appends beside the Recorder: state-changing
// events of the vocabulary and a type of its own.
func (w *world) foreign() []eventlog.Event {
	evs := []eventlog.Event{
		{Type: "memory/set", Data: json.RawMessage(fmt.Sprintf(`{"key":"k%d","value":%d}`, w.rng.IntN(3), w.rng.IntN(9)))},
		{Type: "usage", Data: json.RawMessage(`{"inputTokens":1,"outputTokens":1}`)},
		{Type: "app/note", Data: json.RawMessage(`{"n":1}`)},
		{Type: "assistant/chunk", Data: json.RawMessage(`{"text":"from outside "}`)},
		{Type: "turn/start", Data: json.RawMessage(`{}`)},
		{Type: "memory/delete", Data: json.RawMessage(`{"key":"k1"}`)},
	}
	w.rng.Shuffle(len(evs), func(i, j int) { evs[i], evs[j] = evs[j], evs[i] })
	evs = evs[:1+w.rng.IntN(3)]
	for i := range evs {
		evs[i].Time = clock().UnixMilli()
	}
	return evs
}

func (w *world) label() string { return fmt.Sprintf("L%d", w.rng.IntN(3)) }

// crash cuts the power: only what was fsynced survives (or a torn or
// zero-filled piece of the last write), and a new process opens the store.
// Every event acknowledged by a Flush is still there.
func (w *world) crash() string {
	modes := []faultfs.CrashMode{faultfs.KeepSynced, faultfs.TornLast{Keep: 1 + w.rng.IntN(200)}, faultfs.ZeroFillLast{Keep: 1 + w.rng.IntN(200)}}
	mode := modes[w.rng.IntN(len(modes))]
	id, durable := w.h.ID(), w.h.DurableSeq()
	var acked []eventlog.Event
	for e, err := range w.h.Read(ctx, 0, durable) {
		w.ok(err)
		acked = append(acked, e)
	}
	crashed := w.fs.Crash(mode)
	w.rec.Close() // on the file system the power cut left behind
	w.fs = faultfs.New(crashed)
	w.store = file.New(w.fs, "/s")
	h, err := w.store.Open(ctx, id, handle.ReadWrite)
	w.ok(err)
	i := 0
	for e, err := range h.Read(ctx, 0, durable) {
		w.ok(err)
		require.Equal(w.t, eventlog.Canon(acked[i]), eventlog.Canon(e), "acknowledged event %d after a power cut", e.Seq)
		i++
	}
	require.Len(w.t, acked, i, "every acknowledged event survives the power cut")
	w.attach(h)
	return fmt.Sprintf("power cut (%T) at durable seq %d", mode, durable)
}

// requireInStep checks the Recorder against a replay of its log.
func (w *world) requireInStep(op string) {
	w.t.Helper()
	agent := projection.NewAgent()
	_, err := replay.Replay(ctx, w.h, []projection.Projection{agent})
	w.ok(err)
	if got := w.rec.State(); !assertEqualState(agent.State(), got) {
		w.t.Fatalf("after %s the Recorder's state differs from the replayed one; ops:\n%s", op, strings.Join(w.log, "\n"))
	}
}

func assertEqualState(a, b projection.AgentState) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

// verifyAll verifies every session of the store with both projections.
func (w *world) verifyAll() {
	w.t.Helper()
	w.ok(w.h.Flush(ctx))
	for _, id := range w.ids {
		var src replay.Source = w.h
		if id != w.h.ID() {
			r, err := w.store.Open(ctx, id, handle.ReadOnly)
			w.ok(err)
			defer r.Close()
			src = r
		}
		_, err := checkpoint.Verify(ctx, src, projection.NewAgent(), projection.NewTranscript())
		if err != nil {
			w.t.Errorf("session %s does not verify: %v", id, err)
		}
	}
}
