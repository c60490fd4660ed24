package harness

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestMain lets the test binary stand in for cmd/harness as the child
// process Run starts.
func TestMain(m *testing.M) {
	if len(os.Args) == 3 && os.Args[1] == "-child" {
		if err := Child(context.Background(), os.Args[2], os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestRunInterleavesChildrenAndReports runs the whole harness, child
// processes included, on tiny sizes with two runs, and checks that every
// variant was measured in every run, with the child's peak RSS and CPU
// time, and that the report carries the machine, the load and every table.
func TestRunInterleavesChildrenAndReports(t *testing.T) {
	cfg := Quick()
	cfg.Runs, cfg.AppendBudget, cfg.ReadTurns, cfg.OpsSizes, cfg.SizeTurns = 2, 5*time.Millisecond, 2, []int64{20 << 10}, []int{2}
	cfg.CLISizes, cfg.Logtool = []int64{20 << 10, 100 << 10}, testLogtool(t)
	cfg.Work, cfg.Profiles = t.TempDir(), filepath.Join(t.TempDir(), "not", "made") // Run makes the profiles' folder
	var progress strings.Builder
	cfg.Progress = &progress
	res, err := Run(context.Background(), cfg, os.Args[0])
	require.NoError(t, err)
	require.Empty(t, res.Errors)

	var keys []string
	for _, n := range cfg.Appenders {
		for _, v := range appendVariants {
			keys = append(keys, fmt.Sprintf("append/%d/%s", n, v.name))
		}
	}
	keys = append(keys, "paired/1")
	for _, v := range readVariants() {
		keys = append(keys, "read/"+v)
	}
	for _, v := range opsVariants {
		keys = append(keys, fmt.Sprintf("ops/%d/%s", cfg.OpsSizes[0], v))
	}
	for _, v := range hugeVariants {
		keys = append(keys, "huge/"+v)
	}
	profiled := len(keys)
	for _, size := range cfg.CLISizes {
		for _, v := range cliVariants {
			keys = append(keys, fmt.Sprintf("cli/%d/%s", size, v))
		}
	}
	require.Len(t, res.ByKey, len(keys)+1, "every variant and the sizes")
	for _, k := range keys {
		require.Len(t, res.ByKey[k], cfg.Runs, k)
		for run, m := range res.ByKey[k] {
			require.NotNilf(t, m, "%s, run %d", k, run+1)
			require.Positivef(t, m["maxrss-B"], "%s: the child's peak RSS", k)
			require.Containsf(t, m, "cpu-ns", "%s: the child's CPU time", k)
		}
	}
	require.Len(t, res.ByKey["sizes/2"], 1, "sizes are measured once")
	for _, k := range keys[:profiled] { // a CLI task's work is logtool's
		fi, err := os.Stat(filepath.Join(cfg.Profiles, profileName(k)))
		require.NoErrorf(t, err, "%s: a CPU profile of the last run", k)
		require.Positive(t, fi.Size())
	}

	// Interleaved: the first run of every variant comes before any second.
	lines := strings.Split(strings.TrimSpace(progress.String()), "\n")
	lastFirst, firstSecond := -1, len(lines)
	for i, l := range lines {
		if strings.HasPrefix(l, "run 1 ") && !strings.Contains(l, "sizes/") {
			lastFirst = i
		}
		if strings.HasPrefix(l, "run 2 ") && firstSecond == len(lines) {
			firstSecond = i
		}
	}
	require.Less(t, lastFirst, firstSecond)

	md := res.Markdown("cd bench && go run ./cmd/harness -quick")
	for _, want := range []string{
		"(mode quick: 2 interleaved runs)", "| load average (1, 5, 15 min) before / after |",
		"| CPU time the harness and its children got |", "| file system measured |",
		"### Targets (issues 13, 23 and 24)", "### Durable append", "alternating event by event", "### Read and replay",
		"### Stat, open, checkpoint, fork", "### A 2.10 MB session", "### logtool on sessions of", "### Bytes on disk",
		"| logtool stat raw, writer open: 102 kB ÷ 20.5 kB |", "| logtool replay ÷ cat --json, zstd,", "| stat zstd, no checkpoint |",
	} {
		require.Contains(t, md, want)
	}
	require.NotContains(t, md, "Measurements that failed")
}

func TestRunOnlyMeasuresWhatMatches(t *testing.T) {
	cfg := Quick()
	cfg.ReadTurns, cfg.OpsSizes, cfg.SizeTurns = 2, []int64{20 << 10}, []int{2}
	cfg.Work, cfg.Only = t.TempDir(), regexp.MustCompile(`^(sizes/|read/sessionlog raw read$)`)
	res, err := Run(context.Background(), cfg, os.Args[0])
	require.NoError(t, err)
	require.Empty(t, res.Errors)
	require.Len(t, res.ByKey, 2)
	require.Contains(t, res.ByKey, "sizes/2")
	require.Contains(t, res.ByKey, "read/sessionlog raw read")
	require.Contains(t, res.Markdown("x"), "Only the measurements matching `^(sizes/|read/sessionlog raw read$)` ran")
}

// testLogtool builds logtool once for the tests of this package.
func testLogtool(t *testing.T) string {
	t.Helper()
	logtoolOnce.Do(func() {
		dir, err := os.MkdirTemp("", "harness-logtool-")
		if err == nil {
			logtoolExe, logtoolErr = BuildLogtool(context.Background(), dir)
		} else {
			logtoolErr = err
		}
	})
	require.NoError(t, logtoolErr)
	return logtoolExe
}

var (
	logtoolOnce sync.Once
	logtoolExe  string
	logtoolErr  error
)

func TestRunStoppedReportsNothing(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	cfg := Quick()
	cfg.ReadTurns, cfg.OpsSizes, cfg.SizeTurns, cfg.Work = 2, nil, nil, t.TempDir()
	res, err := Run(ctx, cfg, os.Args[0])
	require.ErrorIs(t, err, context.Canceled)
	require.Nil(t, res)
	left, err := os.ReadDir(cfg.Work)
	require.NoError(t, err)
	require.Empty(t, left, "the temp folder is removed")
}

func TestVmHWM(t *testing.T) {
	n, ok := vmHWM([]byte("Name:\tx\nVmPeak:\t  9999 kB\nVmHWM:\t   12345 kB\nVmRSS:\t 100 kB\n"))
	require.True(t, ok)
	require.Equal(t, int64(12345<<10), n)
	_, ok = vmHWM([]byte("Name:\tx\n"))
	require.False(t, ok)
}
