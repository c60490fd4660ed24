package harness

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/afero"

	"github.com/sessionlog/sessionlog/bench/internal/benchfs"
	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/handle/file"
)

// The CLI scenario: the logtool binary, run as a user runs it, on
// sessions of two sizes (Config.CLISizes: 1 MiB and 1 GiB in the long
// run), each a long-running agent's session (writeLongSession: compactions,
// a checkpoint after every eighth of it) and one without checkpoints, each
// raw and converted to zstd. A measurement is one child process of the
// harness that starts logtool, reads its stdout to the end as a pipe
// would, and takes the time to its exit and its resource usage from
// ProcessState.SysUsage: peak RSS (ru_maxrss, which counts the child's
// own before the exec: a Go process of about 10 MB) and CPU time.
const (
	cliRawDir  = "raw"  // the raw sessions' store, under the size's folder
	cliZstdDir = "zstd" // the same sessions converted to zstd
	cliCPFile  = "cp.id"
	cliNoCPID  = "nocp.id"
	cliBytes   = "jsonl.bytes" // the plain-JSONL bytes of the session with checkpoints
)

// cliDir is the fixtures folder of the CLI scenario's sessions of a size.
func cliDir(fixtures string, size int64) string {
	return filepath.Join(fixtures, fmt.Sprintf("cli-%d", size))
}

// cliVariants are the CLI scenario's variants, in the order of their rows:
// a command, then the session it runs on ("raw", "zstd", "no checkpoint",
// "writer open": a write handle of the harness's child appended an event
// and holds the session while the command runs). A replay of the session
// with checkpoints starts from the state stored at the last one, once a
// first replay stored it: the replays held to cat --json's time are of
// the session without, from its first event.
var cliVariants = []string{
	"stat raw",
	"stat raw, no checkpoint",
	"stat raw, writer open",
	"stat zstd",
	"stat zstd, no checkpoint",
	"stat zstd, writer open",
	"cat --json raw, no checkpoint",
	"cat --json zstd, no checkpoint",
	"replay raw, no checkpoint",
	"replay zstd, no checkpoint",
	"replay raw",
	"show raw",
	"verify raw",
	"export raw",
}

// cliStatVariants are the stat variants, held to the 1 GiB ÷ 1 MiB target.
func cliStatVariants() []string {
	var out []string
	for _, v := range cliVariants {
		if strings.HasPrefix(v, "stat ") {
			out = append(out, v)
		}
	}
	return out
}

