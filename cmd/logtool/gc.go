package main

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/sessionlog/sessionlog/handle"
)

func (a *app) newGCCmd() *cobra.Command {
	var olderThan string
	var dryRun, asJSON bool
	cmd := &cobra.Command{
		Use:   "gc --older-than D [--dry-run] [--json]",
		Short: "Delete sessions inactive for longer than D (30d, 12h)",
		Long: `Gc deletes the sessions of the store whose last activity (the later of the
last event's time and the creation) is older than D (a Go duration, 90m,
12h, or days, 30d), except those a kept session forks from and those a
writer holds (its lock; on JetStream its lease); then, in a folder, it
removes leftovers (temp files of interrupted writes, derived files of
sessions that are gone). --dry-run deletes nothing and reports what the
same gc would do, deciding as it does (a writer is probed, not disturbed).
It prints {"deleted":[...],"kept":[...],"leftovers":[...]}.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			d, err := parseAge(olderThan)
			if err != nil {
				return usageErrorf("--older-than %q: %v", olderThan, err)
			}
			return a.runGC(cmd.Context(), d, dryRun, asJSON)
		},
	}
	cmd.Flags().StringVar(&olderThan, "older-than", "", "the inactivity `D` after which a session goes: 30d, 12h, 90m")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "report what would go, delete nothing")
	jsonFlag(cmd, &asJSON)
	cmd.MarkFlagRequired("older-than")
	return cmd
}

// errAge is what a duration flag wants, in place of time.ParseDuration's
// words (time: unknown unit…).
var errAge = errors.New("want a duration such as 30d, 12h or 90m")

// parseAge reads a duration >= 0, with "d" for days.
func parseAge(s string) (time.Duration, error) {
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.Atoi(days)
		if err != nil || n < 0 {
			return 0, errAge
		}
		return time.Duration(n) * 24 * time.Hour, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, errAge
	}
	return d, nil
}

func (a *app) runGC(ctx context.Context, olderThan time.Duration, dryRun, asJSON bool) error {
	st, err := a.sessions(ctx)
	if err != nil {
		return err
	}
	var rep handle.GCReport
	err = a.busy("gc "+a.location(), func() (err error) {
		rep, err = st.GC(ctx, a.now().Add(-olderThan), dryRun)
		return err
	})
	if err != nil {
		return err
	}
	if rep.Deleted == nil {
		rep.Deleted = []string{}
	}
	if rep.Kept == nil {
		rep.Kept = []string{}
	}
	if rep.Leftovers == nil {
		rep.Leftovers = []string{}
	}
	return a.printResult(asJSON, rep, func() string { return humanGC(rep, dryRun) })
}
