package inspect_test

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"testing"

	"github.com/spf13/afero"
	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/handle/file"
	"github.com/sessionlog/sessionlog/ops/inspect"
)

// countingEvents counts the events its Read yields.
type countingEvents struct {
	handle.Handle
	read int
}

func (h *countingEvents) Read(ctx context.Context, from, to int64) iter.Seq2[eventlog.Event, error] {
	return func(yield func(eventlog.Event, error) bool) {
		for e, err := range h.Handle.Read(ctx, from, to) {
			h.read++
			if !yield(e, err) {
				return
			}
		}
	}
}

// TestTurn: turn n from the start, or from the end reading a window at
// the tail, not the whole log: for a log of 400 turns of 100 events, the
// last turn is found reading one window of 256 events; a turn the log
// does not have is a *TurnError saying how many it has; CountTurns counts
// the turns starting in a range.
func TestTurn(t *testing.T) {
	ctx := t.Context()
	st := file.New(afero.NewMemMapFs(), "s")
	h, err := st.Create(ctx)
	require.NoError(t, err)
	defer h.Close()
	const turns, perTurn = 400, 100
	for i := range turns {
		batch := []eventlog.Event{{Type: "turn/start"}}
		for range perTurn - 2 {
			batch = append(batch, eventlog.Event{Type: "assistant/chunk", Data: json.RawMessage(`{"text":"x"}`)})
		}
		batch = append(batch, eventlog.Event{Type: "turn/end", Data: json.RawMessage(fmt.Sprintf(`{"kind":"completed","reason":"%d"}`, i))})
		_, err := h.Append(ctx, batch...)
		require.NoError(t, err)
	}
	require.NoError(t, h.Flush(ctx))
	for _, tc := range []struct {
		n        int
		from, to int64
		maxRead  int
	}{
		{-1, (turns - 1) * perTurn, turns*perTurn - 1, 256},
		{-2, (turns - 2) * perTurn, (turns-1)*perTurn - 1, 256},
		{-5, (turns - 5) * perTurn, (turns-4)*perTurn - 1, 256 + 1024},
		{-turns, 0, perTurn - 1, 2 * turns * perTurn}, // windows grow 4×: at most twice the log
		{1, 0, perTurn - 1, turns * perTurn},
		{7, 6 * perTurn, 7*perTurn - 1, turns * perTurn},
		{turns, (turns - 1) * perTurn, turns*perTurn - 1, turns * perTurn},
	} {
		t.Run(fmt.Sprint(tc.n), func(t *testing.T) {
			c := &countingEvents{Handle: h}
			from, to, err := inspect.Turn(ctx, c, tc.n)
			require.NoError(t, err)
			require.Equal(t, [2]int64{tc.from, tc.to}, [2]int64{from, to})
			require.LessOrEqual(t, c.read, tc.maxRead)
		})
	}
	for _, n := range []int{turns + 1, -turns - 1} {
		_, _, err = inspect.Turn(ctx, h, n)
		var te *inspect.TurnError
		require.ErrorAs(t, err, &te)
		require.Equal(t, inspect.TurnError{N: n, Turns: turns}, *te)
		require.EqualError(t, err, fmt.Sprintf("turn %d: the session has 400 turns", n))
	}
	n, err := inspect.CountTurns(ctx, h, 0, 3*perTurn-1)
	require.NoError(t, err)
	require.Equal(t, 3, n)
	n, err = inspect.CountTurns(ctx, h, 1, 3*perTurn)
	require.NoError(t, err)
	require.Equal(t, 3, n, "turns 2 and 3, and 4 starting at the range's end")
}
