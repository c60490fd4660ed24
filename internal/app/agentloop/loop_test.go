package agentloop_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/spf13/afero"
	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/checkpoint"
	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/handle/file"
	loop "github.com/sessionlog/sessionlog/internal/app/agentloop"
	"github.com/sessionlog/sessionlog/projection"
	"github.com/sessionlog/sessionlog/replay"
)

// The child: SESSIONLOG_AGENTLOOP_CHILD=dir,id runs the loop in lockstep
// with its parent (one line of stdin after every durable point).
func init() {
	spec := os.Getenv("SESSIONLOG_AGENTLOOP_CHILD")
	if spec == "" {
		return
	}
	dir, id, _ := strings.Cut(spec, ",")
	ctx := context.Background()
	store := file.New(afero.NewOsFs(), dir)
	h, err := store.Open(ctx, id, handle.ReadWrite)
	if err == nil {
		err = loop.Run(ctx, h, loop.DefaultScript(), loop.Options{Workdir: filepath.Join(dir, "work"),
			Progress: os.Stdout, Step: bufio.NewReader(os.Stdin), Cache: store})
	}
	if err == nil {
		err = h.Close()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		os.Exit(3)
	}
	os.Exit(0)
}

// rounds is 20 in CI; SESSIONLOG_AGENTLOOP_ROUNDS asks for more.
func rounds() int {
	if n, err := strconv.Atoi(os.Getenv("SESSIONLOG_AGENTLOOP_ROUNDS")); err == nil && n > 0 {
		return n
	}
	return 20
}

// The example loop is killed at random points, twice, each run carrying
// on where the last stopped; no acknowledged event is lost. Then the loop
// finishes the script: every tool call is paired with one result, and
// every turn is answered and completed — none is closed as interrupted.
func TestKillAndResume(t *testing.T) {
	ctx := context.Background()
	r := rand.New(rand.NewPCG(7, uint64(os.Getpid())))
	for round := range rounds() {
		dir := t.TempDir()
		require.NoError(t, loop.Prepare(filepath.Join(dir, "work")))
		store := file.New(afero.NewOsFs(), dir)
		h, err := store.Create(ctx)
		require.NoError(t, err)
		id := h.ID()
		require.NoError(t, h.Close())

		for kill := range 2 { // kill twice on the same session
			killAt := r.IntN(24)
			running := r.IntN(2) == 0 // kill while it runs, or while it waits
			acked := runAndKill(t, dir, id, killAt, running)

			w, err := store.Open(ctx, id, handle.ReadOnly)
			require.NoError(t, err, "round %d kill %d", round, kill)
			require.GreaterOrEqual(t, w.Seq(), acked, "an acknowledged event was lost (round %d)", round)
			require.NoError(t, w.Close())
		}

		w, err := store.Open(ctx, id, handle.ReadWrite)
		require.NoError(t, err)
		require.NoError(t, loop.Run(ctx, w, loop.DefaultScript(), loop.Options{Workdir: filepath.Join(dir, "work"), Cache: store}))
		checkClosed(t, w)
		checkAnswered(t, w, len(loop.DefaultScript()))
		require.NoError(t, w.Close())
	}
}

// With no script for the open turn, Run closes it as interrupted.
func TestRunClosesATurnItCannotCarryOn(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	require.NoError(t, loop.Prepare(filepath.Join(dir, "work")))
	store := file.New(afero.NewOsFs(), dir)
	h, err := store.Create(ctx)
	require.NoError(t, err)
	id := h.ID()
	require.NoError(t, h.Close())
	runAndKill(t, dir, id, 3, false) // in the first turn
	w, err := store.Open(ctx, id, handle.ReadWrite)
	require.NoError(t, err)
	defer w.Close()
	require.NoError(t, loop.Run(ctx, w, loop.Script{}, loop.Options{Cache: store}))
	checkClosed(t, w)
	agent := projection.NewAgent()
	_, err = replay.Replay(ctx, w, []projection.Projection{agent})
	require.NoError(t, err)
	require.False(t, agent.State().TurnOpen)
}

// checkAnswered asserts that the live log holds turns turns, each
// completed, each answered by the model after its user message.
func checkAnswered(t *testing.T, h handle.Handle, turns int) {
	t.Helper()
	ctx := context.Background()
	var kinds []string
	for e, err := range h.Read(ctx, 0, handle.End) {
		require.NoError(t, err)
		if e.Type == "turn/end" {
			kinds = append(kinds, string(e.Data))
		}
	}
	require.Len(t, kinds, turns)
	for _, k := range kinds {
		require.Contains(t, k, `"completed"`, "a resumed turn goes on to answer the user")
	}
	tr := projection.NewTranscript()
	_, err := replay.Replay(ctx, h, []projection.Projection{tr})
	require.NoError(t, err)
	users := 0
	msgs := tr.State().Messages
	for i, m := range msgs {
		if m.Role == "user" {
			users++
			answered := false
			for _, later := range msgs[i+1:] {
				if later.Role == "user" {
					break
				}
				if later.Role == "assistant" && later.Text != "" {
					answered = true
				}
			}
			require.True(t, answered, "user message %d answered", users)
		}
	}
	require.Equal(t, turns, users)
}

// runAndKill runs the loop as a child process and kills it with SIGKILL
// after its killAt-th durable point; it returns the last acknowledged seq.
func runAndKill(t *testing.T, dir, id string, killAt int, running bool) int64 {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	// A race-enabled binary sleeps a second at exit unless told not to.
	cmd.Env = append(os.Environ(), "SESSIONLOG_AGENTLOOP_CHILD="+dir+","+id, "GORACE=atexit_sleep_ms=0")
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	lines := bufio.NewReader(stdout)
	acked := int64(-1)
	for n := 0; ; n++ {
		line, err := lines.ReadString('\n')
		if err == io.EOF {
			break // the script ended before the kill point
		}
		require.NoError(t, err)
		var seq int64
		_, err = fmt.Sscanf(line, "durable %d", &seq)
		require.NoError(t, err, line)
		acked = max(acked, seq)
		if n == killAt {
			if running {
				io.WriteString(stdin, "\n")
			}
			require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
			break
		}
		_, err = io.WriteString(stdin, "\n")
		require.NoError(t, err)
	}
	stdin.Close()
	cmd.Wait()
	return acked
}

// checkClosed asserts the crash invariants on the live log.
func checkClosed(t *testing.T, h handle.Handle) {
	t.Helper()
	ctx := context.Background()
	starts, ends := 0, 0
	calls, results := map[string]int{}, map[string]int{}
	for e, err := range h.Read(ctx, 0, handle.End) {
		require.NoError(t, err)
		switch e.Type {
		case "turn/start":
			starts++
		case "turn/end":
			ends++
		case "tool/call", "tool/result":
			id := string(e.Data)
			id = id[strings.Index(id, `"id":"`)+6:]
			id = id[:strings.IndexByte(id, '"')]
			if e.Type == "tool/call" {
				calls[id]++
			} else {
				results[id]++
			}
		}
	}
	require.Equal(t, starts, ends, "exactly one turn/end per turn")
	require.Equal(t, calls, results, "every tool call is paired with a result")
	tr := projection.NewTranscript()
	res, err := checkpoint.Verify(ctx, h, tr, projection.NewAgent())
	require.NoError(t, err)
	require.Zero(t, res.Unchecked)
	for _, m := range tr.State().Messages {
		for _, c := range m.ToolCalls {
			require.Contains(t, results, c.ID)
		}
	}
}
