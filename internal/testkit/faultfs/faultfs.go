package faultfs

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/spf13/afero"
)

// Op identifies an operation passed to the hook installed with SetHook.
type Op int

// Operations reported to the hook. The hook runs before the operation; a
// non-nil error from it fails the operation without any effect.
const (
	// OpOpen is Open, or OpenFile without os.O_CREATE.
	OpOpen Op = iota + 1
	// OpCreate is Create, or OpenFile with os.O_CREATE.
	OpCreate
	// OpWrite is Write, WriteAt or WriteString on a file.
	OpWrite
	// OpTruncate is Truncate on a file.
	OpTruncate
	// OpSync is Sync on a regular file.
	OpSync
	// OpDirSync is Sync on a directory handle.
	OpDirSync
	// OpRename is Rename; the hook receives the new (destination) name.
	OpRename
	// OpRemove is Remove or RemoveAll.
	OpRemove
	// OpMkdir is Mkdir or MkdirAll.
	OpMkdir
)

var opNames = map[Op]string{
	OpOpen: "open", OpCreate: "create", OpWrite: "write", OpTruncate: "truncate",
	OpSync: "sync", OpDirSync: "dirsync", OpRename: "rename", OpRemove: "remove",
	OpMkdir: "mkdir",
}

// String returns the lower-case name of the operation, e.g. "sync".
func (o Op) String() string {
	if s, ok := opNames[o]; ok {
		return s
	}
	return fmt.Sprintf("op(%d)", int(o))
}

// Hook is called before an operation with the cleaned path it applies to.
// Returning a non-nil error fails the operation with no effect; the error is
// returned to the caller unchanged.
type Hook func(op Op, name string) error

// inode is one regular file. Its identity follows renames: the live and
// durable name tables both point at inodes.
type inode struct {
	data     []byte      // current content, mirrored from every write
	synced   []byte      // content at the last successful Sync
	mode     fs.FileMode // permission bits
	unsynced int64       // bytes written since the last successful Sync
}

func (in *inode) write(off int64, p []byte) {
	if end := off + int64(len(p)); end > int64(len(in.data)) {
		in.data = append(in.data, make([]byte, end-int64(len(in.data)))...)
	}
	copy(in.data[off:], p)
	in.unsynced += int64(len(p))
}

func (in *inode) truncate(size int64) {
	if size <= int64(len(in.data)) {
		in.data = in.data[:size:size]
		return
	}
	in.data = append(in.data, make([]byte, size-int64(len(in.data)))...)
}

type writeFault struct {
	err     error
	written int
}

// FS is a fault-injecting afero.Fs that tracks durability. Create one with
// New. It is safe for concurrent use; all operations are serialized by a
// single mutex (the hook is called without holding it).
type FS struct {
	base afero.Fs

	mu        sync.Mutex
	live      map[string]*inode      // current namespace (regular files)
	durable   map[string]*inode      // namespace as of the last dir syncs
	dirs      map[string]fs.FileMode // directories, durable immediately
	hook      Hook
	failWrite *writeFault
	failSync  error
	syncs     int
	dirSyncs  int
}

var _ afero.Fs = (*FS)(nil)

// New wraps base. Files and directories that already exist in base are
// adopted as fully durable (content and names). base is normally
// afero.NewMemMapFs(); any file that appears in base behind FS's back is
// adopted the same way when FS first touches it.
func New(base afero.Fs) *FS {
	f := &FS{
		base:    base,
		live:    map[string]*inode{},
		durable: map[string]*inode{},
		dirs:    map[string]fs.FileMode{},
	}
	roots := []string{string(filepath.Separator)}
	if _, ok := base.(*afero.MemMapFs); ok {
		roots = append(roots, ".") // MemMapFs keeps relative keys apart
	}
	for _, root := range roots {
		_ = afero.Walk(base, root, func(p string, fi fs.FileInfo, err error) error {
			if err != nil || fi == nil {
				return nil
			}
			p = clean(p)
			if fi.IsDir() {
				if p != string(filepath.Separator) {
					f.dirs[p] = fi.Mode().Perm()
				}
				return nil
			}
			f.adopt(p)
			return nil
		})
	}
	return f
}

// clean normalizes a path the way afero.MemMapFs does.
func clean(name string) string {
	name = filepath.Clean(name)
	if name == "." || name == ".." {
		return string(filepath.Separator)
	}
	return name
}

