package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestNewRefuses(t *testing.T) {
	dir := t.TempDir()
	parent, _ := newSession(t, dir)
	require.Equal(t, 0, logtool(t, goodLine0+goodLine0, "--dir", dir, "append", parent).code)
	const missing = "01JDX3N0Q3Z8Y6W2D1V5K7M9PA"

	tests := []struct {
		name string
		args []string
		msg  string
	}{
		{"unknown encoding", []string{"--encoding", "lz4"}, "want raw or zstd"},
		{"label without =", []string{"--label", "agent"}, "want k=v"},
		{"label without key", []string{"--label", "=x"}, "want k=v"},
		{"label twice", []string{"--label", "a=1", "--label", "a=2"}, "given twice"},
		{"at without parent", []string{"--at", "1"}, "need --parent"},
		{"parent without at", []string{"--parent", parent, "--mode", "fork"}, "needs --at and --mode"},
		{"parent without mode", []string{"--parent", parent, "--at", "0"}, "needs --at and --mode"},
		{"bad mode", []string{"--parent", parent, "--at", "0", "--mode", "spoon"}, "want fork or child"},
		{"call on a fork", []string{"--parent", parent, "--at", "0", "--mode", "fork", "--call", "c1"}, "--call is for --mode child"},
		{"negative at", []string{"--parent", parent, "--at", "-1", "--mode", "fork"}, `--at "-1": want a seq, an integer >= 0`},
		{"parent not an id", []string{"--parent", "p", "--at", "0", "--mode", "fork"}, "neither a log file, a session ID"},
		{"parent missing", []string{"--parent", missing, "--at", "0", "--mode", "child"}, "not found"},
		{"an argument", []string{"extra"}, "unknown command"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := logtool(t, "", append([]string{"--dir", dir, "new"}, tt.args...)...)
			require.Equal(t, 2, res.code, res.stderr)
			require.Contains(t, res.stderr, tt.msg)
			require.Empty(t, res.stdout)
		})
	}
	// A parent that does not hold event --at: a usage error, as for fork.
	for _, mode := range []string{"fork", "child"} {
		res := logtool(t, "", "--dir", dir, "new", "--parent", parent, "--at", "2", "--mode", mode)
		require.Equal(t, 2, res.code, res.stderr)
		require.Contains(t, res.stderr, "--at 2: the parent "+parent+" holds seqs 0 to 1")
		require.Empty(t, res.stdout)
	}
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var logs int
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".jsonl") {
			logs++
		}
	}
	require.Equal(t, 1, logs, "no session was created")
}

func TestNewForkAndChild(t *testing.T) {
	dir := t.TempDir()
	parent, _ := newSession(t, dir)
	require.Equal(t, 0, logtool(t, goodLine0+goodLine1+goodLine0, "--dir", dir, "append", parent).code)

	fork, forkPath := newSession(t, dir, "--parent", parent, "--at", "1", "--mode", "fork", "--label", "why=retry")
	require.Equal(t, 0, logtool(t, `{"type":"x","time":7}`+"\n", "--dir", dir, "append", fork).code)

	res := logtool(t, "", "--dir", dir, "cat", "--json", fork)
	require.Equal(t, 0, res.code, res.stderr)
	require.Equal(t, `{"seq":0,"type":"user/message","time":1,"data":{"text":"a"}}
{"seq":1,"type":"assistant/message","time":2,"data":{"text":"b"}}
{"seq":2,"type":"x","time":7,"data":null}
`, res.stdout, "the logical log: the parent's events up to the fork point, then the fork's")

	res = logtool(t, "", "--dir", dir, "cat", "--json", "--from", "1", "--to", "1", fork)
	require.Equal(t, 0, res.code, res.stderr)
	require.Equal(t, `{"seq":1,"type":"assistant/message","time":2,"data":{"text":"b"}}`+"\n", res.stdout)

	res = logtool(t, "", "--dir", dir, "stat", "--json", fork)
	require.Equal(t, 0, res.code, res.stderr)
	var st map[string]any
	require.NoError(t, json.Unmarshal([]byte(res.stdout), &st))
	require.Equal(t, map[string]any{"id": parent, "seq": 1.0, "mode": "fork"}, st["parent"])
	require.EqualValues(t, 3, st["events"])

	child, _ := newSession(t, dir, "--parent", parent, "--at", "2", "--mode", "child", "--call", "c1")
	res = logtool(t, "", "--dir", dir, "stat", "--json", child)
	require.NoError(t, json.Unmarshal([]byte(res.stdout), &st))
	require.Equal(t, map[string]any{"id": parent, "seq": 2.0, "mode": "child", "call": "c1"}, st["parent"])
	require.EqualValues(t, 0, st["events"])
	require.EqualValues(t, -1, st["lastSeq"])
	require.Nil(t, st["lastType"])
	require.Nil(t, st["lastTime"])

	// A fork whose parent is gone cannot be read whole: a lineage failure.
	alone := filepath.Join(t.TempDir(), filepath.Base(forkPath))
	require.NoError(t, copyFile(forkPath, alone))
	res = logtool(t, "", "cat", "--json", alone)
	require.Equal(t, 1, res.code)
	require.Contains(t, res.stderr, "lineage")
	res = logtool(t, "", "cat", "--json", "--from", "2", alone)
	require.Equal(t, 0, res.code, "the fork's own events need no parent")
	require.Equal(t, `{"seq":2,"type":"x","time":7,"data":null}`+"\n", res.stdout)
}

// completion takes a known shell; anything else is a usage error (exit 2),
// not cobra's help with exit 0.
func TestCompletionShells(t *testing.T) {
	tests := []struct {
		args []string
		code int
	}{
		{[]string{"bash"}, 0},
		{[]string{"zsh"}, 0},
		{[]string{"fish"}, 0},
		{[]string{"foo"}, 2},
		{nil, 2},
	}
	for _, tt := range tests {
		res := logtool(t, "", append([]string{"completion"}, tt.args...)...)
		require.Equal(t, tt.code, res.code, "%v: %s", tt.args, res.stderr)
		if tt.code == 0 {
			require.Contains(t, res.stdout, "logtool", "%v prints a script", tt.args)
		}
	}
}
