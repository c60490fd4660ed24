package bench

import (
	"context"
	"encoding/binary"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/sessionlog/sessionlog/bench/workload"
	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/handle/file"
	"github.com/sessionlog/sessionlog/internal/format/zstdframe"
)

// namedWorkload is a workload, its name in benchmark names and its size
// as plain JSONL.
type namedWorkload struct {
	name string
	evs  []workload.Event
	size int64
}

// zstdWorkloads returns the workloads the zstd size and read benchmarks
// run on: the 200-turn workload always, the 2,000-turn one with
// SESSIONLOG_BENCH_LARGE=1.
func zstdWorkloads(b *testing.B) []namedWorkload {
	out := []namedWorkload{{"turns=200", events(b), workloadSize}}
	if large() {
		evs := largeEvents(b) // sets largeSize
		out = append(out, namedWorkload{"turns=2000", evs, largeSize})
	}
	return out
}

// BenchmarkZstdSize writes the workload to a session in each encoding and
// flush policy and reports the file's size as custom metrics: B/event (file
// bytes per event) and ratio (the workload's plain-JSONL bytes over the
// file's bytes, so a raw sessionlog log is a little above 1 because it
// packs assistant/chunk runs). One op writes the whole session (Create, one
// Append per event, the flushes, Close); ns/event is its time per event.
//
// Sizes are what they would be with fsync, but fsync is skipped (Sync is
// a no-op on the wrapped file system): one flush per event would otherwise
// take one fsync per event (BenchmarkWrite measures that), and the bytes
// written do not depend on it. The times are therefore CPU and write(2)
// costs only.
//
//   - flush=1: Append + Flush per event: one zstd frame per event.
//   - flush=32: a Flush every 32 events.
//   - flush=turn: a Flush at every turn end (~130 events): what an agent
//     loop does.
//   - flush=all: every event appended, then one Flush (the writer splits it
//     into frames of zstdframe.Target bytes of content).
//   - compacted: flush=turn, then FileStore.Compact; the op times Compact
//     alone. level=N is the zstd level of the store (Config.ZstdLevel); the
//     default is the fastest level.
//
// The 200-turn workload (25,827 events) runs always; the 2,000-turn one
// (260,984 events, 86 MB of JSONL) with SESSIONLOG_BENCH_LARGE=1:
//
//	go test -run '^$' -bench 'BenchmarkZstdSize/turns=200$' -benchtime 1x -count 5 .
//	SESSIONLOG_BENCH_LARGE=1 go test -run '^$' -bench 'BenchmarkZstdSize/turns=2000' -benchtime 1x -count 5 .
func BenchmarkZstdSize(b *testing.B) {
	ctx := context.Background()
	for _, w := range zstdWorkloads(b) {
		b.Run(w.name, func(b *testing.B) {
			report := func(b *testing.B, size int64) {
				n := float64(len(w.evs))
				b.ReportMetric(float64(size)/n, "B/event")
				b.ReportMetric(float64(w.size)/float64(size), "ratio")
				b.ReportMetric(float64(size), "file-B")
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/event")
			}
			write := func(enc string, every int) func(b *testing.B) {
				return func(b *testing.B) {
					fs, _ := newCountingFs(true)
					store := file.New(fs, filepath.Join(b.TempDir(), "s"), handle.WithEncoding(enc))
					var size int64
					for range b.N {
						id, path := writeSession(b, store, w.evs, every)
						b.StopTimer()
						size = fileSize(b, path)
						if err := store.Delete(ctx, id); err != nil {
							b.Fatal(err)
						}
						b.StartTimer()
					}
					report(b, size)
				}
			}
			compacted := func(opts ...handle.Option) func(b *testing.B) {
				return func(b *testing.B) {
					fs, _ := newCountingFs(true)
					opts = append([]handle.Option{handle.WithEncoding(handle.EncodingZstd)}, opts...)
					store := file.New(fs, filepath.Join(b.TempDir(), "s"), opts...)
					var size int64
					for range b.N {
						b.StopTimer()
						id, _ := writeSession(b, store, w.evs, flushPerTurn)
						b.StartTimer()
						if err := store.Compact(ctx, id); err != nil {
							b.Fatal(err)
						}
						b.StopTimer()
						path, err := store.Path(id)
						if err != nil {
							b.Fatal(err)
						}
						size = fileSize(b, path)
						if err := store.Delete(ctx, id); err != nil {
							b.Fatal(err)
						}
						b.StartTimer()
					}
					report(b, size)
				}
			}
			for _, enc := range []string{handle.EncodingRaw, handle.EncodingZstd} {
				b.Run(enc+"/flush=1", write(enc, 1))
				b.Run(enc+"/flush=32", write(enc, 32))
				b.Run(enc+"/flush=turn", write(enc, flushPerTurn))
				b.Run(enc+"/flush=all", write(enc, flushAtEnd))
			}
			b.Run("zstd/compacted", compacted())
			b.Run("zstd/compacted/level=3", compacted(func(c *handle.Config) { c.ZstdLevel = 3 }))
			b.Run("zstd/compacted/level=19", compacted(func(c *handle.Config) { c.ZstdLevel = 19 }))
		})
	}
}

