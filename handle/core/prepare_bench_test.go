package core

import (
	"encoding/json"
	"testing"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/secrets/redact"
)

// BenchmarkPrepareBatch is an Append's prepare step for
// BenchmarkAppendUnpacked's event (handle/file), redacted and not: the
// CPU an event costs before the handle's mutex.
//
//	go test -run '^$' -bench BenchmarkPrepareBatch -benchmem ./handle/core/
func BenchmarkPrepareBatch(b *testing.B) {
	data := json.RawMessage(`{"id":"call_0001","name":"read_file","args":{"path":"internal/server/handlers/session.go"}}`)
	events := []eventlog.Event{{Type: "tool/call", Time: 1764450000000, Data: data}}
	enc := eventlog.NewEncoder(nil)
	for _, tc := range []struct {
		name string
		red  *redact.Redactor
	}{{"redacted", redact.New()}, {"unredacted", nil}} {
		b.Run(tc.name, func(b *testing.B) {
			var batch [1]eventlog.Event
			var tails [1][]byte
			for b.Loop() {
				if _, err := prepareBatch("bench", enc, tc.red, events, batch[:], tails[:]); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
