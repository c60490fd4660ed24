package core

import (
	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/handle/internal/lineage"

	"cmp"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/oklog/ulid/v2"
	"github.com/sessionlog/sessionlog/eventlog"
)

// holdsWords says what a log whose last seq is last holds, for messages:
// "holds no events" rather than "0..-1".
func holdsWords(last int64) string {
	switch {
	case last < 0:
		return "holds no events"
	case last == 0:
		return "holds only seq 0"
	}
	return fmt.Sprintf("holds seqs 0 to %d", last)
}

// openOrCreate is Store.OpenOrCreate over s.
func openOrCreate(ctx context.Context, s handle.Store, labels map[string]string, opts []handle.Option) (h handle.Handle, created bool, err error) {
	id, err := handle.LabelID(labels)
	if err != nil {
		return nil, false, err
	}
	for range 2 {
		h, err = s.Open(ctx, id, handle.ReadWrite)
		switch {
		case err == nil:
			if got := h.Header().Labels; !maps.Equal(got, labels) {
				h.Close()
				return nil, false, fmt.Errorf("%w: %s, the ID labels %v name, has labels %v", handle.ErrExists, id, labels, got)
			}
			return h, false, nil
		case !errors.Is(err, handle.ErrNotFound):
			return nil, false, err
		}
		h, err = s.Create(ctx, append(slices.Clip(opts), handle.WithID(id), handle.WithLabels(labels))...)
		if !errors.Is(err, handle.ErrExists) {
			return h, err == nil, err
		}
		// Another process created it between the open and the create:
		// open it (its writer lock says whether it may be written).
	}
	return nil, false, err
}

// tooDeep is the error of a chain of more than maxForkDepth forks, met
// at the fork at path, whose parent is p.
func tooDeep(path string, p eventlog.Parent) error {
	return &handle.LineageError{Path: path, Parent: p.ID, Seq: p.Seq, Reason: fmt.Sprintf("more than %d forks in a chain (a cycle?)", lineage.MaxDepth)}
}

// brokenLineage is the error lineage.Read reports for the fork at path
// whose parent p cannot give what it must.
func brokenLineage(path string, p eventlog.Parent, reason string) error {
	return &handle.LineageError{Path: path, Parent: p.ID, Seq: p.Seq, Reason: reason}
}

// resolve is Store.Resolve over st.
func resolve(ctx context.Context, st handle.Store, name string) (handle.Info, error) {
	labels, isPrefix := handle.ParseName(name)
	if labels != nil {
		infos, err := st.List(ctx, handle.SkipBroken(func(string, error) {}), handle.WithLabels(labels))
		if err != nil {
			return handle.Info{}, err
		}
		return only(name, infos, fmt.Errorf("%w: no session has the labels %s", handle.ErrNotFound, describeQuery(labels)))
	}
	if !isPrefix {
		return handle.Info{}, fmt.Errorf("%w: %q is neither a session ID, the start of one, nor a label query k=v", handle.ErrInvalidID, name)
	}
	prefix := strings.ToUpper(name)
	if len(prefix) == 26 {
		return stat(ctx, st, prefix)
	}
	var broken []handle.Info
	infos, err := st.List(ctx, handle.WithID(prefix), handle.SkipBroken(func(id string, _ error) {
		if strings.HasPrefix(id, prefix) {
			broken = append(broken, handle.Info{ID: id, LastSeq: -1})
		}
	}))
	if err != nil {
		return handle.Info{}, err
	}
	var fit []handle.Info
	for _, in := range infos {
		if strings.HasPrefix(in.ID, prefix) {
			fit = append(fit, in)
		}
	}
	fit = append(fit, broken...)
	info, err := only(name, fit, fmt.Errorf("%w: no session ID starts with %s", handle.ErrNotFound, prefix))
	if err == nil && info.Path == "" {
		return stat(ctx, st, info.ID) // a broken one: its own error
	}
	return info, err
}

// stat is st.Stat that keeps the ID in the Info it returns with an error.
func stat(ctx context.Context, st handle.Store, id string) (handle.Info, error) {
	info, err := st.Stat(ctx, id)
	if err != nil {
		return handle.Info{ID: id, LastSeq: -1}, err
	}
	return info, nil
}

