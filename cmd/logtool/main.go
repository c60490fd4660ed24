package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"filippo.io/age"
	"github.com/spf13/afero"
	"github.com/spf13/cobra"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/handle/file"
	"github.com/sessionlog/sessionlog/ops/transfer"
	"github.com/sessionlog/sessionlog/replay"
	"github.com/sessionlog/sessionlog/secrets/seal"
)

// Exit statuses (docs/cli.md).
const (
	exitOK     = 0
	exitFailed = 1 // a check failed: corruption, conflict, locked, …
	exitUsage  = 2 // usage or environment error
)

// envDir names the environment variable holding the default --dir.
const envDir = "SESSIONLOG_DIR"

// defaultDir is the store folder when neither --dir nor $SESSIONLOG_DIR is
// given.
const defaultDir = "./sessions"

func main() {
	ctx, stop := notifySignals(context.Background())
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr, os.Getenv)
	stop()
	os.Exit(code)
}

// signalled is the cause of a context that a signal cancelled.
type signalled struct{ sig os.Signal }

func (s signalled) Error() string { return "stopped by a signal: " + s.sig.String() }

// notifySignals returns a context that the first SIGINT or SIGTERM
// cancels, with a signalled cause; every command stops at its next check
// of the context (reads check it on every read of a file). The signals'
// default action is then back, so that a second one ends the process at
// once, whatever it is doing.
func notifySignals(parent context.Context) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(parent)
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		select {
		case sig := <-ch:
			signal.Stop(ch)
			cancel(signalled{sig})
		case <-done:
		}
	}()
	return ctx, func() {
		close(done)
		signal.Stop(ch)
		cancel(nil)
	}
}

// signalExit is the exit status of a command a signal stopped: 128 + the
// signal's number, as a shell reports a process the signal killed (130
// for SIGINT, 143 for SIGTERM); ok is false when no signal stopped it.
func signalExit(ctx context.Context) (code int, ok bool) {
	var s signalled
	if !errors.As(context.Cause(ctx), &s) {
		return 0, false
	}
	if n, isNum := s.sig.(syscall.Signal); isNum {
		return 128 + int(n), true
	}
	return exitFailed, true
}

// run executes one logtool command line and returns its exit status. It
// touches no process-wide state besides the files it is asked to use, so
// tests call it in-process.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, env func(string) string) int {
	return runOn(ctx, afero.NewOsFs(), args, stdin, stdout, stderr, env)
}

// runOn is run on the file system fsys (tests inject faults through it).
func runOn(ctx context.Context, fsys afero.Fs, args []string, stdin io.Reader, stdout, stderr io.Writer, env func(string) string) int {
	a := &app{stdin: stdin, stdout: stdout, stderr: stderr, env: env, fs: fsys, now: time.Now}
	root := newRootCmd(a)
	root.SetArgs(append([]string{}, args...)) // never nil: cobra would read os.Args
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	a.ctx = ctx
	err := root.ExecuteContext(ctx)
	a.closeStores()
	if code, ok := signalExit(ctx); ok {
		fmt.Fprintf(stderr, "logtool: %s\n", context.Cause(ctx))
		return code
	}
	if err == nil {
		return exitOK
	}
	msg := err.Error()
	if errors.Is(err, seal.ErrNoKey) {
		msg += fmt.Sprintf(" (--identity FILE or $%s gives one; logtool keygen makes one)", envIdentity)
	}
	fmt.Fprintf(stderr, "logtool: %s\n", oneLine(msg))
	var ee *exitError
	if errors.As(err, &ee) {
		for _, l := range ee.more {
			fmt.Fprintf(stderr, "logtool:   %s\n", oneLine(l))
		}
	}
	return exitCode(err)
}

// app is what one run of logtool works with: its streams, environment and
// global flags. Commands are methods on it, so nothing lives in package
// variables.
type app struct {
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
	env    func(string) string
	fs     afero.Fs
	now    func() time.Time

	dir string // --dir

	storeURL string          // --store
	creates  bool            // the command creates sessions: its store need not exist yet
	readOnly bool            // the store is opened so that nothing changes it (serve)
	ctx      context.Context // the run's, for resolving SESSION arguments on --store
	st       handle.Store    // the store of location, once opened
	closers  []func()

	identityFiles []string       // --identity
	identities    []age.Identity // read from them
	noRedact      bool           // --no-redact
}

