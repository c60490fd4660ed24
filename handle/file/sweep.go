package file

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// GC's sweep of leftovers (docs/design.md, "The session index") lists the
// store's folders, whose size grows with the store, so GC makes it only
// when something can have left a leftover it has not swept:
//
//   - a change cut short: an open or a fold found a pre mark without its
//     post and the session's lock free (a process killed holding it);
//   - a rebuilt index: the snapshot was missing, damaged or older than the
//     folder (files added or removed by hand);
//   - time: the last sweep is older than GC's cutoff (a temp file of
//     derived data, written under no mark, is then old enough to go).
//
// The first two leave an "owed" file in the marks folder before the
// evidence is gone (the pre resolved, the snapshot written); a sweep
// removes those it saw before it listed, and records when it started in
// .cache/swept.
const (
	sweptName = "swept"
	owedKind  = "owed"
)

// oweSweep records that GC owes a sweep. An error means it is not
// recorded: the caller keeps the evidence.
func (s *Store) oweSweep() error {
	if !s.cacheUsable() {
		return errors.New("handle: cache folder not usable")
	}
	name := markName(folderMark, randomNonce(), owedKind)
	p := filepath.Join(s.marksDir(), name)
	f, err := openRegular(s.fs, p, os.O_CREATE|os.O_EXCL|os.O_WRONLY, false)
	if errors.Is(err, fs.ErrNotExist) {
		if err = s.fs.MkdirAll(s.marksDir(), 0o700); err == nil {
			f, err = openRegular(s.fs, p, os.O_CREATE|os.O_EXCL|os.O_WRONLY, false)
		}
	}
	if err != nil {
		return err
	}
	return f.Close()
}

// sweepOwed returns the owed files and whether a sweep is due for a GC
// with cutoff before.
func (s *Store) sweepOwed(before time.Time) (owed []string, due bool) {
	f, err := s.fs.Open(s.marksDir())
	if err == nil {
		names, rerr := f.Readdirnames(-1)
		f.Close()
		if rerr != nil {
			return nil, true
		}
		for _, nm := range names {
			if id, _, kind, ok := splitMark(nm); ok && id == folderMark && kind == owedKind {
				owed = append(owed, nm)
			}
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, true
	}
	b, err := readRegular(s.fs, filepath.Join(s.dir, cacheDir, sweptName))
	if err != nil {
		return owed, true
	}
	last, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil || last > s.cfg.Now().UnixMilli() {
		return owed, true
	}
	return owed, len(owed) > 0 || last < before.UnixMilli()
}

// swept records a sweep that started at start, and removes the owed
// files it was made for (best effort: left, they owe one sweep more).
func (s *Store) swept(start time.Time, owed []string) {
	if !s.cacheUsable() {
		return
	}
	p := filepath.Join(s.dir, cacheDir, sweptName)
	if replaceFile(s.fs, p, strconv.FormatInt(time.Now().UnixNano(), 10), []byte(strconv.FormatInt(start.UnixMilli(), 10)+"\n")) != nil {
		return
	}
	for _, nm := range owed {
		s.fs.Remove(filepath.Join(s.marksDir(), nm))
	}
}

// splitMark splits a name of the marks folder, <ID>.<nonce>.<kind>.
func splitMark(name string) (id, nonce, kind string, ok bool) {
	parts := strings.Split(name, ".")
	if len(parts) != 3 || parts[1] == "" {
		return "", "", "", false
	}
	return parts[0], parts[1], parts[2], true
}
