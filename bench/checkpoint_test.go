package bench

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/sessionlog/sessionlog/bench/workload"
	"github.com/sessionlog/sessionlog/checkpoint"
	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/handle/file"
)

// checkpointSizes are the log lengths of the checkpoint benchmarks. The
// logs are prefixes of the 2,000-turn workload, cut at a turn end: 1,036,
// 10,055 and 100,002 events.
var checkpointSizes = []struct {
	name   string
	events int
}{{"events=1k", 1000}, {"events=10k", 10_000}, {"events=100k", 100_000}}

// checkpointSession writes the first n events (whole turns) of the large
// workload to a new raw session of store, one Append per event and a Flush
// per turn, and returns a write handle on it and the rest of the workload
// (the events to append later).
func checkpointSession(b *testing.B, store *file.Store, n int) (handle.Handle, []workload.Event) {
	b.Helper()
	all := largeEvents(b)
	evs := firstEvents(all, n)
	h, err := store.Create(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	appendEvents(b, h, evs, flushPerTurn)
	return h, all[len(evs):]
}

// BenchmarkCheckpoint measures checkpoint.Create on a write handle whose
// log holds 1k, 10k and 100k events of the workload (raw encoding, OS file
// system, real fsyncs). The handle's running digest is initialised before
// the timer by a first checkpoint (which reads the log once); every op then
// appends 4 more events of the workload and flushes them (not timed), and
// times one Create: the checkpoint's digest comes from the running digest,
// so the log is not read again (B-read/op), and Create costs one append and
// one flush (fsyncs/op).
//
//	go test -run '^$' -bench 'BenchmarkCheckpoint$' -benchtime 200x -count 5 .
func BenchmarkCheckpoint(b *testing.B) {
	ctx := context.Background()
	for _, sz := range checkpointSizes {
		b.Run(sz.name, func(b *testing.B) {
			fs, counts := newCountingFs(false)
			store := file.New(fs, filepath.Join(b.TempDir(), "s"))
			h, rest := checkpointSession(b, store, sz.events)
			defer h.Close()
			if _, err := checkpoint.Create(ctx, h); err != nil { // initialises the digest
				b.Fatal(err)
			}
			const perOp = 4
			if len(rest) < perOp*b.N {
				b.Fatalf("the workload has %d events left, %d ops need %d", len(rest), b.N, perOp*b.N)
			}
			var read, syncs int64
			b.ResetTimer()
			for i := range b.N {
				b.StopTimer()
				for _, e := range rest[i*perOp : (i+1)*perOp] {
					if _, err := h.Append(ctx, toLog(e)); err != nil {
						b.Fatal(err)
					}
				}
				if err := h.Flush(ctx); err != nil {
					b.Fatal(err)
				}
				counts.Reset()
				b.StartTimer()
				if _, err := checkpoint.Create(ctx, h); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				read += counts.ReadBytes.Load()
				syncs += counts.Syncs.Load()
				b.StartTimer()
			}
			b.StopTimer()
			b.ReportMetric(float64(read)/float64(b.N), "B-read/op")
			b.ReportMetric(float64(syncs)/float64(b.N), "fsyncs/op")
			b.ReportMetric(float64(h.Seq()+1), "events")
		})
	}
}

// BenchmarkCheckpointReopen measures the first checkpoint.Create after a
// session is reopened for writing, when the handle has no running digest
// yet. Every op opens the session (ReadWrite, not timed: Open scans the
// whole log), times one Create, and closes the handle (not timed; Close
// saves the digest's state in <dir>/.cache).
//
//   - digest=saved: the digest resumes from the state the previous Close
//     saved; Create reads the last event to check that the state matches
//     the log (a bounded read: from the nearest entry of the handle's
//     sparse index, which has one every 1 MiB of log).
//   - digest=cold: <dir>/.cache is deleted before the op, so Create hashes
//     the whole log (B-read/op is the log's size).
//
// Run it with:
//
//	go test -run '^$' -bench BenchmarkCheckpointReopen -benchtime 20x -count 5 .
func BenchmarkCheckpointReopen(b *testing.B) {
	ctx := context.Background()
	for _, sz := range checkpointSizes {
		for _, cold := range []bool{false, true} {
			name := sz.name + "/digest=saved"
			if cold {
				name = sz.name + "/digest=cold"
			}
			b.Run(name, func(b *testing.B) {
				fs, counts := newCountingFs(false)
				store := file.New(fs, filepath.Join(b.TempDir(), "s"))
				h, _ := checkpointSession(b, store, sz.events)
				if _, err := checkpoint.Create(ctx, h); err != nil {
					b.Fatal(err)
				}
				id := h.ID()
				if err := h.Close(); err != nil {
					b.Fatal(err)
				}
				cache := filepath.Join(store.Dir(), ".cache")
				if _, err := os.Stat(filepath.Join(cache, id+".digest")); err != nil {
					b.Fatalf("no saved digest state after Close: %v", err)
				}
				var read int64
				b.ResetTimer()
				for range b.N {
					b.StopTimer()
					if cold {
						if err := os.RemoveAll(cache); err != nil {
							b.Fatal(err)
						}
					}
					h, err := store.Open(ctx, id, handle.ReadWrite)
					if err != nil {
						b.Fatal(err)
					}
					counts.Reset()
					b.StartTimer()
					if _, err := checkpoint.Create(ctx, h); err != nil {
						b.Fatal(err)
					}
					b.StopTimer()
					read += counts.ReadBytes.Load()
					if err := h.Close(); err != nil {
						b.Fatal(err)
					}
					b.StartTimer()
				}
				b.StopTimer()
				b.ReportMetric(float64(read)/float64(b.N), "B-read/op")
				path, _ := store.Path(id)
				b.ReportMetric(float64(fileSize(b, path)), "file-B")
			})
		}
	}
}
