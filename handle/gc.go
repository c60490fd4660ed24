package handle

import (
	"cmp"
	"context"
	"errors"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/afero"

	"github.com/sessionlog/sessionlog/eventlog"
)

// GCReport says what GC removed (or, in a dry run, would remove).
type GCReport struct {
	// Deleted lists the sessions removed, oldest activity first.
	Deleted []string `json:"deleted"`
	// Kept lists old sessions kept because a newer fork depends on them,
	// or because a writer holds them.
	Kept []string `json:"kept"`
	// Leftovers lists derived and temporary files removed: temp files of
	// interrupted writes, caches of sessions that are gone.
	Leftovers []string `json:"leftovers"`
}

// GC deletes the sessions whose last activity (the time of their last
// event, or their creation) is older than before, except those that a
// session being kept forks from; then it removes leftovers: temp files and
// derived files of sessions that are gone. With dryRun it only reports.
// A session a writer holds is kept.
func (s *FileStore) GC(ctx context.Context, before time.Time, dryRun bool) (GCReport, error) {
	return s.core.GC(ctx, before, dryRun)
}

// collect deletes the sessions of st whose last activity (the time of
// their last event, or their creation) is older than before, except those
// a writer holds and those that a session being kept forks from: the
// session part of GC. With dryRun it deletes nothing and reports what a
// real run would do: both runs take the same decisions (see collectOne).
// It also returns the last activity of every session listed, by ID.
func collect(ctx context.Context, st Store, before time.Time, dryRun bool) (GCReport, map[string]int64, error) {
	var rep GCReport
	infos, err := st.List(ctx, SkipBroken(func(string, error) {}))
	if err != nil {
		return rep, nil, err
	}
	cutoff := before.UnixMilli()
	old := map[string]bool{}
	parentOf := map[string]string{}
	last := map[string]int64{}
	for _, in := range infos {
		t := in.LastActive()
		last[in.ID] = t
		if t < cutoff {
			old[in.ID] = true
		}
		if p := in.Header.Parent; p != nil && p.Mode == eventlog.ModeFork {
			parentOf[in.ID] = p.ID
		}
	}
	// Keep every ancestor of a session that is kept.
	keep := map[string]bool{}
	for id := range last {
		if old[id] {
			continue
		}
		for p, n := parentOf[id], 0; p != "" && n < maxForkDepth; p, n = parentOf[p], n+1 {
			keep[p] = true
		}
	}
	var victims []string
	for id := range old {
		if keep[id] {
			rep.Kept = append(rep.Kept, id)
		} else {
			victims = append(victims, id)
		}
	}
	// Forks before their parents, then oldest activity first.
	depth := func(id string) int {
		n := 0
		for p := parentOf[id]; p != "" && n < maxForkDepth; p = parentOf[p] {
			n++
		}
		return n
	}
	slices.SortFunc(victims, func(a, b string) int {
		return cmp.Or(cmp.Compare(depth(b), depth(a)), cmp.Compare(last[a], last[b]), strings.Compare(a, b))
	})
	gone := map[string]bool{}
	for _, id := range victims {
		if err := ctx.Err(); err != nil {
			return rep, last, err
		}
		fate, err := collectOne(ctx, st, id, gone, dryRun)
		if err != nil {
			return rep, last, err
		}
		switch fate {
		case collected:
			rep.Deleted = append(rep.Deleted, id)
		case kept:
			rep.Kept = append(rep.Kept, id)
		}
	}
	slices.Sort(rep.Kept)
	return rep, last, nil
}

