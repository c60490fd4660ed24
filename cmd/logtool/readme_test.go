package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// readmeBlocks returns the ```sh blocks of the repository's README.md, in
// order, each as its lines.
func readmeBlocks(t *testing.T) [][]string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	require.NoError(t, err)
	var blocks [][]string
	var cur []string
	in := false
	for line := range strings.Lines(string(b)) {
		line = strings.TrimRight(line, "\n")
		switch {
		case !in && line == "```sh":
			in, cur = true, nil
		case in && line == "```":
			in = false
			blocks = append(blocks, cur)
		case in:
			cur = append(cur, line)
		}
	}
	require.False(t, in, "README.md: a ```sh block is not closed")
	return blocks
}

// readmeLine is the line the test runs for a line of a README block, and
// false for a line it does not run. The README is written for a user at
// the repository's root with Go installed; the test runs in an empty
// folder with logtool already built there as ./logtool, so:
//
//   - `go build -o logtool ./cmd/logtool` is not run (its result is there);
//   - `go run ./cmd/logtool ARGS` runs as `./logtool ARGS`;
//   - the test command (`go vet -race`, then `go test -race` on testPackages) is
//     not run: it is the suite this test belongs to
//     (TestReadmeShellSnippets checks that .ci/run runs it).
//
// Any other go command is an error, so that a new one gets a rule here
// rather than being run, or skipped, by accident.
// testPackages are the README's test command's packages: the root module
// and the workspace's nested modules (./... does not reach them).
const testPackages = "./... ./adapters/anthropic/... ./adapters/openai/... ./examples/anthropic-agent/..."

// testCommand is the README's test command.
const testCommand = "go vet -race " + testPackages + " && GORACE=atexit_sleep_ms=0 go test -race -vet=off " + testPackages

func readmeLine(line string) (string, bool, error) {
	cmd, _, _ := strings.Cut(line, "#")
	cmd = strings.TrimSpace(cmd)
	switch {
	case cmd == "go build -o logtool ./cmd/logtool":
		return "", false, nil
	case cmd == testCommand:
		return "", false, nil
	case strings.HasPrefix(cmd, "go run ./cmd/logtool "):
		return "./logtool " + strings.TrimPrefix(line, "go run ./cmd/logtool "), true, nil
	case cmd == "go" || strings.HasPrefix(cmd, "go "):
		return "", false, fmt.Errorf("README.md runs %q: give it a rule in readmeLine", cmd)
	}
	return line, true, nil
}

