package figures_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/spf13/afero"
	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/handle/file"
	"github.com/sessionlog/sessionlog/internal/testkit/sweep"
)

// killEvents is the size of the session an operation under kill creates:
// large enough (about 3 MB raw without the race detector) that a kill
// lands while it writes. A logtool built with -race writes far slower, so
// it gets an eighth of it (raceSlowdown), which spans about as long.
const killEvents = 20000 / raceSlowdown

// forkEvents is how many events of its own the fork of the copied store
// holds (forked at the middle of the big session).
const forkEvents = 2000

// createOp is an operation of logtool that creates sessions with data
// (docs/format.md §9: absent or complete whenever the process dies).
type createOp struct {
	name string
	// fork puts a fork of the session in the source store too: the
	// operation creates both, the parent first.
	fork bool
	// args is the command line that creates the sessions in the store
	// dst (a folder or a URL) from the source folder src, whose first
	// session (in encoding enc) is id. It prints one JSON object a
	// session with its "id" and "status".
	args func(src, dst, id, enc string) []string
}

// want is a session of the source: its ID, the sha256 of its canonical
// lines (its logical log) and how many events that is.
type want struct {
	id     string
	sum    [sha256.Size]byte
	events int64
}

// killSource writes a folder holding a session of killEvents events in
// encoding enc (and, with fork, a fork of it at its middle with
// forkEvents of its own) and returns the folder and its sessions, the
// parent first.
func killSource(t *testing.T, enc string, fork bool) (dir string, wants []want) {
	t.Helper()
	dir = t.TempDir()
	st := file.New(afero.NewOsFs(), dir)
	fill := func(h handle.Handle, from, n int64) {
		for seq := from; seq < from+n; seq += 1000 {
			batch := make([]eventlog.Event, min(1000, from+n-seq))
			for i := range batch {
				batch[i] = sampleEvent(seq + int64(i))
			}
			_, err := h.Append(t.Context(), batch...)
			require.NoError(t, err)
			require.NoError(t, h.Flush(t.Context()))
		}
		require.NoError(t, h.Close())
	}
	h, err := st.Create(t.Context(), handle.WithEncoding(enc), handle.WithLabels(map[string]string{"figure": "kill"}))
	require.NoError(t, err)
	fill(h, 0, killEvents)
	ids := []string{h.ID()}
	if fork {
		f, err := st.Fork(t.Context(), h.ID(), killEvents/2-1, handle.WithEncoding(enc))
		require.NoError(t, err)
		fill(f, killEvents/2, forkEvents)
		ids = append(ids, f.ID())
	}
	for _, id := range ids {
		sum, n, ok := canonSum(t, st, id)
		require.True(t, ok)
		wants = append(wants, want{id: id, sum: sum, events: n})
	}
	return dir, wants
}

// canonSum reads session id of st and returns the sha256 of its canonical
// lines and how many events it holds; ok is false when the store has no
// such session.
func canonSum(t *testing.T, st handle.Store, id string) (sum [sha256.Size]byte, n int64, ok bool) {
	t.Helper()
	h, err := st.Open(t.Context(), id, handle.ReadOnly)
	if errors.Is(err, handle.ErrNotFound) {
		return sum, 0, false
	}
	require.NoError(t, err, "a session that is there opens: it is not damaged")
	defer h.Close()
	sh := sha256.New()
	for e, err := range h.Read(t.Context(), 0, handle.End) {
		require.NoError(t, err)
		sh.Write(append(eventlog.AppendCanon(nil, e), '\n'))
		n++
	}
	copy(sum[:], sh.Sum(nil))
	return sum, n, true
}

// killStore is the kind of store a kill round creates sessions in.
type killStore struct {
	name string
	// next returns a new, empty store: where logtool names it, and the
	// store itself for the checks.
	next func(t *testing.T) (where string, st handle.Store)
	// files is whether its sessions are files: what a killed operation
	// leaves is then a temp file, which the retry must take away.
	files bool
}

// folderStore is a new temp folder each round.
var folderStore = killStore{name: "folder", files: true, next: func(t *testing.T) (string, handle.Store) {
	dir := t.TempDir()
	return dir, file.New(afero.NewOsFs(), dir)
}}

// leftTemp lists what a killed operation left in dir besides sessions and
// derived files: temp files of an interrupted write (which the retry
// overwrites and gc removes).
func leftTemp(t *testing.T, dir string) []string {
	t.Helper()
	matches, err := filepath.Glob(filepath.Join(dir, "*.tmp"))
	require.NoError(t, err)
	return matches
}

// statuses reads the JSON lines an operation printed: the status of each
// session by ID.
func statuses(t *testing.T, stdout string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for line := range strings.SplitSeq(strings.TrimSpace(stdout), "\n") {
		if line == "" {
			continue
		}
		var r struct{ ID, Status string }
		require.NoError(t, json.Unmarshal([]byte(line), &r), "%s", line)
		out[r.ID] = r.Status
	}
	return out
}

