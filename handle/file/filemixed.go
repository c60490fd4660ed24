package file

import (
	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/handle/core"
	"github.com/sessionlog/sessionlog/internal/format/logfile"

	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"iter"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/spf13/afero"
)

// createFrom is fileEngine.CreateFrom.
func (s *Store) createFrom(ctx context.Context, ns core.NewSession, events iter.Seq2[eventlog.Event, error]) (handle.Info, error) {
	hdr := ns.Header
	enc, plan, err := s.newLayout(ns)
	if err != nil {
		return handle.Info{}, err
	}
	id := hdr.ID
	path := filepath.Join(s.dir, id+enc.ext)
	if err := s.absent(ctx, id); err != nil {
		return handle.Info{}, err // before the lock: a session with a writer exists too
	}
	if err := s.makeDir(); err != nil {
		return handle.Info{}, err
	}
	lock, err := s.lockMarked(id)
	if err != nil {
		return handle.Info{}, err
	}
	defer func() {
		s.fs.Remove(s.lockPath(id)) // derived; only its holder removes it (see lockFile)
		lock.unlock()
	}()
	if err := s.absent(ctx, id); err != nil {
		return handle.Info{}, err
	}
	tmp := path + tmpExt
	_, sc, err := s.writeCopy(ctx, hdr, events, enc, plan, tmp)
	if err == nil {
		err = s.fs.Rename(tmp, path)
	}
	if err != nil {
		s.fs.Remove(tmp)
		return handle.Info{}, fmt.Errorf("handle: create %q: %w", path, err)
	}
	if err := syncDir(s.fs, s.dir); err != nil {
		// The name may not survive a power cut: take it back, so that a
		// failed CreateFrom leaves nothing that could vanish later.
		s.fs.Remove(path)
		return handle.Info{}, fmt.Errorf("handle: create %q: sync folder: %w", path, err)
	}
	s.saveWritten(ctx, location{path: path, enc: enc}, sc)
	s.cfg.Logger.Debug("session created from events", "id", id, "path", path, "encoding", enc.name, "events", sc.next-hdr.FirstSeq())
	return handle.Info{ID: id, Path: path, Encoding: enc.name, Header: hdr, SizeBytes: sc.end, Sealed: plan != nil}, nil
}

// absent returns nil when session id does not exist, else ErrExists (or
// the error that refuses what is there).
func (s *Store) absent(ctx context.Context, id string) error {
	_, err := s.locate(ctx, id)
	switch {
	case errors.Is(err, handle.ErrNotFound):
		return nil
	case errors.Is(err, ErrNotRegular):
		return err // what is there is not a session
	}
	return fmt.Errorf("%w: %s in %q", handle.ErrExists, id, s.dir)
}

// leftovers removes temp files, and derived files of sessions that keep
// does not name (gone, or not a session): fileEngine.Leftovers. It lists
// the store's folders only when a sweep is owed (sweepOwed); a real run
// then records the sweep.
func (s *Store) leftovers(before time.Time, keep func(id string) bool, dryRun bool) []string {
	owed, due := s.sweepOwed(before)
	if !due {
		return nil
	}
	start := s.cfg.Now()
	out := s.sweep(keep, dryRun)
	if !dryRun {
		s.swept(start, owed)
	}
	return out
}

// sweep is leftovers' listing of the store's folders.
func (s *Store) sweep(keep func(id string) bool, dryRun bool) []string {
	var out []string
	sweep := func(dir string, orphan func(name string) bool) {
		entries, err := afero.ReadDir(s.fs, dir)
		if err != nil {
			return
		}
		for _, e := range entries {
			if e.IsDir() || !orphan(e.Name()) {
				continue
			}
			p := filepath.Join(dir, e.Name())
			if dryRun || s.removeLeftover(p) == nil {
				out = append(out, p)
			}
		}
	}
	present := map[string]bool{}
	if entries, err := afero.ReadDir(s.fs, s.dir); err == nil {
		for _, e := range entries {
			if id, _, ok := ParseFileName(e.Name()); ok {
				present[id] = true
			}
		}
	}
	sessionGone := func(name string) bool {
		id, _, _ := strings.Cut(name, ".")
		if !eventlog.ValidID(id) {
			return false
		}
		return !present[id] || !keep(id)
	}
	sweep(s.dir, func(name string) bool {
		if _, _, ok := ParseFileName(name); ok {
			return false
		}
		if strings.HasSuffix(name, tmpExt) {
			id, _, _ := strings.Cut(name, ".")
			return !s.lockedNow(id)
		}
		return strings.HasSuffix(name, lockExt) && sessionGone(name) && !s.lockedNow(strings.TrimSuffix(name, lockExt))
	})
	sweep(filepath.Join(s.dir, cacheDir), func(name string) bool {
		return sessionGone(name) || strings.HasSuffix(name, tmpExt)
	})
	if len(out) > 0 && !dryRun {
		s.noteFolder() // the index knows the folder changed (sindexmarks.go)
	}
	return out
}

// removeLeftover removes the leftover file at path; a lock file only under
// its lock, as only a holder may remove one (see lockFile), so that a
// writer that took it after the probe keeps it.
func (s *Store) removeLeftover(path string) error {
	if !strings.HasSuffix(path, lockExt) {
		return s.fs.Remove(path)
	}
	lock, err := lockFile(s.fs, path)
	if err != nil {
		return err
	}
	defer lock.unlock()
	return s.fs.Remove(path)
}

