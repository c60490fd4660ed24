//go:build unix

package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestRefusedEntriesListed: a folder, a FIFO and a link named like
// sessions are listed by ls and verify DIR as refused, with the reason and
// the path; never opened (a FIFO would block), never a silent exit 0.
func TestRefusedEntriesListed(t *testing.T) {
	dir, outside := t.TempDir(), t.TempDir()
	good, _ := newSession(t, dir)
	odd := map[string]string{ // path → what it is
		filepath.Join(dir, "01JDX3N0Q3Z8Y6W2D1V5K7M9PA.jsonl"):     "a folder",
		filepath.Join(dir, "01JDX3N0Q3Z8Y6W2D1V5K7M9PB.jsonl.zst"): "a named pipe (FIFO)",
		filepath.Join(dir, "01JDX3N0Q3Z8Y6W2D1V5K7M9PC.jsonl"):     "a symbolic link",
	}
	for p, what := range odd {
		switch what {
		case "a folder":
			require.NoError(t, os.Mkdir(p, 0o700))
		case "a named pipe (FIFO)":
			require.NoError(t, syscall.Mkfifo(p, 0o600))
		default:
			require.NoError(t, copyFile(filepath.Join(dir, good+".jsonl"), filepath.Join(outside, "log.jsonl")))
			require.NoError(t, os.Symlink(filepath.Join(outside, "log.jsonl"), p))
		}
	}
	requireRefused := func(t *testing.T, text string) {
		t.Helper()
		for p, what := range odd {
			require.Contains(t, text, p+`\" is `+what, "in %s", text)
		}
		require.Equal(t, len(odd), strings.Count(text, "refused, not a regular file"))
	}

	t.Run("verify --json DIR", func(t *testing.T) {
		res := logtool(t, "", "verify", "--json", dir)
		require.Equal(t, 1, res.code, res.stderr)
		lines := jsonLines(t, res.stdout)
		require.Len(t, lines, len(odd)+1)
		for _, l := range lines {
			if l["id"] == good {
				require.Equal(t, true, l["ok"])
				continue
			}
			require.Equal(t, false, l["ok"], l)
			require.Equal(t, "io", l["error"].(map[string]any)["kind"], l)
		}
		requireRefused(t, strings.ReplaceAll(res.stdout, `\\`, `\`))
	})
	t.Run("verify SESSION", func(t *testing.T) {
		res := logtoolWords(t, "", "--dir", dir, "verify", "01JDX3N0Q3Z8Y6W2D1V5K7M9PB")
		require.Equal(t, 1, res.code, res.stderr)
		// The start of their IDs names the refused entries as candidates:
		// a prefix never picks a session because the others are refused.
		byPrefix := logtoolWords(t, "", "--dir", dir, "verify", "01JDX3N0Q3Z8Y6W2D1V5K7M9P")
		require.Equal(t, exitUsage, byPrefix.code)
		require.Contains(t, byPrefix.stderr, "logtool:   01JDX3N0Q3Z8Y6W2D1V5K7M9PB  (cannot be read)\n")
		// The store cannot describe the session: the line names it by its
		// ID, and the message the file refused.
		require.True(t, strings.HasPrefix(res.stdout, "FAIL  01JDX3N0Q3Z8Y6W2D1V5K7M9PB  01JDX3N0Q3Z8Y6W2D1V5K7M9PB  io: "), res.stdout)
		require.Contains(t, res.stdout, "refused, not a regular file: \""+filepath.Join(dir, "01JDX3N0Q3Z8Y6W2D1V5K7M9PB.jsonl.zst")+"\" is a named pipe")
	})
	for _, args := range [][]string{{"ls"}, {"ls", "--json"}, {"ls", "--tree"}} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			res := logtool(t, "", append([]string{"--dir", dir}, args...)...)
			require.Equal(t, 1, res.code, res.stderr)
			require.Contains(t, res.stdout, good)
			requireRefused(t, strings.ReplaceAll(res.stderr, `"`, `\"`))
		})
	}
	t.Run("cat", func(t *testing.T) {
		res := logtool(t, "", "--dir", dir, "cat", "01JDX3N0Q3Z8Y6W2D1V5K7M9PB")
		require.Equal(t, 2, res.code)
		require.Contains(t, res.stderr, "refused, not a regular file")
	})
	t.Run("import", func(t *testing.T) {
		fifo := filepath.Join(dir, "01JDX3N0Q3Z8Y6W2D1V5K7M9PB.jsonl.zst")
		for _, from := range []string{"sessionlog", "claude", "dsh", "swe-agent"} {
			res := logtool(t, "", "--dir", t.TempDir(), "import", "--from", from, fifo)
			require.Equal(t, 2, res.code, from)
			require.Contains(t, res.stderr, "refused, not a regular file", from)
		}
	})
	t.Run("append", func(t *testing.T) {
		res := logtool(t, `{"type":"x"}`+"\n", "--dir", dir, "append", "01JDX3N0Q3Z8Y6W2D1V5K7M9PC")
		require.Equal(t, 2, res.code)
		require.Contains(t, res.stderr, "refused, not a regular file")
		log, err := os.ReadFile(filepath.Join(outside, "log.jsonl"))
		require.NoError(t, err)
		want, err := os.ReadFile(filepath.Join(dir, good+".jsonl"))
		require.NoError(t, err)
		require.Equal(t, string(want), string(log), "nothing written outside the store")
	})
}
