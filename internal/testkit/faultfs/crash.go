package faultfs

import (
	"path/filepath"
	"sort"

	"github.com/spf13/afero"
)

// CrashMode decides what survives of a file's data written after its last
// successful Sync when FS.Crash simulates a power cut. It only affects file
// content: which names exist is always decided by directory syncs.
//
// Use KeepSynced, KeepAll, TornLast{Keep: n} or ZeroFillLast{Keep: n}. The
// interface is sealed.
type CrashMode interface {
	// survive returns the content the file has after the crash, given its
	// content at the last Sync and its current content. It must not retain
	// or modify either slice.
	survive(synced, current []byte) []byte
}

type keepSynced struct{}

func (keepSynced) survive(synced, _ []byte) []byte { return clone(synced) }

type keepAll struct{}

func (keepAll) survive(_, current []byte) []byte { return clone(current) }

var (
	// KeepSynced keeps only fsynced content: every unsynced write and
	// truncation is lost.
	KeepSynced CrashMode = keepSynced{}
	// KeepAll keeps everything written, as after a process kill where the
	// page cache survives. Names still follow the durable (dir-synced) set.
	KeepAll CrashMode = keepAll{}
)

// TornLast keeps the synced content plus the first Keep bytes of the data
// that was appended beyond the synced length (capped at the current length).
// Unsynced overwrites inside the synced range and unsynced truncations are
// lost. Keep <= 0 behaves like KeepSynced.
type TornLast struct {
	// Keep is how many unsynced appended bytes survive.
	Keep int
}

func (t TornLast) survive(synced, current []byte) []byte {
	out := clone(synced)
	if end := tailEnd(len(synced), len(current), t.Keep); end > len(synced) {
		out = append(out, current[len(synced):end]...)
	}
	return out
}

// ZeroFillLast is like TornLast, but the surviving unsynced region (length
// min(current, synced+Keep) - synced) reads as zero bytes: the file size was
// updated but the data blocks never reached the disk.
type ZeroFillLast struct {
	// Keep is how many unsynced appended bytes survive as zeros.
	Keep int
}

func (z ZeroFillLast) survive(synced, current []byte) []byte {
	out := clone(synced)
	if end := tailEnd(len(synced), len(current), z.Keep); end > len(synced) {
		out = append(out, make([]byte, end-len(synced))...)
	}
	return out
}

func tailEnd(syncedLen, currentLen, keep int) int {
	return min(currentLen, syncedLen+max(keep, 0))
}

func clone(b []byte) []byte { return append([]byte{}, b...) }

// Crash returns a new afero.MemMapFs holding only the durable state: all
// directories, and every durable name (as of the last sync of its directory)
// with its inode's content decided by mode. Mode bits are preserved. FS
// itself is unchanged and may be used further; Crash can be called any
// number of times, e.g. once per CrashMode.
func (f *FS) Crash(mode CrashMode) afero.Fs {
	if mode == nil {
		mode = KeepSynced
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	out := afero.NewMemMapFs()
	dirs := make([]string, 0, len(f.dirs))
	for d := range f.dirs {
		dirs = append(dirs, d)
	}
	sort.Strings(dirs)
	for _, d := range dirs {
		_ = out.MkdirAll(d, f.dirs[d])
	}
	names := make([]string, 0, len(f.durable))
	for n := range f.durable {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		in := f.durable[n]
		_ = out.MkdirAll(filepath.Dir(n), 0o755)
		// Writing to a fresh MemMapFs cannot fail.
		_ = afero.WriteFile(out, n, mode.survive(in.synced, in.data), in.mode)
	}
	return out
}
