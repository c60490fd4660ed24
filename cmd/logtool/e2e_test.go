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
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// logtoolBinary returns the logtool the tests run as a real process: this
// test binary, which TestMain linked as "logtool" into a folder it put
// first on $PATH, and which runs main when called by that name. Nothing is built: the tests run the code under test, with the race
// detector when the tests have it.
func logtoolBinary(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(filepath.SplitList(os.Getenv("PATH"))[0], "logtool")
	if runtime.GOOS == "windows" {
		bin += ".exe"
	}
	_, err := os.Stat(bin)
	require.NoError(t, err, "TestMain puts logtool first on $PATH")
	return bin
}

// TestBinaryAcksBeforeEndOfInput runs logtool append as a real process fed
// through a pipe: each line's ack must come back while stdin is still
// open, before the next line is written.
func TestBinaryAcksBeforeEndOfInput(t *testing.T) {
	bin := logtoolBinary(t)
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute) // a hang fails, not blocks
	defer cancel()

	out, err := exec.CommandContext(ctx, bin, "--dir", dir, "new").Output()
	require.NoError(t, err)
	var created struct{ ID string }
	require.NoError(t, json.Unmarshal(out, &created))

	cmd := exec.CommandContext(ctx, bin, "--dir", dir, "append", created.ID)
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Start())

	acks := bufio.NewReader(stdout)
	for i := range 3 {
		_, err := fmt.Fprintf(stdin, `{"type":"tool/call","time":%d,"data":{"id":"c%d"}}`+"\n", 1000+i, i)
		require.NoError(t, err)
		ack, err := acks.ReadString('\n')
		require.NoError(t, err, "no ack for line %d while stdin is open; stderr: %s", i+1, stderr.String())
		require.Equal(t, fmt.Sprintf(`{"acked":%d}`+"\n", i), ack)
	}
	_, err = io.WriteString(stdin, `{"type":"x","seq":7}`+"\n")
	require.NoError(t, err)
	rest, err := io.ReadAll(acks)
	require.NoError(t, err)
	require.Equal(t, `{"acked":2}`+"\n"+`{"error":{"kind":"conflict","line":4,"message":"seq 7 is not the next seq 3"}}`+"\n", string(rest))
	err = cmd.Wait()
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit)
	require.Equal(t, 1, exit.ExitCode())
	require.Equal(t, "logtool: line 4: conflict: seq 7 is not the next seq 3\n", stderr.String())

	out, err = exec.CommandContext(ctx, bin, "--dir", dir, "verify", "--json", created.ID).Output()
	require.NoError(t, err)
	require.Contains(t, string(out), `"ok":true,"events":3`)
}