// collectIndexed is collect on a store with an index: it reads only the
// sessions last active before before, and the forks of each. An old
// session is kept when a fork of it, or of a fork of it…, is not old.
func collectIndexed(ctx context.Context, c *storeCore, ix indexer, before time.Time, dryRun bool) (GCReport, error) {
	var rep GCReport
	olds, forks, err := ix.indexOlder(ctx, before.UnixMilli())
	if err != nil {
		return rep, err
	}
	old := map[string]Info{}
	for _, in := range olds {
		old[in.ID] = in
	}
	// needed reports whether a fork below id is not old.
	memo := map[string]bool{}
	var needed func(id string, depth int) (bool, error)
	needed = func(id string, depth int) (bool, error) {
		if v, ok := memo[id]; ok || depth > maxForkDepth {
			return v, nil
		}
		memo[id] = false // a loop keeps nothing
		for _, d := range forks[id] {
			if _, isOld := old[d]; !isOld {
				memo[id] = true
				return true, nil
			}
			if n, err := needed(d, depth+1); err != nil || n {
				memo[id] = n
				return n, err
			}
		}
		return false, nil
	}
	var victims []string
	for id := range old {
		n, err := needed(id, 0)
		if err != nil {
			return rep, err
		}
		if n {
			rep.Kept = append(rep.Kept, id)
		} else {
			victims = append(victims, id)
		}
	}
	depth := func(id string) int {
		n := 0
		for in, ok := old[id]; ok && in.Header.Parent != nil && in.Header.Parent.Mode == eventlog.ModeFork && n < maxForkDepth; in, ok = old[in.Header.Parent.ID] {
			n++
		}
		return n
	}
	slices.SortFunc(victims, func(a, b string) int {
		return cmp.Or(cmp.Compare(depth(b), depth(a)), cmp.Compare(old[a].LastActive(), old[b].LastActive()), strings.Compare(a, b))
	})
	gone := map[string]bool{}
	for _, id := range victims {
		if err := ctx.Err(); err != nil {
			return rep, err
		}
		fate, err := collectOne(ctx, c, id, gone, dryRun)
		if err != nil {
			return rep, err
		}
		switch fate {
		case collected:
			rep.Deleted = append(rep.Deleted, id)
		case kept:
			rep.Kept = append(rep.Kept, id)
		}
	}
	slices.Sort(rep.Kept)
	return rep, nil
}

// fate is what became of an old session.
type fate int

const (
	collected fate = iota // deleted (or, in a dry run, would be)
	kept                  // a writer holds it, or a fork that stays depends on it
	vanished              // deleted by someone else meanwhile
)

// collectOne deletes the old session id unless a writer holds it or a
// fork that is not going (not in gone) depends on it; gone gains it. It is
// the one decision of a real run and a dry run alike, so that a dry run
// says exactly what gc does: the real run leaves both checks to the
// store's Delete, which makes them under the session's writer lock (or
// lease), so that a writer opening meanwhile wins; the dry run asks the
// same two questions without taking anything (a dry run must not make a
// writer's open fail) and removes nothing.
func collectOne(ctx context.Context, st Store, id string, gone map[string]bool, dryRun bool) (fate, error) {
	if dryRun {
		held, err := st.WriterHeld(ctx, id)
		if err != nil || held {
			return kept, err
		}
		deps, err := st.Dependents(ctx, id)
		if err != nil {
			return kept, err
		}
		if slices.ContainsFunc(deps, func(d string) bool { return !gone[d] }) {
			return kept, nil
		}
	} else {
		// The forks already collected are deleted: Delete refuses only
		// for those that stay.
		err := st.Delete(ctx, id)
		switch {
		case errors.Is(err, ErrLocked), errors.Is(err, ErrHasDependents):
			return kept, nil
		case errors.Is(err, ErrNotFound):
			return vanished, nil
		case err != nil:
			return kept, err
		}
	}
	gone[id] = true
	return collected, nil
}

// leftovers removes temp files, and derived files of sessions that keep
// does not name (gone, or not a session): fileEngine.Leftovers.
func (s *FileStore) leftovers(keep func(id string) bool, dryRun bool) []string {
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
func (s *FileStore) removeLeftover(path string) error {
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
func (s *FileStore) WriterHeld(_ context.Context, id string) (bool, error) { return s.Writing(id) }

// Dependents returns the forks whose parent is id, sorted; see Store.
func (s *FileStore) Dependents(ctx context.Context, id string) ([]string, error) {
	return s.core.Dependents(ctx, id)
}

// Writing reports whether a writer (in this process or another) holds
// session id's writer lock now, without taking it: asking never makes a
// writer fail, and works where the store cannot be written. The answer may
// be stale as soon as it is given; it suits a reader deciding how to show
// a session (an open turn with no writer is an interrupted one), not
// mutual exclusion.
func (s *FileStore) Writing(id string) (bool, error) {
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
func (s *FileStore) lockedNow(id string) bool {
	if !eventlog.ValidID(id) {
		return false
	}
	held, err := s.Writing(id)
	return held || err != nil
}