// BenchmarkZstdRead reads a whole session per op through a read-only
// handle opened once (outside the timer), from the OS file system with the
// file warm in the page cache: raw (written with a Flush per turn) against
// zstd written the same way (one small frame per turn) and zstd compacted
// (FileStore.Compact: frames of ~4 MB of content). MB/s counts the
// workload's plain-JSONL bytes (the same for every variant), so it
// compares like events/s.
//
//	go test -run '^$' -bench 'BenchmarkZstdRead/turns=200$' -benchtime 20x -count 5 .
//	SESSIONLOG_BENCH_LARGE=1 go test -run '^$' -bench 'BenchmarkZstdRead/turns=2000' -benchtime 3x -count 5 .
func BenchmarkZstdRead(b *testing.B) {
	ctx := context.Background()
	for _, w := range zstdWorkloads(b) {
		b.Run(w.name, func(b *testing.B) {
			dir := b.TempDir()
			fs, _ := newCountingFs(true)
			raw := file.New(fs, filepath.Join(dir, "raw"))
			zst := file.New(fs, filepath.Join(dir, "zstd"), handle.WithEncoding(handle.EncodingZstd))
			rawID, _ := writeSession(b, raw, w.evs, flushPerTurn)
			zID, _ := writeSession(b, zst, w.evs, flushPerTurn)
			cID, _ := writeSession(b, zst, w.evs, flushPerTurn)
			if err := zst.Compact(ctx, cID); err != nil {
				b.Fatal(err)
			}
			for _, v := range []struct {
				name  string
				store *file.Store
				id    string
			}{
				{"raw/flush=turn", raw, rawID},
				{"zstd/flush=turn", zst, zID},
				{"zstd/compacted", zst, cID},
			} {
				b.Run(v.name, func(b *testing.B) {
					h, err := v.store.Open(ctx, v.id, handle.ReadOnly)
					if err != nil {
						b.Fatal(err)
					}
					defer h.Close()
					path, _ := v.store.Path(v.id)
					b.SetBytes(w.size)
					b.ReportAllocs()
					b.ResetTimer()
					for range b.N {
						if n := readHandle(ctx, b, h); n != len(w.evs) {
							b.Fatalf("read %d events, want %d", n, len(w.evs))
						}
					}
					b.StopTimer()
					b.ReportMetric(float64(len(w.evs))*float64(b.N)/b.Elapsed().Seconds(), "events/s")
					b.ReportMetric(float64(fileSize(b, path)), "file-B")
				})
			}
		})
	}
}

// writeUntil writes a session to store, cycling through evs (times shifted
// on every pass) with a Flush per turn, until its file holds at least
// target bytes, and closes it. It returns the session's ID.
func writeUntil(tb testing.TB, store *file.Store, evs []workload.Event, target int64) string {
	tb.Helper()
	ctx := context.Background()
	h, err := store.Create(ctx)
	if err != nil {
		tb.Fatal(err)
	}
	var shift int64
	for done := false; !done; {
		for _, turn := range turns(evs) {
			for _, e := range turn {
				e := toLog(e)
				e.Time += shift
				if _, err := h.Append(ctx, e); err != nil {
					tb.Fatal(err)
				}
			}
			if err := h.Flush(ctx); err != nil {
				tb.Fatal(err)
			}
			if fileSize(tb, h.Path()) >= target {
				done = true
				break
			}
		}
		shift += evs[len(evs)-1].Time + 1 - evs[0].Time
	}
	id := h.ID()
	if err := h.Close(); err != nil {
		tb.Fatal(err)
	}
	return id
}