func parentOf(name string) string { return clean(filepath.Dir(name)) }

// under reports whether p is dir or lies below it.
func under(p, dir string) bool {
	if p == dir {
		return true
	}
	prefix := dir
	if !strings.HasSuffix(prefix, string(filepath.Separator)) {
		prefix += string(filepath.Separator)
	}
	return strings.HasPrefix(p, prefix)
}

// adopt returns the inode for the live regular file name, registering a
// file found in base but unknown to FS as durable. It returns nil if name is
// not a regular file in base. Callers hold f.mu (or own f exclusively).
func (f *FS) adopt(name string) *inode {
	if in, ok := f.live[name]; ok {
		return in
	}
	fi, err := f.base.Stat(name)
	if err != nil || fi.IsDir() {
		return nil
	}
	data, err := afero.ReadFile(f.base, name)
	if err != nil {
		return nil
	}
	in := &inode{data: data, synced: append([]byte(nil), data...), mode: fi.Mode().Perm()}
	f.live[name] = in
	f.durable[name] = in
	return in
}

func (f *FS) callHook(op Op, name string) error {
	f.mu.Lock()
	h := f.hook
	f.mu.Unlock()
	if h == nil {
		return nil
	}
	return h(op, name)
}

// SetHook installs h (nil removes it). See Hook and Op.
func (f *FS) SetHook(h Hook) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.hook = h
}

// FailNextWrite makes the next Write, WriteAt or WriteString on any file
// write only the first written bytes (clamped to [0, len(p)]) and return
// (written, err): a short, torn write such as ENOSPC (syscall.ENOSPC). A nil
// err is replaced by io.ErrShortWrite. The bytes that were written are
// tracked like any other unsynced write.
func (f *FS) FailNextWrite(err error, written int) {
	if err == nil {
		err = io.ErrShortWrite
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failWrite = &writeFault{err: err, written: written}
}

// FailNextSync makes the next Sync of a regular file return err without
// making anything durable. Directory syncs do not consume it. A nil err
// disarms a pending failure.
func (f *FS) FailNextSync(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failSync = err
}

// UnsyncedBytes returns how many bytes were written to the live file name
// since its last successful Sync (0 for unknown names). Truncation does not
// count as written bytes.
func (f *FS) UnsyncedBytes(name string) int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	if in, ok := f.live[clean(name)]; ok {
		return in.unsynced
	}
	return 0
}

// SyncCount returns the number of successful Syncs of regular files.
func (f *FS) SyncCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.syncs
}

// DirSyncCount returns the number of successful Syncs of directories.
func (f *FS) DirSyncCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.dirSyncs
}

// Name returns "FaultFS".
func (f *FS) Name() string { return "FaultFS" }

// Create creates or truncates name, like OpenFile with
// os.O_RDWR|os.O_CREATE|os.O_TRUNC and mode 0666.
func (f *FS) Create(name string) (afero.File, error) {
	return f.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o666)
}

// Open opens name read-only. Open a directory and Sync the handle to make
// the entries of that directory durable.
func (f *FS) Open(name string) (afero.File, error) {
	return f.OpenFile(name, os.O_RDONLY, 0)
}

// OpenFile opens name in the base file system. A newly created file exists
// only in the live namespace until its directory is synced; os.O_TRUNC is an
// unsynced truncation.
func (f *FS) OpenFile(name string, flag int, perm os.FileMode) (afero.File, error) {
	key := clean(name)
	op := OpOpen
	if flag&os.O_CREATE != 0 {
		op = OpCreate
	}
	if err := f.callHook(op, key); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	in := f.adopt(key)
	bf, err := f.base.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	fi, err := bf.Stat()
	if err != nil {
		_ = bf.Close()
		return nil, err
	}
	if fi.IsDir() {
		return &File{fs: f, base: bf, name: name, key: key}, nil
	}
	if in == nil {
		in = &inode{mode: fi.Mode().Perm()}
		f.live[key] = in
	}
	if flag&os.O_TRUNC != 0 && flag&(os.O_WRONLY|os.O_RDWR) != 0 {
		in.truncate(0)
	}
	return &File{fs: f, base: bf, name: name, key: key, ino: in}, nil
}

// Mkdir creates a directory; directory creation is durable immediately.
func (f *FS) Mkdir(name string, perm os.FileMode) error {
	return f.mkdir(name, perm, f.base.Mkdir)
}

