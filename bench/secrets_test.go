package bench

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/sessionlog/sessionlog/bench/internal/benchfs"
	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/internal/loadgen"
)

// BenchmarkAppendSecrets is issue 24's append-path cost: 64 appenders on
// one session, each appending the next workload event and waiting until
// it is durable (Append + Flush), on the OS file system. One op is one
// event; cpu-µs/event is the process's CPU time over b.N.
//
//   - raw: redaction at write on (the default);
//   - raw/unredacted: the same with handle.WithoutRedaction(): the
//     difference is redaction's cost;
//
// each durable (fsync) and with an fsync that does nothing (no-fsync:
// the CPU cost alone, which an fsync hides). Run with a count:
//
//	go test -run '^$' -bench BenchmarkAppendSecrets -benchtime 20000x -count 5 .
func BenchmarkAppendSecrets(b *testing.B) {
	evs := events(b)
	cases := []struct {
		name string
		enc  string
		opts []handle.Option
	}{
		{"raw", handle.EncodingRaw, nil},
		{"raw/unredacted", handle.EncodingRaw, []handle.Option{handle.WithoutRedaction()}},
	}
	for _, noSync := range []bool{false, true} {
		for _, c := range cases {
			name := c.name
			if noSync {
				name += "/no-fsync"
			}
			b.Run(name, func(b *testing.B) {
				ctx := context.Background()
				fsys, _ := benchfs.New(noSync)
				st := handle.NewFileStore(fsys, filepath.Join(b.TempDir(), "s"), append([]handle.Option{handle.WithEncoding(c.enc)}, c.opts...)...)
				h, err := st.Create(ctx)
				if err != nil {
					b.Fatal(err)
				}
				defer h.Close()
				cpu := processCPU()
				b.ResetTimer()
				err = loadgen.AppendFlushEach(ctx, h, int64(b.N), 64, func(i int64) eventlog.Event { return toLog(evs[i%int64(len(evs))]) })
				b.StopTimer()
				if err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
				b.ReportMetric(float64((processCPU()-cpu).Microseconds())/float64(b.N), "cpu-µs/event")
			})
		}
	}
}