// only returns the one session of fit, else the ambiguity or none.
func only(name string, fit []handle.Info, none error) (handle.Info, error) {
	switch len(fit) {
	case 0:
		return handle.Info{}, none
	case 1:
		return fit[0], nil
	}
	slices.SortFunc(fit, func(a, b handle.Info) int {
		return cmp.Or(cmp.Compare(b.LastActive(), a.LastActive()), strings.Compare(a.ID, b.ID))
	})
	return handle.Info{}, &handle.AmbiguousError{Name: name, Candidates: fit}
}

// describeQuery writes labels as the query k=v,… in key order.
func describeQuery(labels map[string]string) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		parts = append(parts, k+"="+labels[k])
	}
	return strings.Join(parts, ",")
}

// treeOf arranges sessions (a store's headers) as a forest by the
// parents their headers name: roots (sessions without a parent, or
// whose parent is not among infos) oldest first, each with its forks and
// children, oldest first. Sessions whose chain of parents loops hang
// under no root. Only ID, Path and Header of each Info are used.
func treeOf(infos []handle.Info) []*handle.Node {
	nodes := make(map[string]*handle.Node, len(infos))
	for _, in := range infos {
		nodes[in.Header.ID] = &handle.Node{Header: in.Header, Path: in.Path}
	}
	var roots []*handle.Node
	for _, in := range infos {
		n := nodes[in.Header.ID]
		if p := in.Header.Parent; p != nil {
			if parent, ok := nodes[p.ID]; ok && p.ID != in.Header.ID {
				parent.Children = append(parent.Children, n)
				continue
			}
			n.ParentGone = true
		}
		roots = append(roots, n)
	}
	byAge := func(a, b *handle.Node) int {
		if c := a.Header.CreatedAt - b.Header.CreatedAt; c != 0 {
			return int(min(max(c, -1), 1))
		}
		return strings.Compare(a.Header.ID, b.Header.ID)
	}
	for _, n := range nodes {
		slices.SortFunc(n.Children, byAge)
	}
	slices.SortFunc(roots, byAge)
	return roots
}

// sessionTree is Store.TreeOf over st.
func sessionTree(ctx context.Context, st handle.Store, id string) (*handle.Node, error) {
	chain, gone, err := st.Ancestors(ctx, id)
	if err != nil {
		return nil, err
	}
	root := eventlog.Header{ID: id}
	if len(chain) > 0 {
		root = chain[len(chain)-1]
	} else {
		info, err := st.Stat(ctx, id)
		if err != nil {
			return nil, err
		}
		root = info.Header
	}
	top := &handle.Node{Header: root, ParentGone: gone != ""}
	seen := map[string]bool{root.ID: true}
	var grow func(n *handle.Node, depth int) error
	grow = func(n *handle.Node, depth int) error {
		if depth >= lineage.MaxDepth {
			return nil
		}
		kids, err := st.Children(ctx, n.Header.ID)
		if err != nil {
			return err
		}
		for _, h := range kids {
			if seen[h.ID] {
				continue // a loop
			}
			seen[h.ID] = true
			c := &handle.Node{Header: h}
			if err := grow(c, depth+1); err != nil {
				return err
			}
			n.Children = append(n.Children, c)
		}
		slices.SortFunc(n.Children, func(a, b *handle.Node) int {
			if c := a.Header.CreatedAt - b.Header.CreatedAt; c != 0 {
				return int(min(max(c, -1), 1))
			}
			return strings.Compare(a.Header.ID, b.Header.ID)
		})
		return nil
	}
	return top, grow(top, 0)
}

// collect deletes the sessions of st whose last activity (the time of
// their last event, or their creation) is older than before, except those
// a writer holds and those that a session being kept forks from: the
// session part of GC, on a store without an index, from a list of every
// session. With dryRun it deletes nothing and reports what a real run
// would do: both runs take the same decisions (see collectOne). It also
// returns the last activity of every session listed, by ID.
func collect(ctx context.Context, st handle.Store, before time.Time, dryRun bool) (handle.GCReport, map[string]int64, error) {
	infos, err := st.List(ctx, handle.SkipBroken(func(string, error) {}))
	if err != nil {
		return handle.GCReport{}, nil, err
	}
	cutoff := before.UnixMilli()
	var olds []handle.Info
	forks := map[string][]string{}
	last := map[string]int64{}
	for _, in := range infos {
		t := in.LastActive()
		last[in.ID] = t
		if t < cutoff {
			olds = append(olds, in)
		}
		if p := in.Header.Parent; p != nil && p.Mode == eventlog.ModeFork {
			forks[p.ID] = append(forks[p.ID], in.ID)
		}
	}
	rep, err := collectOld(ctx, st, olds, forks, dryRun)
	return rep, last, err
}

