package inspect

import (
	"context"
	"fmt"
	"iter"

	"github.com/sessionlog/sessionlog/eventlog"
)

// Events is what the turn finders read: a session's log (a
// handle.Handle).
type Events interface {
	// Seq is the seq of the log's last event, -1 when it has none.
	Seq() int64
	// Read yields the events with from <= seq <= to.
	Read(ctx context.Context, from, to int64) iter.Seq2[eventlog.Event, error]
}

// typeTurnStart is the event that starts a turn (docs/format.md §8).
const typeTurnStart = "turn/start"

// TurnError says that the log has no turn N: it has Turns.
type TurnError struct {
	N, Turns int
}

func (e *TurnError) Error() string {
	s := "s"
	if e.Turns == 1 {
		s = ""
	}
	return fmt.Sprintf("turn %d: the session has %d turn%s", e.N, e.Turns, s)
}

// Turn returns the seqs of turn n of src: from its turn/start to the
// event before the next turn/start, or the log's last event. n > 0
// counts from the first turn (1), reading from the start; n < 0 from the
// end (-1 the last), reading backward from the tail in windows of 256
// events growing 4× — the cost of the last turn does not grow with the
// log's length. A log with fewer turns is a *TurnError.
func Turn(ctx context.Context, src Events, n int) (from, to int64, err error) {
	switch {
	case n > 0:
		return nthTurn(ctx, src, n)
	case n < 0:
		return turnFromEnd(ctx, src, -n)
	}
	return 0, 0, &TurnError{N: 0}
}

// CountTurns counts the turns that start at from <= seq <= to.
func CountTurns(ctx context.Context, src Events, from, to int64) (int, error) {
	n := 0
	for e, err := range src.Read(ctx, from, to) {
		if err != nil {
			return 0, err
		}
		if e.Type == typeTurnStart {
			n++
		}
	}
	return n, nil
}

func nthTurn(ctx context.Context, src Events, n int) (from, to int64, err error) {
	count := 0
	from, to = -1, src.Seq()
	for e, err := range src.Read(ctx, 0, to) {
		if err != nil {
			return 0, 0, err
		}
		if e.Type != typeTurnStart {
			continue
		}
		count++
		switch count {
		case n:
			from = e.Seq
		case n + 1:
			return from, e.Seq - 1, nil
		}
	}
	if from < 0 {
		return 0, 0, &TurnError{N: n, Turns: count}
	}
	return from, to, nil
}

func turnFromEnd(ctx context.Context, src Events, n int) (from, to int64, err error) {
	last := src.Seq()
	for window := int64(256); ; window *= 4 {
		start := max(0, last-window+1)
		var starts []int64
		for e, err := range src.Read(ctx, start, last) {
			if err != nil {
				return 0, 0, err
			}
			if e.Type == typeTurnStart {
				starts = append(starts, e.Seq)
			}
		}
		if len(starts) >= n {
			i := len(starts) - n
			to = last
			if i+1 < len(starts) {
				to = starts[i+1] - 1
			}
			return starts[i], to, nil
		}
		if start == 0 {
			return 0, 0, &TurnError{N: -n, Turns: len(starts)}
		}
	}
}