// killRounds runs op as a logtool process into a new store of kind ks
// each round, killing it with SIGKILL at a random instant of its run
// (uniform over 1.2 times an uninterrupted run, process start included),
// then checks the store: each session absent or complete — the same
// canonical lines as the source, never a part of them — and the same
// command run again succeeds (exit 0), says "unchanged" of each session
// that stood complete and "created" of each that was absent, and leaves
// every session complete. It logs one figure row.
func killRounds(t *testing.T, bin string, op createOp, ks killStore, enc string) {
	src, wants := killSource(t, enc, op.fork)
	run := func(dst string) (*exec.Cmd, *bytes.Buffer, *bytes.Buffer) {
		cmd := exec.CommandContext(t.Context(), bin, op.args(src, dst, wants[0].id, enc)...)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		return cmd, &stdout, &stderr
	}
	// there reports which sessions st holds whole; one that stands with
	// part of its events fails the test (and counts as not there).
	truncated := 0
	there := func(st handle.Store, round int, what string) map[string]bool {
		out := map[string]bool{}
		for _, w := range wants {
			sum, n, ok := canonSum(t, st, w.id)
			if ok && sum != w.sum {
				truncated++
				t.Errorf("round %d %s: %s stands with %d of %d events", round, what, w.id, n, w.events)
				ok = false
			}
			out[w.id] = ok
		}
		return out
	}
	// An uninterrupted run, to know how long one takes.
	dst, st := ks.next(t)
	cmd, _, stderr := run(dst)
	began := time.Now()
	require.NoError(t, cmd.Run(), "%s", stderr)
	span := time.Since(began)
	for id, ok := range there(st, -1, "uninterrupted") {
		require.True(t, ok, id)
	}

	rng := rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	rounds := sweep.Size(3, 8, 200)
	var killed, absent, between, complete, retried int
	for round := range rounds {
		dst, st := ks.next(t)
		cmd, _, stderr := run(dst)
		require.NoError(t, cmd.Start())
		at := time.Duration(rng.Int64N(int64(span) * 6 / 5))
		timer := time.AfterFunc(at, func() { cmd.Process.Kill() })
		err := cmd.Wait()
		timer.Stop()
		var exit *exec.ExitError
		switch {
		case err == nil:
		case errors.As(err, &exit) && exit.Sys().(syscall.WaitStatus).Signaled():
			killed++
		default:
			require.NoError(t, err, "round %d: %s", round, stderr)
		}
		stood := there(st, round, "after the kill")
		n := 0
		for _, ok := range stood {
			if ok {
				n++
			}
		}
		switch n {
		case 0:
			absent++
		case len(wants):
			complete++
		default:
			between++
		}
		retry, rstdout, rstderr := run(dst)
		require.NoError(t, retry.Run(), "round %d (killed after %v): the same command again succeeds (exit 0): %s", round, at, rstderr)
		got := statuses(t, rstdout.String())
		for _, w := range wants {
			wantStatus := "created"
			if stood[w.id] {
				wantStatus = "unchanged"
			}
			require.Equal(t, wantStatus, got[w.id], "round %d: the retry's status of %s", round, w.id)
		}
		for id, ok := range there(st, round, "after the retry") {
			require.True(t, ok, "round %d: %s complete after the retry", round, id)
		}
		if ks.files {
			require.Empty(t, leftTemp(t, dst), "round %d: the retry overwrote what the kill left", round)
			require.NoError(t, os.RemoveAll(dst))
		}
		retried++
	}
	figure(t, "kill", "%s %s %s | %d sessions | %d rounds | killed mid-run %d | absent %d | between sessions %d | complete %d | truncated %d | retries complete %d",
		op.name, ks.name, enc, len(wants), rounds, killed, absent, between, complete, truncated, retried)
	require.Zero(t, truncated)
}

// TestKillCopy: logtool copy of a whole store (a session and a fork of
// it) killed at random instants leaves each session absent or complete
// in the destination, and the copy run again goes on: it passes over what
// was copied (unchanged) and completes the rest. Regressions: 12 of 28
// killed copies stood truncated, and the retry failed with "session
// exists"; then, with all-or-nothing creation, a retry after a complete
// copy still failed "session exists", and a whole-store copy stopped at
// the first session already copied.
func TestKillCopy(t *testing.T) {
	if testing.Short() {
		t.Skip("kill rounds of logtool copy: builds the binary and runs it many times")
	}
	op := createOp{name: "copy", fork: true, args: func(src, dst, _, _ string) []string {
		return []string{"copy", src, dst}
	}}
	bin := buildLogtool(t)
	// By default zstd alone (TestKillImport kills raw), both under
	// SESSIONLOG_SWEEPS=full.
	for _, enc := range []string{handle.EncodingRaw, handle.EncodingZstd} {
		if !sweep.Full() && enc != handle.EncodingZstd {
			continue
		}
		t.Run(enc, func(t *testing.T) { killRounds(t, bin, op, folderStore, enc) })
	}
}
