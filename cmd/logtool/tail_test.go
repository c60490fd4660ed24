package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"strings"
	"sync"
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
	require.Equal(t, exitInterrupted, <-done, "Ctrl-C ends tail -f with 130")
}

// syncBuffer is a bytes.Buffer safe for a writer and a reader goroutine.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestTailFollowsAcrossConvert checks that tail -f goes on printing after
// logtool convert replaced the file (raw → zstd, another path), saying so
// on stderr, and ends with 130 on Ctrl-C. What it follows across (cuts,
// rewrites, a session gone for a while) is tested in package follow.
func TestTailFollowsAcrossConvert(t *testing.T) {
	dir := t.TempDir()
	id, path := newSession(t, dir)
	appendTypes := func(types ...string) {
		t.Helper()
		in := ""
		for _, typ := range types {
			in += `{"type":"` + typ + `","time":1}` + "\n"
		}
		res := logtool(t, in, "--dir", dir, "append", id)
		require.Equal(t, 0, res.code, res.stderr)
	}
	appendTypes("a", "b")
	tf := startTail(t, "--dir", dir, "tail", "-f", "-n", "1", "--json", id)
	next, stderr := tf.next, &tf.stderr
	require.Equal(t, `{"seq":1,"type":"b","time":1,"data":null}`+"\n", next())

	res := logtool(t, "", "--dir", dir, "convert", "--encoding", "zstd", id)
	require.Equal(t, 0, res.code, res.stderr)
	appendTypes("c")
	require.Equal(t, `{"seq":2,"type":"c","time":1,"data":null}`+"\n", next(), "followed into the zstd file")
	require.Contains(t, stderr.String(), "logtool: the session moved to "+path+".zst (logtool convert): following the new file\n")
	require.Equal(t, exitInterrupted, tf.stop())
}

// tailRun is a logtool tail -f running in the background.
type tailRun struct {
	t      *testing.T
	cancel context.CancelFunc
	out    *io.PipeReader
	lines  *bufio.Reader
	stderr syncBuffer
	done   chan int
}

// startTail runs logtool with args (a tail -f) until stop.
func startTail(t *testing.T, args ...string) *tailRun {
	ctx, cancel := context.WithCancel(t.Context())
	t.Cleanup(cancel)
	pr, pw := io.Pipe()
	tr := &tailRun{t: t, cancel: cancel, out: pr, lines: bufio.NewReader(pr), done: make(chan int)}
	go func() {
		tr.done <- run(ctx, args, strings.NewReader(""), pw, &tr.stderr, func(string) string { return "" })
		pw.Close()
	}()
	return tr
}

// next waits for the next line tail prints.
func (tr *tailRun) next() string {
	tr.t.Helper()
	line, err := tr.lines.ReadString('\n')
	require.NoError(tr.t, err, "stderr: %s", tr.stderr.String())
	return line
}

// stop interrupts tail (Ctrl-C) and returns its exit status.
func (tr *tailRun) stop() int {
	tr.cancel()
	go io.Copy(io.Discard, tr.out)
	return <-tr.done
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
