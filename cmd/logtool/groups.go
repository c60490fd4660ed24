package main

import "github.com/spf13/cobra"

// commandGroups sorts the commands of `logtool --help` by what a person
// wants to do, so that a newcomer finds the command from the help alone.
var commandGroups = []struct {
	id, title string
	commands  []string
}{
	{"read", "Read a session:", []string{"show", "cat", "tail", "stat", "ls", "replay", "checkpoints", "diff", "serve"}},
	{"write", "Write to a session:", []string{"new", "append", "checkpoint", "rollback", "fork", "resume"}},
	{"keep", "Check and keep a store:", []string{"verify", "repair", "convert", "export", "import", "gc"}},
	{"secrets", "Secrets:", []string{"keygen", "redact", "shred"}},
	{"more", "More:", []string{"demo", "completion", "help"}},
}

// groupCommands puts each command of root in its group of the help.
func groupCommands(root *cobra.Command) {
	of := map[string]string{}
	for _, g := range commandGroups {
		root.AddGroup(&cobra.Group{ID: g.id, Title: g.title})
		for _, c := range g.commands {
			of[c] = g.id
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
