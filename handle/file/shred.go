package file

import (
	"github.com/sessionlog/sessionlog/handle"

	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/secrets/seal"
)

// shredConfig is what Shred was asked.
type shredConfig struct{ descendants bool }

// Shred destroys every key record of sealed session id, so that its
// content cannot be read with any identity (docs/format.md §11,
// "Shredding"): under its writer lock, the file is rewritten through a
// temp file and an atomic rename with every key record replaced by one of
// the same length that holds nothing of its key; then the key records of
// the old file are overwritten where they stood (best effort: see the
// doc), its derived data removed, and the keys this store kept
// forgotten. The session stays, unreadable: its ID, createdAt and parent
// are in clear. Sessions forked from it are refused with a
// *DependentsError unless descendants is true (children, which
// inherit nothing, are shredded with it only then). Shredding a session
// that is not sealed is refused (handle.ErrNotSealed): nothing could be
// destroyed.
func (s *Store) Shred(ctx context.Context, id string, descendants bool) (handle.ShredReport, error) {
	c := shredConfig{descendants: descendants}
	var rep handle.ShredReport
	err := s.shred(ctx, id, c, map[string]bool{}, &rep)
	return rep, err
}

func (s *Store) shred(ctx context.Context, id string, c shredConfig, visited map[string]bool, rep *handle.ShredReport) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if _, err := s.existing(ctx, id); err != nil {
		return err
	}
	if visited[id] {
		return fmt.Errorf("%w: %s is its own ancestor", handle.ErrLineage, id)
	}
	visited[id] = true
	lock, err := s.lockMarked(id)
	if err != nil {
		return err
	}
	defer lock.unlock()
	children, err := s.Children(ctx, id)
	if err != nil {
		return err
	}
	var forks []string
	for _, h := range children {
		if h.Parent.Mode == eventlog.ModeFork {
			forks = append(forks, h.ID)
		}
	}
	if len(forks) > 0 && !c.descendants {
		return &handle.DependentsError{ID: id, Dependents: forks, Op: "shred",
			Fix: "they read its rows: shred them too (ShredDescendants, logtool shred --with-children)"}
	}
	n, err := s.shredFile(ctx, id)
	if err != nil {
		return err
	}
	rep.Shredded = append(rep.Shredded, id)
	rep.Envelopes += n
	if c.descendants {
		for _, h := range children {
			if err := s.shred(ctx, h.ID, c, visited, rep); err != nil && !errors.Is(err, handle.ErrNotSealed) {
				return err
			}
		}
	}
	return nil
}

// shredFile shreds session id's file (the caller holds its writer lock)
// and returns how many key records it destroyed.
func (s *Store) shredFile(ctx context.Context, id string) (int, error) {
	loc, err := s.locate(ctx, id)
	if err != nil {
		return 0, err
	}
	old, err := s.openLog(ctx, &loc, os.O_RDWR)
	if err != nil {
		return 0, err
	}
	defer old.Close()
	if loc.sealed == nil {
		return 0, fmt.Errorf("%w: %s", handle.ErrNotSealed, loc.path)
	}
	fi, err := old.Stat()
	if err != nil {
		return 0, fmt.Errorf("handle: shred %q: %w", loc.path, err)
	}
	size := fi.Size()
	// Every key record, wherever it stands: the framing alone says (a
	// damaged tail is copied as it is, and holds no key record).
	fr, err := seal.Check(ctxReader{ctx: ctx, r: io.NewSectionReader(old, 0, size)}, loc.sealed.layout(), loc.path)
	if err != nil {
		return 0, err
	}
	type patch struct {
		off int64
		b   []byte
	}
	var patches []patch
	for _, e := range fr.Envelopes {
		if e.Shredded {
			continue
		}
		rec := make([]byte, e.Len)
		if _, err := old.ReadAt(rec, e.Offset); err != nil {
			return 0, fmt.Errorf("handle: shred %q: %w", loc.path, err)
		}
		b, err := seal.Shred(loc.sealed.layout(), rec)
		if err != nil {
			return 0, fmt.Errorf("handle: shred %q at offset %d: %w", loc.path, e.Offset, err)
		}
		patches = append(patches, patch{e.Offset, b})
	}
	// A torn tail is cut, as a writer would: it may hold a key record cut
	// short, its envelope whole.
	if fr.Torn != nil {
		size = fr.Torn.Offset
	}
	// The whole file through a temp file and an atomic rename, as every
	// rewrite: a crash leaves the old file or the shredded one.
	err = WriteFileAtomic(s.fs, loc.path, func(w io.Writer) error {
		at := int64(0)
		for _, p := range patches {
			if _, err := io.Copy(w, io.NewSectionReader(old, at, p.off-at)); err != nil {
				return err
			}
			if _, err := w.Write(p.b); err != nil {
				return err
			}
			at = p.off + int64(len(p.b))
		}
		_, err := io.Copy(w, io.NewSectionReader(old, at, size-at))
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("handle: shred %q: %w", loc.path, err)
	}
	s.keys.Forget(id)
	s.dropDerived(id)
	s.removeCopies(id, loc.path)
	// The old file is no session's any more: overwrite its key records
	// where they stood, so that its blocks do not keep them (on a file
	// system that writes in place; see the doc).
	for _, p := range patches {
		if _, err := old.WriteAt(p.b, p.off); err != nil {
			s.cfg.Logger.Warn("overwriting the old file's key records failed", "path", loc.path, "err", err)
			break
		}
	}
	if err := old.Sync(); err != nil {
		s.cfg.Logger.Warn("fsync of the old file's overwritten key records failed", "path", loc.path, "err", err)
	}
	s.cfg.Logger.Info("session shredded", "id", id, "envelopes", len(patches))
	return len(patches), nil
}

// removeCopies removes what the store keeps of session id's log beside
// it, which may hold its key records: the side files of its repairs
// (<file>.torn-N, <file>.salvaged-N) and the temp files of its
// interrupted rewrites (<ID>.jsonl[.zst].tmp). The caller holds its writer
// lock: no rewrite of it runs.
func (s *Store) removeCopies(id, path string) {
	var names []string
	for _, pat := range []string{path + ".torn-*", path + ".salvaged-*", filepath.Join(s.dir, id+".*"+tmpExt)} {
		m, _ := filepathGlob(s, pat)
		names = append(names, m...)
	}
	for _, n := range names {
		if err := s.fs.Remove(n); err != nil {
			s.cfg.Logger.Warn("removing a copy of a shredded session failed", "path", n, "err", err)
		}
	}
	if len(names) > 0 {
		syncDir(s.fs, s.dir)
	}
}
