package bench

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/sessionlog/sessionlog/bench/internal/benchfs"
	"github.com/sessionlog/sessionlog/handle/file"
)

// BenchmarkWrite writes the events of the workload (seed 1, 200 turns,
// cycled when b.N is larger) to a fresh file on the OS file system. One op
// is one event: ns/op is the cost of writing one event, events/s is b.N
// over the elapsed time, MB/s counts the mean plain-JSONL size of an event
// (340 B), and fsyncs/event counts the fsync calls made while timed.
//
//   - sessionlog/flush-per-turn: Append each event, Flush at the end of
//     each turn (and once after the last event): the policy an agent
//     loop uses, durable at every turn boundary.
//   - sessionlog/flush-per-event: Append + Flush each event: every event
//     durable before the next is produced.
//   - naive/json.Marshal+write-no-fsync: json.Marshal + one f.Write per
//     event on an O_APPEND file, never fsynced, as agent frameworks do.
//     Nothing is durable: a power cut loses whatever the page cache held,
//     and a crash mid-write leaves a torn line nobody detects.
//   - naive/json.Marshal+write+fsync-per-event: the same with f.Sync
//     after every write.
//
// The fsync-per-event variants run at disk-flush speed; use an explicit
// -benchtime count. 25827x is exactly one pass over the workload (200
// turns, so flush-per-turn makes 200 fsyncs):
//
//	go test -run '^$' -bench BenchmarkWrite -benchtime 25827x -count 5 .
func BenchmarkWrite(b *testing.B) {
	evs := events(b)
	lastOfTurn := make([]bool, len(evs))
	for i := range evs {
		lastOfTurn[i] = i == len(evs)-1 || evs[i+1].Turn != evs[i].Turn
	}
	bytesPerEvent := (workloadSize + int64(len(evs))/2) / int64(len(evs))

	report := func(b *testing.B, syncs int64) {
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
		b.ReportMetric(float64(syncs)/float64(b.N), "fsyncs/event")
	}

	sessionlog := func(flushAt func(i int) bool) func(b *testing.B) {
		return func(b *testing.B) {
			ctx := context.Background()
			fs, counts := benchfs.New(false)
			store := file.New(fs, filepath.Join(b.TempDir(), "s"))
			h, err := store.Create(ctx)
			if err != nil {
				b.Fatal(err)
			}
			counts.Reset()
			b.SetBytes(bytesPerEvent)
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				k := i % len(evs)
				if _, err := h.Append(ctx, toLog(evs[k])); err != nil {
					b.Fatal(err)
				}
				if flushAt(k) {
					if err := h.Flush(ctx); err != nil {
						b.Fatal(err)
					}
				}
			}
			if err := h.Flush(ctx); err != nil { // the tail of a partial turn
				b.Fatal(err)
			}
			b.StopTimer()
			n := counts.Syncs.Load()
			if err := h.Close(); err != nil {
				b.Fatal(err)
			}
			report(b, n)
		}
	}

	naive := func(fsync bool) func(b *testing.B) {
		return func(b *testing.B) {
			f, err := os.OpenFile(filepath.Join(b.TempDir(), "naive.jsonl"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
			if err != nil {
				b.Fatal(err)
			}
			defer f.Close()
			var syncs int64
			b.SetBytes(bytesPerEvent)
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				e := &evs[i%len(evs)]
				line, err := json.Marshal(naiveEvent{Seq: int64(i), Type: e.Type, Time: e.Time, Data: e.Data})
				if err != nil {
					b.Fatal(err)
				}
				if _, err := f.Write(append(line, '\n')); err != nil {
					b.Fatal(err)
				}
				if fsync {
					if err := f.Sync(); err != nil {
						b.Fatal(err)
					}
					syncs++
				}
			}
			b.StopTimer()
			report(b, syncs)
		}
	}

	b.Run("sessionlog/flush-per-turn", sessionlog(func(k int) bool { return lastOfTurn[k] }))
	b.Run("sessionlog/flush-per-event", sessionlog(func(int) bool { return true }))
	b.Run("naive/json.Marshal+write-no-fsync", naive(false))
	b.Run("naive/json.Marshal+write+fsync-per-event", naive(true))
}
