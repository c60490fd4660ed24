package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/internal/app/chatview"
	"github.com/sessionlog/sessionlog/ops/inspect"
)

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
	rows, broken, err := inspect.Forest(ctx, st)
	if err != nil {
		return err
	}
	if asJSON {
		for _, r := range rows {
			if err := writeJSON(out, r.Report()); err != nil {
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
		return brokenErr(broken, fmt.Sprintf("%s in %q could not be shown in full", plural(int64(len(broken)), "session"), where))
	}
	return nil
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
func (a *app) writeTree(out io.Writer, rows []inspect.ForestRow) error {
	if len(rows) == 0 {
		_, err := fmt.Fprintln(out, "no sessions")
		return err
	}
	now := a.now()
	cells := make([][4]string, len(rows))
	widths := [4]int{len("ID"), len("MODE"), len("EVENTS"), len("ACTIVE")}
	for i, r := range rows {
		events, last := chatview.Thousands(r.Info.Events), "-"
		switch {
		case r.Err != nil:
			events, last = "?", "?"
		case r.Info.LastType != "":
			last = chatview.Ago(now, r.Info.LastTime)
		}
		cells[i] = [4]string{strings.Repeat("  ", r.Depth) + r.Info.ID, describeMode(r.Info.Header.Parent), events, last}
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
		if p := r.Info.Header.Parent; p != nil && r.Node.ParentGone {
			note = fmt.Sprintf("  (parent %s gone)", p.ID)
		}
		if _, err := fmt.Fprintln(out, line(cells[i], describeLabels(r.Info.Header.Labels), note)); err != nil {
			return err
		}
	}
	return nil
}
