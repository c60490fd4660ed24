package bench

import (
	"context"
	"os"
	"strconv"
	"sync"
	"testing"

	"github.com/sessionlog/sessionlog/bench/internal/benchfs"
	"github.com/sessionlog/sessionlog/bench/workload"
	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/handle/file"
)

// largeConfig is the large workload of the zstd, checkpoint, replay and fork
// benchmarks: seed 1, 2,000 turns: 260,984 events, 86,419,879 bytes of plain
// JSONL (331 B/event on average). Its first 200 turns are benchConfig's
// workload, event for event.
var largeConfig = workload.Config{Seed: 1, Turns: 2000}

// largeEnv names the environment variable that turns on the large sizes
// (the 2,000-turn log, ~100 MB files, 100k-event sessions). Without it the
// benchmarks that have a large size run only their small one, so that the
// smoke run (-benchtime 1x) stays short.
const largeEnv = "SESSIONLOG_BENCH_LARGE"

// large reports whether the large sizes are on.
func large() bool {
	on, _ := strconv.ParseBool(os.Getenv(largeEnv))
	return on
}

var (
	largeOnce sync.Once
	largeEvs  []workload.Event
	largeSize int64 // bytes of the large workload as plain JSONL, '\n' included
)

// largeEvents returns the 2,000-turn workload, generated once per process
// (about 0.7 s).
func largeEvents(tb testing.TB) []workload.Event {
	tb.Helper()
	largeOnce.Do(func() {
		largeEvs = workload.Generate(largeConfig)
		largeSize = jsonlSize(largeEvs)
	})
	if len(largeEvs) == 0 {
		tb.Fatal("empty workload")
	}
	return largeEvs
}

// jsonlSize is the size of evs as plain JSONL, one event per line.
func jsonlSize(evs []workload.Event) int64 {
	var n int64
	var line []byte
	for i := range evs {
		line = evs[i].AppendJSON(line[:0])
		n += int64(len(line)) + 1
	}
	return n
}

// firstTurns returns the events of the first n turns of evs.
func firstTurns(evs []workload.Event, n int) []workload.Event {
	for i := range evs {
		if evs[i].Turn > evs[0].Turn+n-1 {
			return evs[:i]
		}
	}
	return evs
}

// firstEvents returns the shortest prefix of whole turns of evs that holds
// at least n events.
func firstEvents(evs []workload.Event, n int) []workload.Event {
	if n >= len(evs) {
		return evs
	}
	i := n
	for i < len(evs) && evs[i].Turn == evs[i-1].Turn {
		i++
	}
	return evs[:i]
}

// newCountingFs returns a file system over the OS one that counts its
// I/O (benchfs); with noSync set, Sync does nothing (it is still counted):
// for benchmarks that measure sizes, not durability, so that writing a log
// with one flush per event does not take 260k fsyncs.
func newCountingFs(noSync bool) (benchfs.FS, *benchfs.Counts) { return benchfs.New(noSync) }

// Flush policies of writeSession.
const (
	flushPerTurn = 0  // Flush at the end of every turn
	flushAtEnd   = -1 // Append every event, then one Flush
)

// writeSession writes evs to a new session of store, one Append per event,
// flushing every `every` events (or per the flushPerTurn and flushAtEnd
// policies), and closes it. It returns the session's ID and log path.
func writeSession(tb testing.TB, store *file.Store, evs []workload.Event, every int, opts ...handle.Option) (string, string) {
	tb.Helper()
	ctx := context.Background()
	h, err := store.Create(ctx, opts...)
	if err != nil {
		tb.Fatal(err)
	}
	appendEvents(tb, h, evs, every)
	id, path := h.ID(), h.Path()
	if err := h.Close(); err != nil {
		tb.Fatal(err)
	}
	return id, path
}

// appendEvents appends evs to h, one Append per event, flushing as
// writeSession does, and flushes at the end.
func appendEvents(tb testing.TB, h handle.Handle, evs []workload.Event, every int) {
	tb.Helper()
	ctx := context.Background()
	for i, e := range evs {
		if _, err := h.Append(ctx, toLog(e)); err != nil {
			tb.Fatal(err)
		}
		var flush bool
		switch every {
		case flushPerTurn:
			flush = i == len(evs)-1 || evs[i+1].Turn != e.Turn
		case flushAtEnd:
		default:
			flush = (i+1)%every == 0
		}
		if flush {
			if err := h.Flush(ctx); err != nil {
				tb.Fatal(err)
			}
		}
	}
	if err := h.Flush(ctx); err != nil {
		tb.Fatal(err)
	}
}

// cycled returns evs repeated until their plain-JSONL size reaches at
// least target bytes (workload.Repeat).
func cycled(evs []workload.Event, target int64) []workload.Event { return workload.Repeat(evs, target) }

// fileSize returns the size of the file at path.
func fileSize(tb testing.TB, path string) int64 {
	tb.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		tb.Fatal(err)
	}
	return fi.Size()
}
