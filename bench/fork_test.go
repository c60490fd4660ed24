package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/sessionlog/sessionlog/handle/file"
)

// BenchmarkFork measures FileStore.Fork at the parent's last event against
// copying the parent, for a raw parent log of ~1 MB and ~100 MB on disk
// (the workload, cycled to reach the size, a Flush per turn), on the OS
// file system with real fsyncs, the parent warm in the page cache.
//
//   - fork: Fork(id, lastSeq) and Close of the returned write handle. Fork
//     reads the parent's header and last event (Stat), writes the fork's
//     header to a temp file, fsyncs it, renames it into place and fsyncs
//     the folder. B-written/op, B-read/op and fsyncs/op count what goes
//     through the store's file system.
//   - create: Create of a new session without a parent, and Close: the
//     floor under fork (the same header write, fsyncs and lock file).
//   - copy: what a fork costs when it copies its parent: io.Copy of the
//     parent's file to a new file, fsync of the file and of the folder.
//
// The forks and copies are deleted after each op, outside the timer.
//
// The ~1 MB parent runs always; the ~100 MB one with
// SESSIONLOG_BENCH_LARGE=1:
//
//	SESSIONLOG_BENCH_LARGE=1 go test -run '^$' -bench BenchmarkFork -benchtime 20x -count 5 .
func BenchmarkFork(b *testing.B) {
	ctx := context.Background()
	sizes := []struct {
		name   string
		target int64
	}{{"parent=1MB", 1 << 20}}
	if large() {
		sizes = append(sizes, struct {
			name   string
			target int64
		}{"parent=100MB", 100 << 20})
	}
	for _, sz := range sizes {
		b.Run(sz.name, func(b *testing.B) {
			evs := events(b)
			if sz.target > 8<<20 {
				evs = largeEvents(b)
			}
			fs, counts := newCountingFs(false)
			store := file.New(fs, filepath.Join(b.TempDir(), "s"))
			id := writeUntil(b, store, evs, sz.target)
			info, err := store.Stat(ctx, id)
			if err != nil {
				b.Fatal(err)
			}

			b.Run("fork", func(b *testing.B) {
				var written, read, syncs int64
				b.ResetTimer()
				for range b.N {
					counts.Reset()
					h, err := store.Fork(ctx, id, info.LastSeq)
					if err != nil {
						b.Fatal(err)
					}
					if err := h.Close(); err != nil {
						b.Fatal(err)
					}
					b.StopTimer()
					written += counts.WriteBytes.Load()
					read += counts.ReadBytes.Load()
					syncs += counts.Syncs.Load()
					if h.Seq() != info.LastSeq {
						b.Fatalf("the fork ends at seq %d, want %d", h.Seq(), info.LastSeq)
					}
					if err := store.Delete(ctx, h.ID()); err != nil {
						b.Fatal(err)
					}
					b.StartTimer()
				}
				b.StopTimer()
				b.ReportMetric(float64(written)/float64(b.N), "B-written/op")
				b.ReportMetric(float64(read)/float64(b.N), "B-read/op")
				b.ReportMetric(float64(syncs)/float64(b.N), "fsyncs/op")
				b.ReportMetric(float64(info.SizeBytes), "parent-B")
			})

			b.Run("create", func(b *testing.B) {
				var written, read, syncs int64
				b.ResetTimer()
				for range b.N {
					counts.Reset()
					h, err := store.Create(ctx)
					if err != nil {
						b.Fatal(err)
					}
					if err := h.Close(); err != nil {
						b.Fatal(err)
					}
					b.StopTimer()
					written += counts.WriteBytes.Load()
					read += counts.ReadBytes.Load()
					syncs += counts.Syncs.Load()
					if err := store.Delete(ctx, h.ID()); err != nil {
						b.Fatal(err)
					}
					b.StartTimer()
				}
				b.StopTimer()
				b.ReportMetric(float64(written)/float64(b.N), "B-written/op")
				b.ReportMetric(float64(read)/float64(b.N), "B-read/op")
				b.ReportMetric(float64(syncs)/float64(b.N), "fsyncs/op")
				b.ReportMetric(float64(info.SizeBytes), "parent-B")
			})

			b.Run("copy", func(b *testing.B) {
				dir := b.TempDir()
				var written int64
				b.ResetTimer()
				for i := range b.N {
					dst := filepath.Join(dir, fmt.Sprintf("copy-%d", i))
					n, err := copyFile(info.Path, dst)
					if err != nil {
						b.Fatal(err)
					}
					if err := syncDir(dir); err != nil {
						b.Fatal(err)
					}
					written += n
					b.StopTimer()
					if err := os.Remove(dst); err != nil {
						b.Fatal(err)
					}
					b.StartTimer()
				}
				b.StopTimer()
				b.ReportMetric(float64(written)/float64(b.N), "B-written/op")
				b.ReportMetric(float64(written)/float64(b.N), "B-read/op")
				b.ReportMetric(2, "fsyncs/op")
				b.ReportMetric(float64(info.SizeBytes), "parent-B")
			})
		})
	}
}

// syncDir fsyncs the folder dir.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}
