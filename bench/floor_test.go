//go:build linux

package bench

import (
	"os"
	"slices"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/sessionlog/sessionlog/bench/harness"
)

// BenchmarkRoundFloor measures the floor under a round of group commit on
// this machine, before any library code (harness.RoundFloor): one op is
// one round. The round writes 8 KiB and fdatasyncs it (F, fsync-µs), then
// wakes 64 goroutines parked on one channel; each spins for work (what an
// append's checks cost it: 700ns is BenchmarkRedactWorkload's
// redact+validate, all the contract makes an append do) and counts itself
// under a mutex. x-µs is from the wake to the last count:
// the appenders' way back with no library in it. ceiling× is 2F/(F+x), the most any group commit whose
// writes wait for the previous fsync (docs/format.md §9) can gain over an
// eager one whose 64 appenders alternate in two halves (medians of the
// rounds). Run it with -cpu 1,2: where a second core takes longer to wake
// than the round lasts, x is no shorter on two.
//
//	go test -run '^$' -bench BenchmarkRoundFloor -benchtime 2000x -count 3 -cpu 1,2 .
func BenchmarkRoundFloor(b *testing.B) {
	for _, work := range []time.Duration{0, 700 * time.Nanosecond, time.Microsecond, 2 * time.Microsecond} {
		b.Run("work="+work.String(), func(b *testing.B) { roundFloor(b, 64, work) })
	}
}

func roundFloor(b *testing.B, n int, work time.Duration) {
	b.ResetTimer()
	syncs, xs, err := harness.RoundFloor(b.TempDir(), n, work, b.N, 0)
	if err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	F, x, ceiling, ok := harness.Ceiling(syncs, xs)
	if !ok {
		b.Fatal("no round")
	}
	b.ReportMetric(F, "fsync-µs")
	b.ReportMetric(x, "x-µs")
	b.ReportMetric(ceiling, "ceiling×")
}

// BenchmarkIdleCoreWake measures how long a goroutine made ready takes to
// run on the process's other core after the process slept 300 µs (as its
// appenders do during an fsync), while the goroutine that readied it keeps
// its own core busy: wake-µs is the median, wake-p90-µs the 90th
// percentile (a wait is cut at 3 ms).
//
//	go test -run '^$' -bench BenchmarkIdleCoreWake -benchtime 400x -count 3 .
func BenchmarkIdleCoreWake(b *testing.B) {
	waits := make([]time.Duration, 0, b.N)
	for range b.N {
		time.Sleep(300 * time.Microsecond)
		var ran atomic.Int64
		t0 := time.Now()
		go func() { ran.Store(int64(time.Since(t0)) + 1) }()
		for ran.Load() == 0 && time.Since(t0) < 3*time.Millisecond {
		}
		if d := ran.Load(); d > 0 {
			waits = append(waits, time.Duration(d-1))
		} else {
			waits = append(waits, 3*time.Millisecond)
		}
	}
	b.StopTimer()
	slices.Sort(waits)
	b.ReportMetric(us(waits[len(waits)/2]), "wake-µs")
	b.ReportMetric(us(waits[len(waits)*9/10]), "wake-p90-µs")
}

// BenchmarkPageFault measures the first touch of a page of fresh
// anonymous memory (one op): what the heap's growth and a freed span's
// reuse after the OS took it back cost an append that lands there.
//
//	go test -run '^$' -bench BenchmarkPageFault -benchtime 20000x -count 3 .
func BenchmarkPageFault(b *testing.B) {
	page := os.Getpagesize()
	m, err := syscall.Mmap(-1, 0, b.N*page, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		b.Fatal(err)
	}
	defer syscall.Munmap(m)
	b.ResetTimer()
	for i := range b.N {
		m[i*page] = 1
	}
}

func us(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
