package recorder_test

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/spf13/afero"
	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/handle/file"
	"github.com/sessionlog/sessionlog/recorder"
)

// BenchmarkRecord measures what keeping the Recorder in step with its log
// costs: one turn of a typical step shape (a user message, 40 chunks, a
// tool call and its 4 KiB result, usage, the step's end, the turn's end
// and its checkpoint) recorded alone, and with a foreign Append through the
// handle every `every` events, which the Recorder reads back and applies.
// On a memory file system, so that fsync does not hide the CPU cost.
// Reported: events/s (the Recorder's and the foreign ones).
func BenchmarkRecord(b *testing.B) {
	output := string(make([]byte, 4096))
	for _, every := range []int{0, 50, 10, 1} {
		name := "alone"
		if every > 0 {
			name = fmt.Sprintf("foreign-append-every-%d", every)
		}
		b.Run(name, func(b *testing.B) {
			store := file.New(afero.NewMemMapFs(), "/s")
			h, err := store.Create(ctx)
			require.NoError(b, err)
			defer h.Close()
			rec, err := recorder.New(ctx, h, recorder.WithClock(clock))
			require.NoError(b, err)
			n := 0
			foreign := eventlog.Event{Type: "app/note", Time: 1, Data: json.RawMessage(`{"n":1}`)}
			do := func(_ int64, err error) {
				if err != nil {
					b.Fatal(err)
				}
				n++
				if every > 0 && n%every == 0 {
					if _, err := h.Append(ctx, foreign); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				do(rec.BeginTurn(ctx, nil))
				do(rec.UserMessage(ctx, "fix the failing test", ""))
				do(rec.BeginStep(ctx))
				for range 40 {
					do(rec.Chunk(ctx, "some streamed words "))
				}
				do(rec.ToolCall(ctx, recorder.Call{ID: "c1", Name: "read_file", Effect: "read"}))
				do(rec.ToolResult(ctx, recorder.Result{ID: "c1", Output: output}))
				do(rec.Usage(ctx, recorder.Usage{InputTokens: 100, OutputTokens: 20}))
				do(rec.EndStep(ctx))
				do(rec.EndTurn(ctx, recorder.Completed, ""))
			}
			b.StopTimer()
			b.ReportMetric(float64(h.Seq()+1)/b.Elapsed().Seconds(), "events/s")
		})
	}
}
