package logfile_test

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/internal/format/logfile"
	"github.com/stretchr/testify/require"
)

// canon(e) is {"seq":S then AppendCanonTail(e), appended to what dst
// holds, and a digest fed the tails (AddTail) is the digest fed the events
// (Add).
func TestCanonTail(t *testing.T) {
	evs := []eventlog.Event{
		{Seq: 0, Type: "x", Time: 0},
		{Seq: 1, Type: "assistant/chunk", Time: 17, Data: json.RawMessage(`{"text":"hé \"q\""}`)},
		{Seq: 12345678901, Type: "tool/result", Time: 1764450000000, Data: json.RawMessage(`[1,2,{}]`)},
		{Seq: 2, Type: "a.b_c:d/e-F9", Time: 3, Data: json.RawMessage(`null`)},
		{Seq: 3, Type: "s", Time: 4, Data: json.RawMessage(`"\u00e9\n"`)},
		{Seq: 4, Type: "n", Time: 5, Data: json.RawMessage(`-1.5e+300`)},
	}
	byEvent, byTail := eventlog.NewDigest(), eventlog.NewDigest()
	for _, e := range evs {
		tail := logfile.AppendCanonTail(nil, e)
		require.True(t, strings.HasSuffix(string(eventlog.Canon(e)), string(tail)))
		require.Equal(t, string(eventlog.Canon(e)), `{"seq":`+strconv.FormatInt(e.Seq, 10)+string(tail))
		require.Equal(t, "prefix"+string(tail), string(logfile.AppendCanonTail([]byte("prefix"), e)), "appended after what dst holds")
		byEvent.Add(e)
		byTail.AddTail(e.Seq, tail)
		require.Equal(t, byEvent.String(), byTail.String())
		require.Equal(t, byEvent.Next(), byTail.Next())
	}
}
