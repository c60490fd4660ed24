package harness

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"time"
)

// The floor under a round of group commit on this machine, with no
// library in it. A group commit whose writes wait for the previous fsync
// (docs/format.md §9) serves n durable appenders in rounds of an fsync (F)
// and x, the served appenders' way back with their next events; an eager
// one, whose leader writes what arrived while the previous fsync ran,
// settles into two halves that alternate, n/2 events an fsync. So the
// first gains at most 2F/(F+x) over the second, and the floor of x on the
// machine bounds what any library can reach.

// floorWork stands in for what an append costs its appender before any
// I/O: the workload's events cost 0.67 µs of validation and redaction
// alone (bench's BenchmarkRedactWorkload, redact+validate).
const floorWork = time.Microsecond

// RoundFloor runs rounds of group commit with no library: each writes 8
// KiB to a file in dir and fdatasyncs it, then wakes n goroutines parked
// on one channel; each spins for work and counts itself under a mutex. It
// returns each round's fsync (F) and x, from the wake to the last count.
// It runs rounds rounds, or while budget lasts when rounds is 0.
func RoundFloor(dir string, n int, work time.Duration, rounds int, budget time.Duration) (fsyncs, xs []time.Duration, err error) {
	f, err := os.Create(filepath.Join(dir, "round"))
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	var (
		mu    sync.Mutex
		next  = make(chan struct{}) // what the appenders wait for
		count int                   // appenders back this round
		stop  bool
		done  = make(chan struct{}, 1)
		wg    sync.WaitGroup
	)
	for range n {
		wg.Add(1)
		go func(w chan struct{}) {
			defer wg.Done()
			for {
				<-w
				for t := time.Now(); time.Since(t) < work; {
				}
				mu.Lock()
				if stop {
					mu.Unlock()
					return
				}
				if count++; count == n {
					done <- struct{}{}
				}
				w = next // made before w was closed
				mu.Unlock()
			}
		}(next)
	}
	defer func() {
		mu.Lock()
		stop = true
		w := next
		mu.Unlock()
		close(w)
		wg.Wait()
	}()
	buf := make([]byte, 8<<10)
	end := time.Now().Add(budget)
	for r := 0; rounds > 0 && r < rounds || rounds <= 0 && time.Now().Before(end); r++ {
		t0 := time.Now()
		if _, err := f.Write(buf); err != nil {
			return nil, nil, err
		}
		if err := syscall.Fdatasync(int(f.Fd())); err != nil {
			return nil, nil, err
		}
		t1 := time.Now()
		mu.Lock()
		count = 0
		w := next
		next = make(chan struct{})
		mu.Unlock()
		close(w)
		<-done
		fsyncs, xs = append(fsyncs, t1.Sub(t0)), append(xs, time.Since(t1))
	}
	return fsyncs, xs, nil
}

// Ceiling returns the medians of RoundFloor's rounds, F and x in µs, and
// the ceiling 2F/(F+x) they put on a group commit's gain over an eager
// one; ok is false when no round ran.
func Ceiling(fsyncs, xs []time.Duration) (F, x, ceiling float64, ok bool) {
	if len(fsyncs) == 0 || len(xs) == 0 {
		return 0, 0, 0, false
	}
	F, x = micros(medianDuration(fsyncs)), micros(medianDuration(xs))
	return F, x, 2 * F / (F + x), true
}

// floorMetrics runs RoundFloor with n appenders for budget and reports
// Ceiling's figures.
func floorMetrics(ctx context.Context, dir string, n int, budget time.Duration) (Metrics, error) {
	fsyncs, xs, err := RoundFloor(dir, n, floorWork, 0, budget)
	if err != nil {
		return nil, err
	}
	F, x, ceiling, ok := Ceiling(fsyncs, xs)
	if !ok {
		return nil, fmt.Errorf("harness: no round of the floor within %v", budget)
	}
	return Metrics{"fsync-µs": F, "x-µs": x, "ceiling": ceiling}, ctx.Err()
}

func medianDuration(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}

func micros(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
