package file

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"

	"github.com/spf13/afero"
)

// ErrNotRegular: a file the store would read or write — a session's log,
// its lock, a derived, temp or side file — is not a regular file: a
// symbolic link, a named pipe (FIFO), a device, a socket or a folder. It is
// refused without being opened for reading (a FIFO would block the open, a
// device could be endless) and nothing is created through it (a link
// could point out of the store).
var ErrNotRegular = errors.New("handle: refused, not a regular file")

// notRegular is the error for the file at path of mode m.
func notRegular(path string, m fs.FileMode) error {
	return fmt.Errorf("%w: %q is %s; only regular files are sessions or store files (move it out of the way)",
		ErrNotRegular, path, describeType(m))
}

// describeType names the kind of file of mode m.
func describeType(m fs.FileMode) string {
	switch {
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case m&fs.ModeDevice != 0, m&fs.ModeCharDevice != 0:
		return "a device"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m.IsDir():
		return "a folder"
	}
	return "not a regular file"
}

// lstat describes the file at path without following a final symbolic
// link, where fsys can tell (afero.Lstater); otherwise as Stat does.
func lstat(fsys afero.Fs, path string) (fs.FileInfo, error) {
	if l, ok := fsys.(afero.Lstater); ok {
		fi, _, err := l.LstatIfPossible(path)
		return fi, err
	}
	return fsys.Stat(path)
}

// isOSFs reports whether fsys hands flags to open(2) as they are, so that
// O_NOFOLLOW and O_NONBLOCK mean what they say.
func isOSFs(fsys afero.Fs) bool {
	switch fsys.(type) {
	case *afero.OsFs, afero.OsFs:
		return true
	}
	return false
}

// openRegular opens the file at path with flag (mode 0600 when it creates
// it) and returns it only if it is a regular file. Unless follow, a final
// symbolic link is refused, never followed, also when flag creates: a
// dangling link must not create its target. Nothing that is not a regular
// file is ever opened in a way that can block or read it: the file is
// checked first (lstat, or stat when follow), then opened — on an OS file
// system with O_NONBLOCK (a FIFO's open does not wait for a writer) and
// O_NOFOLLOW — and the open file checked again, so a file swapped in
// between is refused too. With O_EXCL the first check is left to the open,
// which fails on any existing name, link or not.
func openRegular(fsys afero.Fs, path string, flag int, follow bool) (afero.File, error) {
	if flag&os.O_EXCL == 0 {
		stat := lstat
		if follow {
			stat = afero.Fs.Stat
		}
		fi, err := stat(fsys, path)
		switch {
		case err == nil && !fi.Mode().IsRegular():
			return nil, notRegular(path, fi.Mode())
		case err != nil && (flag&os.O_CREATE == 0 || !errors.Is(err, fs.ErrNotExist)):
			return nil, err
		}
	}
	if isOSFs(fsys) {
		flag |= openNonBlock
		if !follow {
			flag |= openNoFollow
		}
	}
	f, err := fsys.OpenFile(path, flag, 0o600)
	if err != nil {
		if isLinkRefused(err) {
			return nil, notRegular(path, fs.ModeSymlink)
		}
		return nil, err
	}
	fi, err := f.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		err = notRegular(path, fi.Mode())
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// readRegular returns the content of the regular file at path (see
// openRegular; links are not followed).
func readRegular(fsys afero.Fs, path string) ([]byte, error) {
	f, err := openRegular(fsys, path, os.O_RDONLY, false)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	// Sized from the file, grown if it grew: one read for most files.
	size := int64(512)
	if fi, err := f.Stat(); err == nil && fi.Size() > 0 {
		size = fi.Size() + 1 // the +1 finds the end without a second grow
	}
	var buf bytes.Buffer
	buf.Grow(int(min(size, 64<<20)))
	_, err = buf.ReadFrom(f)
	return buf.Bytes(), err
}

// checkFolder fails unless path is a folder itself, not a link to one, or
// does not exist yet: a store writes into its derived folder only if
// nothing there can send the writes elsewhere.
func checkFolder(fsys afero.Fs, path string) error {
	fi, err := lstat(fsys, path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return err
	case !fi.IsDir():
		return notRegular(path, fi.Mode())
	}
	return nil
}

// ctxReader and ctxReaderAt end a read of a log once ctx is done: every
// read from the file checks it, so a read stops promptly wherever it is —
// inside a row longer than any limit, in a scan for the next frame — though
// eventlog's readers know no contexts.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

type ctxReaderAt struct {
	ctx context.Context
	r   io.ReaderAt
}

func (c ctxReaderAt) ReadAt(p []byte, off int64) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.ReadAt(p, off)
}
