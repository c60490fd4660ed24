package bench

import (
	"bufio"
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/bytedance/sonic"

	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/handle/file"
)

// BenchmarkReadPath puts the read path next to the decoder it must beat,
// in one binary so that an A/B runs in the same minute: a whole session of
// the workload (seed 1, 200 turns, a Flush per turn) read per op through a
// read-only handle opened once (raw and zstd), and the same events as
// plain JSONL decoded line by line by sonic into a struct with RawMessage
// data (CopyString, as the harness's variant). MB/s counts the workload's
// plain-JSONL bytes for every variant, so MB/s ratios are events/s ratios.
// On a busy machine wall time says little: each variant also reports
// cpu-ms/op, the process's CPU time (user + system, GC included) per op,
// and cpu-MB/s, the plain-JSONL bytes over it:
//
//	go test -run '^$' -bench BenchmarkReadPath -benchtime 20x -count 8 .
func BenchmarkReadPath(b *testing.B) {
	ctx := context.Background()
	evs := events(b)
	dir := b.TempDir()
	fs, _ := newCountingFs(true)
	for _, enc := range []string{handle.EncodingRaw, handle.EncodingZstd} {
		store := file.New(fs, filepath.Join(dir, enc), handle.WithEncoding(enc))
		id, _ := writeSession(b, store, evs, flushPerTurn)
		b.Run("sessionlog/"+enc, func(b *testing.B) {
			h, err := store.Open(ctx, id, handle.ReadOnly)
			if err != nil {
				b.Fatal(err)
			}
			defer h.Close()
			b.SetBytes(workloadSize)
			b.ReportAllocs()
			b.ResetTimer()
			cpu := startCPU()
			for range b.N {
				if n := readHandle(ctx, b, h); n != len(evs) {
					b.Fatalf("read %d events, want %d", n, len(evs))
				}
			}
			cpu.report(b, workloadSize)
		})
	}
	naivePath, _ := naiveFile(b, dir)
	api := sonic.Config{CopyString: true}.Froze()
	b.Run("sonic", func(b *testing.B) {
		b.SetBytes(workloadSize)
		b.ReportAllocs()
		buf := make([]byte, 1<<20)
		cpu := startCPU()
		for range b.N {
			if n := decodeJSONL(b, naivePath, buf, api.Unmarshal); n != len(evs) {
				b.Fatalf("read %d events, want %d", n, len(evs))
			}
		}
		cpu.report(b, workloadSize)
	})
}

// readHandle reads every event of h and returns how many there were.
func readHandle(ctx context.Context, b *testing.B, h handle.Handle) int {
	n := 0
	for e, err := range h.Read(ctx, 0, handle.End) {
		if err != nil {
			b.Fatal(err)
		}
		sink += len(e.Data)
		n++
	}
	return n
}

// decodeJSONL decodes the JSONL file at path line by line with unmarshal
// into a naiveEvent, scanning with buf, and returns how many lines it read.
func decodeJSONL(b *testing.B, path string, buf []byte, unmarshal func([]byte, any) error) int {
	f, err := os.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(buf, 64<<20)
	n := 0
	for sc.Scan() {
		var e naiveEvent
		if err := unmarshal(sc.Bytes(), &e); err != nil {
			b.Fatal(err)
		}
		sink += len(e.Data)
		n++
	}
	if err := sc.Err(); err != nil {
		b.Fatal(err)
	}
	return n
}

// cpuClock measures the process's CPU time from its start.
type cpuClock time.Duration

func startCPU() cpuClock { return cpuClock(processCPU()) }

// report adds cpu-ms/op and cpu-MB/s (size bytes per op) to b's results.
func (c cpuClock) report(b *testing.B, size int64) {
	d := processCPU() - time.Duration(c)
	perOp := d.Seconds() / float64(b.N)
	b.ReportMetric(perOp*1e3, "cpu-ms/op")
	b.ReportMetric(float64(size)/perOp/1e6, "cpu-MB/s")
}

func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
