package main

import (
	"bytes"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/afero"
	"github.com/spf13/cobra"
	"github.com/stretchr/testify/require"
)

// cliDocPath is the page TestCLIDoc writes: docs/cli.md.
const cliDocPath = "../../docs/cli.md"

// cliDoc renders docs/cli.md from the commands' own help, so that the page
// and --help cannot drift: the root's Long (names, output, exit status,
// environment), then every command in the order and the groups of
// logtool --help, each with its usage, Long, flags and examples, then the
// flags every command takes.
func cliDoc(root *cobra.Command) []byte {
	var b bytes.Buffer
	b.WriteString("# logtool — the command line\n\n")
	b.WriteString("<!-- Generated from the commands' help by `go test ./cmd/logtool -run TestCLIDoc -update`:\n")
	b.WriteString("     edit the help texts in cmd/logtool, not this page. -->\n\n")
	b.WriteString(root.Short + ". Each section below is what `logtool help COMMAND` prints.\n\n")
	b.WriteString(markdown(root.Long) + "\n")
	for _, g := range commandGroups {
		var cmds []*cobra.Command
		for _, name := range g.commands {
			if c, _, err := root.Find([]string{name}); err == nil && c != root && c.IsAvailableCommand() {
				cmds = append(cmds, c)
			}
		}
		if len(cmds) == 0 {
			continue
		}
		fmt.Fprintf(&b, "## %s\n\n", strings.TrimSuffix(g.title, ":"))
		for _, c := range cmds {
			writeCommandDoc(&b, c)
		}
	}
	b.WriteString("## Flags of every command\n\n```\n" + root.PersistentFlags().FlagUsages() + "```\n")
	return b.Bytes()
}

// writeCommandDoc writes the section of one command.
func writeCommandDoc(b *bytes.Buffer, c *cobra.Command) {
	fmt.Fprintf(b, "### `logtool %s`\n\n", c.Use)
	b.WriteString(c.Short + ".\n\n")
	if c.Long != "" {
		b.WriteString(markdown(c.Long) + "\n")
	}
	if fl := c.LocalNonPersistentFlags().FlagUsages(); fl != "" {
		b.WriteString("```\n" + fl + "```\n\n")
	}
	if c.Example != "" {
		b.WriteString("```console\n" + markdownExample(c.Example) + "```\n\n")
	}
	for _, sub := range c.Commands() {
		if sub.IsAvailableCommand() {
			fmt.Fprintf(b, "- `%s`: %s.\n", sub.CommandPath(), sub.Short)
		}
	}
	if c.HasAvailableSubCommands() {
		b.WriteString("\n")
	}
}

// markdown turns a help text into Markdown: a paragraph's lines stay as
// they are, but those from its first line that starts with two spaces on
// (a table, an example), which are a block of code.
func markdown(text string) string {
	var out strings.Builder
	for i, para := range strings.Split(strings.TrimRight(text, "\n"), "\n\n") {
		if i > 0 {
			out.WriteString("\n")
		}
		lines := strings.Split(para, "\n")
		k := slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(l, "  ") })
		if k < 0 {
			out.WriteString(para + "\n")
			continue
		}
		for _, l := range lines[:k] {
			out.WriteString(l + "\n")
		}
		out.WriteString("```\n")
		for _, l := range lines[k:] {
			out.WriteString(strings.TrimPrefix(l, "  ") + "\n")
		}
		out.WriteString("```\n")
	}
	return out.String()
}

// markdownExample is an Example without the two spaces of help's indent.
func markdownExample(ex string) string {
	var out strings.Builder
	for _, l := range strings.Split(ex, "\n") {
		out.WriteString(strings.TrimPrefix(l, "  ") + "\n")
	}
	return out.String()
}

// docRoot is the command tree as docs/cli.md shows it: no environment, so
// that the defaults are the documented ones.
func docRoot() *cobra.Command {
	var discard bytes.Buffer
	return newRootCmd(&app{env: func(string) string { return "" }, fs: afero.NewMemMapFs(), stdout: &discard, stderr: &discard})
}

// TestCLIDoc checks that docs/cli.md is what the commands' help renders
// (-update rewrites it).
func TestCLIDoc(t *testing.T) {
	got := cliDoc(docRoot())
	if *update {
		require.NoError(t, os.WriteFile(cliDocPath, got, 0o644))
	}
	want, err := os.ReadFile(cliDocPath)
	require.NoError(t, err)
	require.Equal(t, string(want), string(got),
		"docs/cli.md is not what the commands' help says: run go test ./cmd/logtool -run TestCLIDoc -update, and review the diff")
}

// TestHelpTexts holds every command's help to what the generated page
// needs: a Short without a final period (the page adds it), lines of at
// most 80 columns, and every group of the help shown.
func TestHelpTexts(t *testing.T) {
	root := docRoot()
	var all []*cobra.Command
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		all = append(all, c)
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	for _, c := range all {
		if c.Hidden || c.HasParent() && c.Parent().Name() == "completion" {
			continue // cobra's own scripts' help
		}
		require.NotEmpty(t, c.Short, c.CommandPath())
		require.False(t, strings.HasSuffix(c.Short, "."), "%s: Short ends in a period", c.CommandPath())
		for _, text := range []string{c.Long} { // an Example may show output as it is
			for line := range strings.Lines(text) {
				require.LessOrEqual(t, len([]rune(strings.TrimRight(line, "\n"))), 80, "%s: a help line over 80 columns: %q", c.CommandPath(), line)
			}
		}
		if c.Parent() == root && c.Name() != "help" {
			require.NotEmpty(t, c.GroupID, "%s has no group in logtool --help", c.CommandPath())
		}
	}
}
