package main

import (
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
)

// TestMain lets the test binary run as logtool itself inside the scripts
// of testdata/script (testscript puts it on their PATH under that name).
// The processes the tests start are this binary; under the race detector
// each would sleep a second as it exits (GORACE's atexit_sleep_ms), so
// they are told not to. The store of the real traces that tests share
// is removed at the end (traceFixtureM).
func TestMain(m *testing.M) {
	os.Setenv("GORACE", strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"))
	testscript.Main(traceFixtureM{m}, map[string]func(){"logtool": main})
}

// TestScripts runs testdata/script/*.txtar: the built binary, as a user's
// shell runs it, for each command's success, errors, exit status and
// human output (pinned with cmp; -update rewrites the expected files).
func TestScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir:                 "testdata/script",
		UpdateScripts:       *update,
		RequireExplicitExec: true,
		RequireUniqueNames:  true,
		Cmds:                map[string]func(ts *testscript.TestScript, neg bool, args []string){"status": cmdStatus},
	})
}

// cmdStatus is the script command "status N cmd args...": it runs cmd as
// exec does and fails unless it exits with status N.
func cmdStatus(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: status N command [args...]")
	}
	want, err := strconv.Atoi(args[0])
	if err != nil {
		ts.Fatalf("status %q: not a number", args[0])
	}
	got := 0
	if err := ts.Exec(args[1], args[2:]...); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			ts.Fatalf("%s: %v", args[1], err)
		}
		got = ee.ExitCode()
	}
	if got != want {
		ts.Fatalf("%s exited with status %d, want %d", args[1], got, want)
	}
}
