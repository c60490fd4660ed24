package main

import (
	"bufio"
	"context"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/afero"
	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/handle/file"
)

const (
	goodLine0 = `{"type":"user/message","time":1,"data":{"text":"a"}}` + "\n"
	goodLine1 = `{"type":"assistant/message","time":2,"data":{"text":"b"}}` + "\n"
)

// TestAppendStopsAtBadLine: the CLI side of a bad line (package feed
// tests the protocol, every kind of bad line): exit 1, the error on
// stderr, the ack and error lines on stdout, nothing of that line or after
// it written.
func TestAppendStopsAtBadLine(t *testing.T) {
	dir := t.TempDir()
	id, _ := newSession(t, dir)
	res := logtool(t, goodLine0+goodLine1+`{"type":"x","seq":5}`+"\n"+`{"type":"after"}`+"\n", "--dir", dir, "append", id)
	require.Equal(t, 1, res.code, res.stderr)
	require.Equal(t, `{"acked":1}`+"\n"+`{"error":{"kind":"conflict","line":3,"message":"seq 5 is not the next seq 2"}}`+"\n", res.stdout)
	require.True(t, strings.HasPrefix(res.stderr, "logtool: line 3: conflict"), res.stderr)
	res = logtool(t, "", "--dir", dir, "cat", "--json", id)
	require.Equal(t, 0, res.code, res.stderr)
	require.Equal(t, 2, strings.Count(res.stdout, "\n"), "nothing of the bad line or after it: %s", res.stdout)
}

// --flush-every reaches the protocol; a negative N is a usage error.
func TestAppendFlushEvery(t *testing.T) {
	dir := t.TempDir()
	id, _ := newSession(t, dir)
	res := logtool(t, strings.Repeat(goodLine0, 5), "--dir", dir, "append", "--flush-every", "2", id)
	require.Equal(t, 0, res.code, res.stderr)
	require.Equal(t, `{"acked":1}`+"\n"+`{"acked":3}`+"\n"+`{"acked":4}`+"\n", res.stdout)
	require.Equal(t, 2, logtool(t, "", "--dir", t.TempDir(), "append", "--flush-every", "-1", "01JDX3N0Q3Z8Y6W2D1V5K7M9PA").code)
}

// TestAppendAcksWithoutWaiting feeds append through a pipe, one line at a
// time: each ack must arrive while stdin is still open.
func TestAppendAcksWithoutWaiting(t *testing.T) {
	dir := t.TempDir()
	id, _ := newSession(t, dir)
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan int, 1)
	go func() {
		var errOut strings.Builder
		code := run(t.Context(), []string{"--dir", dir, "append", id}, inR, outW, &errOut, func(string) string { return "" })
		outW.Close()
		done <- code
	}()
	acks := bufio.NewReader(outR)
	for i := range 3 {
		_, err := io.WriteString(inW, goodLine0)
		require.NoError(t, err)
		ack, err := acks.ReadString('\n')
		require.NoError(t, err)
		require.Equal(t, `{"acked":`+string(rune('0'+i))+"}\n", ack)
	}
	require.NoError(t, inW.Close())
	_, err := acks.ReadString('\n')
	require.ErrorIs(t, err, io.EOF, "nothing new to ack at the end")
	require.Equal(t, 0, <-done)
}

func TestAppendLocked(t *testing.T) {
	dir := t.TempDir()
	id, _ := newSession(t, dir)
	h, err := file.New(afero.NewOsFs(), dir).Open(context.Background(), id, handle.ReadWrite)
	require.NoError(t, err)
	defer h.Close()

	res := logtool(t, goodLine0, "--dir", dir, "append", id)
	require.Equal(t, 1, res.code)
	require.Contains(t, res.stderr, "locked")
	require.Empty(t, res.stdout)
}

func TestAppendRefusesFreelyNamedFile(t *testing.T) {
	dir := t.TempDir()
	_, path := newSession(t, dir)
	free := filepath.Join(dir, "export.jsonl")
	require.NoError(t, copyFile(path, free))
	res := logtool(t, goodLine0, "append", free)
	require.Equal(t, 2, res.code)
	require.Contains(t, res.stderr, "<ID>.jsonl")
}

func TestAppendToForkContinuesAfterForkPoint(t *testing.T) {
	dir := t.TempDir()
	parent, _ := newSession(t, dir)
	require.Equal(t, 0, logtool(t, goodLine0+goodLine0+goodLine0, "--dir", dir, "append", parent).code)
	fork, _ := newSession(t, dir, "--parent", parent, "--at", "1", "--mode", "fork")

	res := logtool(t, `{"type":"x","time":9,"seq":2}`+"\n", "--dir", dir, "append", fork)
	require.Equal(t, 0, res.code, res.stderr)
	require.Equal(t, `{"acked":2}`+"\n", res.stdout)
}
