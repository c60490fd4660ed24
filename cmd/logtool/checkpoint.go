package main

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/sessionlog/sessionlog/checkpoint"
	"github.com/sessionlog/sessionlog/handle"
)

// openWriter opens the session SESSION names for writing.
func (a *app) openWriter(ctx context.Context, arg string) (handle.Handle, handle.Store, error) {
	s, err := a.resolve(arg)
	if err != nil {
		return nil, nil, err
	}
	st := s.writeStore()
	if st == nil {
		return nil, nil, usageErrorf("%q: writing needs a session of a store, a file named <ID>.jsonl or <ID>.jsonl.zst", s.path)
	}
	h, err := st.Open(ctx, s.id, handle.ReadWrite)
	return h, st, err
}

// closeInto closes h and keeps the first error.
func closeInto(h handle.Handle, err *error) {
	if cerr := h.Close(); *err == nil && cerr != nil {
		*err = cerr
	}
}

func (a *app) newCheckpointCmd() *cobra.Command {
	var label string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "checkpoint [--label L] [--json] SESSION",
		Short: "Append a checkpoint: log and agent/v1 state digests of all so far",
		Long: `Checkpoint appends a checkpoint covering every event so far, with the log
digest (the writer's running digest: nothing is re-read) and the agent/v1
state digest (rebuilt by replay from the nearest stored state), and
flushes it. It prints {"seq","time","label","log","state":{"projection",
"digest"},"live":true}; rollback --checkpoint L finds it by its label.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.runCheckpoint(cmd.Context(), args[0], label, asJSON)
		},
	}
	cmd.Flags().StringVar(&label, "label", "", "the checkpoint's label `L` (rollback --checkpoint L finds it)")
	jsonFlag(cmd, &asJSON)
	return cmd
}

func (a *app) runCheckpoint(ctx context.Context, arg, label string, asJSON bool) (err error) {
	h, st, err := a.openWriter(ctx, arg)
	if err != nil {
		return err
	}
	defer closeInto(h, &err)
	opts := []checkpoint.Option{checkpoint.WithLabel(label), checkpoint.WithClock(a.now)}
	state, err := a.agentState(ctx, h, st)
	if err != nil {
		return err
	}
	opts = append(opts, checkpoint.WithState(state))
	info, err := checkpoint.Create(ctx, h, opts...)
	if err != nil {
		return err
	}
	return a.printResult(asJSON, info, func() string { return humanCheckpoint(info) })
}

func (a *app) newCheckpointsCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "checkpoints [--json] SESSION",
		Short: "List the checkpoints: seq, time, live or abandoned, label",
		Long: `Checkpoints lists a session's checkpoints: seq, time, branch (live: no
later rollback abandoned it; abandoned) and label. JSON, one object a
checkpoint: {"seq","time","label"?,"log","state"?,"live"}.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.runCheckpoints(cmd.Context(), args[0], a.wantJSON(asJSON), a.stdout)
		},
	}
	jsonFlag(cmd, &asJSON)
	return cmd
}

func (a *app) runCheckpoints(ctx context.Context, arg string, asJSON bool, out io.Writer) error {
	_, src, err := a.openArg(ctx, arg)
	if err != nil {
		return err
	}
	defer src.Close()
	infos, err := checkpoint.List(ctx, src)
	if err != nil {
		return err
	}
	if !asJSON {
		return writeCheckpointsTable(out, infos)
	}
	for _, c := range infos {
		if err := writeJSON(out, c); err != nil {
			return err
		}
	}
	return nil
}

// writeCheckpointsTable lists checkpoints under a header, or says there
// are none.
func writeCheckpointsTable(out io.Writer, infos []checkpoint.Info) error {
	if len(infos) == 0 {
		_, err := fmt.Fprintln(out, "no checkpoints")
		return err
	}
	if _, err := fmt.Fprintf(out, "%6s  %-24s  %-9s  %s\n", "SEQ", "TIME", "BRANCH", "LABEL"); err != nil {
		return err
	}
	for _, c := range infos {
		live := "live"
		if !c.Live {
			live = "abandoned"
		}
		label := c.Label
		if label == "" {
			label = "-"
		}
		if _, err := fmt.Fprintf(out, "%6d  %-24s  %-9s  %s\n", c.Seq, formatTime(c.Time), live, label); err != nil {
			return err
		}
	}
	return nil
}

func (a *app) newRollbackCmd() *cobra.Command {
	var to int64
	var label, reason string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "rollback (--to S | --checkpoint LABEL) [--reason R] [--json] SESSION",
		Short: "Append a rollback: the state returns to right after seq S",
		Long: `Rollback appends a rollback: from it on, every projection's state equals
its state right after event S; with --checkpoint L, S is the seq of the
latest checkpoint labelled L on the live branch. Nothing is deleted: cat
still shows every event, show draws the abandoned branch. It prints
{"seq","to","label"?}. An S outside the log, or no such checkpoint, is a
usage error (exit 2).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			toSet, cpSet := cmd.Flags().Changed("to"), cmd.Flags().Changed("checkpoint")
			if toSet == cpSet {
				return usageErrorf("give exactly one of --to and --checkpoint")
			}
			return a.runRollback(cmd.Context(), args[0], to, label, reason, cpSet, asJSON)
		},
	}
	fl := cmd.Flags()
	seqFlagHint(fl, &to, "to", "the seq whose state the session returns to", func(v string) string {
		return fmt.Sprintf("(a checkpoint's label? use --checkpoint %s)", v)
	})
	fl.StringVar(&label, "checkpoint", "", "roll back to the latest checkpoint labelled `LABEL` on the live branch")
	fl.StringVar(&reason, "reason", "", "why, in `words`")
	jsonFlag(cmd, &asJSON)
	return cmd
}

// rollbackResult is what `logtool rollback` prints.
type rollbackResult struct {
	Seq   int64  `json:"seq"`
	To    int64  `json:"to"`
	Label string `json:"label,omitempty"`
}

func (a *app) runRollback(ctx context.Context, arg string, to int64, label, reason string, byLabel, asJSON bool) (err error) {
	h, _, err := a.openWriter(ctx, arg)
	if err != nil {
		return err
	}
	defer closeInto(h, &err)
	opts := []checkpoint.Option{checkpoint.WithReason(reason), checkpoint.WithClock(a.now)}
	if byLabel {
		cp, err := checkpoint.Find(ctx, h, label)
		if err != nil {
			return err
		}
		to = cp.Seq
		opts = append(opts, checkpoint.WithLabel(label))
	}
	if to < 0 || to > h.Seq() {
		return usageErrorf("--to %d: the session %s", to, holdsWords(h.Seq()))
	}
	seq, err := checkpoint.Rollback(ctx, h, to, opts...)
	if err != nil {
		return err
	}
	res := rollbackResult{Seq: seq, To: to, Label: label}
	return a.printResult(asJSON, res, func() string { return humanRollback(res) })
}
