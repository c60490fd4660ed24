package handle

import (
	"context"
	"slices"
	"strings"

	"github.com/sessionlog/sessionlog/eventlog"
)

// Node is a session in the session tree: its header, and the sessions
// forked or spawned from it.
type Node struct {
	Header eventlog.Header
	Path   string
	// ParentGone is true when the header names a parent that is not in
	// the store (a child that outlived its parent, or broken lineage).
	ParentGone bool
	Children   []*Node
}

// treeOf arranges sessions (a store's headers) as a forest by the
// parents their headers name: roots (sessions without a parent, or
// whose parent is not among infos) oldest first, each with its forks and
// children, oldest first. Sessions whose chain of parents loops hang
// under no root. Only ID, Path and Header of each Info are used.
func treeOf(infos []Info) []*Node {
	nodes := make(map[string]*Node, len(infos))
	for _, in := range infos {
		nodes[in.Header.ID] = &Node{Header: in.Header, Path: in.Path}
	}
	var roots []*Node
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
	byAge := func(a, b *Node) int {
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
func sessionTree(ctx context.Context, st Store, id string) (*Node, error) {
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
	top := &Node{Header: root, ParentGone: gone != ""}
	seen := map[string]bool{root.ID: true}
	var grow func(n *Node, depth int) error
	grow = func(n *Node, depth int) error {
		if depth >= maxForkDepth {
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
			c := &Node{Header: h}
			if err := grow(c, depth+1); err != nil {
				return err
			}
			n.Children = append(n.Children, c)
		}
		slices.SortFunc(n.Children, func(a, b *Node) int {
			if c := a.Header.CreatedAt - b.Header.CreatedAt; c != 0 {
				return int(min(max(c, -1), 1))
			}
			return strings.Compare(a.Header.ID, b.Header.ID)
		})
		return nil
	}
	return top, grow(top, 0)
}
