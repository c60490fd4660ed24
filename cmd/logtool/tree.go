package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/internal/chatview"
)

// treeRow is one session of `ls --tree`, in the order shown.
type treeRow struct {
	node  *handle.Node
	depth int
	info  handle.Info
	err   error // Stat failed: info holds only what the header tells
}

// treeJSON is one line of `ls --tree --json`: what Stat tells (the fields
// of stat --json but openTurn and stop, which need the log's tail read),
// and where the session sits in the tree.
type treeJSON struct {
	statJSON
	Depth      int     `json:"depth"`
	ParentGone bool    `json:"parentGone"`
	Error      *string `json:"error,omitempty"` // the session could not be described
}

// forest is what ls --tree shows, from either store: the sessions
// arranged by the parents their headers name, how to describe each, and
// the sessions the forest leaves out.
type forest struct {
	where string
	roots []*handle.Node
	stat  func(id string) (handle.Info, error)
	// unshown reports the sessions that are not under any root (their
	// chain of parents loops) or could not be placed (their header cannot
	// be read), given those shown.
	unshown func(shown map[string]bool) ([]error, error)
}

// runLsTree shows the sessions of dir (explicit: a DIR argument) or of
// the store in use as a forest: roots oldest first, each fork and child
// under its parent, oldest first, with counts and last activity from a
// Stat of each session.
func (a *app) runLsTree(ctx context.Context, dir string, explicit, asJSON bool, out io.Writer) error {
	st, err := a.listed(ctx, dir, explicit)
	if err != nil {
		return err
	}
	where := a.location()
	if explicit {
		where = dir
	}
	f, err := forestOf(ctx, st, where)
	if err != nil {
		return err
	}
	var rows []treeRow
	shown := map[string]bool{}
	var walk func(n *handle.Node, depth int)
	walk = func(n *handle.Node, depth int) {
		if shown[n.Header.ID] {
			return
		}
		shown[n.Header.ID] = true
		row := treeRow{node: n, depth: depth}
		row.info, row.err = f.stat(n.Header.ID)
		if row.err != nil {
			row.info = handle.Info{ID: n.Header.ID, Path: n.Path, Header: n.Header}
		}
		rows = append(rows, row)
		for _, c := range n.Children {
			walk(c, depth+1)
		}
	}
	for _, r := range f.roots {
		walk(r, 0)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	broken, err := f.unshown(shown)
	if err != nil {
		return err
	}
	for _, r := range rows {
		if r.err != nil {
			broken = append(broken, fmt.Errorf("%s: %w", r.info.ID, r.err))
		}
	}

	if asJSON {
		for _, r := range rows {
			if err := writeJSON(out, newTreeJSON(r)); err != nil {
				return err
			}
		}
	} else if err := a.writeTree(out, rows); err != nil {
		return err
	}
	for _, b := range broken {
		fmt.Fprintf(a.stderr, "logtool: %s\n", oneLine(b.Error()))
	}
	if len(broken) > 0 {
		return brokenErr(broken, fmt.Sprintf("%s in %q could not be shown in full", plural(int64(len(broken)), "session"), f.where))
	}
	return nil
}

// forestOf is the forest of st's sessions: the tree of their headers
// (Store.Tree), so that a session whose tail cannot be read still holds
// its forks, described by its List. A session List cannot describe is
// shown with its error when its header was read, and reported; one whose
// chain of parents loops, which hangs under no root, is reported.
func forestOf(ctx context.Context, st handle.Store, where string) (forest, error) {
	roots, err := st.Tree(ctx)
	if err != nil {
		return forest{}, err
	}
	broken := map[string]error{}
	infos, err := st.List(ctx, handle.SkipBroken(func(id string, err error) { broken[id] = err }))
	if err != nil {
		return forest{}, err
	}
	byID := make(map[string]handle.Info, len(infos))
	for _, in := range infos {
		byID[in.ID] = in
	}
	stat := func(id string) (handle.Info, error) {
		if in, ok := byID[id]; ok {
			return in, nil
		}
		if err, ok := broken[id]; ok {
			return handle.Info{}, err
		}
		return st.Stat(ctx, id) // created since the List
	}
	unshown := func(shown map[string]bool) ([]error, error) {
		var ids []string
		for id := range byID {
			ids = append(ids, id)
		}
		for id := range broken {
			ids = append(ids, id)
		}
		slices.Sort(ids)
		var out []error
		for _, id := range ids {
			switch err, isBroken := broken[id]; {
			case shown[id]: // shown, with its error if it has one
			case isBroken:
				out = append(out, fmt.Errorf("%s: %w", id, err))
			default:
				out = append(out, loopError(id))
			}
		}
		return out, nil
	}
	return forest{where: where, roots: roots, stat: stat, unshown: unshown}, nil
}

// loopError says that session id is left out of the tree.
func loopError(id string) error {
	return fmt.Errorf("%s: not shown: its chain of parents loops", id)
}

func newTreeJSON(r treeRow) treeJSON {
	out := treeJSON{statJSON: newStatJSON(r.info), Depth: r.depth, ParentGone: r.node.ParentGone}
	if r.err != nil {
		msg := r.err.Error()
		out.Error = &msg
	}
	return out
}

// describeMode says how a session relates to its parent: "-" for none,
// fork@S, or child@S with the spawning call.
func describeMode(p *eventlog.Parent) string {
	if p == nil {
		return "-"
	}
	s := fmt.Sprintf("%s@%d", p.Mode, p.Seq)
	if p.Call != "" {
		s += " call " + p.Call
	}
	return s
}

// writeTree writes one aligned row a session, its ID indented two spaces a
// level, to fit the width of out: the labels are cut to what is left.
func (a *app) writeTree(out io.Writer, rows []treeRow) error {
	if len(rows) == 0 {
		_, err := fmt.Fprintln(out, "no sessions")
		return err
	}
	now := a.now()
	cells := make([][4]string, len(rows))
	widths := [4]int{len("ID"), len("MODE"), len("EVENTS"), len("ACTIVE")}
	for i, r := range rows {
		events, last := chatview.Thousands(r.info.Events), "-"
		switch {
		case r.err != nil:
			events, last = "?", "?"
		case r.info.LastType != "":
			last = chatview.Ago(now, r.info.LastTime)
		}
		cells[i] = [4]string{strings.Repeat("  ", r.depth) + r.info.ID, describeMode(r.info.Header.Parent), events, last}
		for c, s := range cells[i] {
			widths[c] = max(widths[c], len(s))
		}
	}
	room := a.width(out) - (widths[0] + widths[1] + widths[2] + widths[3] + 4*2)
	// The labels are cut to what is left; a note that the parent is gone
	// is kept whole, with at least 12 columns of labels, even past the
	// width.
	line := func(c [4]string, labels, note string) string {
		if note != "" {
			labels = truncate(labels, max(room-len(note), 12)) + note
		} else {
			labels = truncate(labels, max(room, 1))
		}
		return strings.TrimRight(fmt.Sprintf("%-*s  %-*s  %*s  %-*s  %s", widths[0], c[0], widths[1], c[1], widths[2], c[2], widths[3], c[3], labels), " ")
	}
	if _, err := fmt.Fprintln(out, line([4]string{"ID", "MODE", "EVENTS", "ACTIVE"}, "LABELS", "")); err != nil {
		return err
	}
	for i, r := range rows {
		note := ""
		if p := r.info.Header.Parent; p != nil && r.node.ParentGone {
			note = fmt.Sprintf("  (parent %s gone)", p.ID)
		}
		if _, err := fmt.Fprintln(out, line(cells[i], describeLabels(r.info.Header.Labels), note)); err != nil {
			return err
		}
	}
	return nil
}
