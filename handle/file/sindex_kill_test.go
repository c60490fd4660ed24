package file_test

// The real-process kill test of the session index: a process changing
// sessions (creates, forks, appends, deletes, GC) is killed with SIGKILL
// at a random point, and a new store on the folder must answer as the
// logs say. The process is this test binary itself, re-executed with
// SESSIONLOG_INDEX_CHURN set (see init below).

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/spf13/afero"
	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/handle/file"
	"github.com/sessionlog/sessionlog/internal/testkit/sweep"
)

// indexChurnEnv, set to a folder, turns the test binary into the
// churning process (runIndexChurn).
const indexChurnEnv = "SESSIONLOG_INDEX_CHURN"

func init() {
	if dir, ok := os.LookupEnv(indexChurnEnv); ok {
		os.Exit(runIndexChurn(dir))
	}
}

// runIndexChurn changes the sessions of the store in dir forever, saying
// "step N" on stdout after each change; it returns only on an error.
func runIndexChurn(dir string) int {
	ctx := context.Background()
	st := file.New(afero.NewOsFs(), dir, handle.Unredacted())
	file.SetIndexFoldAt(st, 3, 9) // the delta and the snapshot rewritten among the changes killed
	var ids []string
	for step := 0; ; step++ {
		var err error
		switch {
		case step%7 == 6 && len(ids) > 2:
			i := rand.IntN(len(ids))
			err = st.Delete(ctx, ids[i], handle.Cascade())
			ids = append(ids[:i], ids[i+1:]...)
		case step%11 == 10:
			_, err = st.GC(ctx, time.UnixMilli(5000), false)
		case step%3 == 2 && len(ids) > 0:
			var h handle.Handle
			if h, err = st.Fork(ctx, ids[rand.IntN(len(ids))], 0); err == nil {
				ids = append(ids, h.ID())
				err = h.Close()
			}
		default:
			var opts []handle.Option
			if step%5 == 0 {
				opts = append(opts, handle.WithCreatedAt(1000)) // GC's
			}
			opts = append(opts, handle.WithLabels(map[string]string{"step": strconv.Itoa(step)}))
			var h handle.Handle
			if h, err = st.Create(ctx, opts...); err == nil {
				ev := crashEvents(0, 1)
				ev[0].Time = 2000
				if _, err = h.Append(ctx, ev...); err == nil {
					err = h.Close()
				}
				if step%5 != 0 {
					ids = append(ids, h.ID())
				}
			}
		}
		if err != nil && !errorsIsAny(err, handle.ErrNotFound, handle.ErrLocked) && !errors.As(err, new(*handle.DependentsError)) {
			fmt.Fprintln(os.Stderr, "churn:", err)
			return 2
		}
		fmt.Printf("step %d\n", step)
	}
}

// TestIndexKillChurn kills the churning process at random points, 10
// rounds on one store (3 by default: each starts the test binary; 10
// under SESSIONLOG_SWEEPS=full): after each, a new store names exactly
// the sessions present, each as its log describes it.
func TestIndexKillChurn(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	exe, err := os.Executable()
	require.NoError(t, err)
	for round := range sweep.Size(3, 10, 10) {
		cmd := exec.Command(exe, "-test.run=^$")
		cmd.Env = append(os.Environ(), indexChurnEnv+"="+dir)
		out, err := cmd.StdoutPipe()
		require.NoError(t, err)
		var stderr safeBuffer
		cmd.Stderr = &stderr
		require.NoError(t, cmd.Start())
		lines := bufio.NewScanner(out)
		steps := 5 + rand.IntN(40)
		for range steps {
			require.True(t, lines.Scan(), "churn ended early: %s", stderr.String())
		}
		require.NoError(t, cmd.Process.Kill())
		cmd.Wait()
		require.NotContains(t, stderr.String(), "churn:")
		t.Logf("round %d: killed after %d steps", round, steps)
		requireIndexTrue(t, afero.NewOsFs(), dir)
	}
}

// errorsIsAny reports whether err is any of targets.
func errorsIsAny(err error, targets ...error) bool {
	for _, t := range targets {
		if errors.Is(err, t) {
			return true
		}
	}
	return false
}

// safeBuffer is a bytes.Buffer safe for a writer and a reader at once.
type safeBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *safeBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *safeBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
