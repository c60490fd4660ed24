package countfs

import (
	"os"
	"sync/atomic"

	"github.com/spf13/afero"
)

// FS counts the I/O made through the files it opens. Safe for concurrent
// use.
type FS struct {
	afero.Fs
	read, syncs atomic.Int64
}

// New wraps base.
func New(base afero.Fs) *FS { return &FS{Fs: base} }

// BytesRead returns the bytes read so far through Read and ReadAt.
func (c *FS) BytesRead() int64 { return c.read.Load() }

// Syncs returns the number of file fsyncs so far.
func (c *FS) Syncs() int64 { return c.syncs.Load() }

// Open opens name for reading, counted.
func (c *FS) Open(name string) (afero.File, error) { return c.OpenFile(name, os.O_RDONLY, 0) }

// OpenFile opens name, counted.
func (c *FS) OpenFile(name string, flag int, perm os.FileMode) (afero.File, error) {
	f, err := c.Fs.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return file{f, c}, nil
}

type file struct {
	afero.File
	c *FS
}

func (f file) Read(p []byte) (int, error) {
	n, err := f.File.Read(p)
	f.c.read.Add(int64(n))
	return n, err
}

func (f file) ReadAt(p []byte, off int64) (int, error) {
	n, err := f.File.ReadAt(p, off)
	f.c.read.Add(int64(n))
	return n, err
}

func (f file) Sync() error {
	f.c.syncs.Add(1)
	return f.File.Sync()
}
