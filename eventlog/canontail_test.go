package eventlog_test

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/eventlog"
)

// canon(e) is {"seq":S then AppendCanonTail(e), and a digest fed the tails
// (AddTail) is the digest fed the events (Add).
func TestCanonTail(t *testing.T) {
	evs := []eventlog.Event{
		{Seq: 0, Type: "x", Time: 0},
		{Seq: 1, Type: "assistant/chunk", Time: 17, Data: json.RawMessage(`{"text":"hé \"q\""}`)},
		{Seq: 12345678901, Type: "tool/result", Time: 1764450000000, Data: json.RawMessage(`[1,2,{}]`)},
	}
	byEvent, byTail := eventlog.NewDigest(), eventlog.NewDigest()
	for _, e := range evs {
		tail := eventlog.AppendCanonTail(nil, e)
		require.True(t, strings.HasSuffix(string(eventlog.Canon(e)), string(tail)))
		require.Equal(t, string(eventlog.Canon(e)), `{"seq":`+strconv.FormatInt(e.Seq, 10)+string(tail))
		byEvent.Add(e)
		byTail.AddTail(e.Seq, tail)
		require.Equal(t, byEvent.String(), byTail.String())
		require.Equal(t, byEvent.Next(), byTail.Next())
	}
}

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
