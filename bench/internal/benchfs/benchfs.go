// Package benchfs is the bench module's afero.Fs wrapper over the OS file
// system: it counts the bytes read and written, the read and write calls
// and the fsyncs of the files opened through it, and can make Sync do
// nothing (still counted) for measurements of sizes or of the no-fsync
// ceiling. Its files keep their Fd, so a handle on them still uses
// positional I/O and takes real record locks. It knows nothing of logs.
package benchfs

import (
	"os"
	"sync/atomic"

	"github.com/spf13/afero"
)

// Counts are the I/O made through an FS. Safe for concurrent use.
type Counts struct {
	ReadBytes, Reads   atomic.Int64
	WriteBytes, Writes atomic.Int64
	Syncs              atomic.Int64
}

// Reset sets every count to zero.
func (c *Counts) Reset() {
	c.ReadBytes.Store(0)
	c.Reads.Store(0)
	c.WriteBytes.Store(0)
	c.Writes.Store(0)
	c.Syncs.Store(0)
}

// FS counts the I/O of the files opened through it; with NoSync set their
// Sync does nothing (it is still counted). Safe for concurrent use.
type FS struct {
	afero.Fs
	C      *Counts
	NoSync bool
}

// New returns an FS over the OS file system and its counts.
func New(noSync bool) (FS, *Counts) {
	c := new(Counts)
	return FS{Fs: afero.NewOsFs(), C: c, NoSync: noSync}, c
}

func (fs FS) wrap(f afero.File, err error) (afero.File, error) {
	if err != nil {
		return nil, err
	}
	return file{File: f, c: fs.C, noSync: fs.NoSync}, nil
}

// Create creates name, counted.
func (fs FS) Create(name string) (afero.File, error) { return fs.wrap(fs.Fs.Create(name)) }

// Open opens name for reading, counted.
func (fs FS) Open(name string) (afero.File, error) { return fs.wrap(fs.Fs.Open(name)) }

// OpenFile opens name, counted.
func (fs FS) OpenFile(name string, flag int, perm os.FileMode) (afero.File, error) {
	return fs.wrap(fs.Fs.OpenFile(name, flag, perm))
}

type file struct {
	afero.File
	c      *Counts
	noSync bool
}

func (f file) Read(p []byte) (int, error) {
	n, err := f.File.Read(p)
	f.c.Reads.Add(1)
	f.c.ReadBytes.Add(int64(n))
	return n, err
}

func (f file) ReadAt(p []byte, off int64) (int, error) {
	n, err := f.File.ReadAt(p, off)
	f.c.Reads.Add(1)
	f.c.ReadBytes.Add(int64(n))
	return n, err
}

func (f file) Write(p []byte) (int, error) {
	n, err := f.File.Write(p)
	f.c.Writes.Add(1)
	f.c.WriteBytes.Add(int64(n))
	return n, err
}

func (f file) WriteAt(p []byte, off int64) (int, error) {
	n, err := f.File.WriteAt(p, off)
	f.c.Writes.Add(1)
	f.c.WriteBytes.Add(int64(n))
	return n, err
}

func (f file) WriteString(s string) (int, error) { return f.Write([]byte(s)) }

func (f file) Sync() error {
	f.c.Syncs.Add(1)
	if f.noSync {
		return nil
	}
	return f.File.Sync()
}

// Fd lets a handle use positional I/O and real locks on the wrapped OS
// file.
func (f file) Fd() uintptr { return f.File.(interface{ Fd() uintptr }).Fd() }
