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
// 13, with the CPU time of the process per pass (cpu-ns/op: every
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
	passes := []struct {
		name string
		pass func() (int, error)
	}{
		{"read", func() (int, error) {
			n := 0
			for e, err := range h.Read(ctx, 0, handle.End) {
				if err != nil {
					return n, err
				}
				sink += len(e.Data)
				n++
			}
			return n, nil
		}},
		{"replay=agent", func() (int, error) {
			res, err := replay.Replay(ctx, h, []projection.Projection{projection.NewAgent()})
			return int(res.Events), err
		}},
		{"replay=transcript", func() (int, error) {
			res, err := replay.Replay(ctx, h, []projection.Projection{projection.NewTranscript()})
			return int(res.Events), err
		}},
	}
	for _, p := range passes {
		b.Run(p.name, func(b *testing.B) {
			b.SetBytes(size)
			b.ReportAllocs()
			cpu0 := processCPU()
			b.ResetTimer()
			for range b.N {
				n, err := p.pass()
				if err != nil {
					b.Fatal(err)
				}
				if n != want {
					b.Fatalf("%d events, want %d", n, want)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(processCPU()-cpu0)/float64(b.N), "cpu-ns/op")
			b.ReportMetric(float64(want)*float64(b.N)/b.Elapsed().Seconds(), "events/s")
		})
	}
}