func TestReadmeLine(t *testing.T) {
	tests := []struct {
		line, want string
		run        bool
		err        bool
	}{
		{line: "go build -o logtool ./cmd/logtool"},
		{line: testCommand + "  # the tests"},
		{line: "go run ./cmd/logtool demo   # the main job", want: "./logtool demo   # the main job", run: true},
		{line: "go install ./cmd/logtool", err: true},
		{line: "./logtool stat \"$id\"", want: "./logtool stat \"$id\"", run: true},
		{line: "# go anywhere: a comment", want: "# go anywhere: a comment", run: true},
	}
	for _, tt := range tests {
		t.Run(tt.line, func(t *testing.T) {
			got, run, err := readmeLine(tt.line)
			if tt.err {
				require.Error(t, err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.run, run)
			require.Equal(t, tt.want, got)
		})
	}
}

// TestReadmeShellSnippets runs every ```sh block of README.md, in order, in
// one bash (set -euo pipefail: any failing command fails the test) in an
// empty folder holding the built logtool, and checks each block's key
// output. The blocks share the shell and the store: later ones name the
// sessions earlier ones made (agent=sh).
func TestReadmeShellSnippets(t *testing.T) {
	t.Parallel()
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash on PATH")
	}
	// What each block must print, in README order. A block added to the
	// README without an entry here fails the test.
	want := []struct {
		name   string
		output []string // regular expressions, each matched against the block's stdout
	}{
		{"the two commands: the demo", []string{
			`(?m)^\$ logtool verify \./sessions$`,
			`(?m)^ok +sessions/[0-9A-Z]{26}\.jsonl +[0-9A-Z]{26} +\d+ events$`,
		}},
		{"quick start: new, append, cat, stat, verify", []string{
			`(?m)^\{"acked":1\}$`,
			`(?m)^\{"seq":0,"type":"user/message","time":\d+,"data":\{"text":"hello"\}\}$`,
			`(?m)^\{"seq":1,"type":"assistant/message","time":\d+,"data":\{"text":"hi!"\}\}$`,
			// Piped, stat and verify print their JSON, as every command does.
			`(?m)^\{"id":"[0-9A-Z]{26}",.*"labels":\{"agent":"sh"\},"events":2,`,
			`(?m)^\{"path":"sessions/[0-9A-Z]{26}\.jsonl","id":"[0-9A-Z]{26}","ok":true,"events":2,`,
		}},
		{"branch: fork, ls --tree, export, checkpoint, replay", []string{
			`(?m)^\{"acked":1\}$`,
			`(?m)^\{"id":"[0-9A-Z]{26}",.*"parent":\{"id":"[0-9A-Z]{26}","seq":0,"mode":"fork"\},.*"depth":1,`,
			`(?m)^\{"id":"[0-9A-Z]{26}","path":"fork\.jsonl","events":2,"lastSeq":1\}$`,
			`(?m)^\{"path":"fork\.jsonl","id":"[0-9A-Z]{26}","ok":true,"events":2,`,
			`(?m)^\{"seq":2,.*"label":"good","log":"sha256:[0-9a-f]{64}","state":\{"projection":"agent/v1","digest":"sha256:[0-9a-f]{64}"\}`,
			`"messages":\[\{"seq":0,"role":"user","text":"hello"\},\{"seq":1,"role":"assistant","text":"hi!"\}\]`,
		}},
	}
	blocks := readmeBlocks(t)
	require.Len(t, blocks, len(want), "README.md's ```sh blocks and the outputs this test checks")

	ci, err := os.ReadFile(filepath.Join("..", "..", ".ci", "run"))
	require.NoError(t, err)
	for _, line := range []string{`M="` + testPackages + `"`, "go vet -race $M", "GORACE=atexit_sleep_ms=0 go test -race -vet=off $M"} {
		require.Contains(t, strings.Split(string(ci), "\n"), line, "the README's test command, which this test does not run, is CI's")
	}

	bin := logtoolBinary(t)
	dir := t.TempDir()
	exe, err := os.ReadFile(bin)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "logtool"), exe, 0o755))

	const marker = "@@ README block %d @@"
	script := []string{"set -euo pipefail"}
	for i, block := range blocks {
		script = append(script, fmt.Sprintf("echo '"+marker+"'", i))
		for _, line := range block {
			run, ok, err := readmeLine(line)
			require.NoError(t, err)
			if ok {
				script = append(script, run)
			}
		}
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute) // a hang fails, not blocks
	defer cancel()
	cmd := exec.CommandContext(ctx, bash, "-c", strings.Join(script, "\n"))
	cmd.Dir = dir
	// Nothing of the developer's environment: no SESSIONLOG_DIR, no GOFLAGS.
	// (GORACE: see TestMain.)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "TMPDIR=" + dir, "LC_ALL=C", "GORACE=" + os.Getenv("GORACE")}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Run(), "the README's shell snippets\nscript:\n%s\nstdout:\n%s\nstderr:\n%s", strings.Join(script, "\n"), stdout.String(), stderr.String())

	out := stdout.String()
	for i := len(want) - 1; i >= 0; i-- {
		head, block, found := strings.Cut(out, fmt.Sprintf(marker, i)+"\n")
		require.True(t, found, "block %d printed no marker\nstdout:\n%s", i, stdout.String())
		out = head
		t.Run(want[i].name, func(t *testing.T) {
			for _, re := range want[i].output {
				require.Regexp(t, regexp.MustCompile(re), block, "README block %d\nstderr of the run:\n%s", i+1, stderr.String())
			}
		})
	}
}
