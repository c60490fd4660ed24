package countfs

import (
	"os"
	"sync"
	"sync/atomic"

	"github.com/spf13/afero"
)

// FS counts the I/O made through the files it opens. Safe for concurrent
// use.
type FS struct {
	afero.Fs
	read, syncs, ops atomic.Int64

	mu              sync.Mutex
	opened, statted []string
}

// New wraps base.
func New(base afero.Fs) *FS { return &FS{Fs: base} }

// BytesRead returns the bytes read so far through Read and ReadAt.
func (c *FS) BytesRead() int64 { return c.read.Load() }

// Syncs returns the number of file fsyncs so far.
func (c *FS) Syncs() int64 { return c.syncs.Load() }

// Ops returns the file operations so far: opens, stats and the names a
// folder listing returned (a listing of n names counts n).
func (c *FS) Ops() int64 { return c.ops.Load() }

// Opened returns the names opened so far, in order, and forgets them.
func (c *FS) Opened() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.opened
	c.opened = nil
	return out
}

// Statted returns the names stat'ed (or lstat'ed) so far, in order, and
// forgets them.
func (c *FS) Statted() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.statted
	c.statted = nil
	return out
}

func (c *FS) stat(name string) {
	c.ops.Add(1)
	c.mu.Lock()
	c.statted = append(c.statted, name)
	c.mu.Unlock()
}

// Stat stats name, counted.
func (c *FS) Stat(name string) (os.FileInfo, error) {
	c.stat(name)
	return c.Fs.Stat(name)
}

// Open opens name for reading, counted.
func (c *FS) Open(name string) (afero.File, error) { return c.OpenFile(name, os.O_RDONLY, 0) }

// OpenFile opens name, counted.
func (c *FS) OpenFile(name string, flag int, perm os.FileMode) (afero.File, error) {
	c.ops.Add(1)
	c.mu.Lock()
	c.opened = append(c.opened, name)
	c.mu.Unlock()
	f, err := c.Fs.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	if _, ok := f.(fder); ok {
		return osFile{file{f, c}}, nil
	}
	return file{f, c}, nil
}

// LstatIfPossible is the base's, when it has one: a store that never
// follows links checks the same through the counter.
func (c *FS) LstatIfPossible(name string) (os.FileInfo, bool, error) {
	c.stat(name)
	if l, ok := c.Fs.(afero.Lstater); ok {
		return l.LstatIfPossible(name)
	}
	fi, err := c.Fs.Stat(name)
	return fi, false, err
}

// fder is an OS file: what a store uses for positional I/O and locks.
type fder interface{ Fd() uintptr }

// osFile is a counted OS file, which still shows its descriptor: the
// store then does what it does with OS files (pread and pwrite without a
// lock of its own, record locks), and a benchmark measures that.
type osFile struct{ file }

// Fd returns the base file's descriptor.
func (f osFile) Fd() uintptr { return f.File.(fder).Fd() }

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

func (f file) Readdir(n int) ([]os.FileInfo, error) {
	fis, err := f.File.Readdir(n)
	f.c.ops.Add(int64(len(fis)))
	return fis, err
}

func (f file) Readdirnames(n int) ([]string, error) {
	names, err := f.File.Readdirnames(n)
	f.c.ops.Add(int64(len(names)))
	return names, err
}