// copyFile copies src to dst and fsyncs dst.
func copyFile(src, dst string) (int64, error) {
	in, err := os.Open(src)
	if err != nil {
		return 0, err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return 0, err
	}
	n, err := io.Copy(out, in)
	if err == nil {
		err = out.Sync()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return n, err
}

// BenchmarkZstdStat measures FileStore.Stat (header and last event, a
// bounded read) on logs of ~1 MB and ~100 MB on disk, written with a Flush
// per turn and closed, cycling through the workload to reach the size.
// B-read/op and reads/op count the bytes and the read calls made through
// the store's file system; file-B is the log's size.
//
//   - zstd/closed: a zstd log its writer closed: it ends in a tail frame
//     that locates the last data frame, so Stat reads the first frame, the
//     48-byte tail frame and the last data frame.
//   - zstd/crashed: the same log with its tail frame cut off (the writer
//     crashed before Close): Stat walks every frame header from the start
//     (a few bytes per frame, no decompression) to find the last frame.
//   - zstd/compacted: the closed log after FileStore.Compact: its last data
//     frame holds up to ~4 MB of content, which Stat decompresses.
//   - raw/closed: a raw log, for reference (Stat reads the header row and
//     scans back from the end for the last row).
//
// The ~1 MB logs run always; the ~100 MB ones with SESSIONLOG_BENCH_LARGE=1:
//
//	SESSIONLOG_BENCH_LARGE=1 go test -run '^$' -bench BenchmarkZstdStat -benchtime 1s -count 5 .
func BenchmarkZstdStat(b *testing.B) {
	ctx := context.Background()
	sizes := []struct {
		name   string
		target int64
	}{{"size=1MB", 1 << 20}}
	if large() {
		sizes = append(sizes, struct {
			name   string
			target int64
		}{"size=100MB", 100 << 20})
	}
	for _, sz := range sizes {
		b.Run(sz.name, func(b *testing.B) {
			evs := events(b)
			if sz.target > 8<<20 {
				evs = largeEvents(b)
			}
			dir := b.TempDir()
			fs, counts := newCountingFs(false)
			mk := func(name string, opts ...handle.Option) *file.Store {
				return file.New(fs, filepath.Join(dir, name), opts...)
			}
			zstdOpt := handle.WithEncoding(handle.EncodingZstd)

			closed := mk("closed", zstdOpt)
			closedID := writeUntil(b, closed, evs, sz.target)
			closedPath, _ := closed.Path(closedID)

			// The crashed log: a copy of the closed one without its tail
			// frame.
			crashed := mk("crashed", zstdOpt)
			if err := os.MkdirAll(crashed.Dir(), 0o700); err != nil {
				b.Fatal(err)
			}
			crashedPath := filepath.Join(crashed.Dir(), filepath.Base(closedPath))
			n, err := copyFile(closedPath, crashedPath)
			if err != nil {
				b.Fatal(err)
			}
			tail := make([]byte, zstdframe.TailSize)
			f, err := os.Open(crashedPath)
			if err != nil {
				b.Fatal(err)
			}
			_, err = f.ReadAt(tail, n-zstdframe.TailSize)
			f.Close()
			if err != nil {
				b.Fatal(err)
			}
			if binary.LittleEndian.Uint32(tail) != zstdframe.TailMagic {
				b.Fatalf("%s does not end in a tail frame", closedPath)
			}
			if err := os.Truncate(crashedPath, n-zstdframe.TailSize); err != nil {
				b.Fatal(err)
			}

			compacted := mk("compacted", zstdOpt)
			if err := os.MkdirAll(compacted.Dir(), 0o700); err != nil {
				b.Fatal(err)
			}
			if _, err := copyFile(closedPath, filepath.Join(compacted.Dir(), filepath.Base(closedPath))); err != nil {
				b.Fatal(err)
			}
			if err := compacted.Compact(ctx, closedID); err != nil {
				b.Fatal(err)
			}

			raw := mk("raw")
			rawID := writeUntil(b, raw, evs, sz.target)

			// Every variant must describe the same last event.
			want, err := closed.Stat(ctx, closedID)
			if err != nil {
				b.Fatal(err)
			}
			for _, v := range []struct {
				name  string
				store *file.Store
				id    string
			}{
				{"zstd/closed", closed, closedID},
				{"zstd/crashed", crashed, closedID},
				{"zstd/compacted", compacted, closedID},
				{"raw/closed", raw, rawID},
			} {
				b.Run(v.name, func(b *testing.B) {
					info, err := v.store.Stat(ctx, v.id)
					if err != nil {
						b.Fatal(err)
					}
					if v.store != raw && (info.LastSeq != want.LastSeq || info.LastType != want.LastType) {
						b.Fatalf("Stat: last event %d %s, want %d %s", info.LastSeq, info.LastType, want.LastSeq, want.LastType)
					}
					counts.Reset()
					b.ReportAllocs()
					b.ResetTimer()
					for range b.N {
						if _, err := v.store.Stat(ctx, v.id); err != nil {
							b.Fatal(err)
						}
					}
					b.StopTimer()
					b.ReportMetric(float64(counts.ReadBytes.Load())/float64(b.N), "B-read/op")
					b.ReportMetric(float64(counts.Reads.Load())/float64(b.N), "reads/op")
					b.ReportMetric(float64(info.SizeBytes), "file-B")
					b.ReportMetric(float64(info.Events), "events")
				})
			}
		})
	}
}
