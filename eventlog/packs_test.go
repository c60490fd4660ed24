package eventlog_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/eventlog"
)

// Packs says which events AppendRows packs: a packed type, data shallow
// enough for a packed row.
func TestEncoderPacks(t *testing.T) {
	enc := eventlog.NewEncoder(nil)
	deep := json.RawMessage(strings.Repeat("[", eventlog.MaxDepth) + strings.Repeat("]", eventlog.MaxDepth))
	for _, tc := range []struct {
		e    eventlog.Event
		want bool
	}{
		{eventlog.Event{Type: "assistant/chunk", Data: json.RawMessage(`{"text":"a"}`)}, true},
		{eventlog.Event{Type: "assistant/chunk"}, true},
		{eventlog.Event{Type: "assistant/chunk", Data: deep}, false},
		{eventlog.Event{Type: "tool/call", Data: json.RawMessage(`{}`)}, false},
	} {
		require.Equal(t, tc.want, enc.Packs(tc.e), "%+v", tc.e)
		two := []eventlog.Event{tc.e, tc.e}
		two[1].Seq = 1
		rows := enc.AppendRows(nil, two)
		require.Equal(t, tc.want, strings.Count(string(rows), "\n") == 1, "two such events share a row iff they pack")
	}
}
