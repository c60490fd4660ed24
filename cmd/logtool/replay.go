package main

import (
	"context"
	"encoding/json"
	"io"

	"github.com/spf13/cobra"

	"github.com/sessionlog/sessionlog/projection"
	"github.com/sessionlog/sessionlog/replay"
)

// projections names the built-in projections logtool knows.
var projectionNames = []string{"transcript", "agent"}

// newProjection returns a fresh built-in projection by name.
func newProjection(name string) (projection.Projection, error) {
	switch name {
	case "transcript":
		return projection.NewTranscript(), nil
	case "agent":
		return projection.NewAgent(), nil
	}
	return nil, usageErrorf("--projection %q: want transcript or agent", name)
}

// builtins returns fresh instances of every built-in projection, for
// verify's state digests.
func builtins() []projection.Projection {
	return []projection.Projection{projection.NewAgent(), projection.NewTranscript()}
}

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
		Use:   "replay [--to S] [--projection transcript|agent] SESSION",
		Short: "Rebuild a projection's state by replaying the log (rollbacks applied) and print it as JSON",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.toSet = cmd.Flags().Changed("to")
			return a.runReplay(cmd.Context(), args[0], o, a.stdout)
		},
	}
	fl := cmd.Flags()
	fl.Int64Var(&o.to, "to", 0, "replay up to this seq (inclusive); default: the last")
	fl.StringVar(&o.projection, "projection", "transcript", "the projection: transcript or agent")
	return cmd
}

type replayOptions struct {
	to         int64
	toSet      bool
	projection string
}

func (a *app) runReplay(ctx context.Context, arg string, o replayOptions, out io.Writer) error {
	p, err := newProjection(o.projection)
	if err != nil {
		return err
	}
	s, err := a.resolve(arg)
	if err != nil {
		return err
	}
	src, err := a.openLog(ctx, s)
	if err != nil {
		return err
	}
	defer src.Close()
	opts := []replay.Option{}
	if o.toSet {
		opts = append(opts, replay.UpTo(o.to))
	}
	if s.store != nil {
		opts = append(opts, replay.WithCache(s.store))
	}
	if _, err := replay.Replay(ctx, src, []projection.Projection{p}, opts...); err != nil {
		return err
	}
	state, err := p.MarshalState()
	if err != nil {
		return err
	}
	return writeJSON(out, json.RawMessage(state))
}
