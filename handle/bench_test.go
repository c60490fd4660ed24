package handle_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/spf13/afero"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/internal/countfs"
	"github.com/sessionlog/sessionlog/internal/loadgen"
)

// BenchmarkAppend measures Append+Flush with real fsyncs on the OS file
// system, by 1, 8 and 64 concurrent appenders that each wait for their own
// flush. It reports events/s and fsyncs/event: group commit makes the
// latter fall well below 1 as appenders are added.
//
//	go test -run '^$' -bench BenchmarkAppend -benchtime 2000x ./handle/
func BenchmarkAppend(b *testing.B) {
	data := json.RawMessage(`{"text":"a streamed delta of about one hundred bytes, as an assistant chunk would carry it...."}`)
	for _, appenders := range []int{1, 8, 64} {
		b.Run(fmt.Sprintf("appenders=%d", appenders), func(b *testing.B) {
			counted := countfs.New(afero.NewOsFs())
			store := handle.NewFileStore(counted, filepath.Join(b.TempDir(), "s"))
			ctx := context.Background()
			h, err := store.Create(ctx)
			if err != nil {
				b.Fatal(err)
			}
			defer h.Close()
			synced := counted.Syncs()
			b.ResetTimer()
			err = loadgen.AppendFlush(ctx, h, int64(b.N), appenders, eventlog.Event{Type: "assistant/chunk", Time: 1764450000000, Data: data})
			if err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			b.ReportMetric(float64(counted.Syncs()-synced)/float64(b.N), "fsyncs/event")
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
		})
	}
}

// BenchmarkTree measures a tree query over a store of 10,000 sessions (a
// tenth of them forks): cold reads every header and writes the derived
// index; warm reads the folder listing and the index.
//
//	go test -run '^$' -bench BenchmarkTree -benchtime 10x ./handle/
func BenchmarkTree(b *testing.B) {
	ctx := context.Background()
	dir := filepath.Join(b.TempDir(), "s")
	store := handle.NewFileStore(afero.NewOsFs(), dir)
	var last string
	for i := range 10000 {
		var h handle.Handle
		var err error
		if i%10 == 9 {
			h, err = store.Fork(ctx, last, 0)
		} else {
			h, err = store.Create(ctx)
			if err == nil {
				_, err = h.Append(ctx, eventlog.Event{Type: "x"})
			}
		}
		if err != nil {
			b.Fatal(err)
		}
		if err := h.Close(); err != nil {
			b.Fatal(err)
		}
		last = h.ID()
	}
	for _, mode := range []string{"cold", "warm"} {
		b.Run(mode, func(b *testing.B) {
			for range b.N {
				if mode == "cold" {
					b.StopTimer()
					os.RemoveAll(filepath.Join(dir, ".cache"))
					b.StartTimer()
				}
				roots, err := store.Tree(ctx)
				if err != nil || len(roots) != 9000 {
					b.Fatal(len(roots), err)
				}
			}
		})
	}
}
