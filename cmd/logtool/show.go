package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/internal/app/chatview"
	"github.com/sessionlog/sessionlog/ops/inspect"
	"github.com/sessionlog/sessionlog/secrets/redact"
)

// showOptions are the flags of `logtool show`.
type showOptions struct {
	from, to int64
	turn     int
	noPager  bool
}

func (a *app) newShowCmd() *cobra.Command {
	var o showOptions
	cmd := &cobra.Command{
		Use:   "show [--from S] [--to S] [--turn N] [--no-pager] SESSION",
		Short: "Show a session as a conversation: turns, messages, tools, branches",
		Long: `Show prints a session's logical log as a person reads it (cat is the log as
stored): each turn under a heading with its number, seq and time; lines
labelled user, agent, think (reasoning, folded), call (name, id, effect,
arguments), allow, result or error (long output cut, with the cat command
that shows it all), usage, stop (how the turn ended; "closed by resume"),
summary (a compaction), and · for other events, a run of one type folded
into one line with its count. A step's streamed chunks are one agent
message when it has none. A rollback is a line "↶ rollback at seq R to seq
S"; the events it abandoned are dimmed, each line marked "┆ ". A fork's
heading names its parent; forks and children are named where they branch.
An event whose secrets were redacted at write ends with a line that says
where and of what kinds, "redacted: output (aws-access-key-id)" (its
$redacted record, docs/format.md §11, which cat --json prints as stored).

--from and --to bound the seqs. --turn N shows the N-th turn (from 1, in
log order, abandoned turns included); -1 the last, -2 the one before, read
from the tail at the same cost for any length of log. A damaged log is
shown up to its damage, then the error (exit 1).

Lines fit the width (80 piped); text that could drive a terminal shows as
�. On a terminal: colours, and the pager ($PAGER, default less with
LESS=FRX; PAGER=cat or --no-pager writes directly).`,
		Example: `  $ logtool show --turn -1 agent=coder`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if !cmd.Flags().Changed("to") {
				o.to = handle.End
			}
			if cmd.Flags().Changed("turn") && (cmd.Flags().Changed("from") || cmd.Flags().Changed("to")) {
				return usageErrorf("--turn goes alone, without --from or --to")
			}
			if cmd.Flags().Changed("turn") && o.turn == 0 {
				return usageErrorf("--turn 0: turns count from 1 (or from the end: -1 is the last)")
			}
			return a.runShow(cmd.Context(), args[0], o)
		},
	}
	fl := cmd.Flags()
	seqFlag(fl, &o.from, "from", "first seq to show (inclusive)")
	seqFlag(fl, &o.to, "to", "last seq to show (inclusive; default: the last event)")
	fl.IntVar(&o.turn, "turn", 0, "show turn `N` only (1 the first; -1 the last)")
	fl.BoolVar(&o.noPager, "no-pager", false, "write to stdout even on a terminal")
	return cmd
}

