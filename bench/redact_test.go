package bench

import (
	"testing"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/secrets/redact"
)

// BenchmarkRedactWorkload measures redaction at write on the seeded
// workload's events (benchConfig), taken in turn as the append benchmarks
// take them, so that each event's data is cold in the cache as it is
// there: validate alone (eventlog.Storable), redact alone (redact.Data),
// and both in the write path's order, which is redaction's cost at append
// (the first to read an event's data pays for fetching it). CPU
// nanoseconds an event:
//
//	go test -run '^$' -bench BenchmarkRedactWorkload -benchtime 400000x -count 4 .
func BenchmarkRedactWorkload(b *testing.B) {
	evs := events(b)
	logs := make([]eventlog.Event, len(evs))
	for i := range evs {
		logs[i] = toLog(evs[i])
	}
	r := redact.New()
	for _, mode := range []string{"validate", "redact", "redact+validate"} {
		b.Run(mode, func(b *testing.B) {
			i := 0
			cpu := processCPU()
			for b.Loop() {
				e := logs[i%len(logs)]
				i++
				if mode != "validate" {
					if _, changed := r.Data(e.Data); changed {
						b.Fatal("redacted")
					}
				}
				if mode != "redact" {
					if _, err := eventlog.Storable(e); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ReportMetric(float64((processCPU()-cpu).Nanoseconds())/float64(b.N), "cpu-ns/event")
		})
	}
}
