package main

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/afero"
)

// workFs is the OS file system as seen from the folder dir: a relative
// name is taken from dir, not from the process's working folder, so that
// scripts run logtool in-process each in its own folder. Errors name the
// file as it was given. The files it opens are the OS's own (locks and
// fsync act on them).
type workFs struct {
	afero.Fs
	dir string
}

var (
	_ afero.Fs      = workFs{}
	_ afero.Lstater = workFs{}
)

func (w workFs) abs(name string) string {
	if filepath.IsAbs(name) {
		return name
	}
	return filepath.Join(w.dir, name)
}

// named gives err the name the caller used.
func named(name string, err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		c := *pe
		c.Path = name
		return &c
	}
	return err
}

func (w workFs) Create(name string) (afero.File, error) {
	f, err := w.Fs.Create(w.abs(name))
	return f, named(name, err)
}

func (w workFs) Mkdir(name string, perm os.FileMode) error {
	return named(name, w.Fs.Mkdir(w.abs(name), perm))
}

func (w workFs) MkdirAll(name string, perm os.FileMode) error {
	return named(name, w.Fs.MkdirAll(w.abs(name), perm))
}

func (w workFs) Open(name string) (afero.File, error) {
	f, err := w.Fs.Open(w.abs(name))
	return f, named(name, err)
}

func (w workFs) OpenFile(name string, flag int, perm os.FileMode) (afero.File, error) {
	f, err := w.Fs.OpenFile(w.abs(name), flag, perm)
	return f, named(name, err)
}

func (w workFs) Remove(name string) error { return named(name, w.Fs.Remove(w.abs(name))) }

func (w workFs) RemoveAll(name string) error { return named(name, w.Fs.RemoveAll(w.abs(name))) }

func (w workFs) Rename(oldname, newname string) error {
	err := w.Fs.Rename(w.abs(oldname), w.abs(newname))
	var le *os.LinkError
	if errors.As(err, &le) {
		return &os.LinkError{Op: le.Op, Old: oldname, New: newname, Err: le.Err}
	}
	return err
}

func (w workFs) Stat(name string) (os.FileInfo, error) {
	fi, err := w.Fs.Stat(w.abs(name))
	return fi, named(name, err)
}

func (w workFs) LstatIfPossible(name string) (os.FileInfo, bool, error) {
	fi, ok, err := w.Fs.(afero.Lstater).LstatIfPossible(w.abs(name))
	return fi, ok, named(name, err)
}

func (w workFs) Chmod(name string, mode os.FileMode) error {
	return named(name, w.Fs.Chmod(w.abs(name), mode))
}

func (w workFs) Chown(name string, uid, gid int) error {
	return named(name, w.Fs.Chown(w.abs(name), uid, gid))
}

func (w workFs) Chtimes(name string, atime, mtime time.Time) error {
	return named(name, w.Fs.Chtimes(w.abs(name), atime, mtime))
}
