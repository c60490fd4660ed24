package handle

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"strings"
	"time"

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
func collectIndexed(ctx context.Context, c *Core, ix Index, before time.Time, dryRun bool) (GCReport, error) {
	var rep GCReport
	olds, forks, err := ix.Older(ctx, before.UnixMilli())
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
