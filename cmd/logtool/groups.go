package main

import (
	"slices"

	"github.com/spf13/cobra"
)

// commandGroups sorts the commands of `logtool --help` by what a person
// wants to do, so that a newcomer finds the command from the help alone.
var commandGroups = []struct {
	id, title string
	commands  []string
}{
	{"read", "Read a session:", []string{"show", "cat", "tail", "stat", "ls", "replay", "checkpoints", "diff", "serve"}},
	{"write", "Write to a session:", []string{"new", "append", "checkpoint", "rollback", "fork", "resume"}},
	{"keep", "Check and keep a store:", []string{"verify", "repair", "convert", "export", "import", "copy", "gc"}},
	{"secrets", "Secrets:", []string{"keygen", "redact", "shred"}},
	{"more", "More:", []string{"demo", "completion", "help"}},
}

// groupCommands puts each command of root in its group of the help; a
// group none of whose commands root has is left out.
func groupCommands(root *cobra.Command) {
	of := map[string]string{}
	for _, g := range commandGroups {
		for _, c := range g.commands {
			if cmd, _, err := root.Find([]string{c}); (err == nil && cmd != root) || c == "help" || c == "completion" {
				of[c] = g.id
			}
		}
	}
	for _, g := range commandGroups {
		if slices.ContainsFunc(g.commands, func(c string) bool { return of[c] != "" }) {
			root.AddGroup(&cobra.Group{ID: g.id, Title: g.title})
		}
	}
	root.SetHelpCommandGroupID("more")
	root.SetCompletionCommandGroupID("more")
	for _, c := range root.Commands() {
		if id, ok := of[c.Name()]; ok {
			c.GroupID = id
		}
	}
}
