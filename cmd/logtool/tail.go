package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/ops/follow"
)

// followEvery is how often tail -f looks for new events.
const followEvery = 200 * time.Millisecond

func (a *app) newTailCmd() *cobra.Command {
	var n int64
	var keep, asJSON bool
	cmd := &cobra.Command{
		Use:   "tail [-n N] [-f] [--json] SESSION",
		Short: "Print the last N events; -f: follow as a writer appends",
		Long: `Tail prints the last N events (default 10), as cat prints them. With -f it
goes on printing what a writer appends (it looks every 200 ms) until
interrupted (exit 130). It follows the session, not the file, as tail -F
does (package follow): when the session moves (convert), is replaced, cut
(repair --salvage, a writer's recovery) or rewritten, it says so on stderr,
opens it anew and goes on from the first event not printed, or from the
first seq where the log now differs from what was printed. A session gone
for a while is waited for; on JetStream the session's subject is followed.`,
		Example: `  $ logtool tail -f --json agent=coder`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if n < 0 {
				return usageErrorf("-n %d: want N >= 0", n)
			}
			return a.runTail(cmd.Context(), args[0], n, keep, a.wantJSON(asJSON), a.stdout)
		},
	}
	cmd.Flags().Int64VarP(&n, "lines", "n", 10, "print the last `N` events")
	cmd.Flags().BoolVarP(&keep, "follow", "f", false, "keep printing events as they are appended, across a convert or repair, until interrupted")
	jsonFlag(cmd, &asJSON)
	return cmd
}

// exitInterrupted is the exit status of a command stopped by Ctrl-C
// (128 + SIGINT, as shells report it).
const exitInterrupted = 130

// errInterrupted is what a command stopped by Ctrl-C reports.
var errInterrupted = errors.New("interrupted")

func (a *app) runTail(ctx context.Context, arg string, n int64, keep, asJSON bool, out io.Writer) error {
	s, err := a.resolve(arg)
	if err != nil {
		return err
	}
	f, err := follow.Open(ctx, a.followTarget(s), follow.Last(n), follow.WithNotes(func(n follow.Note) { a.note("%s", n) }))
	if err != nil {
		return err
	}
	defer f.Close()
	w := bufio.NewWriter(out)
	var buf []byte
	look := func() error {
		for e, err := range f.Poll(ctx) {
			if err != nil {
				return err
			}
			if asJSON {
				buf = append(eventlog.AppendCanon(buf[:0], e), '\n')
				_, err = w.Write(buf)
			} else {
				err = writeEventHuman(w, e)
			}
			if err != nil {
				return err
			}
		}
		return w.Flush()
	}
	if err := look(); err != nil || !keep {
		return err
	}
	t := time.NewTicker(followEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return &exitError{code: exitInterrupted, err: errInterrupted}
		case <-t.C:
			err := look()
			if ctx.Err() != nil {
				return &exitError{code: exitInterrupted, err: errInterrupted}
			}
			if err != nil {
				return err
			}
		}
	}
}

// followTarget is what tail -f follows for s: a session of its store, or
// a freely named file by path.
func (a *app) followTarget(s session) follow.Target {
	if st := s.writeStore(); st != nil {
		return follow.Session(st, s.id)
	}
	return follow.File(s.file, s.path)
}

// note says something on stderr, one line starting with "logtool: ".
func (a *app) note(format string, args ...any) {
	fmt.Fprintf(a.stderr, "logtool: %s\n", oneLine(fmt.Sprintf(format, args...)))
}
