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
)

// A rewrite (Compact, Convert) compresses at the rewrite level, harder than
// the per-flush frames: at the default setting a compacted session is
// smaller than one compacted at the flush level, and holds the same log.
// (docs/performance.md compares it with `zstd -3` on the same JSONL.)
func TestCompactCompressesHarder(t *testing.T) {
	t.Parallel()
	size := func(opts ...handle.Option) (int64, string) {
		st := file.New(afero.NewMemMapFs(), "/s", append(opts, handle.WithEncoding(handle.EncodingZstd))...)
		h, err := st.Create(t.Context())
		require.NoError(t, err)
		words := strings.Fields("the quick brown fox jumps over the lazy dog while a tool reads a file and prints numbered lines of source code")
		for i := range 3000 {
			text := strings.Join([]string{words[i%len(words)], words[(i*7)%len(words)], words[(i*13)%len(words)], fmt.Sprint(i)}, " ")
			_, err := h.Append(t.Context(), eventlog.Event{Type: "tool/result", Time: int64(i), Data: json.RawMessage(fmt.Sprintf(`{"id":"c%d","output":%q}`, i, strings.Repeat(text+"\n", 8)))})
			require.NoError(t, err)
			if i%50 == 49 {
				require.NoError(t, h.Flush(t.Context()))
			}
		}
		require.NoError(t, h.Close())
		require.NoError(t, st.Compact(t.Context(), h.ID()))
		info, err := st.Stat(t.Context(), h.ID())
		require.NoError(t, err)
		r, err := st.Open(t.Context(), h.ID(), handle.ReadOnly)
		require.NoError(t, err)
		defer r.Close()
		dig, _, err := r.LogDigest(t.Context())
		require.NoError(t, err)
		return info.SizeBytes, dig
	}
	def, d1 := size()
	fast, d2 := size(func(c *handle.Config) { c.ZstdLevel = 1 })
	require.Equal(t, d1, d2, "the same log")
	require.Less(t, def, fast, "the default rewrite level compresses harder than the fastest")
}
