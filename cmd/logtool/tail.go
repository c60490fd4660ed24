package main

import (
	"bufio"
	"context"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/sessionlog/sessionlog/eventlog"
)

// followEvery is how often tail -f looks for new events.
const followEvery = 200 * time.Millisecond

func (a *app) newTailCmd() *cobra.Command {
	var n int64
	var follow, asJSON bool
	cmd := &cobra.Command{
		Use:   "tail [-n N] [-f] [--json] SESSION",
		Short: "Print the last N events; with -f, keep printing new ones as a writer appends them",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if n < 0 {
				return usageErrorf("-n %d: want N >= 0", n)
			}
			return a.runTail(cmd.Context(), args[0], n, follow, asJSON, a.stdout)
		},
	}
	cmd.Flags().Int64VarP(&n, "lines", "n", 10, "how many of the last events to print")
	cmd.Flags().BoolVarP(&follow, "follow", "f", false, "keep printing events as they are appended, until interrupted")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print canon(e) lines")
	return cmd
}

func (a *app) runTail(ctx context.Context, arg string, n int64, follow, asJSON bool, out io.Writer) error {
	_, src, err := a.openArg(ctx, arg)
	if err != nil {
		return err
	}
	defer src.Close()
	w := bufio.NewWriter(out)
	var buf []byte
	print := func(from int64) (int64, error) {
		next := from
		for e, err := range src.Read(ctx, from, 1<<62) {
			if err != nil {
				return next, err
			}
			if asJSON {
				buf = append(eventlog.AppendCanon(buf[:0], e), '\n')
				if _, err := w.Write(buf); err != nil {
					return next, err
				}
			} else if err := writeEventHuman(w, e); err != nil {
				return next, err
			}
			next = e.Seq + 1
		}
		return next, w.Flush()
	}
	next, err := print(max(0, src.Seq()+1-n))
	if err != nil || !follow {
		return err
	}
	t := time.NewTicker(followEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			if next, err = print(next); err != nil {
				return err
			}
		}
	}
}
