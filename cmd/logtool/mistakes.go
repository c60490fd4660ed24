package main

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/sessionlog/sessionlog/projection"
)

// catchUnknownCommands makes root answer a command it does not have with
// one clean line, "unknown command "sta" (did you mean stat?)", where
// cobra's own message spreads its suggestions over lines with tabs. Root
// runs only when no command matched: with no argument it shows the help.
func catchUnknownCommands(root *cobra.Command) {
	root.Args = cobra.ArbitraryArgs
	// A runnable root would show "logtool [flags]" as a usage of its own.
	root.SetUsageTemplate(strings.Replace(root.UsageTemplate(), "Usage:{{if .Runnable}}", "Usage:{{if and .Runnable .HasParent}}", 1))
	root.FParseErrWhitelist.UnknownFlags = true // the command's flags: "logtool sta --json" is about "sta"
	root.RunE = func(cmd *cobra.Command, args []string) error {
		if len(args) == 0 {
			return cmd.Help()
		}
		msg := fmt.Sprintf("unknown command %q", args[0])
		if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
			msg += " (did you mean " + orList(s) + "?)"
		}
		return usageErrorf("%s; logtool --help lists the commands", msg)
	}
}

// orList joins words as "a", "a or b", "a, b or c".
func orList(words []string) string {
	if len(words) <= 1 {
		return strings.Join(words, "")
	}
	return strings.Join(words[:len(words)-1], ", ") + " or " + words[len(words)-1]
}

// typeFilter is a --type filter that notes what it matched, so that a
// type no event had and the library does not know is told (a typo, most
// likely) with the nearest type there is.
type typeFilter struct {
	want map[string]int  // the types asked for: how many events matched
	seen map[string]bool // every type read
}

func newTypeFilter(types []string) *typeFilter {
	f := &typeFilter{want: map[string]int{}, seen: map[string]bool{}}
	for _, t := range types {
		f.want[t] = 0
	}
	return f
}

// keep reports whether an event of type t passes the filter.
func (f *typeFilter) keep(t string) bool {
	if len(f.want) == 0 {
		return true
	}
	f.seen[t] = true
	n, ok := f.want[t]
	if ok {
		f.want[t] = n + 1
	}
	return ok
}

// warnings says, for each type asked for that matched nothing and is
// neither a type the library knows nor one the log holds, that no event
// has it, with the nearest known or held type.
func (f *typeFilter) warnings() []string {
	known := projection.Types()
	var out []string
	for _, t := range slices.Sorted(maps.Keys(f.want)) {
		if f.want[t] > 0 || slices.Contains(known, t) {
			continue
		}
		msg := fmt.Sprintf("--type %q: no event has this type", t)
		if near := nearest(t, append(slices.Collect(maps.Keys(f.seen)), known...)); near != "" {
			msg += fmt.Sprintf(" (did you mean %s?)", near)
		}
		out = append(out, msg)
	}
	return out
}

// nearest returns the word of candidates closest to w by edit distance,
// when it is close enough to be a typo of it (at most a third of w's
// letters changed), else "". Ties go to the first in sorted order.
func nearest(w string, candidates []string) string {
	best, bestD := "", len(w)/3+1
	for _, c := range slices.Sorted(slices.Values(candidates)) {
		if d := editDistance(w, c); d < bestD && c != w {
			best, bestD = c, d
		}
	}
	return best
}

// editDistance is the distance of a and b in edits of a byte: insert,
// delete, change, or swap two neighbours (a typo's usual four; optimal
// string alignment).
func editDistance(a, b string) int {
	d := make([][]int, len(a)+1)
	for i := range d {
		d[i] = make([]int, len(b)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(a)][len(b)]
}
