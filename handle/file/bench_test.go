package file_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spf13/afero"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/handle/file"
	"github.com/sessionlog/sessionlog/internal/testkit/countfs"
)

// BenchmarkAppend measures durable appends with real fsyncs on the OS file
// system: 1, 8, 64 and 256 concurrent appenders that each Append one event
// and wait for their own Flush. It reports events/s, events/fsync (group
// commit gathers concurrent appenders into one write and one fsync) and
// the p50 and p99 latency of Append+Flush, and the CPU time the process
// used per event (cpu-µs/event, Linux): on a machine shared with other
// work, where the fsync's latency and so events/s move between runs, the
// CPU an event costs is what an A/B of the append path compares. A round
// of group commit is timed at the log file (medians): write-µs and
// fsync-µs, and gap-µs from an fsync's return to the next write, the part
// of the round that is not I/O (see roundFs).
//
//   - appenders=N: sessionlog.
//
//   - appenders=N/no-fsync: the same with an fsync that does nothing: the
//     ceiling that durability is measured against. events/flush says how
//     many events a flush (one write) carried.
//
//   - bare-write+fdatasync: one appender writing the same row with
//     f.Write and fdatasync, no library: the floor a lone appender's
//     latency is measured against.
//
//     go test -run '^$' -bench BenchmarkAppend -benchtime 4000x -count 5 ./handle/file/
func BenchmarkAppend(b *testing.B) {
	data := json.RawMessage(`{"text":"a streamed delta of about one hundred bytes, as an assistant chunk would carry it...."}`)
	ev := eventlog.Event{Type: "assistant/chunk", Time: 1764450000000, Data: data}
	benchAppenders(b, ev, []int{1, 8, 64, 256})
	b.Run("bare-write+fdatasync", func(b *testing.B) {
		f, err := os.OpenFile(filepath.Join(b.TempDir(), "bare.jsonl"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		row := append(eventlog.Canon(ev), '\n')
		lat := make([]time.Duration, 0, b.N)
		b.ResetTimer()
		for range b.N {
			t0 := time.Now()
			if _, err := f.Write(row); err != nil {
				b.Fatal(err)
			}
			if err := fdatasync(f); err != nil {
				b.Fatal(err)
			}
			lat = append(lat, time.Since(t0))
		}
		b.StopTimer()
		reportLatency(b, lat)
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
	})
}

// BenchmarkAppendUnpacked is BenchmarkAppend with events of a type that is
// not packed (tool/call, about 100 bytes): every row is one an appender
// prepared in its own goroutine, the leader writes them as they are (a
// chunk run is encoded when it ends: docs/design.md, "Group commit").
//
//	go test -run '^$' -bench BenchmarkAppendUnpacked -benchtime 20000x -count 5 ./handle/file/
func BenchmarkAppendUnpacked(b *testing.B) {
	data := json.RawMessage(`{"id":"call_0001","name":"read_file","args":{"path":"internal/server/handlers/session.go"}}`)
	benchAppenders(b, eventlog.Event{Type: "tool/call", Time: 1764450000000, Data: data}, []int{1, 64, 256})
}

// benchAppenders runs BenchmarkAppend's appenders=N and
// appenders=N/no-fsync cases for ev.
func benchAppenders(b *testing.B, ev eventlog.Event, counts []int) {
	for _, appenders := range counts {
		for _, noSync := range []bool{false, true} {
			name := fmt.Sprintf("appenders=%d", appenders)
			if noSync {
				name += "/no-fsync"
			}
			b.Run(name, func(b *testing.B) { benchAppend(b, ev, appenders, noSync) })
		}
	}
}

func benchAppend(b *testing.B, ev eventlog.Event, appenders int, noSync bool) {
	var fsys afero.Fs = afero.NewOsFs()
	if noSync {
		fsys = noSyncFs{fsys}
	}
	rounds := &roundFs{Fs: fsys}
	counted := countfs.New(rounds)
	store := file.New(counted, filepath.Join(b.TempDir(), "s"))
	ctx := context.Background()
	h, err := store.Create(ctx)
	if err != nil {
		b.Fatal(err)
	}
	defer h.Close()
	synced := counted.Syncs()
	lat := make([][]time.Duration, appenders)
	var next atomic.Int64
	var wg sync.WaitGroup
	b.ResetTimer()
	cpu0 := processCPU()
	for i := range appenders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= int64(b.N) {
				t0 := time.Now()
				if _, err := h.Append(ctx, ev); err != nil {
					b.Error(err)
					return
				}
				if err := h.Flush(ctx); err != nil {
					b.Error(err)
					return
				}
				lat[i] = append(lat[i], time.Since(t0))
			}
		}()
	}
	wg.Wait()
	b.StopTimer()
	reportCPU(b, processCPU()-cpu0)
	reportLatency(b, slices.Concat(lat...))
	rounds.report(b)
	// One fsync a flush (raw rows), counted also when it does nothing.
	if syncs := counted.Syncs() - synced; syncs > 0 {
		unit := "events/fsync"
		if noSync {
			unit = "events/flush"
		}
		b.ReportMetric(float64(b.N)/float64(syncs), unit)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
}

// reportCPU reports the CPU time used per event, when it was measured.
func reportCPU(b *testing.B, cpu time.Duration) {
	if cpu > 0 {
		b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-µs/event")
	}
}

// reportLatency reports the p50 and p99 of lat in microseconds.
func reportLatency(b *testing.B, lat []time.Duration) {
	if len(lat) == 0 {
		return
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
}

// roundFs times the flushes of the session's log (its *.jsonl file): how
// long each write and each fsync took, and the gap from an fsync's return
// to the next write: the callers the fsync served woken, their next
// appends prepared and queued, the leader's gather and rows, and the check
// that the path still names the file (docs/performance.md, "Group
// commit's round").
type roundFs struct {
	afero.Fs

	mu                  sync.Mutex
	synced              time.Time // when the last fsync returned
	gaps, writes, syncs []time.Duration
}

func (r *roundFs) OpenFile(name string, flag int, perm os.FileMode) (afero.File, error) {
	f, err := r.Fs.OpenFile(name, flag, perm)
	if err != nil || filepath.Ext(name) != ".jsonl" {
		return f, err
	}
	return roundFile{f, r}, nil
}

func (r *roundFs) Open(name string) (afero.File, error) { return r.OpenFile(name, os.O_RDONLY, 0) }

// LstatIfPossible is the base's, as the store asks it of the OS file
// system.
func (r *roundFs) LstatIfPossible(name string) (os.FileInfo, bool, error) {
	if l, ok := r.Fs.(afero.Lstater); ok {
		return l.LstatIfPossible(name)
	}
	fi, err := r.Fs.Stat(name)
	return fi, false, err
}

// report reports the medians of the gaps, writes and fsyncs timed.
func (r *roundFs) report(b *testing.B) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, m := range []struct {
		unit string
		d    []time.Duration
	}{{"gap-µs", r.gaps}, {"write-µs", r.writes}, {"fsync-µs", r.syncs}} {
		if len(m.d) > 0 {
			slices.Sort(m.d)
			b.ReportMetric(float64(m.d[len(m.d)/2].Nanoseconds())/1e3, m.unit)
		}
	}
}

type roundFile struct {
	afero.File
	r *roundFs
}

func (f roundFile) WriteAt(p []byte, off int64) (int, error) {
	start := time.Now()
	n, err := f.File.WriteAt(p, off)
	d := time.Since(start)
	f.r.mu.Lock()
	if !f.r.synced.IsZero() {
		f.r.gaps = append(f.r.gaps, start.Sub(f.r.synced))
	}
	f.r.writes = append(f.r.writes, d)
	f.r.mu.Unlock()
	return n, err
}

func (f roundFile) Sync() error {
	start := time.Now()
	err := f.File.Sync()
	end := time.Now()
	f.r.mu.Lock()
	f.r.synced = end
	f.r.syncs = append(f.r.syncs, end.Sub(start))
	f.r.mu.Unlock()
	return err
}

// Fd keeps positional I/O and locking working through the wrapper.
func (f roundFile) Fd() uintptr {
	if fd, ok := f.File.(interface{ Fd() uintptr }); ok {
		return fd.Fd()
	}
	return ^uintptr(0)
}

// noSyncFs is a file system whose files' Sync does nothing.
type noSyncFs struct{ afero.Fs }

func (n noSyncFs) OpenFile(name string, flag int, perm os.FileMode) (afero.File, error) {
	f, err := n.Fs.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return noSyncFile{f}, nil
}

func (n noSyncFs) Open(name string) (afero.File, error) { return n.OpenFile(name, os.O_RDONLY, 0) }

// LstatIfPossible is the base's, as the store asks it of the OS file
// system.
func (n noSyncFs) LstatIfPossible(name string) (os.FileInfo, bool, error) {
	if l, ok := n.Fs.(afero.Lstater); ok {
		return l.LstatIfPossible(name)
	}
	fi, err := n.Fs.Stat(name)
	return fi, false, err
}

type noSyncFile struct{ afero.File }

func (noSyncFile) Sync() error { return nil }

// Fd keeps positional I/O and locking working through the wrapper.
func (f noSyncFile) Fd() uintptr {
	if fd, ok := f.File.(interface{ Fd() uintptr }); ok {
		return fd.Fd()
	}
	return ^uintptr(0)
}

// BenchmarkTree measures a tree query over a store of 10,000 sessions (a
// tenth of them forks): cold reads every header and writes the derived
// index; warm reads the folder listing and the index.
//
//	go test -run '^$' -bench BenchmarkTree -benchtime 10x ./handle/file/
func BenchmarkTree(b *testing.B) {
	ctx := context.Background()
	dir := filepath.Join(b.TempDir(), "s")
	store := file.New(afero.NewOsFs(), dir)
	var last string
	for i := range 10000 {
		var h handle.Handle
		var err error
		if i%10 == 9 {
			h, err = store.Fork(ctx, last, 0)
		} else {
			h, err = store.Create(ctx)
			if err == nil {
				_, err = h.Append(ctx, eventlog.Event{Type: "x"})
			}
		}
		if err != nil {
			b.Fatal(err)
		}
		if err := h.Close(); err != nil {
			b.Fatal(err)
		}
		last = h.ID()
	}
	for _, mode := range []string{"cold", "warm"} {
		b.Run(mode, func(b *testing.B) {
			for range b.N {
				if mode == "cold" {
					b.StopTimer()
					os.RemoveAll(filepath.Join(dir, ".cache"))
					b.StartTimer()
				}
				roots, err := store.Tree(ctx)
				if err != nil || len(roots) != 9000 {
					b.Fatal(len(roots), err)
				}
			}
		})
	}
}

// BenchmarkForkDigest measures a fork's first LogDigest (what its first
// checkpoint needs), cold: a new store on the folder (nothing in memory),
// the parent of n ~100-byte events closed by its writer, with a checkpoint
// every 100 events. at=last forks at the parent's last seq; at=after-cp+50
// forks 50 events after a checkpoint in the middle of the log. B-read/op is
// what the fork, its digest and its Close read from the store's files:
// it must not grow with n (docs/design.md, "Digests").
//
//	go test -run '^$' -bench BenchmarkForkDigest -benchtime 20x -count 5 ./handle/file/
func BenchmarkForkDigest(b *testing.B) {
	ctx := context.Background()
	data := json.RawMessage(`{"text":"a streamed delta of about one hundred bytes, as an assistant chunk would carry it...."}`)
	for _, n := range []int{10_000, 100_000} {
		dir := filepath.Join(b.TempDir(), "s")
		counted := countfs.New(afero.NewOsFs())
		h, err := file.New(counted, dir).Create(ctx)
		if err != nil {
			b.Fatal(err)
		}
		for h.Seq()+1 < int64(n) {
			evs := make([]eventlog.Event, 99)
			for i := range evs {
				evs[i] = eventlog.Event{Type: "tool/result", Time: 1764450000000, Data: data}
			}
			if _, err := h.Append(ctx, evs...); err != nil {
				b.Fatal(err)
			}
			d, _, err := h.LogDigest(ctx)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := h.Append(ctx, eventlog.Event{Type: eventlog.TypeCheckpoint, Data: json.RawMessage(`{"log":"` + d + `"}`)}); err != nil {
				b.Fatal(err)
			}
			if err := h.Flush(ctx); err != nil {
				b.Fatal(err)
			}
		}
		last := h.Seq()
		if err := h.Close(); err != nil {
			b.Fatal(err)
		}
		for _, at := range []struct {
			name string
			seq  int64
		}{{"last", last}, {"after-cp+50", int64(n/200*100) + 50}} {
			b.Run(fmt.Sprintf("n=%d/at=%s", n, at.name), func(b *testing.B) {
				var read int64
				for range b.N {
					store := file.New(counted, dir)
					before := counted.BytesRead()
					f, err := store.Fork(ctx, h.ID(), at.seq)
					if err != nil {
						b.Fatal(err)
					}
					if _, next, err := f.LogDigest(ctx); err != nil || next != at.seq+1 {
						b.Fatal(next, err)
					}
					if err := f.Close(); err != nil {
						b.Fatal(err)
					}
					b.StopTimer()
					read += counted.BytesRead() - before
					if err := store.Delete(ctx, f.ID()); err != nil {
						b.Fatal(err)
					}
					b.StartTimer()
				}
				b.ReportMetric(float64(read)/float64(b.N), "B-read/op")
			})
		}
	}
}
