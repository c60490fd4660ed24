package main

import (
	"bufio"
	"context"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/handle"
)

// followEvery is how often tail -f looks for new events.
const followEvery = 200 * time.Millisecond

func (a *app) newTailCmd() *cobra.Command {
	var n int64
	var follow, asJSON bool
	cmd := &cobra.Command{
		Use:   "tail [-n N] [-f] [--json] SESSION",
		Short: "Print the last N events; -f: follow as a writer appends",
		Long: `Tail prints the last N events of a session (default 10): one line an event as
cat prints them, or canon(e) lines with --json.

With -f it keeps printing the events a writer appends (it looks every 200 ms)
until interrupted (Ctrl-C: exit status 130). It follows the session, not the
file, as tail -F does: when the file is replaced (logtool convert, a repair, a
writer's rewrite), cut (repair --salvage) or removed for a while, it says so
on stderr, opens the session's file anew and goes on from the first event it
has not printed (or from where a cut log now ends). With --store it follows
the session's subject: each look reads what was acknowledged since.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if n < 0 {
				return usageErrorf("-n %d: want N >= 0", n)
			}
			return a.runTail(cmd.Context(), args[0], n, follow, asJSON, a.stdout)
		},
	}
	cmd.Flags().Int64VarP(&n, "lines", "n", 10, "how many of the last events to print")
	cmd.Flags().BoolVarP(&follow, "follow", "f", false, "keep printing events as they are appended, across a convert or repair, until interrupted")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print canon(e) lines")
	return cmd
}

func (a *app) runTail(ctx context.Context, arg string, n int64, follow, asJSON bool, out io.Writer) error {
	s, src, err := a.openArg(ctx, arg)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(out)
	var buf []byte
	f := &follower{a: a, arg: arg, s: s, src: src, path: src.Path(), print: func(e eventlog.Event) error {
		if asJSON {
			buf = append(eventlog.AppendCanon(buf[:0], e), '\n')
			_, err := w.Write(buf)
			return err
		}
		return writeEventHuman(w, e)
	}}
	defer func() { f.src.Close() }()
	if s.remote == nil {
		if f.fi, err = a.fs.Stat(f.path); err != nil {
			return err
		}
	}
	f.next = max(0, src.Seq()+1-n)
	for e, err := range src.Read(ctx, f.next, handle.End) {
		if err != nil {
			return err
		}
		if err := f.printed(e); err != nil {
			return err
		}
	}
	if err := w.Flush(); err != nil || !follow {
		return err
	}
	t := time.NewTicker(followEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return &exitError{code: exitInterrupted, err: errInterrupted}
		case <-t.C:
			err := f.poll(ctx)
			if ferr := w.Flush(); err == nil {
				err = ferr
			}
			if ctx.Err() != nil {
				return &exitError{code: exitInterrupted, err: errInterrupted}
			}
			if err != nil {
				return err
			}
		}
	}
}
