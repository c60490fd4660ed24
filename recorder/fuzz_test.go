package recorder_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/checkpoint"
	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/handle/file"
	"github.com/sessionlog/sessionlog/projection"
	"github.com/sessionlog/sessionlog/recorder"
	"github.com/sessionlog/sessionlog/replay"
)

// Ops of a FuzzReadFacts script, one a line: the line's first byte picks
// the op (modulo opCount), the rest is its argument.
const (
	opTurnStart = iota
	opTurnEnd   // arg: the data when it is a JSON object, else the reason of a kind picked by its length
	opStepStart
	opStepEnd
	opToolCall   // arg: the call's id
	opToolResult // arg: the call's id
	opCheckpoint // arg: the label
	opRollback   // arg: the target, a number modulo the events so far
	opFiller     // arg: as many chunks as the sum of its bytes, +1 (more than a window of Facts)
	opMessage    // arg: the data
	opFork       // arg: the fork point, like opRollback; the script goes on in the fork
	opCount
)

// factsKinds are the stop kinds a script's turn/end picks from: the
// vocabulary, and kinds outside it.
var factsKinds = append(recorder.StopKinds(), "", "exploded")

// factsLine encodes one op of a FuzzReadFacts script.
func factsLine(op int, arg string) string { return string(rune(6*opCount+op)) + arg + "\n" }

// runScript appends the events of a script through h (forking it on
// opFork) and returns the handle the script ended on. Events the handle
// refuses (data that is not JSON) are left out.
func runScript(t *testing.T, store *file.Store, h handle.Handle, script []byte) handle.Handle {
	t.Helper()
	at := func(arg []byte) int64 {
		var n int64
		fmt.Sscan(string(arg), &n)
		return min(max(n, 0)%(h.Seq()+1), h.Seq())
	}
	event := func(typ string, data any) {
		t.Helper()
		raw, ok := data.([]byte)
		if !ok {
			var err error
			raw, err = json.Marshal(data)
			require.NoError(t, err)
		}
		if len(raw) == 0 {
			raw = nil
		}
		_, err := h.Append(ctx, eventlog.Event{Type: typ, Time: clock().UnixMilli(), Data: raw})
		// Event data is JSON whose strings are UTF-8 (docs/format.md):
		// json.Valid alone lets invalid UTF-8 in strings through.
		if raw != nil && (!json.Valid(raw) || !utf8.Valid(raw)) {
			require.ErrorIs(t, err, eventlog.ErrInvalidEvent) // left out
			return
		}
		require.NoError(t, err)
	}
	// A budget per script: the fuzzer grows inputs into thousands of
	// filler events, each replayed several times, which ran 6,000 inputs a
	// CPU minute; 1,000 fillers (four windows of ReadFacts's backward read) and 64
	// operations reach every case.
	fillers, ops := 1000, 64
	for line := range bytes.SplitSeq(script, []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		if ops--; ops < 0 {
			break
		}
		arg := line[1:]
		switch int(line[0]) % opCount {
		case opTurnStart:
			event("turn/start", map[string]any{})
		case opTurnEnd:
			if json.Valid(arg) && bytes.HasPrefix(arg, []byte("{")) {
				event("turn/end", arg)
			} else {
				event("turn/end", map[string]string{"kind": factsKinds[len(arg)%len(factsKinds)], "reason": string(arg)})
			}
		case opStepStart:
			event("step/start", map[string]any{})
		case opStepEnd:
			event("step/end", map[string]any{})
		case opToolCall:
			event("tool/call", map[string]string{"id": string(arg), "name": "n", "effect": []string{"read", "write", ""}[len(arg)%3]})
		case opToolResult:
			event("tool/result", map[string]string{"id": string(arg), "output": "ok"})
		case opCheckpoint:
			_, err := checkpoint.Create(ctx, h, checkpoint.WithLabel(strings.ToValidUTF8(string(arg), "?")), checkpoint.WithClock(clock))
			require.NoError(t, err)
		case opRollback:
			if h.Seq() >= 0 {
				_, err := checkpoint.Rollback(ctx, h, at(arg), checkpoint.WithClock(clock))
				require.NoError(t, err)
			}
		case opFiller:
			n := 1
			for _, b := range arg {
				n += int(b)
			}
			evs := make([]eventlog.Event, min(n, 700, fillers))
			fillers -= len(evs)
			for i := range evs {
				evs[i] = eventlog.Event{Type: "assistant/chunk", Time: clock().UnixMilli(), Data: json.RawMessage(`{"text":"."}`)}
			}
			_, err := h.Append(ctx, evs...)
			require.NoError(t, err)
		case opMessage:
			event("user/message", arg)
		case opFork:
			if h.Seq() >= 0 {
				require.NoError(t, h.Flush(ctx))
				fork, err := store.Fork(ctx, h.ID(), at(arg))
				require.NoError(t, err)
				t.Cleanup(func() { fork.Close() })
				h = fork
			}
		}
	}
	require.NoError(t, h.Flush(ctx))
	return h
}

// factsByReplay returns the stop facts by their definition: the agent
// projection replayed over the whole log.
func factsByReplay(t *testing.T, h handle.Handle) recorder.Facts {
	t.Helper()
	agent := projection.NewAgent()
	_, err := replay.Replay(ctx, h, []projection.Projection{agent})
	require.NoError(t, err)
	st := agent.State()
	f := recorder.Facts{OpenTurn: st.TurnOpen}
	if s := st.LastStop; s != nil {
		f.Stop = &recorder.Stop{Seq: s.Seq, Kind: s.Kind, Reason: s.Reason}
	}
	return f
}

