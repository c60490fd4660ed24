package eventlog_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/eventlog"
)

// nested returns data nested depth levels deep: [[…[]…]].
func nested(depth int) json.RawMessage {
	return json.RawMessage(strings.Repeat("[", depth) + strings.Repeat("]", depth))
}

// The writer's limits are the reader's: for data around the nesting limit,
// an event is valid alone exactly when its unpacked row reads back, and
// packable exactly when a packed row holding it reads back.
func TestLimitsSharedByWriterAndReader(t *testing.T) {
	for _, depth := range []int{2, eventlog.MaxDepth - 2, eventlog.MaxDepth - 1, eventlog.MaxDepth, eventlog.MaxDepth + 1} {
		for _, wrap := range []struct{ name, open, close string }{{"arrays", "", ""}, {"in an object", `{"a":`, `}`}} {
			data := json.RawMessage(wrap.open + string(nested(depth-len(wrap.open)/5)) + wrap.close)
			e := eventlog.Event{Seq: 0, Type: "assistant/chunk", Time: 1, Data: data}
			t.Run(wrap.name, func(t *testing.T) {
				_, rowErr := eventlog.DecodeRow(eventlog.Canon(e))
				require.Equal(t, e.Validate() == nil, rowErr == nil, "depth %d: Validate agrees with the reader on an unpacked row", depth)
				packed := []byte(`{"seq":0,"type":"assistant/chunk","n":2,"time":[1,1],"data":[` + string(data) + `,1]}`)
				_, packedErr := eventlog.DecodeRow(packed)
				require.Equal(t, eventlog.Packable(e), packedErr == nil, "depth %d: packable agrees with the reader on a packed row", depth)
			})
		}
	}
}

// Regression: two assistant/chunk events nested MaxDepth deep were each
// accepted, then packed into one row that nests one level deeper than the
// reader allows: the session no longer opened ("nesting too deep", corrupt
// at seq 0). Such an event is now written alone; shallower ones still pack.
func TestEncoderDoesNotPackTooDeep(t *testing.T) {
	deep := nested(eventlog.MaxDepth)
	shallow := nested(eventlog.MaxDepth - 1)
	evs := []eventlog.Event{
		{Seq: 0, Type: "assistant/chunk", Time: 1, Data: deep},
		{Seq: 1, Type: "assistant/chunk", Time: 2, Data: deep},
		{Seq: 2, Type: "assistant/chunk", Time: 3, Data: shallow},
		{Seq: 3, Type: "assistant/chunk", Time: 4, Data: shallow},
		{Seq: 4, Type: "assistant/chunk", Time: 5, Data: deep},
	}
	for _, e := range evs {
		require.NoError(t, e.Validate())
	}
	rows := eventlog.NewEncoder(nil).AppendRows(nil, evs)
	require.Equal(t, 4, bytes.Count(rows, []byte{'\n'}), "deep events alone, the two shallow ones packed")
	res := readBytes(t, hdrLine+string(rows))
	requireClean(t, res, len(hdrLine)+len(rows), evs)
}