func (a *app) runShow(ctx context.Context, arg string, o showOptions) error {
	if o.from < 0 || o.to < 0 {
		return usageErrorf("--from and --to take seqs >= 0")
	}
	s, src, err := a.openArg(ctx, arg)
	var ce *eventlog.CorruptError
	if errors.As(err, &ce) && ce.Seq > 0 && o.turn == 0 {
		return a.showBeforeDamage(ctx, s, ce, o)
	}
	if err != nil {
		return err
	}
	defer src.Close()
	a.reportTorn(src, "not shown")
	last := src.Seq()
	from, to, firstTurn := o.from, min(o.to, last), 1
	switch {
	case o.turn != 0:
		from, to, err = inspect.Turn(ctx, src, o.turn)
		if te := (*inspect.TurnError)(nil); errors.As(err, &te) {
			return usageErrorf("--turn %d: the session has %s", o.turn, plural(int64(te.Turns), "turn"))
		}
		if err != nil {
			return err
		}
		firstTurn = max(o.turn, 0) // from the end: not counted, that would read the whole log
	case from > 0:
		if firstTurn, err = inspect.CountTurns(ctx, src, 0, from-1); err != nil {
			return err
		}
		firstTurn++
	}
	view := chatview.Session{Header: src.Header(), Last: last, FirstTurn: firstTurn}
	if view.Rollbacks, err = chatview.Rollbacks(src.Read(ctx, from, handle.End)); err != nil {
		return err
	}
	if s.st != nil {
		if view.Children, err = s.st.Children(ctx, src.ID()); err != nil {
			return err
		}
	}
	opts := chatview.SessionOptions(view)
	return a.paged(o.noPager, func(out io.Writer) error {
		w := bufio.NewWriterSize(out, 64<<10)
		text := chatview.NewText(w, a.width(a.stdout), a.colour(a.stdout))
		for _, h := range sessionHeading(src, last) {
			text.Heading(h)
		}
		n := 0
		var prot redact.Protection
		if s.st != nil {
			if info, err := s.st.Stat(ctx, src.ID()); err == nil {
				prot.Sealed = info.Sealed
			}
		}
		b := chatview.NewBuilder(opts, func(blk chatview.Block) { text.Write(blk) })
		if from <= to {
			for e, err := range src.Read(ctx, from, to) {
				if err != nil {
					w.Flush()
					return err
				}
				prot.Count(e.Data)
				b.Add(e)
				n++
				if text.Err() != nil {
					return text.Err()
				}
			}
		}
		b.Finish(to >= last)
		if n == 0 {
			text.Heading("no events" + rangeWords(from, to))
		}
		if prot.Sealed || prot.Redacted > 0 {
			// What protects the session's secrets (docs/format.md §11),
			// over the events shown.
			text.Heading("secrets: " + prot.String())
		}
		if err := text.Err(); err != nil {
			return err
		}
		return w.Flush()
	})
}

// rangeWords names the seqs asked for when they hold nothing.
func rangeWords(from, to int64) string {
	switch {
	case to == handle.End || from > to && from > 0:
		return fmt.Sprintf(" from seq %d on", from)
	case from == 0 && to < 0:
		return ""
	}
	return fmt.Sprintf(" in seqs %d to %d", from, to)
}

// sessionHeading is the first lines of show: the session and its size,
// where it comes from, its labels.
func sessionHeading(h handle.Handle, last int64) []string {
	hdr := h.Header()
	out := []string{fmt.Sprintf("session %s · %s", hdr.ID, chatview.Plural(last+1, "event", ""))}
	if p := hdr.Parent; p != nil {
		out = append(out, describeParent(p))
	}
	if len(hdr.Labels) > 0 {
		out = append(out, describeLabels(hdr.Labels))
	}
	return out
}

// showBeforeDamage shows the events of a damaged log before its first
// damage, as cat prints them, then returns the damage (exit 1). What
// comes after the damage is unknown, so rollbacks there cannot mark an
// abandoned branch, and the last step is not said to be cut short.
func (a *app) showBeforeDamage(ctx context.Context, s session, ce *eventlog.CorruptError, o showOptions) error {
	var rollbacks []chatview.Rollback
	last := int64(-1)
	err := inspect.BeforeDamage(ctx, s.log, ce, func(e eventlog.Event) error {
		if r, ok := chatview.RollbackOf(e); ok && e.Seq >= o.from {
			rollbacks = append(rollbacks, r)
		}
		last = e.Seq
		return nil
	})
	if !errors.Is(err, ce) {
		return err
	}
	view := chatview.Session{Last: last, Rollbacks: rollbacks}
	if o.from == 0 {
		view.FirstTurn = 1
	}
	opts := chatview.SessionOptions(view)
	werr := a.paged(o.noPager, func(out io.Writer) error {
		w := bufio.NewWriterSize(out, 64<<10)
		text := chatview.NewText(w, a.width(a.stdout), a.colour(a.stdout))
		text.Heading(fmt.Sprintf("%s · damaged at seq %d: %s before it", s.path, ce.Seq, plural(last+1, "event")))
		b := chatview.NewBuilder(opts, func(blk chatview.Block) { text.Write(blk) })
		inspect.BeforeDamage(ctx, s.log, ce, func(e eventlog.Event) error {
			if e.Seq >= o.from && e.Seq <= o.to {
				b.Add(e)
			}
			return text.Err()
		})
		b.Finish(false)
		if err := text.Err(); err != nil {
			return err
		}
		return w.Flush()
	})
	if werr != nil {
		return werr
	}
	return ce
}
