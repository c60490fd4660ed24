package file_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/spf13/afero"

	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/handle/file"
	"github.com/sessionlog/sessionlog/internal/testkit/countfs"
)

// BenchmarkOpenClosed measures the open of a session its writer closed,
// read-only (ro), for writing (rw, closed without an append) and for an
// append (append: one event, then Close), in logs of
// 5, 40 and 300 crashEvents (about 0.8, 6 and 45 KiB raw) among 200
// sessions. record=kept: the open finds what the writer's Close left;
// record=none: the checked record is removed before each open (the open
// checks the whole log). fsops/op and readB/op are what the open and close did
// through the file system; cpu-µs/op the process's CPU time (Linux), which
// the load of a shared machine moves less than the wall time.
//
//	go test -run '^$' -bench BenchmarkOpenClosed -count 5 ./handle/file/
func BenchmarkOpenClosed(b *testing.B) {
	ctx := context.Background()
	for _, layout := range []string{handle.EncodingRaw, handle.EncodingZstd, sealedZstd} {
		for _, n := range []int{5, 40, 300} {
			dir := filepath.Join(b.TempDir(), "s")
			counted := countfs.New(noSyncFs{afero.NewOsFs()})
			st := file.New(counted, dir, inStore(layout)...)
			ids := make([]string, 200)
			for i := range ids {
				h, err := st.Create(ctx)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := h.Append(ctx, crashEvents(0, n)...); err != nil {
					b.Fatal(err)
				}
				if err := h.Close(); err != nil {
					b.Fatal(err)
				}
				ids[i] = h.ID()
			}
			fi, err := os.Stat(filepath.Join(dir, ids[0]+map[bool]string{true: ".jsonl.zst", false: ".jsonl"}[encodingOf(layout) == handle.EncodingZstd]))
			if err != nil {
				b.Fatal(err)
			}
			for _, record := range []string{"kept", "none"} {
				if record == "none" {
					for _, id := range ids {
						os.Remove(filepath.Join(dir, ".cache", id+".checked"))
					}
				}
				for _, op := range []string{"ro", "rw", "append"} {
					mode := handle.ReadWrite
					if op == "ro" {
						mode = handle.ReadOnly
					}
					name := fmt.Sprintf("%s/events=%d/size=%d/record=%s/%s", layout, n, fi.Size(), record, op)
					b.Run(name, func(b *testing.B) {
						ops, read := counted.Ops(), counted.BytesRead()
						i := 0
						var cpu time.Duration
						for b.Loop() {
							if record == "none" {
								b.StopTimer()
								os.Remove(filepath.Join(dir, ".cache", ids[i%len(ids)]+".checked"))
								b.StartTimer()
							}
							cpu0 := processCPU()
							h, err := st.Open(ctx, ids[i%len(ids)], mode)
							if err != nil {
								b.Fatal(err)
							}
							if op == "append" {
								if _, err := h.Append(ctx, crashEvent(h.Seq()+1)); err != nil {
									b.Fatal(err)
								}
							}
							if err := h.Close(); err != nil {
								b.Fatal(err)
							}
							cpu += processCPU() - cpu0
							i++
						}
						if cpu > 0 {
							b.ReportMetric(float64(cpu.Nanoseconds())/1e3/float64(i), "cpu-µs/op")
						}
						b.ReportMetric(float64(counted.Ops()-ops)/float64(i), "fsops/op")
						b.ReportMetric(float64(counted.BytesRead()-read)/float64(i), "readB/op")
					})
				}
			}
		}
	}
}
