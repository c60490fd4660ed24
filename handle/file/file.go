package file

import (
	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/handle/core"

	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/secrets/seal"
	"github.com/spf13/afero"
)

// ParseFileName reads a store file name: <ID>.jsonl (raw) or
// <ID>.jsonl.zst (zstd). ok is false for any other name.
func ParseFileName(name string) (id, encoding string, ok bool) {
	if id, found := strings.CutSuffix(name, zstExt); found && checkID(id) == nil {
		return id, handle.EncodingZstd, true
	}
	if id, found := strings.CutSuffix(name, rawExt); found && checkID(id) == nil {
		return id, handle.EncodingRaw, true
	}
	return "", "", false
}

// EncodingOfPath tells a log file's encoding from its name: zstd for a
// name ending in .zst, raw otherwise.
func EncodingOfPath(path string) string {
	if strings.HasSuffix(path, ".zst") {
		return handle.EncodingZstd
	}
	return handle.EncodingRaw
}

// pathLocation checks a log file named by path, anywhere (an exported file
// may be named freely), and returns where it is and the ID its name
// promises, if any.
func (s *Store) pathLocation(path string) (location, string, error) {
	enc, err := s.encodingNamed(EncodingOfPath(path))
	if err != nil {
		return location{}, "", err
	}
	// A file named like a session is one, and only a regular file, not a
	// link, may be; a freely named file (an export) may be a link to one.
	id, _, _ := ParseFileName(filepath.Base(path))
	stat := lstat
	if id == "" {
		stat = afero.Fs.Stat
	}
	fi, err := stat(s.fs, path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return location{}, "", fmt.Errorf("%w: no log file %q", handle.ErrNotFound, path)
	case err != nil:
		return location{}, "", fmt.Errorf("handle: %q: %w", path, err)
	case !fi.Mode().IsRegular():
		return location{}, "", notRegular(path, fi.Mode())
	}
	return location{path: path, enc: enc, follow: id == ""}, id, nil
}

// openLog opens the log file at loc with flag: a regular file only, a
// link followed only for a freely named file (see openRegular). It tells
// a sealed log by its first bytes and sets loc.sealed (see sniff): every
// reader of the file is made from loc.
func (s *Store) openLog(ctx context.Context, loc *location, flag int) (afero.File, error) {
	f, err := openRegular(s.fs, loc.path, flag, loc.follow)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, ErrNotRegular) {
			err = fmt.Errorf("handle: open %q: %w", loc.path, err)
		}
		return f, err
	}
	loc.sealed = nil
	if err := s.sniff(ctx, loc, f); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// OpenPath opens a read-only handle on the log file at path, which need not
// be in the store's folder nor be named after its session (an exported
// file, say); its encoding is told by its name (EncodingOfPath). When the
// name is <ID>.jsonl[.zst], the header's ID must match it. Like Open, it
// checks the whole log (a file outside the store's folder has no checked
// record: it is always read in full).
func (s *Store) OpenPath(ctx context.Context, path string) (handle.Handle, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	loc, nameID, err := s.pathLocation(path)
	if err != nil {
		return nil, err
	}
	f, err := s.openLog(ctx, &loc, os.O_RDONLY)
	if err != nil {
		return nil, err
	}
	sc, err := s.checkLog(ctx, loc, f, s.storeID(path, nameID), nameID, false)
	if err != nil {
		f.Close()
		return nil, err
	}
	return core.NewHandle(s.handle(newFileBackend(s, loc, sc.hdr, f, nil, sc.end, sc.next, sc.index), sc.torn)), nil
}

// StatPath describes the log file at path, as Stat does for a session of
// the store.
func (s *Store) StatPath(ctx context.Context, path string) (handle.Info, error) {
	if err := ctx.Err(); err != nil {
		return handle.Info{}, err
	}
	loc, _, err := s.pathLocation(path)
	if err != nil {
		return handle.Info{}, err
	}
	info, err := s.statPath(ctx, "", loc)
	if err == nil {
		info.ID = info.Header.ID
	}
	return info, err
}

// CheckResult is what CheckPath found in a log file.
type CheckResult struct {
	// Header is the log's header; zero when it could not be read.
	Header eventlog.Header
	// Events is how many of the file's own events were read intact
	// (before the damage, when there is some).
	Events int64
	// Torn is the torn tail the file ends in, or nil.
	Torn *eventlog.TornTail
	// Err is what stopped the read: a *CorruptError, a *VersionError, an
	// error of fn, an I/O error, a *seal.KeyError; nil for a clean (or
	// only torn) log.
	Err error
	// Framing is, for a sealed log the store could not read for want of
	// a key (Err wraps seal.ErrNoKey), what a check of its framing alone
	// found sound: its records and key records (a damaged framing is Err
	// itself). Header then holds what the file shows in clear.
	Framing *seal.Framing
}

