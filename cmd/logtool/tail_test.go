package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestTail(t *testing.T) {
	dir := t.TempDir()
	id, _ := newSession(t, dir)
	in := ""
	for _, typ := range []string{"a", "b", "c", "d"} {
		in += `{"type":"` + typ + `","time":1}` + "\n"
	}
	require.Equal(t, 0, logtool(t, in, "--dir", dir, "append", id).code)
	res := logtool(t, "", "--dir", dir, "tail", "-n", "2", "--json", id)
	require.Equal(t, 0, res.code, res.stderr)
	require.Equal(t, `{"seq":2,"type":"c","time":1,"data":null}`+"\n"+`{"seq":3,"type":"d","time":1,"data":null}`+"\n", res.stdout)

	// -f prints what a writer appends after it started.
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	done := make(chan int)
	go func() {
		done <- run(ctx, []string{"--dir", dir, "tail", "-f", "-n", "1", "--json", id}, strings.NewReader(""), pw, io.Discard, func(string) string { return "" })
		pw.Close()
	}()
	lines := bufio.NewReader(pr)
	line, err := lines.ReadString('\n') // tail is running: it printed the last event
	require.NoError(t, err)
	require.Equal(t, `{"seq":3,"type":"d","time":1,"data":null}`+"\n", line)
	require.Equal(t, 0, logtool(t, `{"type":"e","time":2}`+"\n", "--dir", dir, "append", id).code)
	line, err = lines.ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, `{"seq":4,"type":"e","time":2,"data":null}`+"\n", line)
	cancel()
	go io.Copy(io.Discard, pr)
	require.Equal(t, 0, <-done)
}

func TestGCCommand(t *testing.T) {
	dir := t.TempDir()
	id, _ := newSession(t, dir)
	res := logtool(t, "", "--dir", dir, "gc", "--older-than", "30d", "--dry-run")
	require.Equal(t, 0, res.code, res.stderr)
	var rep struct{ Deleted, Kept []string }
	require.NoError(t, json.Unmarshal([]byte(res.stdout), &rep))
	require.Empty(t, rep.Deleted, "a fresh session stays")
	res = logtool(t, "", "--dir", dir, "gc", "--older-than", "0s")
	require.Equal(t, 0, res.code, res.stderr)
	require.NoError(t, json.Unmarshal([]byte(res.stdout), &rep))
	require.Equal(t, []string{id}, rep.Deleted)
	require.Equal(t, 2, logtool(t, "", "--dir", dir, "stat", id).code)
	require.Equal(t, 2, logtool(t, "", "--dir", dir, "gc", "--older-than", "soon").code)
}
