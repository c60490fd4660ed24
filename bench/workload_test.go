package bench

import (
	"context"
	"encoding/json"
	"os"
	"sync"
	"testing"

	"github.com/spf13/afero"

	"github.com/sessionlog/sessionlog/bench/workload"
	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/handle/file"
)

// benchConfig is the workload every benchmark here uses: seed 1, 200 turns:
// 25,827 events, 8,386,828 bytes of plain JSONL (325 B/event on average).
var benchConfig = workload.Config{Seed: 1, Turns: 200}

var (
	workloadOnce sync.Once
	workloadEvs  []workload.Event
	workloadSize int64 // bytes of the workload as plain JSONL, '\n' included
)

// events returns the benchmark workload, generated once per process.
func events(tb testing.TB) []workload.Event {
	tb.Helper()
	workloadOnce.Do(func() {
		workloadEvs = workload.Generate(benchConfig)
		var line []byte
		for i := range workloadEvs {
			line = workloadEvs[i].AppendJSON(line[:0])
			workloadSize += int64(len(line)) + 1
		}
	})
	if len(workloadEvs) == 0 {
		tb.Fatal("empty workload")
	}
	return workloadEvs
}

// turns splits evs into its turns, in order.
func turns(evs []workload.Event) [][]workload.Event {
	var out [][]workload.Event
	start := 0
	for i := 1; i <= len(evs); i++ {
		if i == len(evs) || evs[i].Turn != evs[start].Turn {
			out = append(out, evs[start:i])
			start = i
		}
	}
	return out
}

// toLog converts a workload event to an eventlog event (the seq is assigned
// by the handle).
func toLog(e workload.Event) eventlog.Event {
	return eventlog.Event{Type: e.Type, Time: e.Time, Data: e.Data}
}

// naiveEvent is how agent frameworks model a JSONL log line: a struct
// with the payload left as raw JSON.
type naiveEvent struct {
	Seq  int64           `json:"seq"`
	Type string          `json:"type"`
	Time int64           `json:"time"`
	Data json.RawMessage `json:"data"`
}

// sessionFile writes the workload once through a handle on the OS file
// system (one Append and one Flush per turn) and returns the store, the
// session ID, the log's path and its size in bytes.
func sessionFile(b *testing.B, dir string) (*file.Store, string, string, int64) {
	b.Helper()
	ctx := context.Background()
	store := file.New(afero.NewOsFs(), dir)
	h, err := store.Create(ctx)
	if err != nil {
		b.Fatal(err)
	}
	for _, turn := range turns(events(b)) {
		batch := make([]eventlog.Event, len(turn))
		for i, e := range turn {
			batch[i] = toLog(e)
		}
		if _, err := h.Append(ctx, batch...); err != nil {
			b.Fatal(err)
		}
		if err := h.Flush(ctx); err != nil {
			b.Fatal(err)
		}
	}
	id, path := h.ID(), h.Path()
	if err := h.Close(); err != nil {
		b.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	return store, id, path, fi.Size()
}

// naiveFile writes the workload as plain JSONL, one event per line, as
// a framework's logger would, and returns its path and size.
func naiveFile(b *testing.B, dir string) (string, int64) {
	b.Helper()
	path := dir + "/naive.jsonl"
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	if err := workload.WriteJSONL(f, events(b)); err != nil {
		b.Fatal(err)
	}
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	return path, fi.Size()
}
