package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
	"github.com/sessionlog/sessionlog/internal/testkit/raceexit"
	"github.com/spf13/afero"
)

// TestMain lets the test binary run as logtool itself: called by that
// name it is logtool. Otherwise it puts a link to itself named logtool
// first on $PATH, for the tests that start logtool as a process (exec in
// testdata/script, e2e_test.go), runs the tests and removes the link and
// the store of the real traces that tests share (traceFixtureM). Under
// the race detector each process would sleep a second as it exits, so
// they are told not to (raceexit).
func TestMain(m *testing.M) {
	if filepath.Base(os.Args[0]) == "logtool" {
		main()
	}
	raceexit.Quiet()
	bin, err := os.MkdirTemp("", "logtool-bin-")
	if err == nil {
		err = linkSelf(filepath.Join(bin, "logtool"))
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "logtool on $PATH:", err)
		os.Exit(1)
	}
	os.Setenv("PATH", bin+string(filepath.ListSeparator)+os.Getenv("PATH"))
	code := traceFixtureM{m}.Run()
	os.RemoveAll(bin)
	os.Exit(code)
}

// linkSelf makes name a hard link to the running test binary, or a copy
// where a link cannot be made (another file system). Not a symbolic link:
// os.Args[0] must say logtool.
func linkSelf(name string) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	if os.Link(self, name) == nil {
		return nil
	}
	b, err := os.ReadFile(self)
	if err != nil {
		return err
	}
	return os.WriteFile(name, b, 0o755)
}

// TestScripts runs testdata/script/*.txtar: logtool's command lines, as a
// user's shell runs them, for each command's success, errors, exit status
// and human output (pinned with cmp; -update rewrites the expected files).
// The logtool command runs in-process (cmdLogtool); exec logtool runs
// the binary.
func TestScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir:                 "testdata/script",
		UpdateScripts:       *update,
		RequireExplicitExec: true,
		RequireUniqueNames:  true,
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"status":  cmdStatus,
			"logtool": cmdLogtool,
		},
	})
}

// cmdLogtool is the script command "logtool args...": logtool's run, in
// this process, in the script's current folder, with its environment and
// an empty stdin; "! logtool" expects a failure. Each launch of the test
// binary under the race detector costs about 0.1 s of CPU before main
// runs; "exec logtool" still runs the binary, for the lines that feed it
// a stdin and for what only a process shows (TestBinary*, e2e_test.go).
func cmdLogtool(ts *testscript.TestScript, neg bool, args []string) {
	code := runInScript(ts, args)
	switch {
	case neg && code == 0:
		ts.Fatalf("logtool: unexpected success")
	case !neg && code != 0:
		ts.Fatalf("logtool exited with status %d", code)
	}
}

// runInScript runs logtool in-process for a script and returns its exit
// status.
func runInScript(ts *testscript.TestScript, args []string) int {
	fsys := workFs{Fs: afero.NewOsFs(), dir: ts.MkAbs(".")}
	return runOn(context.Background(), fsys, args, strings.NewReader(""), ts.Stdout(), ts.Stderr(), ts.Getenv)
}

// cmdStatus is the script command "status N cmd args...": it runs cmd as
// exec does (logtool as the logtool command does; "status N exec logtool"
// the binary) and fails unless it exits with status N.
func cmdStatus(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: status N command [args...]")
	}
	want, err := strconv.Atoi(args[0])
	if err != nil {
		ts.Fatalf("status %q: not a number", args[0])
	}
	if args[1] == "logtool" {
		if got := runInScript(ts, args[2:]); got != want {
			ts.Fatalf("logtool exited with status %d, want %d", got, want)
		}
		return
	}
	if args[1] == "exec" && len(args) > 2 {
		args = args[1:]
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
