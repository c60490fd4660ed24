package file_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/spf13/afero"
	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/handle/file"
	"github.com/sessionlog/sessionlog/internal/testkit/countfs"
)

// A writer's reads of its newest events cost what those events take, not
// the log's 1 MiB index stride: events still pending come from memory
// (nothing read from the file), and events of the last flush are read from
// where that flush starts. Every read still returns exactly its range.
// (The Recorder reads back each foreign append this way.)
func TestWriterReadsNewestEventsCheaply(t *testing.T) {
	t.Parallel()
	for _, enc := range []string{handle.EncodingRaw, handle.EncodingZstd} {
		t.Run(enc, func(t *testing.T) {
			fsys := countfs.New(afero.NewMemMapFs())
			h, err := file.New(fsys, "/s", handle.WithEncoding(enc)).Create(t.Context())
			require.NoError(t, err)
			defer h.Close()
			big := json.RawMessage(fmt.Sprintf(`{"text":%q}`, strings.Repeat("x", 64<<10)))
			var want []eventlog.Event
			add := func(data json.RawMessage, flush bool) {
				e := eventlog.Event{Type: "user/message", Time: int64(len(want)), Data: data}
				seq, err := h.Append(t.Context(), e)
				require.NoError(t, err)
				e.Seq = seq
				want = append(want, e)
				if flush {
					require.NoError(t, h.Flush(t.Context()))
				}
			}
			for range 40 { // 2.5 MiB: past the index stride
				add(big, true)
			}
			lastFlush := int64(len(want))
			add(json.RawMessage(`{"text":"a"}`), false)
			add(json.RawMessage(`{"text":"b"}`), true)
			pending := int64(len(want))
			add(json.RawMessage(`{"text":"c"}`), false)

			read := func(from int64) (n int64) {
				before := fsys.BytesRead()
				i := from
				for e, err := range h.Read(t.Context(), from, handle.End) {
					require.NoError(t, err)
					require.Equal(t, eventlog.Canon(want[i]), eventlog.Canon(e))
					i++
				}
				require.Equal(t, int64(len(want)), i, "read from %d to the end", from)
				return fsys.BytesRead() - before
			}
			require.Zero(t, read(pending), "pending events come from memory")
			require.Less(t, read(lastFlush), int64(64<<10), "the last flush is read from its start")
			require.Less(t, read(lastFlush+1), int64(64<<10))
			require.Greater(t, read(lastFlush-1), int64(0), "older events come from the file")
			read(0)
		})
	}
}
