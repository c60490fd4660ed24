package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The demo runs the agent loop as a child process of os.Executable(),
// which in tests is the test binary: run it as logtool would.
func init() {
	if slices.Contains(os.Args[1:], agentLoopCmd) {
		os.Exit(run(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr, os.Getenv))
	}
}

// result is what one in-process run of logtool gave.
type result struct {
	code   int
	stdout string
	stderr string
}

// logtool runs one command line in-process with stdin as input and an
// empty environment.
func logtool(t *testing.T, stdin string, args ...string) result {
	t.Helper()
	var out, errOut bytes.Buffer
	code := run(t.Context(), args, strings.NewReader(stdin), &out, &errOut, func(string) string { return "" })
	return result{code: code, stdout: out.String(), stderr: errOut.String()}
}

// wordsEnv is the environment of a run whose stdout stands in for a
// terminal (words and tables, no colour, no pager) while stderr stays a
// pipe (no progress drawn).
var wordsEnv = map[string]string{envTerminal: "stdout", "NO_COLOR": "1", "PAGER": "cat"}

// logtoolWords is logtool with stdout as a terminal: what a person reads.
func logtoolWords(t *testing.T, stdin string, args ...string) result {
	t.Helper()
	var out, errOut bytes.Buffer
	code := run(t.Context(), args, strings.NewReader(stdin), &out, &errOut, func(k string) string { return wordsEnv[k] })
	return result{code: code, stdout: out.String(), stderr: errOut.String()}
}

// newSession creates a session in dir and returns its ID and path.
func newSession(t *testing.T, dir string, args ...string) (id, path string) {
	t.Helper()
	res := logtool(t, "", append([]string{"--dir", dir, "new"}, args...)...)
	require.Equal(t, 0, res.code, res.stderr)
	var created struct{ ID, Path string }
	require.NoError(t, json.Unmarshal([]byte(res.stdout), &created))
	ext := ".jsonl"
	if slices.Contains(args, "zstd") {
		ext = ".jsonl.zst"
	}
	require.Equal(t, filepath.Join(dir, created.ID+ext), created.Path)
	return created.ID, created.Path
}

// jsonLines decodes each line of s as one JSON object.
func jsonLines(t *testing.T, s string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for line := range strings.Lines(s) {
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &m), "line %q", line)
		out = append(out, m)
	}
	return out
}

// writeFile writes a log file by hand, for damage the tools must find.
func writeFile(t *testing.T, path string, lines ...string) {
	t.Helper()
	require.NoError(t, os.WriteFile(path, []byte(strings.Join(lines, "")), 0o600))
}

// appendBytes adds raw bytes at the end of a file.
func appendBytes(t *testing.T, path, data string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteString(data)
	require.NoError(t, err)
	require.NoError(t, f.Close())
}

// fileSize returns the size of path.
func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	require.NoError(t, err)
	return fi.Size()
}

// copyFile copies a log, as an export to a freely named file would.
func copyFile(from, to string) error {
	data, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	return os.WriteFile(to, data, 0o600)
}
