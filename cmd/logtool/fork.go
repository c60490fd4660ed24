package main

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/handle/file"
)

// forkOptions are the flags of `logtool fork`.
type forkOptions struct {
	at       int64
	encoding string // "": the parent's
	labels   []string
	json     bool
}

func (a *app) newForkCmd() *cobra.Command {
	var o forkOptions
	cmd := &cobra.Command{
		Use:   "fork --at S [--label k=v]... [--encoding raw|zstd] [--json] SESSION",
		Short: "Fork a session after seq S: it inherits 0..S, nothing is copied",
		Long: `Fork creates a session whose logical log is SESSION's events 0..S followed
by its own, which start at S+1, and prints {"id","path"}. Nothing is
copied: the cost does not depend on the parent's length; the fork is
durable when printed. It takes the parent's encoding unless --encoding
says otherwise, and no labels but those --label gives. An S past the
parent's end is a usage error (exit 2).`,
		Example: `  $ logtool fork --at 20 agent=coder
  {"id":"01JDX4P7M2C5VQ8E9R1T3W6Y0B","path":"sessions/01JDX4P7M2C5VQ8E9R1T3W6Y0B.jsonl"}`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if !cmd.Flags().Changed("at") {
				return usageErrorf("fork needs --at S")
			}
			return a.runFork(cmd.Context(), args[0], o)
		},
	}
	fl := cmd.Flags()
	jsonFlag(cmd, &o.json)
	seqFlag(fl, &o.at, "at", "the parent's last inherited seq (inclusive)")
	fl.StringVar(&o.encoding, "encoding", "", "physical encoding of the fork: `raw|zstd` (default: the parent's)")
	fl.StringArrayVar(&o.labels, "label", nil, "a label `k=v` of the fork (repeatable)")
	return cmd
}

func (a *app) runFork(ctx context.Context, arg string, o forkOptions) (err error) {
	if o.at < 0 {
		return usageErrorf("--at %d: want a seq >= 0", o.at)
	}
	if o.encoding != "" && o.encoding != handle.EncodingRaw && o.encoding != handle.EncodingZstd {
		return usageErrorf("--encoding %q: want raw or zstd", o.encoding)
	}
	labels, err := parseLabels(o.labels)
	if err != nil {
		return err
	}
	s, err := a.resolve(arg)
	if err != nil {
		return err
	}
	st := s.writeStore()
	if st == nil {
		return usageErrorf("%q: fork needs a session of a store, a file named <ID>.jsonl or <ID>.jsonl.zst", s.path)
	}
	info, err := a.stat(ctx, s)
	if err != nil {
		return err
	}
	if o.at > info.LastSeq {
		return usageErrorf("--at %d: %s %s", o.at, s.id, holdsWords(info.LastSeq))
	}
	enc := o.encoding
	if enc == "" {
		enc = file.EncodingOfPath(s.path)
	}
	opts := []handle.Option{handle.WithEncoding(enc)}
	if labels != nil {
		opts = append(opts, handle.WithLabels(labels))
	}
	h, err := st.Fork(ctx, s.id, o.at, opts...)
	if err != nil {
		return err
	}
	res := newResult{ID: h.ID(), Path: h.Path()}
	if err := h.Close(); err != nil {
		return err
	}
	return a.printResult(o.json, res, func() string { return humanFork(s.id, o.at, res) })
}