// MkdirAll creates a directory and its parents; durable immediately.
func (f *FS) MkdirAll(path string, perm os.FileMode) error {
	return f.mkdir(path, perm, f.base.MkdirAll)
}

func (f *FS) mkdir(name string, perm os.FileMode, do func(string, os.FileMode) error) error {
	key := clean(name)
	if err := f.callHook(OpMkdir, key); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := do(name, perm); err != nil {
		return err
	}
	if _, ok := f.dirs[key]; !ok && key != string(filepath.Separator) {
		f.dirs[key] = perm.Perm()
	}
	return nil
}

// Remove removes a file or an empty directory. Removing a file becomes
// durable only when its directory is synced; removing a directory is
// durable immediately.
func (f *FS) Remove(name string) error {
	return f.remove(name, f.base.Remove)
}

// RemoveAll removes path and anything below it, with the same durability
// rules as Remove.
func (f *FS) RemoveAll(path string) error {
	return f.remove(path, f.base.RemoveAll)
}

func (f *FS) remove(name string, do func(string) error) error {
	key := clean(name)
	if err := f.callHook(OpRemove, key); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	fi, statErr := f.base.Stat(name)
	isDir := statErr == nil && fi.IsDir()
	if !isDir {
		f.adopt(key)
	}
	if err := do(name); err != nil {
		return err
	}
	if !isDir {
		delete(f.live, key)
		return nil
	}
	for _, m := range []map[string]*inode{f.live, f.durable} {
		for p := range m {
			if under(p, key) {
				delete(m, p)
			}
		}
	}
	for p := range f.dirs {
		if under(p, key) {
			delete(f.dirs, p)
		}
	}
	return nil
}

// Rename renames a file or directory. For a file the new name replaces the
// old one durably only when the directories involved are synced (the inode,
// and its synced content, moves with the name). Renaming a directory is
// durable immediately. The hook sees OpRename with newname.
func (f *FS) Rename(oldname, newname string) error {
	oldKey, newKey := clean(oldname), clean(newname)
	if err := f.callHook(OpRename, newKey); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	fi, statErr := f.base.Stat(oldname)
	isDir := statErr == nil && fi.IsDir()
	var in *inode
	if !isDir {
		in = f.adopt(oldKey)
		f.adopt(newKey)
	}
	if err := f.base.Rename(oldname, newname); err != nil {
		return err
	}
	if oldKey == newKey {
		return nil
	}
	if !isDir {
		delete(f.live, oldKey)
		if in != nil {
			f.live[newKey] = in
		}
		return nil
	}
	move := func(p string) string { return newKey + p[len(oldKey):] }
	for _, m := range []map[string]*inode{f.live, f.durable} {
		moved := map[string]*inode{}
		for p, in := range m {
			if under(p, oldKey) {
				moved[move(p)] = in
				delete(m, p)
			}
		}
		for p, in := range moved {
			m[p] = in
		}
	}
	moved := map[string]fs.FileMode{}
	for p, perm := range f.dirs {
		if under(p, oldKey) {
			moved[move(p)] = perm
			delete(f.dirs, p)
		}
	}
	for p, perm := range moved {
		f.dirs[p] = perm
	}
	return nil
}

// Stat returns the base file system's FileInfo for name.
func (f *FS) Stat(name string) (os.FileInfo, error) {
	return f.base.Stat(name)
}

// Chmod changes the mode of name. Mode changes are durable immediately.
func (f *FS) Chmod(name string, mode os.FileMode) error {
	key := clean(name)
	f.mu.Lock()
	defer f.mu.Unlock()
	in := f.adopt(key)
	if err := f.base.Chmod(name, mode); err != nil {
		return err
	}
	if in != nil {
		in.mode = mode.Perm()
	} else if _, ok := f.dirs[key]; ok {
		f.dirs[key] = mode.Perm()
	}
	return nil
}

// Chown forwards to the base file system; ownership is not modelled.
func (f *FS) Chown(name string, uid, gid int) error {
	return f.base.Chown(name, uid, gid)
}

// Chtimes forwards to the base file system; times are not modelled.
func (f *FS) Chtimes(name string, atime, mtime time.Time) error {
	return f.base.Chtimes(name, atime, mtime)
}

// File is an afero.File returned by FS. It forwards to the base file and
// records writes, truncations and syncs. It has no Fd method on purpose.
type File struct {
	fs     *FS
	base   afero.File
	name   string // as passed to Open
	key    string // cleaned name
	ino    *inode // nil for directories
	closed bool
}

