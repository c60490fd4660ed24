package benchfs

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestCounts(t *testing.T) {
	for _, noSync := range []bool{false, true} {
		t.Run("", func(t *testing.T) {
			fs, c := New(noSync)
			path := filepath.Join(t.TempDir(), "f")
			f, err := fs.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
			require.NoError(t, err)
			_, err = f.Write([]byte("hello"))
			require.NoError(t, err)
			_, err = f.WriteAt([]byte("!"), 5)
			require.NoError(t, err)
			require.NoError(t, f.Sync())
			buf := make([]byte, 6)
			_, err = f.ReadAt(buf, 0)
			require.NoError(t, err)
			require.Equal(t, "hello!", string(buf))
			_, ok := f.(interface{ Fd() uintptr })
			require.True(t, ok, "the file keeps its Fd")
			require.NoError(t, f.Close())

			require.Equal(t, int64(6), c.WriteBytes.Load())
			require.Equal(t, int64(2), c.Writes.Load())
			require.Equal(t, int64(6), c.ReadBytes.Load())
			require.Equal(t, int64(1), c.Reads.Load())
			require.Equal(t, int64(1), c.Syncs.Load(), "a Sync is counted with or without NoSync")
			c.Reset()
			require.Zero(t, c.Syncs.Load()+c.Reads.Load()+c.Writes.Load()+c.ReadBytes.Load()+c.WriteBytes.Load())
		})
	}
}
