package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/handle/file"
	"github.com/sessionlog/sessionlog/internal/app/chatview"
	"github.com/sessionlog/sessionlog/ops/inspect"
)

// File name endings of the two encodings (docs/format.md §2).
const (
	rawExt  = ".jsonl"
	zstdExt = ".jsonl.zst"
)

// session is what a SESSION argument names: a session of a store (an ID
// in --dir or --store, or a file named <ID>.jsonl[.zst] in a store's
// folder), or a freely named (exported) log file.
type session struct {
	path string
	id   string       // "" for a freely named file
	st   handle.Store // the store holding the session; nil for a freely named file
	// log is how the read-side operations (package inspect) reach it.
	log inspect.Log
	// file is the file store of path's folder when the argument was a
	// path (logtool made it; a freely named file is read through it), nil
	// for a session named in the store.
	file *file.Store
}

// resolve turns a SESSION argument into a session (docs/cli.md): a path to a
// log file (isPath), or else a name of a session in the store (--dir, or
// --store): its ID, the start of its ID, or a label query k=v
// (handle.Resolve).
func (a *app) resolve(arg string) (session, error) {
	if arg == "" {
		return session{}, usageErrorf("empty SESSION")
	}
	if a.isPath(arg) {
		return a.resolvePath(arg)
	}
	if labels, prefix := handle.ParseName(arg); labels == nil && !prefix {
		return session{}, a.nameError(arg, a.where(), handle.ErrInvalidID) // before the store: a typo, not a missing --dir
	}
	st, err := a.sessions(a.ctx)
	if err != nil {
		return session{}, err
	}
	info, err := st.Resolve(a.ctx, arg)
	if err != nil && !namedDamaged(info, err) {
		return session{id: info.ID}, a.nameError(arg, a.where(), err)
	}
	path := info.Path
	if path == "" { // a damaged session: where its file is, if it is one
		if files, ok := st.(interface {
			Path(id string) (string, error)
		}); ok {
			path, _ = files.Path(info.ID)
		}
	}
	return session{path: path, id: info.ID, st: st, log: inspect.InStore(st, info.ID)}, nil
}

// namedDamaged reports whether Resolve's error err is about the log of the
// one session it found (info.ID: corrupt, stored twice, not a regular
// file, sealed with no key…) rather than about the name. Such a name has
// resolved: judging the log is the command's job (verify reports it,
// repair mends it, cat shows what precedes the damage), so no command
// hides a damaged log behind a resolution error.
func namedDamaged(info handle.Info, err error) bool {
	return info.ID != "" && !errors.Is(err, handle.ErrNotFound) && !errors.Is(err, handle.ErrUnavailable) &&
		!errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded)
}

// maxCandidates is how many sessions an ambiguous name lists.
const maxCandidates = 10

// nameError says what went wrong with the session name arg: the
// candidates of an ambiguous one, where (the store) a missing one was
// looked for.
func (a *app) nameError(arg, where string, err error) error {
	var amb *handle.AmbiguousError
	switch {
	case errors.As(err, &amb):
		now := a.now()
		var lines []string
		for i, c := range amb.Candidates {
			if i == maxCandidates {
				lines = append(lines, fmt.Sprintf("… and %d more (logtool ls lists them)", len(amb.Candidates)-i))
				break
			}
			if c.Path == "" {
				lines = append(lines, c.ID+"  (cannot be read)")
				continue
			}
			lines = append(lines, fmt.Sprintf("%s  %s  %s", c.ID, chatview.Ago(now, c.LastActive()), shortDesc(c)))
		}
		return &exitError{code: exitUsage, err: fmt.Errorf("%q names %d sessions: give more of the ID, or a label query k=v that one session has",
			arg, len(amb.Candidates)), more: lines}
	case errors.Is(err, handle.ErrInvalidID):
		return usageErrorf("%q is neither a log file, a session ID (or the start of one), nor a label query k=v", arg)
	case errors.Is(err, handle.ErrNotFound):
		return fmt.Errorf("%w (looked in %s; a session elsewhere: --dir D or --store URL)", err, where)
	}
	return err
}