var _ afero.File = (*File)(nil)

// Name returns the name the file was opened with.
func (h *File) Name() string { return h.name }

// Close closes the base file. Later Write, Truncate and Sync calls fail.
func (h *File) Close() error {
	h.fs.mu.Lock()
	defer h.fs.mu.Unlock()
	h.closed = true
	return h.base.Close()
}

// Read reads from the base file.
func (h *File) Read(p []byte) (int, error) { return h.base.Read(p) }

// ReadAt reads from the base file at off.
func (h *File) ReadAt(p []byte, off int64) (int, error) { return h.base.ReadAt(p, off) }

// Seek moves the base file's offset.
func (h *File) Seek(offset int64, whence int) (int64, error) {
	h.fs.mu.Lock()
	defer h.fs.mu.Unlock()
	return h.base.Seek(offset, whence)
}

// Readdir lists a directory.
func (h *File) Readdir(count int) ([]os.FileInfo, error) { return h.base.Readdir(count) }

// Readdirnames lists the names in a directory.
func (h *File) Readdirnames(n int) ([]string, error) { return h.base.Readdirnames(n) }

// Stat returns the base file's FileInfo.
func (h *File) Stat() (os.FileInfo, error) { return h.base.Stat() }

// Write writes p at the current offset; see FS.FailNextWrite for faults.
func (h *File) Write(p []byte) (int, error) { return h.write(p, 0, false) }

// WriteAt writes p at off; see FS.FailNextWrite for faults.
func (h *File) WriteAt(p []byte, off int64) (int, error) { return h.write(p, off, true) }

// WriteString writes s like Write.
func (h *File) WriteString(s string) (int, error) { return h.write([]byte(s), 0, false) }

func (h *File) write(p []byte, off int64, at bool) (int, error) {
	if err := h.fs.callHook(OpWrite, h.key); err != nil {
		return 0, err
	}
	f := h.fs
	f.mu.Lock()
	defer f.mu.Unlock()
	if h.closed {
		return 0, afero.ErrFileClosed
	}
	var injected error
	if fw := f.failWrite; fw != nil {
		f.failWrite = nil
		injected = fw.err
		p = p[:min(max(fw.written, 0), len(p))]
	}
	var n int
	var err error
	if at {
		n, err = h.base.WriteAt(p, off)
	} else {
		n, err = h.base.Write(p)
		if pos, serr := h.base.Seek(0, io.SeekCurrent); serr == nil {
			off = pos - int64(n)
		} else if h.ino != nil {
			off = int64(len(h.ino.data))
		}
	}
	if h.ino != nil && n > 0 {
		h.ino.write(off, p[:n])
	}
	if err == nil {
		err = injected
	}
	return n, err
}

// Truncate changes the file size. The change is not durable until Sync.
func (h *File) Truncate(size int64) error {
	if err := h.fs.callHook(OpTruncate, h.key); err != nil {
		return err
	}
	h.fs.mu.Lock()
	defer h.fs.mu.Unlock()
	if h.closed {
		return afero.ErrFileClosed
	}
	if err := h.base.Truncate(size); err != nil {
		return err
	}
	if h.ino != nil {
		h.ino.truncate(size)
	}
	return nil
}

// Sync makes the file's current content durable, or, on a directory handle,
// makes the directory's current entries (creates, renames, removes)
// durable. See FS.FailNextSync and SetHook for faults.
func (h *File) Sync() error {
	op := OpSync
	if h.ino == nil {
		op = OpDirSync
	}
	if err := h.fs.callHook(op, h.key); err != nil {
		return err
	}
	f := h.fs
	f.mu.Lock()
	defer f.mu.Unlock()
	if h.closed {
		return afero.ErrFileClosed
	}
	if h.ino != nil && f.failSync != nil {
		err := f.failSync
		f.failSync = nil
		return err
	}
	if err := h.base.Sync(); err != nil {
		return err
	}
	if h.ino != nil {
		h.ino.synced = append([]byte(nil), h.ino.data...)
		h.ino.unsynced = 0
		f.syncs++
		return nil
	}
	for p := range f.durable {
		if parentOf(p) == h.key {
			delete(f.durable, p)
		}
	}
	for p, in := range f.live {
		if parentOf(p) == h.key {
			f.durable[p] = in
		}
	}
	f.dirSyncs++
	return nil
}
