package inspect

import (
	"context"
	"time"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/projection"
	"github.com/sessionlog/sessionlog/recorder"
	"github.com/sessionlog/sessionlog/replay"
)

// Closing is what CloseOpenTurn did.
type Closing struct {
	// Closers are the events a resume would append, applied to the
	// projection in memory only (nil when none were: the last turn is
	// closed, or a writer holds the session).
	Closers []eventlog.Event
	// InProgress is true when the last turn is open and a writer holds the
	// session: a turn in progress, shown as it is.
	InProgress bool
}

// CloseOpenTurn shows a session its writer left mid-turn as logtool resume
// would leave it (docs/format.md §8, "Closing": a read-only reader adds the
// closers in memory only): when src's log (l's) ends in an open turn and
// no writer holds the session, it applies the closers of recorder.CloseTurn,
// timed now, to p, which must hold the state after src's last event.
// Nothing is written. Whether the turn is open is read from the tail
// (recorder.ReadFacts) unless p is the agent projection, which says it;
// only an open turn costs a replay of the agent's state (from the
// nearest stored one, in l's store).
func CloseOpenTurn(ctx context.Context, l Log, src replay.Source, p projection.Projection, now time.Time) (Closing, error) {
	agent, ok := p.(*projection.Agent)
	if !ok {
		facts, err := recorder.ReadFacts(ctx, src, l.cache())
		if err != nil || !facts.OpenTurn {
			return Closing{}, err
		}
		agent = projection.NewAgent()
		if _, err := replay.Replay(ctx, src, []projection.Projection{agent}, replay.WithCache(l.cache())); err != nil {
			return Closing{}, err
		}
	}
	st := agent.State()
	if !st.TurnOpen {
		return Closing{}, nil
	}
	if writing, err := l.writerHeld(ctx); err != nil || writing {
		return Closing{InProgress: writing}, err
	}
	return Closing{Closers: recorder.CloseInMemory(st, src.Seq()+1, []projection.Projection{p}, now)}, nil
}

// State is the state a reader is shown of a session by default: src, l's
// log opened for reading, replayed into p up to its last event from the
// nearest state l's store keeps, then an open turn no writer holds closed
// in memory (CloseOpenTurn). It is what logtool replay prints without
// --to, --golden or --as-is, and serve's /api/replay answers. opts are
// added to the replay's (replay.LocateData, say).
func State(ctx context.Context, l Log, src replay.Source, p projection.Projection, now time.Time, opts ...replay.Option) (replay.Result, Closing, error) {
	res, err := replay.Replay(ctx, src, []projection.Projection{p}, append([]replay.Option{replay.WithCache(l.cache())}, opts...)...)
	if err != nil {
		return res, Closing{}, err
	}
	c, err := CloseOpenTurn(ctx, l, src, p, now)
	return res, c, err
}