// newRootCmd builds the command tree for a.
func newRootCmd(a *app) *cobra.Command {
	root := &cobra.Command{
		Use:   "logtool",
		Short: "Create, append to, read and check sessionlog sessions",
		Long: `logtool works on sessionlog sessions: append-only, fsync'd logs of events
(docs/format.md). Start with logtool demo, then logtool ls and logtool show.

SESSION is a path to a log file (it ends in .jsonl or .jsonl.zst, names an
existing file, or holds a /), or names a session of the store: by its ID,
the start of its ID in either case (01KC3), or a label query k=v[,k=v] its
labels hold (agent=coder). A name several sessions answer to lists them
(exit 2); a name nothing answers to says where it looked. A freely named
file (an export) can be read, not written: append and fork need a session
of a store.

The store is the folder --dir (default $SESSIONLOG_DIR, else ./sessions),
or with --store a JetStream store (default $SESSIONLOG_STORE):
nats://host:port[,host:port...][/prefix][?replicas=N&sync=always&lease=D],
every host a seed of one cluster, e.g.
nats://h1:4222,h2:4222,h3:4222/prefix?replicas=3&sync=always
(docs/distributed.md). A store that is not there is an error, but for new,
import and demo, which make it. convert, repair and cat --salvage work on a
folder only.

Output: on a terminal, words and tables; show in colour (not with
$NO_COLOR) through $PAGER. Piped, every command prints JSON, one object a
line, as --json does on a terminal, but show and demo (words for people),
serve (its URL) and completion (a script). Errors go to stderr, one line
each, starting with "logtool: ". Seq ranges (--from, --to, --at) are
inclusive; a seq past the end of the log is a usage error, but in the
ranges of cat and show, which filter.

Exit status:
  0         done, and everything checked was clean
  1         a check failed: corruption, a checkpoint digest, a format
            version, a seq conflict, a malformed append line, a session
            locked by another writer, a broken lineage, a difference (diff,
            replay --golden), an import source that failed or was cut
  2         a usage or environment error: bad flags or arguments, a session
            or store not found, an ambiguous name, an I/O error, a sealed
            session no --identity opens
  130, 143  stopped by SIGINT or SIGTERM: what was finished stays (append
            prints its last ack first); a second signal kills at once

Secrets (docs/format.md §11): events are redacted at write (append, import
of a foreign trace): each secret of a known shape becomes
[REDACTED:kind]; --no-redact stores them as given. A sealed session (new
--recipient) is read with --identity FILE (keygen makes one); without an
identity that opens it, every command that reads it exits 2 saying what is
missing, and verify checks its framing alone.

A torn tail (an unacknowledged write, docs/format.md §9) is never an error:
readers drop it and say so on stderr, verify reports it, the next append
cuts it. Only regular files are sessions: a FIFO, device, folder or link
named like one is refused, never opened.

Environment:
  SESSIONLOG_DIR       the default --dir
  SESSIONLOG_STORE     the default --store
  SESSIONLOG_IDENTITY  the default --identity (an age identity file)
  SESSIONLOG_RECIPIENTS  new's default --recipient (space separated)
  SESSIONLOG_TERMINAL  1: stdout and stderr are terminals; 0: both pipes;
                       stdout: only stdout (words through a pipe, no
                       progress drawn on stderr); unset: ask the terminal
  COLUMNS              the width on a terminal (else the terminal's own)
  NO_COLOR             no colours (no-color.org)
  PAGER, LESS          show's pager: default less, with LESS=FRX

logtool --version prints the module version and, when the build stamped
it, the commit (runtime/debug.ReadBuildInfo).`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	dir := a.env(envDir)
	if dir == "" {
		dir = defaultDir
	}
	root.PersistentFlags().StringVar(&a.dir, "dir", dir, "the `folder` of the session store; $"+envDir+" sets the default")
	root.PersistentFlags().StringVar(&a.storeURL, "store", a.env(envStore),
		"a JetStream store `URL`, nats://host:port[,host:port...][/prefix][?replicas=N&sync=always&lease=D] naming any servers of the cluster (e.g. nats://h1:4222,h2:4222,h3:4222/prefix?replicas=3&sync=always), instead of --dir (docs/distributed.md); $"+envStore+" sets the default")
	root.SetFlagErrorFunc(flagError)
	a.secretFlags(root)
	root.PersistentPreRunE = func(*cobra.Command, []string) error { return a.loadIdentities() }
	root.SetOut(a.stdout) // help and completion scripts
	root.SetErr(a.stderr)
	root.AddCommand(
		a.newNewCmd(),
		a.newAppendCmd(),
		a.newCatCmd(),
		a.newShowCmd(),
		a.newStatCmd(),
		a.newLsCmd(),
		a.newVerifyCmd(),
		a.newConvertCmd(),
		a.newCheckpointCmd(),
		a.newCheckpointsCmd(),
		a.newRollbackCmd(),
		a.newReplayCmd(),
		a.newResumeCmd(),
		a.newTailCmd(),
		a.newGCCmd(),
		a.newRepairCmd(),
		a.newForkCmd(),
		a.newExportCmd(),
		a.newImportCmd(),
		a.newDiffCmd(),
		a.newDemoCmd(),
		a.newCopyCmd(),
		a.newAgentLoopCmd(),
		a.newServeCmd(),
		a.newKeygenCmd(),
		a.newShredCmd(),
		a.newRedactCmd(),
	)
	root.Version = version()
	root.SetVersionTemplate("logtool {{.Version}}\n")
	a.addCompletions(root)
	groupCommands(root)
	catchUnknownCommands(root)
	// cobra's completion command prints its help and exits 0 on a shell it
	// does not know, or none; docs/cli.md makes that a usage error.
	root.InitDefaultCompletionCmd()
	for _, c := range root.Commands() {
		if c.Name() == "completion" {
			c.Use = "completion bash|zsh|fish|powershell"
			c.Short, c.Long = "Print a shell completion script (bash, zsh, fish, powershell)", completionLong
			c.Args = cobra.ArbitraryArgs
			c.RunE = func(_ *cobra.Command, args []string) error {
				return usageErrorf("completion %q: want one of bash, zsh, fish, powershell", strings.Join(args, " "))
			}
		}
	}
	return root
}

// exitError carries an exit status chosen where the error arose.
type exitError struct {
	code int
	err  error
	more []string // lines that follow the message on stderr (the candidates of an ambiguous name)
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// usageError marks err as a usage error (exit 2).
func usageError(err error) error { return &exitError{code: exitUsage, err: err} }

// usageErrorf is usageError of a formatted message.
func usageErrorf(format string, args ...any) error {
	return usageError(fmt.Errorf(format, args...))
}

// failedf reports a failed check (exit 1).
func failedf(format string, args ...any) error {
	return &exitError{code: exitFailed, err: fmt.Errorf(format, args...)}
}

// notImplemented is the usage error of a flag or command the spec names but
// this logtool does not have yet.
func notImplemented(what string) error {
	return usageErrorf("%s is not implemented yet", what)
}

// exitCode maps an error to an exit status: failed checks are 1, anything
// else (usage, not found, I/O) is 2.
func exitCode(err error) int {
	var ee *exitError
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &ee):
		return ee.code
	case errors.Is(err, handle.ErrLineage),
		errors.Is(err, eventlog.ErrCorrupt),
		errors.Is(err, eventlog.ErrVersion),
		errors.As(err, new(*handle.ConflictError)),
		errors.Is(err, file.ErrDuplicate),
		errors.Is(err, replay.ErrDigest),
		errors.Is(err, handle.ErrLocked),
		errors.As(err, new(*handle.DependentsError)),
		errors.As(err, new(*transfer.DigestError)):
		return exitFailed
	case errors.Is(err, handle.ErrExists):
		return exitUsage // import of an ID the store holds: the environment is in the way
	default:
		return exitUsage
	}
}

// oneLine keeps a message on one line, as scripts read stderr line by line.
func oneLine(s string) string {
	return strings.NewReplacer("\r\n", " ", "\n", " ", "\r", " ").Replace(s)
}
