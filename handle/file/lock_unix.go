//go:build unix

package file

import (
	"github.com/sessionlog/sessionlog/handle"

	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"syscall"

	"github.com/spf13/afero"
)

const osCreateRW = os.O_CREATE | os.O_RDWR

// osLockTable holds this process's writer locks on OS files.
//
// The lock is a POSIX record lock (fcntl F_SETLK, whole file) rather than
// flock. A flock belongs to the open file description, which every child
// process shares from fork until exec (and for good if the descriptor is
// passed on): an agent killed while it starts a tool would leave its lock
// held by the half-started child, and the restarted agent would be refused.
// A record lock belongs to the process: children never hold it, and the
// kernel drops it when the process dies.
//
// Record locks do not exclude the process from itself, and closing any
// descriptor of the file drops them; this table covers both. It is keyed by
// inode, so two paths to one lock file are one lock; every descriptor of a
// lock file this package opens is closed under mu, and never while the
// process holds that file's lock except by the holder's unlock.
type osLockTable struct {
	mu   sync.Mutex
	held map[inode]*osLock
}

type inode struct{ dev, ino uint64 }

var osLocks = &osLockTable{held: map[inode]*osLock{}}

type osLock struct {
	t   *osLockTable
	key inode
	f   afero.File
	// parked are descriptors of the lock file that refused attempts
	// opened while this lock was held (only when the file was replaced
	// between heldInProcess and the open): closing them earlier would
	// drop the lock.
	parked []afero.File
}

func (l *osLock) unlock() error {
	l.t.mu.Lock()
	defer l.t.mu.Unlock()
	delete(l.t.held, l.key)
	err := l.f.Close()
	for _, p := range l.parked {
		p.Close()
	}
	return err
}

// heldInProcess reports whether this process holds the lock of the OS file
// at path, without opening it.
func heldInProcess(fs afero.Fs, path string) bool {
	fi, err := lstat(fs, path)
	if err != nil {
		return false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return false
	}
	osLocks.mu.Lock()
	defer osLocks.mu.Unlock()
	return osLocks.held[inode{uint64(st.Dev), uint64(st.Ino)}] != nil
}

// sameInode reports whether fi describes the file key names.
func sameInode(fi os.FileInfo, key inode) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && inode{uint64(st.Dev), uint64(st.Ino)} == key
}

// lock takes the writer lock on f, the open lock file at path. isOS is false
// (and f untouched) when f is not an OS file. On failure f is closed.
func (t *osLockTable) lock(fs afero.Fs, f afero.File, path string) (l writerLock, isOS bool, err error) {
	fdf, ok := f.(interface{ Fd() uintptr })
	if !ok {
		return nil, false, nil
	}
	fd := fdf.Fd()
	var st syscall.Stat_t
	if err := syscall.Fstat(int(fd), &st); err != nil {
		// f is left open: closing it could drop a lock this process
		// holds on the file. fstat of an open descriptor does not fail.
		return nil, true, fmt.Errorf("handle: locking %q: %w", path, err)
	}
	key := inode{uint64(st.Dev), uint64(st.Ino)}
	t.mu.Lock()
	defer t.mu.Unlock()
	if h := t.held[key]; h != nil {
		h.parked = append(h.parked, f)
		return nil, true, fmt.Errorf("%w: %q", handle.ErrLocked, path)
	}
	lk := syscall.Flock_t{Type: syscall.F_WRLCK, Whence: io.SeekStart}
	for {
		err = syscall.FcntlFlock(fd, syscall.F_SETLK, &lk)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	if err != nil {
		f.Close() // this process holds no lock on the file: safe to close
		if errors.Is(err, syscall.EAGAIN) || errors.Is(err, syscall.EACCES) {
			return nil, true, fmt.Errorf("%w: %q", handle.ErrLocked, path)
		}
		return nil, true, fmt.Errorf("handle: locking %q: %w", path, err)
	}
	// The name must still lead to the file locked (see lockFile).
	if fi, err := lstat(fs, path); err != nil || !sameInode(fi, key) {
		f.Close() // lets go of the lock just taken; no other is held on it
		return nil, true, errLockMoved
	}
	h := &osLock{t: t, key: key, f: f}
	t.held[key] = h
	return h, true, nil
}

// probeOS reports whether another process holds the record lock of the
// OS file at path, or this process does, without taking it: an F_GETLK on
// a read-only descriptor (so it works where the file cannot be opened for
// writing). ok is false when path is not an OS file.
func probeOS(fs afero.Fs, path string) (held, ok bool, err error) {
	if heldInProcess(fs, path) {
		return true, true, nil
	}
	f, err := openRegular(fs, path, os.O_RDONLY, false)
	if err != nil {
		return false, true, err
	}
	fdf, isOS := f.(interface{ Fd() uintptr })
	if !isOS {
		f.Close()
		return false, false, nil
	}
	// Closed under mu: this process holds no lock on the file (checked
	// above, and a lock taken meanwhile would be taken under mu too).
	osLocks.mu.Lock()
	defer osLocks.mu.Unlock()
	defer f.Close()
	var st syscall.Stat_t
	if err := syscall.Fstat(int(fdf.Fd()), &st); err == nil && osLocks.held[inode{uint64(st.Dev), uint64(st.Ino)}] != nil {
		return true, true, nil
	}
	lk := syscall.Flock_t{Type: syscall.F_WRLCK, Whence: io.SeekStart}
	for {
		err = syscall.FcntlFlock(fdf.Fd(), syscall.F_GETLK, &lk)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	if err != nil {
		return false, true, fmt.Errorf("handle: probing the lock %q: %w", path, err)
	}
	return lk.Type != syscall.F_UNLCK, true, nil
}
