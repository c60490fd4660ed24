package file

import (
	"github.com/sessionlog/sessionlog/handle"

	"errors"
	"fmt"
	"reflect"
	"sync"

	"github.com/spf13/afero"
)

// writerLock is a held writer lock.
type writerLock interface{ unlock() error }

// lockFile takes the writer lock of a session: an OS record lock on its
// lock file where the file is the operating system's (see osLocks), so that
// it excludes other processes and is released the moment its process dies;
// an in-process lock on any other afero file system (a memory file system
// lives and dies with its process anyway).
//
// A lock file may be removed by the holder of its lock (a failed Create,
// Delete): a process that opened it before the removal and locks it after
// holds a lock on a name no one else opens, so a lock counts only while
// the name still leads to the file locked; otherwise it is let go and
// taken again at the name as it is now.
func lockFile(fs afero.Fs, path string) (writerLock, error) {
	for range maxLockTries {
		if heldInProcess(fs, path) {
			return nil, fmt.Errorf("%w: %q", handle.ErrLocked, path)
		}
		// Never through a link: a dangling one would create its target.
		f, err := openRegular(fs, path, osCreateRW, false)
		if err != nil {
			return nil, fmt.Errorf("handle: opening lock file %q: %w", path, err)
		}
		l, isOS, err := osLocks.lock(fs, f, path)
		if !isOS {
			f.Close()
			return memLocks.lock(fs, path)
		}
		if !errors.Is(err, errLockMoved) {
			return l, err
		}
	}
	return nil, fmt.Errorf("%w: %q: the lock file was removed %d times while being locked", handle.ErrLocked, path, maxLockTries)
}

// maxLockTries bounds how often lockFile takes a lock again after its file
// was removed under it.
const maxLockTries = 100

// errLockMoved: the lock file was removed or replaced between its open and
// its lock.
var errLockMoved = errors.New("handle: the lock file moved")

// probeLock reports whether a writer holds the lock at path, without
// taking it, so that asking never makes a writer fail.
func probeLock(fs afero.Fs, path string) (bool, error) {
	if held, ok, err := probeOS(fs, path); ok {
		return held, err
	}
	return memLocks.probe(fs, path), nil
}

// memLockTable stands in for the kernel's lock table on file systems that
// have none. It and osLocks are the package's only process-wide state, as
// the kernel's table is process-wide: two stores over one memory file
// system must exclude each other.
type memLockTable struct {
	mu   sync.Mutex
	held map[memLockKey]bool
}

type memLockKey struct {
	fs   afero.Fs // nil when the file system value is not comparable
	path string
}

var memLocks = &memLockTable{held: map[memLockKey]bool{}}

func (t *memLockTable) key(fs afero.Fs, path string) memLockKey {
	key := memLockKey{path: path}
	if reflect.TypeOf(fs).Comparable() {
		key.fs = fs
	}
	return key
}

func (t *memLockTable) probe(fs afero.Fs, path string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.held[t.key(fs, path)]
}

func (t *memLockTable) lock(fs afero.Fs, path string) (writerLock, error) {
	key := t.key(fs, path)
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.held[key] {
		return nil, fmt.Errorf("%w: %q", handle.ErrLocked, path)
	}
	t.held[key] = true
	return &memLock{t: t, key: key}, nil
}

type memLock struct {
	t   *memLockTable
	key memLockKey
}

func (l *memLock) unlock() error {
	l.t.mu.Lock()
	delete(l.t.held, l.key)
	l.t.mu.Unlock()
	return nil
}
