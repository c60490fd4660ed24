package bench

import (
	"context"
	"encoding/json"
	"os"
	"testing"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/handle"
)

// sink keeps the compiler from dropping the work of a read.
var sink int

// BenchmarkRead reads a whole session of the workload (seed 1, 200 turns,
// 25,827 events) per iteration. The sessionlog log is written once, through
// a handle on the OS file system (one Append and one Flush per turn); the
// naive file is the same events as plain JSONL, one per line.
//
//   - sessionlog/handle.Read: Read(0, End) on a read-only handle opened
//     once, outside the timer.
//   - sessionlog/handle.Open+Read: Open(ReadOnly) + Read + Close per
//     iteration; Open checks the whole log first (recovery scan).
//   - sessionlog/eventlog.Reader: the raw format Reader on the file.
//   - naive/bufio+json.Unmarshal: bufio.Scanner with a large buffer and
//     json.Unmarshal into a struct with RawMessage data, as agent
//     frameworks load their JSONL transcripts; no corruption/torn-tail
//     handling, no seq checks.
//
// MB/s counts the bytes of the file each one reads (the sessionlog file
// packs assistant/chunk runs and is a little smaller); events/s is the
// comparable figure.
//
//	go test -run '^$' -bench BenchmarkRead -benchtime 20x -count 5 .
func BenchmarkRead(b *testing.B) {
	ctx := context.Background()
	evs := events(b)
	want := len(evs)
	dir := b.TempDir()
	store, id, path, size := sessionFile(b, dir+"/sessions")
	naivePath, naiveSize := naiveFile(b, dir)

	report := func(b *testing.B) {
		b.ReportMetric(float64(want)*float64(b.N)/b.Elapsed().Seconds(), "events/s")
	}
	check := func(b *testing.B, n int) {
		if n != want {
			b.Fatalf("read %d events, want %d", n, want)
		}
	}

	b.Run("sessionlog/handle.Read", func(b *testing.B) {
		h, err := store.Open(ctx, id, handle.ReadOnly)
		if err != nil {
			b.Fatal(err)
		}
		defer h.Close()
		b.SetBytes(size)
		b.ReportAllocs()
		b.ResetTimer()
		for range b.N {
			check(b, readHandle(ctx, b, h))
		}
		b.StopTimer()
		report(b)
	})

	b.Run("sessionlog/handle.Open+Read", func(b *testing.B) {
		b.SetBytes(size)
		b.ReportAllocs()
		for range b.N {
			h, err := store.Open(ctx, id, handle.ReadOnly)
			if err != nil {
				b.Fatal(err)
			}
			n := readHandle(ctx, b, h)
			if err := h.Close(); err != nil {
				b.Fatal(err)
			}
			check(b, n)
		}
		b.StopTimer()
		report(b)
	})

	b.Run("sessionlog/eventlog.Reader", func(b *testing.B) {
		b.SetBytes(size)
		b.ReportAllocs()
		for range b.N {
			f, err := os.Open(path)
			if err != nil {
				b.Fatal(err)
			}
			r := eventlog.NewReader(f, eventlog.WithPath(path))
			n := 0
			for r.Next() {
				sink += len(r.Event().Data)
				n++
			}
			if err := r.Err(); err != nil {
				b.Fatal(err)
			}
			if t := r.Torn(); t != nil {
				b.Fatalf("torn tail: %+v", *t)
			}
			f.Close()
			check(b, n)
		}
		b.StopTimer()
		report(b)
	})

	b.Run("naive/bufio+json.Unmarshal", func(b *testing.B) {
		b.SetBytes(naiveSize)
		b.ReportAllocs()
		buf := make([]byte, 1<<20)
		for range b.N {
			check(b, decodeJSONL(b, naivePath, buf, json.Unmarshal))
		}
		b.StopTimer()
		report(b)
	})
}
