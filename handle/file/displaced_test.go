package file_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/spf13/afero"
	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/handle/file"
)

// TestWriterDisplaced unlinks, renames or replaces a session's log file
// under its live writer (docs/format.md §9: a writer acknowledges only
// what a later open of the session finds). The next flush fails with
// ErrDisplaced, poisoned: the handle acknowledges nothing after, and the
// session, opened again, holds what was acknowledged before and nothing
// of what came after.
func TestWriterDisplaced(t *testing.T) {
	for _, tc := range []struct {
		name     string
		displace func(t *testing.T, path string)
		gone     bool // the session no longer exists
	}{
		{"unlinked", func(t *testing.T, path string) { require.NoError(t, os.Remove(path)) }, true},
		{"renamed", func(t *testing.T, path string) { require.NoError(t, os.Rename(path, path+".moved")) }, true},
		{"replaced", func(t *testing.T, path string) {
			// A copy, byte for byte, renamed over it: the same log, another file.
			b, err := os.ReadFile(path)
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(path+".new", b, 0o600))
			require.NoError(t, os.Rename(path+".new", path))
		}, false},
	} {
		for _, enc := range crashEncodings {
			t.Run(tc.name+"/"+enc, func(t *testing.T) {
				ctx := t.Context()
				st := file.New(afero.NewOsFs(), filepath.Join(t.TempDir(), "s"), inStore(enc)...)
				h, err := st.Create(ctx)
				require.NoError(t, err)
				defer h.Close()
				appendAndFlush(t, h, crashEvents(0, 3)...)

				tc.displace(t, h.Path())
				_, err = h.Append(ctx, crashEvent(3))
				require.NoError(t, err, "appending queues; the flush finds it")
				err = h.Flush(ctx)
				require.ErrorIs(t, err, file.ErrDisplaced)
				var pe *handle.PoisonedError
				require.ErrorAs(t, err, &pe)
				require.Equal(t, int64(2), h.DurableSeq(), "seq 3 is not acknowledged")
				_, err = h.Append(ctx, crashEvent(4))
				require.ErrorIs(t, err, file.ErrDisplaced, "poisoned: nothing more is taken")
				require.ErrorIs(t, h.Flush(ctx), file.ErrDisplaced)
				require.ErrorIs(t, h.Close(), file.ErrDisplaced)

				r, err := st.Open(ctx, h.ID(), handle.ReadOnly)
				if tc.gone {
					require.ErrorIs(t, err, handle.ErrNotFound)
					return
				}
				require.NoError(t, err)
				defer r.Close()
				require.Equal(t, canonLines(crashEvents(0, 3)), canonLines(readWholeLog(t, r)))
				w, err := st.Open(ctx, h.ID(), handle.ReadWrite)
				require.NoError(t, err, "the writer's lock died with its Close")
				appendAndFlush(t, w, crashEvent(3))
				require.NoError(t, w.Close())
			})
		}
	}
}
