package file_test

// The real-process crash test: a writer process is killed with SIGKILL at
// a random point, and the log on disk must hold every event it had
// acknowledged, exactly as written, and go on growing from there.
//
// The writer is this test binary itself, re-executed with
// SESSIONLOG_CRASH_WRITER set (see init below). TestKillWriter runs 20
// rounds (every layout), 2,000 under SESSIONLOG_SWEEPS=long
// (internal/testkit/sweep); SESSIONLOG_KILL_ROUNDS sets
// the number, e.g. SESSIONLOG_KILL_ROUNDS=500 go test -run Kill ./handle/.

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/spf13/afero"
	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/handle/file"
	"github.com/sessionlog/sessionlog/internal/testkit/sweep"
)

const (
	// crashWriterEnv, set to "<dir>,<session ID>", turns the test binary
	// into the writer process (see runCrashWriter).
	crashWriterEnv = "SESSIONLOG_CRASH_WRITER"
	// killRoundsEnv overrides the number of rounds of TestKillWriter.
	killRoundsEnv = "SESSIONLOG_KILL_ROUNDS"
)

// init runs the writer when this binary was started as one. It runs before
// the testing package parses flags, and never returns.
func init() {
	if spec, ok := os.LookupEnv(crashWriterEnv); ok {
		os.Exit(runCrashWriter(spec))
	}
}

// crashAppenders is how many goroutines of the writer process append and
// flush at once (their flushes share writes: group commit).
const crashAppenders = 4

// runCrashWriter opens the session ReadWrite on the OS file system and,
// in crashAppenders goroutines, appends batches of 1 to 20 crashEvents
// forever, printing to stdout (which is unbuffered) "ready <last seq>"
// once open, then "flushing <seq>" before and "acked <seq>" after each
// Flush, seq being the last of the goroutine's batch. It returns only on
// an error.
func runCrashWriter(spec string) int {
	dir, id, _ := strings.Cut(spec, ",")
	ctx := context.Background()
	st := file.New(afero.NewOsFs(), dir, handle.WithIdentities(crashIdentity))
	h, err := st.Open(ctx, id, handle.ReadWrite)
	if err != nil {
		fmt.Fprintln(os.Stderr, "crash writer:", err)
		return 2
	}
	fmt.Printf("ready %d\n", h.Seq())
	var mu sync.Mutex // orders seqs with appends, and lines on stdout
	say := func(word string, seq int64) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Printf("%s %d\n", word, seq)
	}
	failed := make(chan error, crashAppenders)
	for range crashAppenders {
		go func() {
			for {
				mu.Lock()
				last, err := h.Append(ctx, crashEvents(h.Seq()+1, 1+rand.IntN(20))...)
				mu.Unlock()
				if err != nil {
					failed <- err
					return
				}
				say("flushing", last)
				if err := h.Flush(ctx); err != nil {
					failed <- err
					return
				}
				say("acked", last)
			}
		}()
	}
	fmt.Fprintln(os.Stderr, "crash writer:", <-failed)
	return 2
}

// killRounds returns the number of rounds TestKillWriter runs.
func killRounds(t *testing.T) int {
	s, ok := os.LookupEnv(killRoundsEnv)
	if !ok {
		return sweep.Size(20, 20, 2000)
	}
	n, err := strconv.Atoi(s)
	require.NoError(t, err, "%s=%q", killRoundsEnv, s)
	require.Positive(t, n, "%s", killRoundsEnv)
	return n
}

// crashChild is a running writer process.
type crashChild struct {
	cmd    *exec.Cmd
	lines  *bufio.Scanner
	stderr bytes.Buffer
}

func startCrashWriter(t *testing.T, dir, id string) *crashChild {
	t.Helper()
	exe, err := os.Executable()
	require.NoError(t, err)
	c := &crashChild{cmd: exec.Command(exe, "-test.run=^$")}
	c.cmd.Env = append(os.Environ(), crashWriterEnv+"="+dir+","+id)
	c.cmd.Stderr = &c.stderr
	out, err := c.cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, c.cmd.Start())
	c.lines = bufio.NewScanner(out)
	return c
}

// next reads the child's next line: what it did and the seq.
func (c *crashChild) next(t *testing.T) (string, int64) {
	t.Helper()
	if !c.lines.Scan() {
		c.kill(t)
		t.Fatalf("writer ended early (%v); stderr:\n%s", c.lines.Err(), c.stderr.String())
	}
	word, num, _ := strings.Cut(c.lines.Text(), " ")
	seq, err := strconv.ParseInt(num, 10, 64)
	require.NoError(t, err, "writer said %q", c.lines.Text())
	return word, seq
}

