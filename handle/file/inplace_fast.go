//go:build linux && (amd64 || arm64)

package file

import (
	"syscall"
	"unsafe"

	"github.com/spf13/afero"
)

// pathCheck tells whether a path still names one OS file, with one
// fstatat(2) that does not follow a final link and allocates nothing: the
// check a writer makes at every flush (fileBackend.inPlace).
type pathCheck struct {
	path     *byte // NUL-terminated
	dev, ino uint64
}

// newPathCheck returns the check that path names f, an OS file, when the
// OS takes path as the file system does (a path both resolve to f);
// otherwise nil, and the writer checks through the file system.
func newPathCheck(path string, f afero.File) *pathCheck {
	fdf, ok := f.(interface{ Fd() uintptr })
	if !ok {
		return nil
	}
	var st syscall.Stat_t
	if syscall.Fstat(int(fdf.Fd()), &st) != nil {
		return nil
	}
	p, err := syscall.BytePtrFromString(path)
	if err != nil {
		return nil
	}
	c := &pathCheck{path: p, dev: uint64(st.Dev), ino: st.Ino}
	if same, err := c.names(); err != nil || !same {
		return nil
	}
	return c
}

// names reports whether the path names the file now; a path that is gone
// (or whose folder is) names nothing.
func (c *pathCheck) names() (bool, error) {
	var st syscall.Stat_t
	_, _, errno := syscall.Syscall6(sysFstatat, uintptr(atFDCWD), uintptr(unsafe.Pointer(c.path)),
		uintptr(unsafe.Pointer(&st)), atSymlinkNofollow, 0, 0)
	switch errno {
	case 0:
		return uint64(st.Dev) == c.dev && st.Ino == c.ino, nil
	case syscall.ENOENT, syscall.ENOTDIR:
		return false, nil
	}
	return false, errno
}

// fstatat(2)'s AT_FDCWD (a relative path is taken from the working
// folder: a variable, since a negative constant is no uintptr) and
// AT_SYMLINK_NOFOLLOW.
var atFDCWD = -0x64

const atSymlinkNofollow = 0x100
