package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/handle"
)

// completions runs cobra's hidden __complete command, as the shell
// scripts do, and returns the candidates and the directive line.
func completions(t *testing.T, args ...string) ([]string, string) {
	t.Helper()
	res := logtool(t, "", append([]string{"__complete"}, args...)...)
	require.Equal(t, 0, res.code, res.stderr)
	lines := strings.Split(strings.TrimSuffix(res.stdout, "\n"), "\n")
	return lines[:len(lines)-1], lines[len(lines)-1]
}

// TestCompletionKnowsTheStore checks that completion offers the store's
// session IDs with their labels, and the values of the flags that have a
// fixed set.
func TestCompletionKnowsTheStore(t *testing.T) {
	dir, _ := storeOfFixtures(t)
	got, directive := completions(t, "--dir", dir, "show", "01KB000000000000000000000")
	require.Contains(t, got, "01KB0000000000000000000007\tagent=gencorpus fixture=fork · 19 events")
	require.Contains(t, got, "01KB000000000000000000000A\tagent=gencorpus fixture=empty · no events")
	require.Len(t, got, 11)
	require.Equal(t, ":0", directive, "paths still complete as files")

	got, _ = completions(t, "--dir", dir, "cat", "01kb0000000000000000000006")
	require.Equal(t, []string{"01KB0000000000000000000006\tagent=gencorpus fixture=parent · 18 events"}, got, "typed in lower case")
	got, _ = completions(t, "--dir", dir, "cat", "01KB0000000000000000000006", "")
	require.Empty(t, got, "cat takes one SESSION")
	got, _ = completions(t, "--dir", dir, "diff", "01KB0000000000000000000006", "01KB00000000000000000000")
	require.Len(t, got, 11, "diff takes two")
	got, _ = completions(t, "--dir", dir, "cat", "./")
	require.Empty(t, got, "a path is the shell's to complete")
	got, directive = completions(t, "--dir", dir, "cat", "fixture=fo")
	require.Equal(t, []string{"fixture=fork\t1 session"}, got, "a label query completes to the pairs the store has")
	require.Equal(t, ":4", directive)
	got, _ = completions(t, "--dir", dir, "show", "agent=")
	require.Equal(t, []string{"agent=gencorpus\t11 sessions"}, got)
	got, directive = completions(t, "--dir", dir, "new", "--parent", "01KB000000000000000000000A")
	require.Len(t, got, 1)
	require.Equal(t, ":4", directive)

	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"new", "--encoding", ""}, []string{"raw", "zstd"}},
		{[]string{"convert", "--encoding", ""}, []string{"raw", "zstd"}},
		{[]string{"replay", "--projection", ""}, []string{"transcript", "agent", "conversation"}},
		{[]string{"new", "--mode", ""}, []string{"fork", "child"}},
		{[]string{"import", "--from", ""}, []string{"sessionlog", "claude", "codex", "dsh", "swe-agent"}},
	} {
		got, directive := completions(t, tc.args...)
		var names []string
		for _, g := range got {
			names = append(names, strings.SplitN(g, "\t", 2)[0])
		}
		require.Equal(t, tc.want, names, "%v", tc.args)
		require.Equal(t, ":4", directive, "no file names among flag values")
	}
	// Short whatever the labels: title and agent first, values cut, the
	// rest counted.
	long := handle.Info{Events: 3, Header: eventlog.Header{Labels: map[string]string{
		"cwd": "/home/someone/src/a/very/deep/project/folder", "source": "claude", "title": "fix the flaky test in the importer please",
		"agent": "claude-code", "model": "opus", "gitBranch": "main"}}}
	require.Equal(t, "title=fix the flaky test in t… agent=claude-code +4 labels · 3 events", shortDesc(long))

	for _, shell := range []string{"bash", "zsh", "fish"} {
		res := logtool(t, "", "completion", shell)
		require.Equal(t, 0, res.code, res.stderr)
		require.Contains(t, res.stdout, "__complete", "the script asks logtool, which knows the store")
	}
}

func TestVersion(t *testing.T) {
	res := logtool(t, "", "--version")
	require.Equal(t, 0, res.code, res.stderr)
	require.Regexp(t, `^logtool \S.*, go1\.\d+`, res.stdout)
	require.Equal(t, version(), strings.TrimSuffix(strings.TrimPrefix(res.stdout, "logtool "), "\n"))
}
