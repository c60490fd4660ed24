package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/sessionlog/sessionlog/ops/inspect"
	"github.com/sessionlog/sessionlog/projection"
	"github.com/sessionlog/sessionlog/replay"
	"github.com/sessionlog/sessionlog/replay/replaytest/golden"
)

// agentState rebuilds the agent/v1 state of a write handle's session up to
// its last event, starting from the nearest stored state.
func (a *app) agentState(ctx context.Context, h replay.Source, cache replay.Cache) (projection.Projection, error) {
	p := projection.NewAgent()
	_, err := replay.Replay(ctx, h, []projection.Projection{p}, replay.WithCache(cache))
	return p, err
}

func (a *app) newReplayCmd() *cobra.Command {
	var o replayOptions
	cmd := &cobra.Command{
		Use:   "replay [--to S] [--projection transcript|agent|conversation] [--golden FILE [--update]] SESSION",
		Short: "Print a projection's state, replayed with rollbacks applied (JSON)",
		Long: `Replay rebuilds a projection's state by replaying the logical log up to
--to (default: the last event), rollbacks applied, from the nearest stored
state, and prints it as JSON: indented on a terminal, one line piped.
--projection transcript (the default) is what a model would be sent (after
a compaction it starts from the summary); agent is where the loop stands;
conversation is every message of the live branch across compactions, each
summary where it stood, for reading a long session. Events a projection
could not understand are in the state's degraded and noted on stderr.

When the log ends in an open turn and no writer holds the session, the
state is shown as a resume would leave it (docs/format.md §8: synthetic
results, step/end, turn/end interrupted, in memory only; stderr says so);
--as-is shows the log's own state, as --to and --golden always do.

--golden FILE compares the state with FILE (the pretty JSON package
replay/replaytest writes) instead of printing it: exit 1 naming the first
differing JSON path and both values; --update writes FILE. It checks every
checkpoint's log digest first, so an edited fixture is told apart from a
change of behaviour.`,
		Example: `  $ logtool replay --projection agent agent=coder
  $ logtool replay --golden testdata/chat.golden agent=coder`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.toSet = cmd.Flags().Changed("to")
			if o.update && o.golden == "" {
				return usageErrorf("--update needs --golden FILE")
			}
			return a.runReplay(cmd.Context(), args[0], o, a.stdout)
		},
	}
	fl := cmd.Flags()
	seqFlag(fl, &o.to, "to", "replay up to this seq (inclusive); default: the last")
	fl.StringVar(&o.projection, "projection", "transcript", "the projection `name`: transcript, agent or conversation (every message across compactions)")
	fl.StringVar(&o.golden, "golden", "", "compare the state with the golden `FILE` (exit 1 on a difference)")
	fl.BoolVar(&o.update, "update", false, "with --golden: write the state to the golden file instead of comparing")
	fl.BoolVar(&o.asIs, "as-is", false, "do not close an open turn in memory")
	return cmd
}

type replayOptions struct {
	to         int64
	toSet      bool
	projection string
	golden     string // --golden FILE
	update     bool   // --update
	asIs       bool   // --as-is
}

func (a *app) runReplay(ctx context.Context, arg string, o replayOptions, out io.Writer) error {
	p, err := projection.ByName(o.projection)
	if err != nil {
		return usageErrorf("--projection %q: want one of %s", o.projection, strings.Join(projection.Names(), ", "))
	}
	s, src, err := a.openArg(ctx, arg)
	if err != nil {
		return err
	}
	defer src.Close()
	if o.toSet && o.to > src.Seq() {
		return usageErrorf("--to %d: the session %s", o.to, holdsWords(src.Seq()))
	}
	// The state is printed before src is closed: a transcript may leave
	// its large tool outputs in the log until then.
	opts := []replay.Option{replay.LocateData()}
	if o.toSet {
		opts = append(opts, replay.UpTo(o.to))
	}
	// A golden check replays from the first event: a stored snapshot was
	// made by the projection's code of its day and could hide a change in
	// behaviour, and a fixture's folder gets no derived files.
	if s.st != nil && o.golden == "" {
		opts = append(opts, replay.WithCache(s.st))
	}
	if o.golden != "" {
		// As replaytest does: the log digests first, so that an edited
		// fixture is told apart from a change of behaviour (exit 1).
		if _, err := replay.Replay(ctx, src, nil, append(opts, replay.CheckDigests())...); err != nil {
			return err
		}
	}
	// By default the state is shown as a reader is shown it
	// (inspect.State): an open turn no writer holds closed in memory.
	shown := !o.toSet && o.golden == "" && !o.asIs
	var res replay.Result
	var closing inspect.Closing
	if shown {
		res, closing, err = inspect.State(ctx, s.log, src, p, a.now(), replay.LocateData())
	} else {
		res, err = replay.Replay(ctx, src, []projection.Projection{p}, opts...)
	}
	if err != nil {
		return err
	}
	for _, d := range res.Degraded {
		fmt.Fprintf(a.stderr, "logtool: degraded: seq %d (%s): %s\n", d.Seq, d.Projection, d.Reason)
	}
	a.noteClosing(closing)
	if o.golden != "" {
		return a.checkGolden(p, o, out)
	}
	if a.isTerminal(out) {
		state, err := p.MarshalState()
		if err != nil {
			return err
		}
		return writeIndented(out, state)
	}
	// Streamed: a transcript's state is never held whole as JSON.
	if err := projection.WriteState(out, p); err != nil {
		return err
	}
	_, err = io.WriteString(out, "\n")
	return err
}

// goldenJSON is the line `replay --golden` prints when it succeeds.
type goldenJSON struct {
	Golden     string `json:"golden"`
	Projection string `json:"projection"`
	// Status is "match", or with --update "created", "updated" or
	// "unchanged".
	Status string `json:"status"`
}

// checkGolden compares p's state with the golden file of o (or, with
// --update, writes it) with golden.Check, the check replaytest makes, so
// a golden made by either passes the other.
func (a *app) checkGolden(p projection.Projection, o replayOptions, out io.Writer) error {
	res, err := golden.Check(o.golden, p, o.update, golden.WithFs(a.fs))
	if err != nil {
		return err
	}
	switch res.Status {
	case golden.Missing:
		return usageErrorf("no golden file %q: create it with --update, review it, and commit it", o.golden)
	case golden.Differs:
		return failedf("golden %s: the %s state differs: %s; if the change is intended, rerun with --update", o.golden, projection.ID(p), res.Mismatch)
	}
	return writeJSON(out, goldenJSON{Golden: o.golden, Projection: projection.ID(p), Status: string(res.Status)})
}

// noteClosing says on stderr what inspect.State did with an open turn:
// shown as a resume would close it, or, a writer holding the session,
// shown as it is.
func (a *app) noteClosing(c inspect.Closing) {
	switch {
	case c.InProgress:
		a.note("the last turn is open and a writer holds the session: a turn in progress, shown as it is")
	case len(c.Closers) > 0:
		a.note("the last turn is open and no writer holds the session: shown closed as a resume would close it "+
			"(%s, %s, in memory only; logtool resume writes them, --as-is shows the log's own state)",
			plural(int64(len(c.Closers)), "event"), seqsWords(c.Closers[0].Seq, c.Closers[len(c.Closers)-1].Seq))
	}
}
