package main

import (
	"context"
	"errors"

	"github.com/spf13/cobra"

	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/ops/feed"
)

func (a *app) newAppendCmd() *cobra.Command {
	var every int
	cmd := &cobra.Command{
		Use:   "append [--flush-every N] SESSION",
		Short: "Append event objects read from stdin, one a line, and print acks",
		Long: `Append reads event objects {"type","time"?,"data"?,"seq"?}, one a line,
from stdin. time (Unix milliseconds; 0 is a time) defaults to now; data is
any JSON value, stored compacted; a seq that is not the next one is a
conflict. Any other key, a repeated key, a time or seq that is not an
integer >= 0, or text after the object makes the line invalid; blank lines
are skipped.

It flushes (write, fsync) every N events with --flush-every, whenever stdin
holds no further complete line (an ack never waits for more input) and at
the end of input; after each flush it prints {"acked":S}, S the last
durable seq, so a program that pipes events in may wait for each ack. On a
conflict or an invalid line it flushes what came before, prints the ack and
{"error":{"kind":"conflict"|"invalid","line":N,"message":"..."}} (N counts
stdin's lines from 1), writes nothing of that line or after it, and exits
1. A session another writer holds exits 1 at once; one whose file is
unlinked, renamed or replaced under it stops at the next flush (exit 2).
On SIGINT or SIGTERM, also while it waits on stdin, it flushes what it
appended, prints the ack and exits 130 or 143.`,
		Example: `  $ printf '%s\n' '{"type":"user/message","data":{"text":"hi"}}' | logtool append agent=coder
  {"acked":0}
  $ echo '{"type":"x","seq":9}' | logtool append agent=coder
  {"acked":0}
  {"error":{"kind":"conflict","line":1,"message":"seq 9 is not the next seq 1"}}`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if every < 0 {
				return usageErrorf("--flush-every %d: want N >= 0", every)
			}
			return a.runAppend(cmd.Context(), args[0], every)
		},
	}
	cmd.Flags().IntVar(&every, "flush-every", 0, "flush after every `N` events (0: only when stdin is drained and at its end)")
	return cmd
}

func (a *app) runAppend(ctx context.Context, arg string, every int) (err error) {
	s, err := a.resolve(arg)
	if err != nil {
		return err
	}
	st := s.writeStore()
	if st == nil {
		return usageErrorf("%q: append writes to a session of a store, a file named <ID>%s", s.path, rawExt)
	}
	h, err := st.Open(ctx, s.id, handle.ReadWrite)
	if err != nil {
		return err
	}
	a.reportTorn(h, "cut before the first append")
	defer func() {
		if cerr := h.Close(); err == nil && cerr != nil {
			err = cerr
		}
	}()
	err = feed.Run(ctx, h, a.stdin, a.stdout, feed.FlushEvery(every), feed.WithClock(a.now))
	if le := (*feed.LineError)(nil); errors.As(err, &le) {
		return failedf("%w", le) // its error line is written: exit 1
	}
	return err
}