// WriterHeld is Writing; see Store.
func (s *Store) WriterHeld(_ context.Context, id string) (bool, error) { return s.Writing(id) }

// Writing reports whether a writer (in this process or another) holds
// session id's writer lock now, without taking it: asking never makes a
// writer fail, and works where the store cannot be written. The answer may
// be stale as soon as it is given; it suits a reader deciding how to show
// a session (an open turn with no writer is an interrupted one), not
// mutual exclusion.
func (s *Store) Writing(id string) (bool, error) {
	if err := checkID(id); err != nil {
		return false, err
	}
	held, err := probeLock(s.fs, s.lockPath(id))
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil // a writer always has its lock file
	}
	return held, err
}

// lockedNow reports whether a writer holds session id (a temp file of a
// live writer or convert must not be removed). It takes nothing; when it
// cannot tell, it says locked, so nothing is removed.
func (s *Store) lockedNow(id string) bool {
	if !eventlog.ValidID(id) {
		return false
	}
	held, err := s.Writing(id)
	return held || err != nil
}

// headersIndex is the derived index of session headers in the cache
// folder: a header is read again only when its file's size or time
// changed, so tree queries over thousands of sessions read a folder
// listing and one small file. Like every derived file it carries a sum
// (see sealDerived): a damaged index is ignored and rewritten.
const headersIndex = "headers.json"

type indexedHeader struct {
	Name    string          `json:"name"`
	Size    int64           `json:"size"`
	ModTime int64           `json:"mtime"` // UnixNano
	Header  eventlog.Header `json:"header"`
}

// headers returns the ID, path and header of every session in the store
// (fileEngine.Headers), from the index where the file did not change.
func (s *Store) headers(ctx context.Context) ([]handle.Info, error) {
	entries, err := afero.ReadDir(s.fs, s.dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("handle: list %q: %w", s.dir, err)
	}
	idxPath := filepath.Join(s.dir, cacheDir, headersIndex)
	old := map[string]indexedHeader{}
	if b, err := readRegular(s.fs, idxPath); err == nil {
		var list []indexedHeader
		if data, ok := openDerived(b); ok && json.Unmarshal(data, &list) == nil {
			for _, ih := range list {
				old[ih.Name] = ih
			}
		}
	}
	var out []handle.Info
	var fresh []indexedHeader
	changed := false
	seen := map[string]bool{}
	for _, e := range entries {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		id, enc, ok := ParseFileName(e.Name())
		if !ok || !e.Mode().IsRegular() || seen[id] {
			continue // List and Open report what is not a regular file
		}
		seen[id] = true
		ih, ok := old[e.Name()]
		if !ok || ih.Size != e.Size() || ih.ModTime != e.ModTime().UnixNano() {
			encd, err := s.encodingNamed(enc)
			var hdr eventlog.Header
			if err == nil {
				hdr, err = s.readHeaderAt(location{path: filepath.Join(s.dir, e.Name()), enc: encd})
			}
			switch {
			case errors.Is(err, fs.ErrNotExist), errors.Is(err, eventlog.ErrCorrupt), errors.Is(err, eventlog.ErrVersion), errors.Is(err, ErrNotRegular):
				continue // deleted meanwhile, or broken: List and Open report it
			case err != nil:
				// An I/O error says nothing about the header: skipping
				// it would hide a fork from Delete, which would then
				// delete its parent.
				return nil, fmt.Errorf("handle: reading the header of %q: %w", e.Name(), err)
			}
			ih, changed = indexedHeader{Name: e.Name(), Size: e.Size(), ModTime: e.ModTime().UnixNano(), Header: hdr}, true
		}
		fresh = append(fresh, ih)
		out = append(out, handle.Info{ID: ih.Header.ID, Path: filepath.Join(s.dir, e.Name()), Header: ih.Header})
	}
	if changed || len(fresh) != len(old) {
		if b, err := json.Marshal(fresh); err == nil {
			s.writeDerived(idxPath, b) // derived: a failure costs a re-read next time
		}
	}
	return out, nil
}

// readHeaderAt reads the header of the log at loc.
func (s *Store) readHeaderAt(loc location) (eventlog.Header, error) {
	enc, path := loc.enc, loc.path
	f, err := s.openLog(context.Background(), &loc, os.O_RDONLY)
	if err != nil {
		return eventlog.Header{}, err
	}
	defer f.Close()
	if sf := loc.sealed; sf != nil {
		// What a sealed file shows in clear (its labels are sealed): the
		// index keeps no label of it, and the tree, its lineage, needs
		// none.
		c := sf.head.Clear
		return eventlog.Header{Format: eventlog.FormatName, Version: eventlog.Version, ID: c.ID, CreatedAt: c.CreatedAt, Parent: c.Parent}, nil
	}
	if enc.z == nil {
		h, _, err := logfile.ReadHeader(f, path)
		return h, err
	}
	fi, err := f.Stat()
	if err != nil {
		return eventlog.Header{}, err
	}
	t, err := logfile.ReadZstdTail(f, fi.Size(), enc.z, path)
	return t.Header, err
}