// isPath reports whether a SESSION argument is a path to a log file: it
// ends in .jsonl or .jsonl.zst, names an existing file, or holds a path
// separator and is no label query (cwd=/src/app is one).
func (a *app) isPath(arg string) bool {
	if strings.HasSuffix(arg, rawExt) || strings.HasSuffix(arg, zstdExt) {
		return true
	}
	if fi, err := a.fs.Stat(arg); err == nil && fi.Mode().IsRegular() {
		return true
	}
	if labels, _ := handle.ParseName(arg); labels != nil && !strings.ContainsAny(arg[:1], "./~") {
		return false
	}
	return strings.ContainsRune(arg, '/') || strings.ContainsRune(arg, filepath.Separator)
}

func (a *app) resolvePath(path string) (session, error) {
	fi, err := a.fs.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return session{}, fmt.Errorf("%w: no log file %q", handle.ErrNotFound, path)
	case err != nil:
		return session{}, fmt.Errorf("%q: %w", path, err)
	case fi.IsDir():
		return session{}, usageErrorf("%q is a folder, not a log file", path)
	}
	files := a.fileStore(filepath.Dir(path))
	l := inspect.File(files, path)
	return session{path: path, id: l.ID(), st: l.Store(), log: l, file: files}, nil
}

// openLog opens s for reading: a read-only handle, which checks the whole
// log first.
func (a *app) openLog(ctx context.Context, s session) (handle.Handle, error) {
	return s.log.Open(ctx)
}

// openArg resolves a SESSION argument and opens it for reading.
func (a *app) openArg(ctx context.Context, arg string) (session, handle.Handle, error) {
	s, err := a.resolve(arg)
	if err != nil {
		return s, nil, err
	}
	h, err := a.openLog(ctx, s)
	return s, h, err
}

// reportTorn notes on stderr a torn tail the open found (docs/format.md §9: dropped
// and reported, never an error), saying what becomes of it.
func (a *app) reportTorn(h handle.Handle, fate string) {
	a.noteTorn(h.Path(), h.Torn(), fate)
}

// noteTorn notes on stderr the torn tail t of the log at path, if any.
func (a *app) noteTorn(path string, t *eventlog.TornTail, fate string) {
	if t != nil {
		fmt.Fprintf(a.stderr, "logtool: %s ends in a torn tail of %s at offset %d (an unacknowledged write, or one in progress): %s\n",
			path, plural(t.Bytes, "byte"), t.Offset, fate)
	}
}

// stat describes s without reading its whole log.
func (a *app) stat(ctx context.Context, s session) (handle.Info, error) {
	return s.log.Stat(ctx)
}

// fileSession resolves arg for an operation only some stores can do
// (convert: handle.Converter, repair: handle.Repairer): a session of a
// store, or a file named <ID>.jsonl[.zst] in a store's folder, and its
// store as the capability T. On a store without it, it refuses before
// looking the session up.
func fileSession[T any](ctx context.Context, a *app, arg, cmd string) (session, T, error) {
	var none T
	if !a.isPath(arg) {
		st, err := a.sessions(ctx)
		if err != nil {
			return session{}, none, err
		}
		if _, ok := st.(T); !ok {
			return session{}, none, usageErrorf("%s works on a folder store only, not on %s (docs/distributed.md)", cmd, a.location())
		}
	}
	s, err := a.resolve(arg)
	if err != nil {
		return session{}, none, err
	}
	c, ok := s.st.(T)
	if !ok || s.id == "" {
		return session{}, none, usageErrorf("%q: %s works on a session of a store, a file named <ID>.jsonl or <ID>.jsonl.zst", s.path, cmd)
	}
	return s, c, nil
}
