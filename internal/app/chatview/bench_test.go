package chatview

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/sessionlog/sessionlog/eventlog"
)

// BenchmarkRender folds and lays out one turn of a tool-heavy session
// (three steps, each a 900-character message, a call and a 1,800-character
// result): the per-event cost of logtool show.
func BenchmarkRender(b *testing.B) {
	text := strings.Repeat("word ", 180)
	var evs []eventlog.Event
	add := func(typ, data string) {
		evs = append(evs, eventlog.Event{Seq: int64(len(evs)), Type: typ, Data: json.RawMessage(data)})
	}
	add("turn/start", `{}`)
	add("user/message", `{"text":"question"}`)
	for s := range 3 {
		add("step/start", `{}`)
		add("assistant/message", fmt.Sprintf(`{"text":%q}`, text))
		add("tool/call", fmt.Sprintf(`{"id":"c%d","name":"read_file","args":{"path":"a.go"}}`, s))
		add("tool/result", fmt.Sprintf(`{"id":"c%d","output":%q}`, s, text+text))
		add("step/end", `{}`)
	}
	add("turn/end", `{"kind":"completed"}`)
	b.ReportAllocs()
	for b.Loop() {
		t := NewText(io.Discard, 80, false)
		bl := NewBuilder(Options{}, func(blk Block) { t.Write(blk) })
		for _, e := range evs {
			bl.Add(e)
		}
		bl.Finish(true)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(evs)), "ns/event")
}
