package seal

import (
	"bytes"
	"encoding/json"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/eventlog"
)

// benchEvents: 1,000 events of about 330 bytes, the workload's average.
func benchEvents() []eventlog.Event {
	evs := make([]eventlog.Event, 1000)
	text := strings.Repeat("the handle flushes the rows and fsyncs the file ", 6)
	for i := range evs {
		d, _ := json.Marshal(map[string]any{"id": "c1", "output": text})
		evs[i] = eventlog.Event{Seq: int64(i), Type: "tool/result", Time: 1764450000000, Data: d}
	}
	return evs
}

func cpuNow() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkWrite encodes 1,000 events in flushes of 64 (one zstd frame
// each), clear and sealed: the CPU a writer spends before its write.
func BenchmarkWrite(b *testing.B) {
	evs := benchEvents()
	enc := eventlog.NewEncoder(nil)
	key, err := NewKey(0)
	require.NoError(b, err)
	for _, mode := range []string{"raw", "raw-sealed", "zstd", "zstd-sealed"} {
		b.Run(mode, func(b *testing.B) {
			var rows, out []byte
			var n int64
			start := cpuNow()
			for b.Loop() {
				s := ResumeSealer(testID, Raw, key, 0)
				if strings.HasPrefix(mode, "zstd") {
					s = ResumeSealer(testID, Zstd, key, 0)
				}
				out = out[:0]
				for i := 0; i < len(evs); i += 64 {
					rows = enc.AppendRows(rows[:0], evs[i:min(i+64, len(evs))])
					switch mode {
					case "raw":
						out = append(out, rows...)
					case "raw-sealed":
						out, _ = s.AppendRows(out, rows)
					case "zstd":
						out, _ = testCodec.AppendFrames(out, rows)
					case "zstd-sealed":
						var frame []byte
						frame, _ = testCodec.AppendFrames(frame, rows)
						out, _ = s.AppendFrame(out, frame)
					}
				}
				n = int64(len(out))
			}
			b.ReportMetric(float64(cpuNow()-start)/float64(b.N*len(evs)), "cpu-ns/event")
			b.ReportMetric(float64(n)/float64(len(evs)), "file-B/event")
		})
	}
}

// BenchmarkRead reads the 1,000 events back, clear and sealed.
func BenchmarkRead(b *testing.B) {
	evs := benchEvents()
	id := identity(b)
	for _, enc := range encodings {
		clear := newClear(b, enc, evs)
		f := newSealed(b, enc, evs, 64, id.Recipient())
		kr := NewKeyring(testID, id)
		b.Run(enc.String(), func(b *testing.B) {
			start := cpuNow()
			for b.Loop() {
				r := eventlog.NewReader(bytes.NewReader(clear))
				if enc == Zstd {
					r = eventlog.NewZstdReader(bytes.NewReader(clear), testCodec)
				}
				n := 0
				for r.Next() {
					n++
				}
				require.Equal(b, len(evs), n)
			}
			b.ReportMetric(float64(cpuNow()-start)/float64(b.N*len(evs)), "cpu-ns/event")
		})
		b.Run(enc.String()+"-sealed", func(b *testing.B) {
			start := cpuNow()
			for b.Loop() {
				r := NewReader(bytes.NewReader(f.data), enc, kr, WithCodec(testCodec))
				n := 0
				for r.Next() {
					n++
				}
				require.NoError(b, r.Err())
				require.Equal(b, len(evs), n)
			}
			b.ReportMetric(float64(cpuNow()-start)/float64(b.N*len(evs)), "cpu-ns/event")
		})
	}
}

// newClear writes evs as a clear log in flushes of 64.
func newClear(b *testing.B, enc Encoding, evs []eventlog.Event) []byte {
	row, err := eventlog.EncodeHeader(eventlog.NewHeader(testID, 1764450000000))
	require.NoError(b, err)
	out := append(row, '\n')
	if enc == Zstd {
		out, _ = testCodec.AppendFrames(nil, out)
	}
	e := eventlog.NewEncoder(nil)
	for i := 0; i < len(evs); i += 64 {
		rows := e.AppendRows(nil, evs[i:min(i+64, len(evs))])
		if enc == Zstd {
			out, _ = testCodec.AppendFrames(out, rows)
		} else {
			out = append(out, rows...)
		}
	}
	return out
}