// prepareCLI writes the CLI scenario's sessions of each size: with and
// without checkpoints (seeds 2 and 3), raw, then copied into a second
// store and converted there to zstd (as `logtool convert` does), so that
// the zstd sessions have no checked record, as any reader after a convert
// finds them.
func prepareCLI(ctx context.Context, fixtures string, sizes []int64) error {
	fsys, _ := benchfs.New(true)
	for _, size := range sizes {
		dir := cliDir(fixtures, size)
		raw := file.New(fsys, filepath.Join(dir, cliRawDir), handle.WithEncoding(handle.EncodingRaw))
		zst := file.New(fsys, filepath.Join(dir, cliZstdDir))
		for _, s := range []struct {
			file        string
			seed        uint64
			checkpoints bool
		}{{cliCPFile, 2, true}, {cliNoCPID, 3, false}} {
			id, n, err := writeLongSession(ctx, raw, size, s.seed, s.checkpoints)
			if err != nil {
				return err
			}
			src, err := raw.Path(id)
			if err != nil {
				return err
			}
			if err := os.MkdirAll(zst.Dir(), 0o700); err != nil {
				return err
			}
			if err := copyFile(src, filepath.Join(zst.Dir(), filepath.Base(src)), false); err != nil {
				return err
			}
			if err := zst.Convert(ctx, id, handle.EncodingZstd); err != nil {
				return err
			}
			if err := zst.DeleteDerived(ctx, id, checkedKey); err != nil {
				return err
			}
			if err := os.WriteFile(filepath.Join(dir, s.file), []byte(id), 0o600); err != nil {
				return err
			}
			if s.checkpoints {
				if err := os.WriteFile(filepath.Join(dir, cliBytes), []byte(strconv.FormatInt(n, 10)), 0o600); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// cliArgs returns the logtool command line of a variant, run on session id
// of the store in dir (work: a folder for the files it writes).
func cliArgs(variant, dir, id, work string) []string {
	cmd, _, _ := strings.Cut(variant, " ")
	args := []string{"--dir", dir}
	switch cmd {
	case "stat":
		args = append(args, "stat", "--json")
	case "cat":
		args = append(args, "cat", "--json")
	case "replay":
		args = append(args, "replay") // transcript, the default
	case "show":
		args = append(args, "show")
	case "verify":
		args = append(args, "verify", "--json")
	case "export":
		args = append(args, "export", "--out", filepath.Join(work, "export.jsonl"))
	}
	return append(args, id)
}

// runCLI runs logtool (the binary at exe) reps times on a variant's
// session of the given size and returns the median wall time of a run,
// the peak RSS and CPU time of that run's process, and the bytes it
// wrote to stdout. A command that exits with a status other than 0 fails
// the measurement.
func runCLI(ctx context.Context, exe, variant, fixtures, work string, size int64, reps int) (Metrics, error) {
	dir := cliDir(fixtures, size)
	store := cliRawDir
	if strings.Contains(variant, "zstd") {
		store = cliZstdDir
	}
	idFile := cliCPFile
	if strings.Contains(variant, "no checkpoint") {
		idFile = cliNoCPID
	}
	idb, err := os.ReadFile(filepath.Join(dir, idFile))
	if err != nil {
		return nil, err
	}
	id, storeDir := string(idb), filepath.Join(dir, store)
	if strings.Contains(variant, "writer open") {
		// Appended since it opened: no tail frame ends a zstd log, and the
		// checked record no longer names the file.
		st := file.New(afero.NewOsFs(), storeDir)
		h, err := st.Open(ctx, id, handle.ReadWrite)
		if err != nil {
			return nil, err
		}
		defer h.Close()
		if _, err := h.Append(ctx, eventlog.Event{Type: "user/message", Time: 1, Data: []byte(`{"text":"one more"}`)}); err != nil {
			return nil, err
		}
		if err := h.Flush(ctx); err != nil {
			return nil, err
		}
	}
	type one struct {
		wall   time.Duration
		rss    int64
		cpu    time.Duration
		stdout int64
	}
	var runs []one
	for range reps {
		cmd := exec.CommandContext(ctx, exe, cliArgs(variant, storeDir, id, work)...)
		var out countingWriter
		var errb strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &errb
		cmd.Env = append(os.Environ(), "SESSIONLOG_TERMINAL=0")
		t0 := time.Now()
		err := cmd.Run()
		wall := time.Since(t0)
		if err != nil {
			return nil, fmt.Errorf("logtool %s: %w: %s", strings.Join(cmd.Args[1:], " "), err, strings.TrimSpace(errb.String()))
		}
		ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage)
		if !ok {
			return nil, errors.New("harness: no rusage of logtool's process")
		}
		runs = append(runs, one{wall, ru.Maxrss << 10, time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), out.n})
		os.Remove(filepath.Join(work, "export.jsonl"))
	}
	slices.SortFunc(runs, func(a, b one) int { return int(a.wall - b.wall) })
	m := runs[len(runs)/2]
	metrics := Metrics{"ns/op": float64(m.wall.Nanoseconds()), "cli-maxrss-B": float64(m.rss),
		"cli-cpu-ns": float64(m.cpu.Nanoseconds()), "stdout-B": float64(m.stdout)}
	if b, err := os.ReadFile(filepath.Join(dir, cliBytes)); err == nil {
		if n, err := strconv.ParseInt(string(b), 10, 64); err == nil {
			metrics["jsonl-B"] = float64(n)
		}
	}
	return metrics, nil
}

// countingWriter counts what is written to it, and keeps none of it.
type countingWriter struct{ n int64 }

func (w *countingWriter) Write(p []byte) (int, error) {
	w.n += int64(len(p))
	return len(p), nil
}

// cliReps is how many times a CLI variant runs in one measurement: a
// stat is cheap (the median of several), a whole read of 1 GiB is not.
func cliReps(variant string, size int64, quickReps int) int {
	if strings.HasPrefix(variant, "stat ") || size <= 16<<20 {
		return quickReps
	}
	return 1
}

// BuildLogtool builds the logtool binary of the library this bench module
// uses into dir and returns its path.
func BuildLogtool(ctx context.Context, dir string) (string, error) {
	root, err := exec.CommandContext(ctx, "go", "list", "-m", "-f", "{{.Dir}}", "github.com/sessionlog/sessionlog").Output()
	if err != nil {
		return "", fmt.Errorf("harness: finding the library's module: %w", err)
	}
	exe := filepath.Join(dir, "logtool")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", exe, "./cmd/logtool")
	cmd.Dir = strings.TrimSpace(string(root))
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("harness: building logtool: %w: %s", err, out)
	}
	return exe, nil
}
