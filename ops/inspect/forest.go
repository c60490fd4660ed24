package inspect

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/sessionlog/sessionlog/handle"
)

// ErrParentLoop: a session left out of the forest because its chain of
// parents loops, so it hangs under no root.
var ErrParentLoop = errors.New("not shown: its chain of parents loops")

// A ForestRow is one session of a store's forest (Forest).
type ForestRow struct {
	Node  *handle.Node
	Depth int         // 0 for a root
	Info  handle.Info // what List (or Stat) tells of it
	// Err is why the session could not be described: Info then holds only
	// what its header tells.
	Err error
}

// Forest arranges the sessions of st by the parents their headers name
// (Store.Tree), so that a session whose tail cannot be read still holds
// its forks: the rows depth-first, roots and children in Tree's order
// (oldest first), each described by one List of the store. broken says,
// an error a session and each naming it, what could not be shown in full:
// first (by ID) the sessions under no root (a header that cannot be read,
// ErrParentLoop), then those shown with an Err. err is a failure of the
// store itself.
func Forest(ctx context.Context, st handle.Store) (rows []ForestRow, broken []error, err error) {
	roots, err := st.Tree(ctx)
	if err != nil {
		return nil, nil, err
	}
	unlisted := map[string]error{}
	infos, err := st.List(ctx, handle.SkipBroken(func(id string, err error) { unlisted[id] = err }))
	if err != nil {
		return nil, nil, err
	}
	byID := make(map[string]handle.Info, len(infos))
	for _, in := range infos {
		byID[in.ID] = in
	}
	describe := func(n *handle.Node) (handle.Info, error) {
		if in, ok := byID[n.Header.ID]; ok {
			return in, nil
		}
		err, ok := unlisted[n.Header.ID]
		if !ok {
			var in handle.Info
			if in, err = st.Stat(ctx, n.Header.ID); err == nil { // created since the List
				return in, nil
			}
		}
		return handle.Info{ID: n.Header.ID, Path: n.Path, Header: n.Header}, err
	}
	shown := map[string]bool{}
	var walk func(n *handle.Node, depth int)
	walk = func(n *handle.Node, depth int) {
		if shown[n.Header.ID] {
			return
		}
		shown[n.Header.ID] = true
		row := ForestRow{Node: n, Depth: depth}
		row.Info, row.Err = describe(n)
		rows = append(rows, row)
		for _, c := range n.Children {
			walk(c, depth+1)
		}
	}
	for _, r := range roots {
		walk(r, 0)
	}
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	var ids []string
	for id := range byID {
		ids = append(ids, id)
	}
	for id := range unlisted {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		switch err, isUnlisted := unlisted[id]; {
		case shown[id]: // shown, with its error if it has one
		case isUnlisted:
			broken = append(broken, fmt.Errorf("%s: %w", id, err))
		default:
			broken = append(broken, fmt.Errorf("%s: %w", id, ErrParentLoop))
		}
	}
	for _, r := range rows {
		if r.Err != nil {
			broken = append(broken, fmt.Errorf("%s: %w", r.Info.ID, r.Err))
		}
	}
	return rows, broken, nil
}
