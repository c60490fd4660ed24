package file_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/spf13/afero"
	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/handle/file"
)

// pipeFs is a memory file system on which the file at pipe is a named pipe
// (FIFO): Stat and Lstat say so, and opens of it are counted.
type pipeFs struct {
	afero.Fs
	pipe   string
	opened atomic.Int64
}

type pipeInfo struct{ fs.FileInfo }

func (pipeInfo) Mode() fs.FileMode { return fs.ModeNamedPipe | 0o600 }

func (p *pipeFs) Stat(name string) (fs.FileInfo, error) {
	fi, err := p.Fs.Stat(name)
	if err == nil && filepath.Clean(name) == p.pipe {
		fi = pipeInfo{fi}
	}
	return fi, err
}

func (p *pipeFs) LstatIfPossible(name string) (fs.FileInfo, bool, error) {
	fi, err := p.Stat(name)
	return fi, true, err
}

func (p *pipeFs) Open(name string) (afero.File, error) { return p.OpenFile(name, os.O_RDONLY, 0) }

func (p *pipeFs) OpenFile(name string, flag int, perm os.FileMode) (afero.File, error) {
	if filepath.Clean(name) == p.pipe {
		p.opened.Add(1)
	}
	return p.Fs.OpenFile(name, flag, perm)
}

// TestNotRegularRefusedOnAnyFs: on a file system that is not the OS's (no
// O_NOFOLLOW, no O_NONBLOCK), what Lstat says is not a regular file is
// refused before it is ever opened.
func TestNotRegularRefusedOnAnyFs(t *testing.T) {
	const id = "01JDX3N0Q3Z8Y6W2D1V5K7M9PA"
	for _, op := range logReaders(id) {
		t.Run(op.name, func(t *testing.T) {
			path := filepath.Join("/s", id+".jsonl")
			fsys := &pipeFs{Fs: afero.NewMemMapFs(), pipe: path}
			require.NoError(t, afero.WriteFile(fsys.Fs, path, []byte("anything\n"), 0o600))
			err := op.do(t.Context(), file.New(fsys, "/s"), path)
			require.ErrorIs(t, err, file.ErrNotRegular)
			require.Contains(t, err.Error(), path)
			require.Zero(t, fsys.opened.Load(), "never opened")
		})
	}
}
