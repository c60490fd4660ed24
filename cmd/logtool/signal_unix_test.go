//go:build unix

package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// stopSignals are the signals every command stops on, with the exit
// status each gives (128 + its number, the shell's convention).
var stopSignals = []struct {
	sig  syscall.Signal
	code int
}{{syscall.SIGINT, 130}, {syscall.SIGTERM, 143}}

// binarySession creates a session with the built logtool bin in a new
// folder, and returns a context that ends the test's processes if they
// hang (so a hang fails instead of blocking), the folder and the ID.
func binarySession(t *testing.T, bin string) (context.Context, string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	t.Cleanup(cancel)
	dir := t.TempDir()
	out, err := exec.CommandContext(ctx, bin, "--dir", dir, "new").Output()
	require.NoError(t, err)
	var created struct{ ID string }
	require.NoError(t, json.Unmarshal(out, &created))
	return ctx, dir, created.ID
}

// TestBinaryAppendStopsOnSignal: logtool append waiting on stdin (a pipe
// still open) stops on SIGINT and SIGTERM, with what it acknowledged
// durable (regression: it ignored both until stdin closed).
func TestBinaryAppendStopsOnSignal(t *testing.T) {
	bin := logtoolBinary(t)
	for _, s := range stopSignals {
		t.Run(s.sig.String(), func(t *testing.T) {
			ctx, dir, id := binarySession(t, bin)
			cmd := exec.CommandContext(ctx, bin, "--dir", dir, "append", id)
			stdin, err := cmd.StdinPipe()
			require.NoError(t, err)
			defer stdin.Close()
			stdout, err := cmd.StdoutPipe()
			require.NoError(t, err)
			var stderr strings.Builder
			cmd.Stderr = &stderr
			require.NoError(t, cmd.Start())
			acks := bufio.NewReader(stdout)
			_, err = io.WriteString(stdin, `{"type":"user/message","time":1,"data":{"text":"hi"}}`+"\n")
			require.NoError(t, err)
			ack, err := acks.ReadString('\n') // ready: it now waits on stdin
			require.NoError(t, err)
			require.Equal(t, `{"acked":0}`+"\n", ack)

			require.NoError(t, cmd.Process.Signal(s.sig))
			rest, err := io.ReadAll(acks)
			require.NoError(t, err)
			require.Empty(t, string(rest), "nothing was pending")
			err = cmd.Wait()
			require.NoError(t, ctx.Err(), "append did not stop on %s", s.sig)
			var exit *exec.ExitError
			require.ErrorAs(t, err, &exit)
			require.Equal(t, s.code, exit.ExitCode(), stderr.String())
			require.Contains(t, stderr.String(), "stopped by a signal")

			out, err := exec.CommandContext(ctx, bin, "--dir", dir, "verify", "--json", id).Output()
			require.NoError(t, err)
			require.Contains(t, string(out), `"ok":true,"events":1,"fileEvents":1,"torn":null`, "the acked event is durable, nothing torn")
		})
	}
}

// TestBinaryVerifyStopsOnSignal: verify reading a huge log (1 TiB of
// zeros after its header, a sparse file) stops on SIGINT and SIGTERM
// (regression: a read inside one endless row never looked at the signal).
// Readiness: verify prints the small session named first before it reads
// the huge one.
func TestBinaryVerifyStopsOnSignal(t *testing.T) {
	bin := logtoolBinary(t)
	for _, s := range stopSignals {
		t.Run(s.sig.String(), func(t *testing.T) {
			ctx, dir, id := binarySession(t, bin)
			const hugeID = "7ZZZZZZZZZZZZZZZZZZZZZZZZZ" // after every new ID in name order
			huge := filepath.Join(dir, hugeID+".jsonl")
			require.NoError(t, os.WriteFile(huge, fmt.Appendf(nil,
				`{"format":"sessionlog","version":1,"id":%q,"createdAt":1}`+"\n", hugeID), 0o600))
			require.NoError(t, os.Truncate(huge, 1<<40))

			cmd := exec.CommandContext(ctx, bin, "verify", dir)
			stdout, err := cmd.StdoutPipe()
			require.NoError(t, err)
			var stderr strings.Builder
			cmd.Stderr = &stderr
			require.NoError(t, cmd.Start())
			lines := bufio.NewReader(stdout)
			first, err := lines.ReadString('\n') // ready: it now reads the huge log
			require.NoError(t, err)
			require.True(t, strings.HasPrefix(first, `{"path":`), first)
			require.Contains(t, first, id, "the small session first")

			require.NoError(t, cmd.Process.Signal(s.sig))
			_, err = io.ReadAll(lines)
			require.NoError(t, err)
			err = cmd.Wait()
			require.NoError(t, ctx.Err(), "verify did not stop on %s", s.sig)
			var exit *exec.ExitError
			require.ErrorAs(t, err, &exit)
			require.Equal(t, s.code, exit.ExitCode(), stderr.String())
		})
	}
}
