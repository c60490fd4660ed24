package replay_test

import (
	"context"
	"encoding/json"
	"errors"
	"iter"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/internal/testkit/sweep"
	"github.com/sessionlog/sessionlog/projection"
	"github.com/sessionlog/sessionlog/replay"
)

// guardedLog is a memLog that fails the test when two of its reads run at
// once (a read nested in another's yield does not: the other waits), and
// whose reads fail with errBroken at event failAt (when >= 0).
type guardedLog struct {
	*memLog
	t      *testing.T
	busy   atomic.Bool
	failAt int64
}

var errBroken = errors.New("broken read")

func (g *guardedLog) Read(ctx context.Context, from, to int64) iter.Seq2[eventlog.Event, error] {
	return func(yield func(eventlog.Event, error) bool) {
		enter := func() {
			if !g.busy.CompareAndSwap(false, true) {
				g.t.Error("the Source is read from two goroutines at once")
			}
		}
		enter()
		defer g.busy.Store(false)
		for ev, err := range g.memLog.Read(ctx, from, to) {
			if g.failAt >= 0 && ev.Seq == g.failAt {
				ev, err = eventlog.Event{}, errBroken
			}
			g.busy.Store(false)
			more := yield(ev, err)
			enter()
			if !more || err != nil {
				return
			}
		}
	}
}

// A replay that reads ahead on a second core finds what one that reads in
// line finds, on logs with rollbacks (whose restores read the Source: it
// is never read from two goroutines at once), with a read that fails at
// any event, and when a budget stops it early.
func TestReadAheadSameReplay(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 23))
	for round := range 30 {
		n := 50 + rng.IntN(1500)
		script := make([]string, n)
		for i := range script {
			script[i] = "e"
			if i > 0 && rng.IntN(40) == 0 {
				script[i] = "r" + string(rune('0'+rng.IntN(min(i, 10))))
			}
		}
		log := build(t, script...)
		for _, failAt := range []int64{-1, int64(rng.IntN(n)), int64(n - 1), 0} {
			for _, budget := range []int64{0, int64(1 + rng.IntN(n))} {
				results := map[int][]int64{}
				var errs []error
				for _, procs := range []int{1, 2} {
					prev := runtime.GOMAXPROCS(procs)
					src := &guardedLog{memLog: log, t: t, failAt: failAt}
					p := &seqs{}
					_, err := replay.Replay(context.Background(), src, []projection.Projection{p}, replay.WithBudget(replay.Budget{Events: budget}))
					runtime.GOMAXPROCS(prev)
					results[procs] = p.got()
					errs = append(errs, err)
				}
				require.Equal(t, results[1], results[2], "round %d, failing at %d, budget %d", round, failAt, budget)
				require.Equal(t, errs[0] == nil, errs[1] == nil)
				if errs[0] != nil {
					require.Equal(t, errs[0].Error(), errs[1].Error())
				}
				if failAt >= 0 && (budget == 0 || budget > failAt) {
					require.ErrorIs(t, errs[1], errBroken)
				}
			}
		}
	}
}

// counter is a Borrower that keeps nothing of what it is given.
type counter struct{ n int }

func (c *counter) Name() string                  { return "counter" }
func (c *counter) Version() int                  { return 1 }
func (c *counter) Apply(eventlog.Event)          { c.n++ }
func (c *counter) Reset()                        { c.n = 0 }
func (c *counter) MarshalState() ([]byte, error) { return []byte("0"), nil }
func (c *counter) UnmarshalState([]byte) error   { return nil }
func (c *counter) BorrowsData()                  {}

// A borrowing replay read ahead copies the events' data into a bounded
// set of batches, reused as the engine folds them: the bytes it allocates
// do not grow with the log, however the two goroutines take turns. By
// default one log of 32 MB; three of 64 MB under SESSIONLOG_SWEEPS=full.
func TestReadAheadReusesBatches(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	data := json.RawMessage(`{"text":"` + strings.Repeat("x", 1000) + `"}`)
	allocated := func(n int) uint64 {
		log := &memLog{}
		for i := range n {
			log.evs = append(log.evs, eventlog.Event{Seq: int64(i), Type: "user/message", Data: data})
		}
		src := &scribbler{memLog: log}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		c := &counter{}
		_, err := replay.Replay(t.Context(), src, []projection.Projection{c})
		runtime.ReadMemStats(&after)
		require.NoError(t, err)
		require.Equal(t, n, c.n)
		return after.TotalAlloc - before.TotalAlloc
	}
	small := allocated(2_000) // 2 MB: 8 batches
	for range sweep.Size(1, 3, 3) {
		require.Less(t, allocated(sweep.Size(32_000, 64_000, 64_000)), small+1<<20) // 32 MB: 128 batches
	}
}
