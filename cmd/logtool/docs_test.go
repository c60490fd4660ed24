package main

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/afero"
	"github.com/stretchr/testify/require"
)

// docSections splits docs/cli.md into the text under each "### `logtool
// NAME …`" heading, by command name; a command may have several.
func docSections(t *testing.T) map[string]string {
	t.Helper()
	b, err := os.ReadFile("../../docs/cli.md")
	require.NoError(t, err)
	heading := regexp.MustCompile("(?m)^### `logtool ([a-z][a-z-]*)")
	anyHeading := regexp.MustCompile("(?m)^#{1,3} ")
	out := map[string]string{}
	for _, l := range heading.FindAllStringSubmatchIndex(string(b), -1) {
		end := len(b)
		if next := anyHeading.FindIndex(b[l[1]:]); next != nil {
			end = l[1] + next[0]
		}
		name := string(b[l[2]:l[3]])
		out[name] += string(b[l[0]:end])
	}
	return out
}

// helpFlags are the flags a command's real --help lists, without the
// ones every command has (--help, and --dir of the root).
func helpFlags(t *testing.T, name string) []string {
	t.Helper()
	res := logtool(t, "", name, "--help")
	require.Equal(t, 0, res.code, res.stderr)
	_, flags, ok := strings.Cut(res.stdout, "\nFlags:\n")
	require.True(t, ok, "%s --help has a Flags section", name)
	flags, _, _ = strings.Cut(flags, "\n\n")
	var out []string
	for _, m := range regexp.MustCompile(`(?m)^\s+(?:-\w, )?--([a-z-]+)`).FindAllStringSubmatch(flags, -1) {
		if m[1] != "help" {
			out = append(out, m[1])
		}
	}
	return out
}

// TestDocsMatchHelp checks docs/cli.md against the real --help of every
// command: each command has a section, each flag its --help lists is named
// in it, and each section names a command that exists.
func TestDocsMatchHelp(t *testing.T) {
	sections := docSections(t)
	root := newRootCmd(&app{env: func(string) string { return "" }, fs: afero.NewMemMapFs(), stdout: os.Stdout, stderr: os.Stderr})
	var names []string
	for _, c := range root.Commands() {
		if c.Hidden || c.Name() == "help" {
			continue
		}
		names = append(names, c.Name())
		t.Run(c.Name(), func(t *testing.T) {
			doc, ok := sections[c.Name()]
			require.True(t, ok, "docs/cli.md has no section ### `logtool %s …`", c.Name())
			for _, f := range helpFlags(t, c.Name()) {
				require.True(t, strings.Contains(doc, "--"+f), "docs/cli.md's section on %s does not name --%s, which its --help lists", c.Name(), f)
			}
		})
	}
	for name := range sections {
		require.True(t, slices.Contains(names, name), "docs/cli.md documents logtool %s, which does not exist", name)
	}
	// The root's own flags.
	res := logtool(t, "", "--help")
	require.Equal(t, 0, res.code)
	b, err := os.ReadFile("../../docs/cli.md")
	require.NoError(t, err)
	for _, f := range []string{"--dir", "--version"} {
		require.Contains(t, res.stdout, f)
		require.True(t, strings.Contains(string(b), f), "docs/cli.md names the root flag %s", f)
	}
}
