//go:build linux && (amd64 || arm64)

package file

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/sessionlog/sessionlog/handle"
	"github.com/spf13/afero"
	"github.com/stretchr/testify/require"
)

// On the OS file system a writer checks its path with one fstatat (the
// fast path); through a file system that takes paths otherwise than the
// OS does (a base path) it checks through the file system, and both find
// a log renamed away.
func TestInPlaceFastPath(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		fs   afero.Fs
		dir  string // the store's folder, as its file system names it
		os   string // the same, as the OS names it
		fast bool
	}{
		{"os", afero.NewOsFs(), filepath.Join(dir, "a"), filepath.Join(dir, "a"), true},
		{"base path", afero.NewBasePathFs(afero.NewOsFs(), dir), "/b", filepath.Join(dir, "b"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := New(tc.fs, tc.dir)
			h, err := st.Create(t.Context())
			require.NoError(t, err)
			require.NoError(t, h.Close())
			hb, _, err := st.openMode(t.Context(), h.ID(), handle.ReadWrite)
			require.NoError(t, err)
			b := hb.(*fileBackend)
			defer b.Close(t.Context(), false)
			require.Equal(t, tc.fast, b.osPath != nil)
			require.NoError(t, b.inPlace())
			base := filepath.Base(h.Path())
			require.NoError(t, os.Rename(filepath.Join(tc.os, base), filepath.Join(tc.os, "moved")))
			require.ErrorIs(t, b.inPlace(), ErrDisplaced)
		})
	}
}