// collectIndexed is collect on a store with an index: it reads only the
// sessions last active before before, and the forks of each.
func collectIndexed(ctx context.Context, c *Store, ix Index, before time.Time, dryRun bool) (handle.GCReport, error) {
	olds, forks, err := ix.Older(ctx, before.UnixMilli())
	if err != nil {
		return handle.GCReport{}, err
	}
	return collectOld(ctx, c, olds, forks, dryRun)
}

// collectOld deletes the old sessions olds of st, given the forks of each
// (forks[id]: the sessions forked from id). An old session is kept when a
// fork of it, or of a fork of it…, is not old, or when collectOne keeps
// it. Forks go before their parents, then oldest activity first.
func collectOld(ctx context.Context, st handle.Store, olds []handle.Info, forks map[string][]string, dryRun bool) (handle.GCReport, error) {
	var rep handle.GCReport
	old := map[string]handle.Info{}
	for _, in := range olds {
		old[in.ID] = in
	}
	// needed reports whether a fork below id is not old.
	memo := map[string]bool{}
	var needed func(id string, depth int) bool
	needed = func(id string, depth int) bool {
		if v, ok := memo[id]; ok || depth > lineage.MaxDepth {
			return v
		}
		memo[id] = false // a loop keeps nothing
		for _, d := range forks[id] {
			if _, isOld := old[d]; !isOld || needed(d, depth+1) {
				memo[id] = true
				return true
			}
		}
		return false
	}
	var victims []string
	for id := range old {
		if needed(id, 0) {
			rep.Kept = append(rep.Kept, id)
		} else {
			victims = append(victims, id)
		}
	}
	depth := func(id string) int {
		n := 0
		for in, ok := old[id]; ok && in.Header.Parent != nil && in.Header.Parent.Mode == eventlog.ModeFork && n < lineage.MaxDepth; in, ok = old[in.Header.Parent.ID] {
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
		fate, err := collectOne(ctx, st, id, gone, dryRun)
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

// collectOne deletes the old session id unless a writer holds it or a
// fork that is not going (not in gone) depends on it; gone gains it. It is
// the one decision of a real run and a dry run alike, so that a dry run
// says exactly what gc does: the real run leaves both checks to the
// store's Delete, which makes them under the session's writer lock (or
// lease), so that a writer opening meanwhile wins; the dry run asks the
// same two questions without taking anything (a dry run must not make a
// writer's open fail) and removes nothing.
func collectOne(ctx context.Context, st handle.Store, id string, gone map[string]bool, dryRun bool) (fate, error) {
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
		case errors.Is(err, handle.ErrLocked), errors.As(err, new(*handle.DependentsError)):
			return kept, nil
		case errors.Is(err, handle.ErrNotFound):
			return vanished, nil
		case err != nil:
			return kept, err
		}
	}
	gone[id] = true
	return collected, nil
}

// idSource makes session IDs: ULIDs, monotonic within one source, so that
// sessions created in the same millisecond by one store still sort in
// creation order. Safe for concurrent use (ulid's monotonic entropy is
// not, so it is guarded). The store core makes every store's IDs with one.
type idSource struct {
	mu      sync.Mutex
	entropy *ulid.MonotonicEntropy
}

// newIDSource returns an idSource drawing on crypto/rand.
func newIDSource() *idSource { return &idSource{entropy: ulid.Monotonic(rand.Reader, 0)} }

// New returns a new session ID for time t.
func (s *idSource) New(t time.Time) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	id, err := ulid.New(ulid.Timestamp(t), s.entropy)
	if err != nil {
		return "", fmt.Errorf("handle: new session ID: %w", err)
	}
	return id.String(), nil
}

// checkID returns an error wrapping ErrInvalidID unless id is an
// upper-case ULID.
func checkID(id string) error {
	if !eventlog.ValidID(id) {
		return fmt.Errorf("%w: %q (want 26 upper-case Crockford base32 characters)", handle.ErrInvalidID, id)
	}
	return nil
}

const (
	collected fate = iota // deleted (or, in a dry run, would be)
	kept                  // a writer holds it, or a fork that stays depends on it
	vanished              // deleted by someone else meanwhile
)