// kill sends SIGKILL and reaps the child.
func (c *crashChild) kill(t *testing.T) {
	t.Helper()
	require.NoError(t, c.cmd.Process.Kill())
	err := c.cmd.Wait()
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee)
	ws, ok := ee.Sys().(syscall.WaitStatus)
	require.True(t, ok)
	require.Equal(t, syscall.SIGKILL, ws.Signal(), "writer died of something else; stderr:\n%s", c.stderr.String())
	require.NotContains(t, c.stderr.String(), "DATA RACE")
}

// TestKillWriter kills a writer process (crashAppenders goroutines
// appending and flushing at once) with SIGKILL, after it
// acknowledged a random number of flushes and either right after an
// acknowledgement or right before a flush, then checks the log from this
// process: every acknowledged event is there with exactly the writer's
// bytes (every event found is crashEvent(seq)), and appending goes on
// contiguously. Most rounds continue the log the previous ones left; every
// fifth starts a new session, in each layout of crashEncodings in turn
// (raw, zstd, and both sealed). In the first round, while the writer runs,
// another writer is refused with ErrLocked (the lock across processes) and a
// reader sees a clean prefix.
func TestKillWriter(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	dir := t.TempDir()
	st := file.New(afero.NewOsFs(), dir, handle.WithIdentities(crashIdentity))
	rng := rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	var id, fileb, enc string
	var last int64 // the last seq of the session before the round
	rounds, lost := map[string]int{}, map[string]int{}
	for round := range killRounds(t) {
		if round%5 == 0 {
			enc = crashEncodings[round/5%len(crashEncodings)]
			h, err := st.Create(ctx, inLayout(enc)...)
			require.NoError(t, err)
			id, fileb, last = h.ID(), h.Path(), h.Seq()
			require.NoError(t, h.Close())
		}
		acks := 1 + rng.IntN(4)
		beforeFlush := rng.IntN(2) == 0
		t.Logf("round %d: session %s from seq %d, kill after %d acks%s", round, filepath.Base(fileb), last,
			acks, map[bool]string{true: " at the next flush", false: ""}[beforeFlush])

		c := startCrashWriter(t, dir, id)
		word, seq := c.next(t)
		require.Equal(t, "ready", word)
		require.Equal(t, last, seq, "the writer must continue where the log ended")
		acked := last
		for seen := 0; seen < acks; {
			word, seq := c.next(t)
			if word == "acked" { // appenders acknowledge out of order
				acked, seen = max(acked, seq), seen+1
			}
			if round == 0 && seen == 1 && word == "acked" {
				requireLockedByChild(t, st, id)
			}
		}
		for beforeFlush {
			if word, _ := c.next(t); word == "flushing" {
				break
			}
		}
		c.kill(t)

		h, err := file.New(afero.NewOsFs(), dir, handle.WithIdentities(crashIdentity)).Open(ctx, id, handle.ReadWrite)
		require.NoError(t, err)
		if torn := h.Torn(); torn != nil {
			t.Logf("round %d: torn tail of %d bytes at offset %d", round, torn.Bytes, torn.Offset)
		}
		got := readWholeLog(t, h)
		lost[enc] += int(max(0, acked+1-int64(len(got))))
		require.Greater(t, int64(len(got)), acked, "acknowledged events lost")
		require.Equal(t, canonLines(crashEvents(0, len(got))), canonLines(got))
		require.Equal(t, int64(len(got))-1, h.Seq())
		appendAndFlush(t, h, crashEvent(int64(len(got))))
		last = h.Seq()
		require.NoError(t, h.Close())
		rounds[enc]++
	}
	for _, enc := range crashEncodings {
		// docs/reliability.md, "Figures" (2).
		t.Logf("figure: kill: %s | %d rounds, %d appenders | acknowledged events lost %d", enc, rounds[enc], crashAppenders, lost[enc])
	}
}

// requireLockedByChild checks, while the writer process holds session id,
// that this process cannot open or delete it for writing, and that a
// reader sees a clean prefix of the log.
func requireLockedByChild(t *testing.T, st *file.Store, id string) {
	t.Helper()
	ctx := t.Context()
	_, err := st.Open(ctx, id, handle.ReadWrite)
	require.ErrorIs(t, err, handle.ErrLocked)
	require.ErrorIs(t, st.Delete(ctx, id), handle.ErrLocked)
	_, err = file.New(afero.NewOsFs(), st.Dir(), handle.WithIdentities(crashIdentity)).Open(ctx, id, handle.ReadWrite)
	require.ErrorIs(t, err, handle.ErrLocked)

	r, err := st.Open(ctx, id, handle.ReadOnly)
	require.NoError(t, err)
	got := readWholeLog(t, r)
	require.NotEmpty(t, got)
	require.Equal(t, canonLines(crashEvents(0, len(got))), canonLines(got))
	require.NoError(t, r.Close())
}