// requireFacts checks that ReadFacts agrees with the facts by definition,
// and that its verdict follows them (an open turn or no stop yet may go
// on, else the stop kind's verdict): read through h and through a
// TailReader of the store (which reads only the tail), without a cache
// and with one, twice (the second walk may end at the facts record the
// first left).
func requireFacts(t *testing.T, store *file.Store, h handle.Handle) recorder.Facts {
	t.Helper()
	want := factsByReplay(t, h)
	require.NoError(t, h.Flush(ctx))
	tr, err := store.OpenTail(ctx, h.ID())
	require.NoError(t, err)
	defer tr.Close()
	for _, src := range []recorder.Source{h, tr} {
		for _, cache := range []replay.Cache{nil, store, store} {
			got, err := recorder.ReadFacts(ctx, src, cache)
			require.NoError(t, err)
			require.Equal(t, want.OpenTurn, got.OpenTurn, "open turn")
			require.Equal(t, want.Stop, got.Stop, "last stop")
			require.NotEmpty(t, got.Verdict.Reason)
			if want.OpenTurn || want.Stop == nil {
				require.True(t, got.Verdict.Resumable, got.Verdict.Reason)
			} else {
				require.Equal(t, recorder.VerdictFor(want.Stop.Kind), got.Verdict)
			}
			want.Verdict = got.Verdict
		}
	}
	return want
}

// ReadFacts walks the live branch back from the tail: whatever the log
// (rollbacks, forks, long runs without a turn marker), its facts are those
// of a full replay. Resume then carries an open turn on (no step open, every
// call without a result to be run), durably, once; CloseTurn closes it,
// durably, once.
func FuzzReadFacts(f *testing.F) {
	l := factsLine
	for _, s := range []string{
		"",
		l(opTurnStart, "") + l(opMessage, `{"text":"hi"}`),
		l(opTurnStart, "") + l(opTurnEnd, "") + l(opCheckpoint, "turn-1"),
		l(opTurnStart, "") + l(opStepStart, "") + l(opToolCall, "c1") + l(opToolCall, "c2") + l(opToolResult, "c1") + l(opFiller, "\xff\xff"),
		l(opTurnStart, "") + l(opTurnEnd, "boom") + l(opTurnStart, "") + l(opRollback, "0"),
		// A rollback before the open turn drops the stop before it.
		l(opTurnStart, "") + l(opTurnEnd, "x") + l(opRollback, "0") + l(opTurnStart, ""),
		l(opTurnStart, "") + l(opTurnEnd, "") + l(opFiller, "\xff\xff") + l(opRollback, "1") + l(opTurnStart, "") + l(opFiller, "\xff"),
		l(opTurnStart, "") + l(opTurnEnd, `{"kind":5,"reason":"r"}`) + l(opTurnEnd, `{"kind":null}`) + l(opTurnEnd, `{"KIND":"failed","kind":"paused"}`),
		l(opTurnStart, "") + l(opCheckpoint, "a") + l(opTurnEnd, "") + l(opFork, "1") + l(opTurnStart, "") + l(opRollback, "0"),
		l(opFiller, "\xff\xff\xff") + l(opTurnStart, "") + l(opFiller, "\xff") + l(opFork, "300") + l(opFiller, "\xff"),
		l(opTurnEnd, "x") + l(opMessage, "not json") + l(opStepStart, "") + l(opStepEnd, ""),
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, script []byte) {
		h, store := newHandle(t)
		h = runScript(t, store, h, script)
		facts := requireFacts(t, store, h)

		before := h.Seq()
		plan, err := recorder.Resume(ctx, h, recorder.WithResumeCache(store), recorder.WithResumeClock(clock))
		require.NoError(t, err)
		require.Equal(t, before+int64(len(plan.Appended)), h.Seq())
		require.Equal(t, h.Seq(), h.DurableSeq(), "durable when Resume returns")
		require.Equal(t, facts.OpenTurn, plan.TurnOpen, "the open turn stays open")
		resumed := projection.NewAgent()
		_, err = replay.Replay(ctx, h, []projection.Projection{resumed})
		require.NoError(t, err)
		require.Equal(t, facts.OpenTurn, resumed.State().TurnOpen)
		if facts.OpenTurn {
			require.False(t, resumed.State().StepOpen, "no step is left open")
			require.Len(t, plan.Run, len(resumed.State().PendingCalls), "every call without a result is to be run")
			for _, c := range plan.Run {
				require.Contains(t, resumed.State().PendingCalls, c.ID)
			}
		}
		second, err := recorder.Resume(ctx, h)
		require.NoError(t, err)
		require.Empty(t, second.Appended, "a second Resume appends nothing")
		require.Equal(t, plan.Run, second.Run, "and plans the same")

		before = h.Seq()
		res, err := recorder.CloseTurn(ctx, h, recorder.WithResumeCache(store), recorder.WithResumeClock(clock))
		require.NoError(t, err)
		require.Equal(t, before+int64(len(res.Appended)), h.Seq())
		require.Equal(t, facts.OpenTurn, len(res.Appended) > 0, "CloseTurn appends exactly when a turn is open")
		require.Equal(t, h.Seq(), h.DurableSeq(), "durable when CloseTurn returns")
		after := requireFacts(t, store, h)
		require.False(t, after.OpenTurn)
		require.Equal(t, after.Verdict, res.Verdict)
		if facts.OpenTurn {
			require.Equal(t, recorder.Interrupted, after.Stop.Kind)
		}
		agent := projection.NewAgent()
		_, err = replay.Replay(ctx, h, []projection.Projection{agent})
		require.NoError(t, err)
		if facts.OpenTurn {
			require.False(t, agent.State().StepOpen, "the open step is closed")
			require.Empty(t, agent.State().PendingCalls, "every pending call has a result")
		}
		again, err := recorder.CloseTurn(ctx, h)
		require.NoError(t, err)
		require.Empty(t, again.Appended)
	})
}
