package bench

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/spf13/afero"

	"github.com/sessionlog/sessionlog/checkpoint"
	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/handle/file"
	"github.com/sessionlog/sessionlog/projection"
	"github.com/sessionlog/sessionlog/replay"
)

// replaySession writes the first n events (whole turns) of the large
// workload to a new raw session of store, one Append per event and a Flush
// per turn, with a checkpoint (checkpoint.Create) at the first turn end
// after every 1,000 events (but not after the last turn), then a rollback to 50 events before the
// rollback's own seq (checkpoint.Rollback). It returns the session's ID
// and the number of checkpoints.
func replaySession(b *testing.B, store *file.Store, n int) (string, int) {
	b.Helper()
	ctx := context.Background()
	evs := firstEvents(largeEvents(b), n)
	h, err := store.Create(ctx)
	if err != nil {
		b.Fatal(err)
	}
	cps, since := 0, 0
	ts := turns(evs)
	for i, turn := range ts {
		appendEvents(b, h, turn, flushAtEnd)
		if since += len(turn); since >= 1000 && i < len(ts)-1 {
			if _, err := checkpoint.Create(ctx, h); err != nil {
				b.Fatal(err)
			}
			cps++
			since = 0
		}
	}
	if _, err := checkpoint.Rollback(ctx, h, h.Seq()+1-50); err != nil {
		b.Fatal(err)
	}
	id := h.ID()
	if err := h.Close(); err != nil {
		b.Fatal(err)
	}
	return id, cps
}

// BenchmarkReplay replays a workload session of ~10k and ~100k events,
// with a checkpoint every ~1,000 events and a rollback to 50 events before
// the end as its last event, up to its last seq (replay.UpTo) into the
// agent and transcript projections (each alone, and both in one replay).
// The source is a read-only handle opened once, outside the timer.
//
//   - cache=none: no replay.WithCache: every event is read from seq 0, and
//     the rollback restores the state kept in memory (at checkpoints and
//     every 1,024 events, replay.WithSnapshotEvery's default) and reads
//     the events after it again.
//
//   - cache=stored: replay.WithCache(store), after a first replay (not
//     timed) that stored the states at the checkpoints: the replay starts
//     from the last stored state and reads only the events after it (and
//     those again up to the rollback's target). first-run-ns is the time
//     of that first replay, from an empty <dir>/.cache, and cache-B the
//     bytes it left in <dir>/.cache.
//
//   - apply-only: no replay engine: the events are read from seq 0 and
//     applied to the projections in a plain loop, checkpoints and the
//     rollback skipped. Not a correct replay (the rollback is not
//     applied): the floor under cache=none, without the states it keeps.
//
// events-read/op is Result.Events (events read from the log, rollback
// re-reads included); from-seq is Result.FromSnapshot (-1: from the
// start).
//
// The ~10k-event session runs always; the ~100k-event one with
// SESSIONLOG_BENCH_LARGE=1:
//
//	go test -run '^$' -bench 'BenchmarkReplay/events=10k' -benchtime 20x -count 5 .
//	SESSIONLOG_BENCH_LARGE=1 go test -run '^$' -bench 'BenchmarkReplay/events=100k' -benchtime 1x -count 5 .
func BenchmarkReplay(b *testing.B) {
	ctx := context.Background()
	sizes := []struct {
		name   string
		events int
	}{{"events=10k", 10_000}}
	if large() {
		sizes = append(sizes, struct {
			name   string
			events int
		}{"events=100k", 100_000})
	}
	sets := []struct {
		name string
		new  func() []projection.Projection
	}{
		{"agent", func() []projection.Projection { return []projection.Projection{projection.NewAgent()} }},
		{"transcript", func() []projection.Projection { return []projection.Projection{projection.NewTranscript()} }},
		{"agent+transcript", func() []projection.Projection {
			return []projection.Projection{projection.NewAgent(), projection.NewTranscript()}
		}},
	}
	for _, sz := range sizes {
		b.Run(sz.name, func(b *testing.B) {
			store := file.New(afero.NewOsFs(), filepath.Join(b.TempDir(), "s"))
			id, cps := replaySession(b, store, sz.events)
			h, err := store.Open(ctx, id, handle.ReadOnly)
			if err != nil {
				b.Fatal(err)
			}
			defer h.Close()
			last := h.Seq()
			for _, set := range sets {
				b.Run(set.name+"/apply-only", func(b *testing.B) {
					ps := set.new()
					var n int64
					b.ReportAllocs()
					b.ResetTimer()
					for range b.N {
						n = 0
						for _, p := range ps {
							p.Reset()
						}
						for e, err := range h.Read(ctx, 0, last) {
							if err != nil {
								b.Fatal(err)
							}
							n++
							if e.Type == eventlog.TypeCheckpoint || e.Type == eventlog.TypeRollback {
								continue
							}
							for _, p := range ps {
								p.Apply(e)
							}
						}
					}
					b.StopTimer()
					b.ReportMetric(float64(n), "events-read/op")
					b.ReportMetric(-1, "from-seq")
					b.ReportMetric(float64(last+1), "events")
					b.ReportMetric(float64(cps), "checkpoints")
				})
				for _, cached := range []bool{false, true} {
					name := set.name + "/cache=none"
					if cached {
						name = set.name + "/cache=stored"
					}
					b.Run(name, func(b *testing.B) {
						ps := set.new()
						opts := []replay.Option{replay.UpTo(last)}
						var first time.Duration
						var cacheBytes int64
						if cached {
							// The first replay, from an empty cache, stores
							// the states at the checkpoints.
							cache := filepath.Join(store.Dir(), ".cache")
							if err := os.RemoveAll(cache); err != nil {
								b.Fatal(err)
							}
							opts = append(opts, replay.WithCache(store))
							start := time.Now()
							if _, err := replay.Replay(ctx, h, ps, opts...); err != nil {
								b.Fatal(err)
							}
							first = time.Since(start)
							cacheBytes = dirSize(b, cache)
						}
						var res replay.Result
						b.ReportAllocs()
						b.ResetTimer()
						for range b.N {
							if res, err = replay.Replay(ctx, h, ps, opts...); err != nil {
								b.Fatal(err)
							}
						}
						b.StopTimer()
						if res.Seq != last || res.Rollbacks != 1 {
							b.Fatalf("replay ended at seq %d with %d rollbacks, want %d and 1", res.Seq, res.Rollbacks, last)
						}
						// A state too large to be worth loading is not stored
						// (replay.worthLoading): then there is nothing to start
						// from, and the cached replay is a replay from zero.
						if cached && res.FromSnapshot < 0 && cacheBytes > 0 {
							b.Fatal("the cached replay did not start from a stored state")
						}
						b.ReportMetric(float64(res.Events), "events-read/op")
						b.ReportMetric(float64(res.FromSnapshot), "from-seq")
						b.ReportMetric(float64(last+1), "events")
						b.ReportMetric(float64(cps), "checkpoints")
						if cached {
							b.ReportMetric(float64(first.Nanoseconds()), "first-run-ns")
							b.ReportMetric(float64(cacheBytes), "cache-B")
						}
					})
				}
			}
		})
	}
}

// dirSize returns the bytes of the files in dir (not recursive).
func dirSize(tb testing.TB, dir string) int64 {
	tb.Helper()
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return 0 // nothing stored
	}
	if err != nil {
		tb.Fatal(err)
	}
	var n int64
	for _, e := range ents {
		fi, err := e.Info()
		if err != nil {
			tb.Fatal(err)
		}
		n += fi.Size()
	}
	return n
}
