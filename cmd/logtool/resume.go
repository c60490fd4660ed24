package main

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/recorder"
)

func (a *app) newResumeCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "resume [--json] SESSION",
		Short: "Close a turn a crash left open as interrupted, durably, and say if it may go on",
		Long: `Resume closes a turn whose writer is gone as interrupted (docs/format.md
§8): it appends, durably, the closers a reader shows: a synthetic
tool/result for every call without a result (its error says whether the
call may have run: effect read, not run or lost, safe to retry; write or
none, outcome unknown), a step/end if a step is open, and turn/end
{"kind":"interrupted"}, all flushed before it prints
{"appended":[seqs],"verdict":{"resumable":bool,"reason":"..."}}. It exits
0 whatever the verdict; a second run appends nothing. Verdicts deny by
default: completed, interrupted, paused and cancelled may continue; failed,
budget and any unknown kind may not. An agent loop that carries the turn
on instead (asks a cut response again, runs the calls that never ran)
resumes through its recorder, not with this command.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.runResume(cmd.Context(), args[0], asJSON)
		},
	}
	jsonFlag(cmd, &asJSON)
	return cmd
}

func (a *app) runResume(ctx context.Context, arg string, asJSON bool) (err error) {
	h, st, err := a.openWriter(ctx, arg)
	if err != nil {
		return err
	}
	defer closeInto(h, &err)
	res, err := recorder.CloseTurn(ctx, h, recorder.WithResumeCache(st), recorder.WithResumeClock(a.now))
	if err != nil {
		return err
	}
	return a.printResult(asJSON, res, func() string { return humanResume(res) })
}

func (a *app) newRepairCmd() *cobra.Command {
	var salvage, asJSON bool
	cmd := &cobra.Command{
		Use:   "repair [--salvage] [--json] SESSION",
		Short: "Cut a torn tail; --salvage: cut a corrupt log at its damage",
		Long: `Repair cuts a torn tail (truncate, fsync). With --salvage a corrupt log is
cut at its first damage. Either way the bytes cut are first copied to a
side file beside the log (<file>.torn-<offset>, <file>.salvaged-<offset>,
never overwritten: .1, .2, ... follow). It prints {"torn":{"offset",
"bytes","side"}|null,"salvaged":{...}|null,"firstLost","lastLost",
"events"}; firstLost..lastLost are the seqs the salvage removed (firstLost >
lastLost when none). A corrupt log without --salvage is left untouched:
exit 1 with the corruption. Never automatic.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.runRepair(cmd.Context(), args[0], salvage, asJSON)
		},
	}
	cmd.Flags().BoolVar(&salvage, "salvage", false, "cut at the first corruption and move the rest to a side file, reporting the seqs lost")
	jsonFlag(cmd, &asJSON)
	return cmd
}

func (a *app) runRepair(ctx context.Context, arg string, salvage, asJSON bool) error {
	s, files, err := fileSession[handle.Repairer](ctx, a, arg, "repair")
	if err != nil {
		return err
	}
	rep, err := files.Repair(ctx, s.id, salvage)
	if err != nil {
		return err
	}
	return a.printResult(asJSON, rep, func() string { return humanRepair(rep) })
}
