package bench

import (
	"context"
	"testing"

	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/projection"
	"github.com/sessionlog/sessionlog/replay"
)

// BenchmarkReplayVsRead reads the session of BenchmarkRead (the workload,
// seed 1, 200 turns, 25,827 events, a Flush per turn) through a read-only
// handle opened once, and replays it (replay.Replay into a new projection)
// into agent/v1 and transcript/v1: the replay ÷ raw read ratio of issue
// 13, with the CPU time of the process per pass (cpu-ms/op: every
// thread, the garbage collector's included) beside the wall time, which a
// busy machine blurs. With -count, the three alternate.
//
//	go test -run '^$' -bench BenchmarkReplayVsRead -benchtime 20x -count 8 .
func BenchmarkReplayVsRead(b *testing.B) {
	ctx := context.Background()
	want := len(events(b))
	store, id, _, size := sessionFile(b, b.TempDir()+"/sessions")
	h, err := store.Open(ctx, id, handle.ReadOnly)
	if err != nil {
		b.Fatal(err)
	}
	defer h.Close()
	replayInto := func(p projection.Projection) func(*testing.B) int {
		return func(b *testing.B) int {
			res, err := replay.Replay(ctx, h, []projection.Projection{p})
			if err != nil {
				b.Fatal(err)
			}
			return int(res.Events)
		}
	}
	passes := []struct {
		name string
		pass func(*testing.B) int
	}{
		{"read", func(b *testing.B) int { return readHandle(ctx, b, h) }},
		{"replay=agent", func(b *testing.B) int { return replayInto(projection.NewAgent())(b) }},
		{"replay=transcript", func(b *testing.B) int { return replayInto(projection.NewTranscript())(b) }},
	}
	for _, p := range passes {
		b.Run(p.name, func(b *testing.B) {
			b.SetBytes(size)
			b.ReportAllocs()
			b.ResetTimer()
			cpu := startCPU()
			for range b.N {
				if n := p.pass(b); n != want {
					b.Fatalf("%d events, want %d", n, want)
				}
			}
			b.StopTimer()
			cpu.report(b, size)
			b.ReportMetric(float64(want)*float64(b.N)/b.Elapsed().Seconds(), "events/s")
		})
	}
}
