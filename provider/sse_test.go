package provider_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/provider"
)

func TestParseSSE(t *testing.T) {
	tests := []struct {
		name   string
		body   string
		events []provider.SSEEvent
		rest   string
	}{
		{"json data", "event: message_start\ndata: {\"type\":\"message_start\"}\n\n",
			[]provider.SSEEvent{{Event: "message_start", Data: []byte(`{"type":"message_start"}`)}}, ""},
		{"text data and id", "id: 7\ndata: [DONE]\n\n",
			[]provider.SSEEvent{{ID: "7", Data: []byte(`"[DONE]"`)}}, ""},
		{"multi-line data joined by LF", "data: a\ndata: b\n\n",
			[]provider.SSEEvent{{Data: []byte(`"a\nb"`)}}, ""},
		{"CRLF and comments", ": ping\r\nevent: e\r\ndata: {}\r\n\r\n",
			[]provider.SSEEvent{{Event: "e", Data: []byte(`{}`)}}, ""},
		{"json with spaces kept as text", "data: {\"a\": 1}\n\n",
			[]provider.SSEEvent{{Data: []byte(`"{\"a\": 1}"`)}}, ""},
		{"no data is not dispatched", "event: x\n\n", nil, ""},
		{"cut short", "data: {}\n\ndata: {\"a\"", []provider.SSEEvent{{Data: []byte(`{}`)}}, "data: {\"a\""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			evs, rest := provider.ParseSSE([]byte(tt.body))
			require.Equal(t, len(tt.events), len(evs))
			for i := range evs {
				require.Equal(t, tt.events[i].Event, evs[i].Event)
				require.Equal(t, tt.events[i].ID, evs[i].ID)
				require.Equal(t, string(tt.events[i].Data), string(evs[i].Data))
			}
			require.Equal(t, tt.rest, string(rest))
		})
	}
}

// FuzzParseSSE: no panic on any body, and what WriteSSE writes of the
// events parses back to the same events (the boundaries and data a
// replay serves are the recorded ones).
func FuzzParseSSE(f *testing.F) {
	f.Add("event: a\ndata: {\"x\":1}\n\n")
	f.Add("data: [DONE]\n\n")
	f.Add("data: a\r\ndata: b\r\n\r\n: c\n")
	f.Add("id: 1\nevent: e\ndata:\n\n")
	f.Fuzz(func(t *testing.T, body string) {
		evs, _ := provider.ParseSSE([]byte(body))
		again, rest := provider.ParseSSE(provider.WriteSSE(nil, evs))
		require.Empty(t, rest)
		require.Equal(t, len(evs), len(again))
		for i := range evs {
			require.Equal(t, string(evs[i].Text()), string(again[i].Text()))
			require.Equal(t, evs[i].Event, again[i].Event)
		}
	})
}