// CheckPath reads the whole log file at path (anywhere, named freely; the
// encoding is told by the name, and a <ID>.jsonl[.zst] name must match the
// header's ID) and reports what it holds, going as far as the first
// damage. fn, when not nil, sees every event in order and may stop the
// read by returning an error (a verifier of digests, say). A sealed log
// the store holds no key of has its framing checked alone (Framing).
func (s *Store) CheckPath(ctx context.Context, path string, fn func(eventlog.Event) error) (res CheckResult) {
	loc, nameID, err := s.pathLocation(path)
	if err != nil {
		res.Err = err
		return res
	}
	f, err := s.openLog(ctx, &loc, os.O_RDONLY)
	if err != nil {
		res.Err = err
		return res
	}
	defer f.Close()
	r := loc.reader(ctx, f, readOpts{})
	defer s.checkFraming(ctx, loc, f, &res) // res is the result: named
	if res.Header, res.Err = r.Header(); res.Err != nil {
		return res
	}
	if nameID != "" && res.Header.ID != nameID {
		res.Err = &eventlog.CorruptError{Path: path, Seq: -1, Reason: fmt.Sprintf("header id %s does not match the file name", res.Header.ID), Fix: idMismatchFix}
		return res
	}
	first := res.Header.FirstSeq()
	for n := 1; ; n++ {
		if n%4096 == 0 {
			if res.Err = ctx.Err(); res.Err != nil {
				return res
			}
		}
		if fn == nil {
			if !r.SkipRow() {
				break
			}
			continue
		}
		if !r.Next() {
			break
		}
		if res.Err = fn(r.Event()); res.Err != nil {
			res.Events = r.Event().Seq - first
			return res
		}
	}
	res.Events, res.Torn, res.Err = r.NextSeq()-first, r.Torn(), r.Err()
	if res.Err == nil && res.Torn != nil {
		// Judged as an open judges it; a read again that finds more
		// (a writer completed its flush meanwhile) leaves this one's
		// answer standing.
		sc := scanResult{next: r.NextSeq(), torn: res.Torn}
		if _, err := s.judgeTorn(ctx, s.storeID(path, nameID), loc, f, sc); err != nil {
			res.Err, res.Torn = err, nil
		}
	}
	return res
}

// checkFraming completes res, the check of the sealed log f at loc whose
// content could not be read for want of a key: its framing is checked
// alone (docs/format.md §11: what can be checked without a key).
func (s *Store) checkFraming(ctx context.Context, loc location, f afero.File, res *CheckResult) {
	if loc.sealed == nil || !errors.Is(res.Err, seal.ErrNoKey) {
		return
	}
	fr, err := seal.Check(ctxReader{ctx: ctx, r: io.NewSectionReader(f, 0, 1<<62)}, loc.sealed.layout(), loc.path)
	if err != nil {
		res.Err = err
		return
	}
	c := fr.Header
	res.Header = eventlog.Header{Format: eventlog.FormatName, Version: eventlog.Version, ID: c.ID, CreatedAt: c.CreatedAt, Parent: c.Parent}
	res.Framing, res.Torn, res.Events = &fr, fr.Torn, 0
}

func filepathGlob(s *Store, pattern string) ([]string, error) { return afero.Glob(s.fs, pattern) }

// positional serialises the positional I/O of a file that is not an OS
// file: afero's memory files implement ReadAt and WriteAt by moving one
// shared offset, so concurrent readers and a writer would race on it.
type positional struct {
	afero.File
	mu sync.Mutex
}

func (p *positional) ReadAt(b []byte, off int64) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.File.ReadAt(b, off)
}

func (p *positional) WriteAt(b []byte, off int64) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.File.WriteAt(b, off)
}

func (p *positional) Truncate(size int64) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.File.Truncate(size)
}

// guardFile returns f, wrapped in positional unless it is an OS file
// (whose pread and pwrite are safe for concurrent use).
func guardFile(f afero.File) afero.File {
	if _, ok := f.(interface{ Fd() uintptr }); ok {
		return f
	}
	return &positional{File: f}
}

// idMismatchFix is the fix named when a file's header holds another ID
// than its name.
const idMismatchFix = "the file holds another session than its name says: name it after its header's id, or restore it from a copy"

// checkID returns an error wrapping handle.ErrInvalidID unless id is an
// upper-case ULID: no path is built from other text.
func checkID(id string) error {
	if !eventlog.ValidID(id) {
		return fmt.Errorf("%w: %q (want 26 upper-case Crockford base32 characters)", handle.ErrInvalidID, id)
	}
	return nil
}

// ErrDisplaced: the session's path no longer names the write handle's log
// file — it was unlinked, renamed or replaced under its writer — so what
// the handle writes would not be found by a later open of the session. The
// writer finds it at every flush, before acknowledging it, and is poisoned
// (a *PoisonedError wrapping it): it acknowledges nothing more.
var ErrDisplaced = errors.New("handle: the log file is no longer at the session's path")

// ErrDuplicate: a session exists in both encodings with different logical
// logs (docs/format.md §2); the store refuses it rather than guess.
var ErrDuplicate = errors.New("handle: session stored twice with different logs")
