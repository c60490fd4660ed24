package main

import (
	"cmp"
	"fmt"
	"maps"
	"runtime/debug"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/sessionlog/sessionlog/handle"
)

// completionLong is the help of logtool completion (cobra's command, with
// logtool's words).
const completionLong = `Completion prints a shell completion script: source <(logtool completion
bash); logtool completion fish | source; for zsh, write it to a file named
_logtool on $fpath. The script asks logtool itself, so it knows the store
of --dir or --store when Tab is pressed: a SESSION (and --parent) completes
to its session IDs, typed in either case, each described by its title and
agent labels and its event count, and a word with an = to the label
queries the store answers to (agent=c: agent=coder, with how many sessions
have it); a word with /, . or ~ in it completes as a file; --encoding,
--projection, --mode and import's --from complete to their values.`

// addCompletions teaches the shells' completion (logtool completion
// bash|zsh|fish) what the store holds: the session IDs, with their labels
// and size as descriptions, for every SESSION argument and --parent, and
// the values of --encoding, --projection, --mode and import's --from.
func (a *app) addCompletions(root *cobra.Command) {
	values := map[string][]string{
		"encoding":   {handle.EncodingRaw + "\tone JSON row a line", handle.EncodingZstd + "\tzstd frames, one a flush"},
		"projection": {"transcript\twhat a model would be sent", "agent\twhere the agent loop stands", "conversation\tevery message, across compactions"},
		"mode":       {"fork\tinherits the parent's events up to --at", "child\tspawned at the parent's event --at"},
	}
	for _, c := range root.Commands() {
		if strings.Contains(c.Use, "SESSION") || c.Name() == "diff" {
			c.ValidArgsFunction = a.completeSessions
		}
		for name, vals := range values {
			if c.Flags().Lookup(name) != nil {
				c.RegisterFlagCompletionFunc(name, cobra.FixedCompletions(vals, cobra.ShellCompDirectiveNoFileComp))
			}
		}
		if c.Name() == "import" {
			c.RegisterFlagCompletionFunc("from", cobra.FixedCompletions(importFormats(), cobra.ShellCompDirectiveNoFileComp))
		}
		if c.Flags().Lookup("parent") != nil {
			c.RegisterFlagCompletionFunc("parent", func(cmd *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
				return a.sessionIDs(cmd, toComplete), cobra.ShellCompDirectiveNoFileComp
			})
		}
	}
}

// completeSessions completes a SESSION argument with the IDs of the
// store's sessions, each described by its labels and event count, or a
// word with an "=" with the label queries the store answers to; a word
// that looks like a path is left to the shell's file completion.
func (a *app) completeSessions(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	if cmd.Args != nil && cmd.Args(cmd, append(args, "x")) != nil {
		return nil, cobra.ShellCompDirectiveDefault
	}
	if strings.Contains(toComplete, "=") {
		return a.labelQueries(cmd, toComplete), cobra.ShellCompDirectiveNoFileComp
	}
	if strings.ContainsAny(toComplete, "/.~") {
		return nil, cobra.ShellCompDirectiveDefault
	}
	return a.sessionIDs(cmd, toComplete), cobra.ShellCompDirectiveDefault
}

// labelQueries are the label pairs k=v of the store's sessions that start
// with toComplete, each described by how many sessions have it (one: the
// query names a session).
func (a *app) labelQueries(cmd *cobra.Command, toComplete string) []string {
	st, err := a.sessions(cmd.Context())
	if err != nil {
		return nil
	}
	infos, err := st.List(cmd.Context(), handle.SkipBroken(func(string, error) {}))
	if err != nil {
		return nil
	}
	count := map[string]int64{}
	for _, info := range infos {
		for k, v := range info.Header.Labels {
			if pair := k + "=" + v; strings.HasPrefix(pair, toComplete) {
				count[pair]++
			}
		}
	}
	var out []string
	for _, pair := range slices.Sorted(maps.Keys(count)) {
		out = append(out, pair+"\t"+plural(count[pair], "session"))
	}
	return out
}

// sessionIDs are the IDs of --dir's sessions that start with toComplete,
// each with its labels and event count as the description.
func (a *app) sessionIDs(cmd *cobra.Command, toComplete string) []string {
	st, err := a.sessions(cmd.Context())
	if err != nil {
		return nil
	}
	infos, err := st.List(cmd.Context(), handle.SkipBroken(func(string, error) {}))
	if err != nil {
		return nil
	}
	var out []string
	for _, info := range infos {
		if !strings.HasPrefix(info.ID, strings.ToUpper(toComplete)) {
			continue
		}
		out = append(out, info.ID+"\t"+shortDesc(info))
	}
	return out
}

// A session's short description (a completion menu, an ambiguous name's
// candidates) stays short: at most descLabels labels, each value cut to
// descValue columns.
const (
	descLabels = 2
	descValue  = 24
)

// shortDesc describes a session in a line: its first labels (title and
// agent first: what a person knows a session by), "+N labels" for the
// rest, and its event count.
func shortDesc(info handle.Info) string {
	labels := info.Header.Labels
	keys := slices.SortedFunc(maps.Keys(labels), func(a, b string) int {
		return cmp.Or(cmp.Compare(labelRank(a), labelRank(b)), strings.Compare(a, b))
	})
	var parts []string
	for i, k := range keys {
		if i == descLabels {
			parts = append(parts, "+"+plural(int64(len(keys)-i), "label"))
			break
		}
		parts = append(parts, k+"="+truncate(labels[k], descValue))
	}
	if len(parts) == 0 {
		return plural(info.Events, "event")
	}
	return strings.Join(parts, " ") + " · " + plural(info.Events, "event")
}

// labelRank puts the labels a person names a session by first.
func labelRank(key string) int {
	switch key {
	case "title":
		return 0
	case "agent":
		return 1
	}
	return 2
}

// version is logtool's version for --version: the module version and the
// commit it was built from, as the Go toolchain recorded them.
func version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "(unknown: built without module information)"
	}
	v := bi.Main.Version
	if v == "" {
		v = "(devel)"
	}
	var rev, at string
	modified := false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			at = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	if rev != "" {
		if len(rev) > 12 {
			rev = rev[:12]
		}
		v += " commit " + rev
		if at != "" {
			v += " of " + at
		}
		if modified {
			v += " (with local changes)"
		}
	}
	return fmt.Sprintf("%s, %s", v, bi.GoVersion)
}
