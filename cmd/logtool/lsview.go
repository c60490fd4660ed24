package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/internal/app/chatview"
)

// lsOptions are the filters and the form of `logtool ls`.
type lsOptions struct {
	wide   bool
	labels []string
	since  string
	limit  int
	before string

	sinceD time.Duration // parsed --since; 0 for none
	byKey  map[string]string
	cursor *handle.Cursor // parsed --before
}

func (o *lsOptions) flags(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.BoolVar(&o.wide, "wide", false, "every column: creation time, last type, size in bytes, parent, all labels")
	fl.StringArrayVar(&o.labels, "label", nil, "only sessions with the label `k=v` (repeatable: all must match)")
	fl.StringVar(&o.since, "since", "", "only sessions active within `D`: 90m, 12h, 30d")
	fl.IntVar(&o.limit, "limit", 0, "at most `N` sessions: a page (0: all)")
	fl.StringVar(&o.before, "before", "", "the page after the one that ended at `CURSOR` (printed under a full page)")
}

// parse checks the flags; the filters do not apply to --tree, whose
// shape needs every session.
func (o *lsOptions) parse(tree bool) error {
	if tree && (len(o.labels) > 0 || o.since != "" || o.wide || o.limit != 0 || o.before != "") {
		return usageErrorf("--label, --since, --wide, --limit and --before are for the list, not --tree")
	}
	if o.limit < 0 {
		return usageErrorf("--limit %d: want 0 or more", o.limit)
	}
	if o.before != "" {
		var c handle.Cursor
		if err := c.UnmarshalText([]byte(o.before)); err != nil {
			return usageErrorf("--before %q: not a cursor (ls prints one under a full page)", o.before)
		}
		o.cursor = &c
	}
	var err error
	if o.byKey, err = parseLabels(o.labels); err != nil {
		return err
	}
	if o.since != "" {
		if o.sinceD, err = parseAge(o.since); err != nil {
			return usageErrorf("--since %q: %v", o.since, err)
		}
	}
	return nil
}

func (o *lsOptions) listOptions() []handle.Option {
	var out []handle.Option
	for k, v := range o.byKey {
		out = append(out, handle.WithLabels(map[string]string{k: v}))
	}
	if o.limit > 0 || o.cursor != nil {
		var before handle.Cursor
		if o.cursor != nil {
			before = *o.cursor
		}
		out = append(out, handle.Page(o.limit, before))
	}
	return out
}

// filterSince keeps the sessions active within --since.
func (a *app) filterSince(infos []handle.Info, o lsOptions) []handle.Info {
	if o.sinceD == 0 {
		return infos
	}
	cut := a.now().Add(-o.sinceD).UnixMilli()
	out := infos[:0:0]
	for _, info := range infos {
		if info.LastActive() >= cut {
			out = append(out, info)
		}
	}
	return out
}

// writeLsTable writes one aligned row a session: to fit the width of
// stdout (80 columns piped) — ID, last activity, events, size, and the
// labels cut to what is left — or, --wide, every column in full.
func (a *app) writeLsTable(out io.Writer, infos []handle.Info, wide bool) error {
	if len(infos) == 0 {
		_, err := fmt.Fprintln(out, "no sessions")
		return err
	}
	now := a.now()
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	if wide {
		fmt.Fprintln(tw, "ID\tCREATED\tACTIVE\tEVENTS\tLAST TYPE\tSIZE\tPARENT\tLABELS")
		for _, info := range infos {
			last := info.LastType
			if last == "" {
				last = "-"
			}
			parent := "-"
			if p := info.Header.Parent; p != nil {
				parent = fmt.Sprintf("%s %s@%d", p.Mode, p.ID, p.Seq)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%d\t%s\t%s\n", info.ID, formatTime(info.Header.CreatedAt), chatview.Ago(now, info.LastActive()),
				info.Events, last, info.SizeBytes, parent, describeLabels(info.Header.Labels))
		}
		return tw.Flush()
	}
	// The columns before LABELS have a known width: the rest is the labels'.
	rows := make([][4]string, len(infos))
	widths := [4]int{len("ID"), len("ACTIVE"), len("EVENTS"), len("SIZE")}
	for i, info := range infos {
		rows[i] = [4]string{info.ID, chatview.Ago(now, info.LastActive()), chatview.Thousands(info.Events), chatview.Size(info.SizeBytes)}
		for c, s := range rows[i] {
			widths[c] = max(widths[c], len(s))
		}
	}
	room := a.width(out) - (widths[0] + widths[1] + widths[2] + widths[3] + 4*2)
	line := func(cols [4]string, labels string) string {
		return strings.TrimRight(fmt.Sprintf("%-*s  %-*s  %*s  %*s  %s", widths[0], cols[0], widths[1], cols[1], widths[2], cols[2], widths[3], cols[3], truncate(labels, max(room, 1))), " ")
	}
	if _, err := fmt.Fprintln(out, line([4]string{"ID", "ACTIVE", "EVENTS", "SIZE"}, "LABELS")); err != nil {
		return err
	}
	for i, info := range infos {
		labels := describeLabels(info.Header.Labels)
		if p := info.Header.Parent; p != nil {
			labels = fmt.Sprintf("(%s@%d) %s", p.Mode, p.Seq, labels)
		}
		if _, err := fmt.Fprintln(out, line(rows[i], labels)); err != nil {
			return err
		}
	}
	return nil
}
