package bench

import (
	"context"
	"io"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"slices"
	"syscall"
	"testing"

	"github.com/sessionlog/sessionlog/bench/harness"
	"github.com/sessionlog/sessionlog/bench/internal/benchfs"
	"github.com/sessionlog/sessionlog/bench/workload"
	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/handle/file"
)

// replayCLIBytes is the plain-JSONL size of BenchmarkReplayCLI's session.
const replayCLIBytes = 75_000_000

// BenchmarkReplayCLI runs the logtool binary as a user does, stdout piped
// and read to its end, on an uncompacted workload session of 75 MB of
// plain JSONL (seed 3, whole turns, a Flush per turn, raw): `cat --json`
// and `replay --projection transcript` (from the first event: it has no
// checkpoint). Each op is one run of each; it reports their CPU time
// (user+sys, ProcessState.SysUsage), the replay ÷ cat ratio of the op's
// medians, and peak RSS, which on a shared machine the wall time cannot
// show. Issue 32's target: replay ≤ 1.25× cat, RSS ≤ output + 64 MB.
// (ru_maxrss counts the benchmark's own process too, from before the
// exec: a few MB more than a shell's run shows.)
//
//	cd bench && go test -run '^$' -bench BenchmarkReplayCLI -benchtime 8x .
func BenchmarkReplayCLI(b *testing.B) {
	ctx := context.Background()
	dir := b.TempDir()
	exe, err := harness.BuildLogtool(ctx, dir)
	if err != nil {
		b.Fatal(err)
	}
	store := filepath.Join(dir, "s")
	id := writeUncompacted(b, store)
	debug.FreeOSMemory() // ru_maxrss counts this process's own, from before the exec
	type run struct{ cpu, rss, out int64 }
	one := func(args ...string) run {
		cmd := exec.CommandContext(ctx, exe, append([]string{"--dir", store}, append(args, id)...)...)
		out, err := cmd.StdoutPipe()
		if err != nil {
			b.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		n, _ := io.Copy(io.Discard, out)
		if err := cmd.Wait(); err != nil {
			b.Fatal(err)
		}
		ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
		return run{ru.Utime.Nano() + ru.Stime.Nano(), ru.Maxrss << 10, n}
	}
	var cats, replays []float64
	var cat, rep run
	b.ResetTimer()
	for range b.N {
		cat = one("cat", "--json")
		rep = one("replay", "--projection", "transcript")
		cats, replays = append(cats, float64(cat.cpu)/1e6), append(replays, float64(rep.cpu)/1e6)
	}
	b.StopTimer()
	c, r := median(cats), median(replays)
	b.ReportMetric(c, "cat-cpu-ms")
	b.ReportMetric(r, "replay-cpu-ms")
	b.ReportMetric(r/c, "replay/cat")
	b.ReportMetric(float64(cat.rss)/1e6, "cat-rss-MB")
	b.ReportMetric(float64(rep.rss)/1e6, "replay-rss-MB")
	b.ReportMetric(float64(rep.out)/1e6, "replay-out-MB")
}

// writeUncompacted writes BenchmarkReplayCLI's session into a new raw
// store in dir and returns its ID.
func writeUncompacted(b *testing.B, dir string) string {
	ctx := context.Background()
	fsys, _ := benchfs.New(true)
	st := file.New(fsys, dir, handle.WithEncoding(handle.EncodingRaw))
	h, err := st.Create(ctx)
	if err != nil {
		b.Fatal(err)
	}
	g := workload.New(workload.Config{Seed: 3, Turns: 1 << 30})
	var n int64
	var line []byte
	for n < replayCLIBytes {
		for _, e := range g.NextTurn() {
			ev := toLog(e)
			if _, err := h.Append(ctx, ev); err != nil {
				b.Fatal(err)
			}
			n += int64(len(eventlog.AppendCanon(line[:0], ev))) + 1
		}
		if err := h.Flush(ctx); err != nil {
			b.Fatal(err)
		}
	}
	if err := h.Close(); err != nil {
		b.Fatal(err)
	}
	return h.ID()
}

// median returns the median of xs (sorted in place).
func median(xs []float64) float64 {
	slices.Sort(xs)
	if n := len(xs); n%2 == 0 {
		return (xs[n/2-1] + xs[n/2]) / 2
	}
	return xs[len(xs)/2]
}
