package figures_test

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/spf13/afero"
	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/handle/file"
)

// TestAppendStopsWhenItsFileMoves unlinks, renames or replaces the file of
// a session under a live logtool append, then gives it one more event: the
// writer acknowledges only what a later open of the session finds
// (docs/format.md §9), so it prints no ack after the move, says why on
// stderr and exits non-zero. Regression: it went on printing
// {"acked":N} and exited 0, and those events could not be reached under
// the session's name.
func TestAppendStopsWhenItsFileMoves(t *testing.T) {
	if testing.Short() {
		t.Skip("a session's file moved under logtool append: builds the binary")
	}
	bin := buildLogtool(t)
	moves := []struct {
		name string
		move func(t *testing.T, path string)
	}{
		{"unlinked", func(t *testing.T, path string) { require.NoError(t, os.Remove(path)) }},
		{"renamed", func(t *testing.T, path string) { require.NoError(t, os.Rename(path, path+".moved")) }},
		{"replaced", func(t *testing.T, path string) {
			require.NoError(t, copyFileTo(path, path+".new"))
			require.NoError(t, os.Rename(path+".new", path))
		}},
	}
	for _, enc := range []string{handle.EncodingRaw, handle.EncodingZstd} {
		for _, m := range moves {
			t.Run(enc+"/"+m.name, func(t *testing.T) {
				dir := t.TempDir()
				h, err := file.New(afero.NewOsFs(), dir).Create(t.Context(), handle.WithEncoding(enc))
				require.NoError(t, err)
				id, path := h.ID(), h.Path()
				require.NoError(t, h.Close())

				cmd := exec.CommandContext(t.Context(), bin, "--dir", dir, "append", id)
				stdin, err := cmd.StdinPipe()
				require.NoError(t, err)
				stdout, err := cmd.StdoutPipe()
				require.NoError(t, err)
				var stderr bytes.Buffer
				cmd.Stderr = &stderr
				require.NoError(t, cmd.Start())
				acks := bufio.NewReader(stdout)
				_, err = io.WriteString(stdin, `{"type":"user/message","data":{"text":"before"}}`+"\n")
				require.NoError(t, err)
				line, err := acks.ReadString('\n')
				require.NoError(t, err, "stderr: %s", &stderr)
				require.Equal(t, `{"acked":0}`+"\n", line)

				m.move(t, path)
				_, err = io.WriteString(stdin, `{"type":"user/message","data":{"text":"after"}}`+"\n")
				require.NoError(t, err)
				require.NoError(t, stdin.Close())
				rest, err := io.ReadAll(acks)
				require.NoError(t, err)
				err = cmd.Wait()
				code := cmd.ProcessState.ExitCode()
				msg := firstMessage(strings.ReplaceAll(stderr.String(), dir+"/", ""))
				after := strings.Count(string(rest), `"acked"`)
				figure(t, "moved", "%s, %s | acks after the move %d | exit %d | %q", m.name, enc, after, code, msg)
				require.Zero(t, after, "no ack after the move: %s", rest)
				var exit *exec.ExitError
				require.True(t, errors.As(err, &exit), "a non-zero exit")
				require.NotEmpty(t, msg, "a message says why")
				require.NotContains(t, stderr.String(), "panic:")

				// What a later open of the session finds: the event acknowledged
				// before the move when the file is back under the name, else no
				// session; never the one after.
				st := file.New(afero.NewOsFs(), dir)
				r, err := st.Open(t.Context(), id, handle.ReadOnly)
				if m.name != "replaced" {
					require.ErrorIs(t, err, handle.ErrNotFound)
					return
				}
				require.NoError(t, err)
				defer r.Close()
				require.Equal(t, int64(0), r.Seq(), "the replacement holds seq 0 only, as acknowledged")
			})
		}
	}
}

// copyFileTo copies the file at from to to.
func copyFileTo(from, to string) error {
	b, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	return os.WriteFile(to, b, 0o600)
}
