package file_test

import (
	"bytes"
	"fmt"
	"iter"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/afero"
	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/handle/file"
	"github.com/sessionlog/sessionlog/internal/format/logfile"
	"github.com/sessionlog/sessionlog/internal/format/zstdframe"
)

// TestRewriteEndsInSmallFrame checks that every whole-file rewrite of a zstd
// log (a conversion, a compaction, CreateFrom) puts its last rows in a frame
// of at most zstdframe.LastTarget bytes of content, but for one row,
// however large the rest of its frames: a tail read (Stat, the stop facts)
// decodes that frame, so its cost must not grow with the log. The log reads
// back event for event, and a log that needs no cut keeps one frame of rows.
func TestRewriteEndsInSmallFrame(t *testing.T) {
	t.Parallel()
	big := bigEvents(1500, 1<<10) // ~1.6 MB of rows: more than 2 × LastFrameTarget
	small := bigEvents(100, 1<<10)
	for _, tc := range []struct {
		name    string
		evs     []eventlog.Event
		rewrite func(t *testing.T, st *file.Store, evs []eventlog.Event) string
		frames  int // data frames of rows, 0: more than one
	}{
		{"convert", big, convertToZstd, 0},
		{"compact", big, compactZstd, 0},
		{"create from", big, createFromZstd, 0},
		{"convert, small", small, convertToZstd, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fsys := afero.NewMemMapFs()
			st := file.New(fsys, ztDir)
			id := tc.rewrite(t, st, tc.evs)
			ztRequireLog(t, st, id, tc.evs)

			path, err := st.Path(id)
			require.NoError(t, err)
			b, err := afero.ReadFile(fsys, path)
			require.NoError(t, err)
			frames, _ := zstdframe.Frames(bytes.NewReader(b), int64(len(b)))
			data := slices.DeleteFunc(frames, func(f zstdframe.Frame) bool { return f.Skippable })
			require.GreaterOrEqual(t, len(data), 2, "the header frame and frames of rows")
			rows := data[1:]
			if tc.frames > 0 {
				require.Len(t, rows, tc.frames)
				return
			}
			require.Greater(t, len(rows), 1)
			codec, err := eventlog.NewZstdCodec(0)
			require.NoError(t, err)
			defer codec.Close()
			last := rows[len(rows)-1]
			_, content, err := logfile.ReadFrame(bytes.NewReader(b), last.Offset, int64(len(b)), codec, path)
			require.NoError(t, err)
			require.LessOrEqual(t, len(content), zstdframe.LastTarget, "the last frame's content")
			require.Greater(t, len(content), zstdframe.LastTarget/2, "the last frame holds what fits")
		})
	}
}

// bigEvents returns n events of about size bytes of data each.
func bigEvents(n, size int) []eventlog.Event {
	evs := make([]eventlog.Event, n)
	for i := range evs {
		text := fmt.Sprintf("%d %s", i, strings.Repeat("x", size))
		evs[i] = eventlog.Event{Seq: int64(i), Type: "test/big", Time: int64(1_700_000_000_000 + i), Data: []byte(fmt.Sprintf(`{"text":%q}`, text))}
	}
	return evs
}

func appendAll(t *testing.T, st *file.Store, enc string, evs []eventlog.Event) string {
	t.Helper()
	h, err := st.Create(t.Context(), handle.WithEncoding(enc))
	require.NoError(t, err)
	for chunk := range slices.Chunk(evs, 100) {
		_, err := h.Append(t.Context(), chunk...)
		require.NoError(t, err)
		require.NoError(t, h.Flush(t.Context()))
	}
	require.NoError(t, h.Close())
	return h.ID()
}

func convertToZstd(t *testing.T, st *file.Store, evs []eventlog.Event) string {
	id := appendAll(t, st, handle.EncodingRaw, evs)
	require.NoError(t, st.Convert(t.Context(), id, handle.EncodingZstd))
	return id
}

func compactZstd(t *testing.T, st *file.Store, evs []eventlog.Event) string {
	id := appendAll(t, st, handle.EncodingZstd, evs)
	require.NoError(t, st.Compact(t.Context(), id))
	return id
}

func createFromZstd(t *testing.T, st *file.Store, evs []eventlog.Event) string {
	var seq iter.Seq2[eventlog.Event, error] = func(yield func(eventlog.Event, error) bool) {
		for _, e := range evs {
			if !yield(e, nil) {
				return
			}
		}
	}
	info, err := st.CreateFrom(t.Context(), seq, handle.WithEncoding(handle.EncodingZstd))
	require.NoError(t, err)
	return info.ID
}
