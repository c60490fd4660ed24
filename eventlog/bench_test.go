package eventlog_test

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/internal/format/logfile"
)

// benchLog returns a synthetic batch of events (about half of them in
// assistant/chunk runs) and the log an Encoder packing types writes for it.
func benchLog(b *testing.B, packTypes []string) ([]eventlog.Event, []byte) {
	b.Helper()
	evs := randomEvents(rand.New(rand.NewPCG(1, 2)), 0, 2000)
	hdr, err := eventlog.EncodeHeader(logfile.NewHeader(testID, testTime))
	if err != nil {
		b.Fatal(err)
	}
	return evs, eventlog.NewEncoder(packTypes).AppendRows(append(hdr, '\n'), evs)
}

var benchPacking = []struct {
	name  string
	types []string
}{{"packed", nil}, {"plain", []string{}}}

func BenchmarkEncodeRows(b *testing.B) {
	for _, p := range benchPacking {
		b.Run(p.name, func(b *testing.B) {
			evs, _ := benchLog(b, p.types)
			enc := eventlog.NewEncoder(p.types)
			buf := enc.AppendRows(nil, evs)
			b.SetBytes(int64(len(buf)))
			b.ReportAllocs()
			n := 0
			for b.Loop() {
				buf = enc.AppendRows(buf[:0], evs)
				n += len(evs)
			}
			b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "events/s")
		})
	}
}

func BenchmarkReader(b *testing.B) {
	for _, p := range benchPacking {
		b.Run(p.name, func(b *testing.B) {
			evs, log := benchLog(b, p.types)
			b.SetBytes(int64(len(log)))
			b.ReportAllocs()
			n := 0
			for b.Loop() {
				r := eventlog.NewReader(bytes.NewReader(log))
				for r.Next() {
					n++
				}
				if r.Err() != nil || r.Torn() != nil || r.NextSeq() != int64(len(evs)) {
					b.Fatalf("read ended badly: err %v, torn %v, next seq %d", r.Err(), r.Torn(), r.NextSeq())
				}
			}
			b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "events/s")
		})
	}
}

// BenchmarkStorable measures the check every appended event goes through
// (validation, compaction, the row-size limit) on the synthetic batch.
func BenchmarkStorable(b *testing.B) {
	evs, _ := benchLog(b, nil)
	size := 0
	for _, e := range evs {
		size += len(e.Data)
	}
	b.SetBytes(int64(size))
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		for _, e := range evs {
			if _, err := eventlog.Storable(e); err != nil {
				b.Fatal(err)
			}
		}
		n += len(evs)
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "events/s")
}
