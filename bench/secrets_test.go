package bench

import (
	"context"
	"path/filepath"
	"testing"

	"filippo.io/age"
	"github.com/spf13/afero"

	"github.com/sessionlog/sessionlog/bench/internal/benchfs"
	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/handle/file"
	"github.com/sessionlog/sessionlog/internal/testkit/loadgen"
)

// BenchmarkAppendSecrets is issue 24's append-path cost: 64 appenders on
// one session, each appending the next workload event and waiting until
// it is durable (Append + Flush), on the OS file system. One op is one
// event; cpu-µs/event is the process's CPU time over b.N.
//
//   - raw: redaction at write on (the default);
//   - raw/unredacted: the same with handle.Unredacted(): the
//     difference is redaction's cost;
//   - zstd, sealed-raw, sealed-zstd: the other layouts (redacting): what
//     sealing costs beside raw and zstd;
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
		{"raw/unredacted", handle.EncodingRaw, []handle.Option{handle.Unredacted()}},
		{"zstd", handle.EncodingZstd, nil},
		{"sealed-raw", handle.EncodingRaw, sealing(b)},
		{"sealed-zstd", handle.EncodingZstd, sealing(b)},
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
				st := file.New(fsys, filepath.Join(b.TempDir(), "s"), append([]handle.Option{handle.WithEncoding(c.enc)}, c.opts...)...)
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

// sealing returns the store options that seal every session for a new
// identity and read them with it.
func sealing(tb testing.TB) []handle.Option {
	id, err := age.GenerateX25519Identity()
	if err != nil {
		tb.Fatal(err)
	}
	return []handle.Option{handle.WithRecipients(id.Recipient()), handle.WithIdentities(id)}
}

// BenchmarkReadSecrets reads the workload session (seed 1, 200 turns,
// written with a Flush per turn) through a read-only handle opened once,
// in each layout: raw and zstd, clear and sealed. One op is one read of
// the whole session; MB/s counts the plain JSONL size of its events.
//
//	go test -run '^$' -bench BenchmarkReadSecrets -benchtime 20x -count 5 .
func BenchmarkReadSecrets(b *testing.B) {
	ctx := context.Background()
	evs := events(b)
	for _, c := range []struct {
		name string
		enc  string
		opts []handle.Option
	}{
		{"raw", handle.EncodingRaw, nil},
		{"zstd", handle.EncodingZstd, nil},
		{"sealed-raw", handle.EncodingRaw, sealing(b)},
		{"sealed-zstd", handle.EncodingZstd, sealing(b)},
	} {
		b.Run(c.name, func(b *testing.B) {
			st := file.New(afero.NewOsFs(), filepath.Join(b.TempDir(), "s"), append([]handle.Option{handle.WithEncoding(c.enc)}, c.opts...)...)
			w, err := st.Create(ctx)
			if err != nil {
				b.Fatal(err)
			}
			for i, e := range evs {
				if _, err := w.Append(ctx, toLog(e)); err != nil {
					b.Fatal(err)
				}
				if i == len(evs)-1 || evs[i+1].Turn != e.Turn {
					if err := w.Flush(ctx); err != nil {
						b.Fatal(err)
					}
				}
			}
			if err := w.Close(); err != nil {
				b.Fatal(err)
			}
			h, err := st.Open(ctx, w.ID(), handle.ReadOnly)
			if err != nil {
				b.Fatal(err)
			}
			defer h.Close()
			b.SetBytes(workloadSize)
			b.ResetTimer()
			for range b.N {
				n := 0
				for e, err := range h.Read(ctx, 0, handle.End) {
					if err != nil {
						b.Fatal(err)
					}
					sink += len(e.Data)
					n++
				}
				if n != len(evs) {
					b.Fatalf("read %d events, want %d", n, len(evs))
				}
			}
			b.ReportMetric(float64(len(evs))*float64(b.N)/b.Elapsed().Seconds(), "events/s")
		})
	}
}
